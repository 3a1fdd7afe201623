"""The block storage v3 route table, mounted at ``/volume``."""
from __future__ import annotations

from starlette.routing import Route

from cirrus.volume.api import (actions, admin, attachments, misc, snapshots, transfers, types,
                               volumes)

P = "/v3/{project_id}"
V = f"{P}/volumes/{{volume_id}}"
S = f"{P}/snapshots/{{snapshot_id}}"
T = f"{P}/types/{{type_id}}"
A = f"{P}/attachments/{{attachment_id}}"
Q = f"{P}/os-quota-sets/{{target_project_id}}"

ROUTES = [
    Route("/", misc.versions, methods=["GET"]),
    Route("/v3/", misc.version_v3, methods=["GET"]),
    Route(f"{P}/volumes", volumes.create, methods=["POST"]),
    Route(f"{P}/volumes", volumes.index, methods=["GET"]),
    Route(f"{P}/volumes/detail", volumes.detail, methods=["GET"]),
    Route(f"{P}/volumes/summary", volumes.summary, methods=["GET"]),
    Route(V, volumes.show, methods=["GET"]),
    Route(V, volumes.update, methods=["PUT"]),
    Route(V, volumes.delete, methods=["DELETE"]),
    Route(f"{V}/action", actions.action, methods=["POST"]),
    Route(f"{V}/metadata", volumes.metadata, methods=["GET"]),
    Route(f"{V}/metadata", volumes.set_metadata, methods=["POST", "PUT"]),
    Route(f"{V}/metadata/{{key}}", volumes.metadata_item, methods=["GET"]),
    Route(f"{V}/metadata/{{key}}", volumes.set_metadata_item, methods=["PUT"]),
    Route(f"{V}/metadata/{{key}}", volumes.delete_metadata_item, methods=["DELETE"]),
    Route(f"{P}/snapshots", snapshots.create, methods=["POST"]),
    Route(f"{P}/snapshots", snapshots.index, methods=["GET"]),
    Route(f"{P}/snapshots/detail", snapshots.detail, methods=["GET"]),
    Route(S, snapshots.show, methods=["GET"]),
    Route(S, snapshots.update, methods=["PUT"]),
    Route(S, snapshots.delete, methods=["DELETE"]),
    Route(f"{S}/action", snapshots.action, methods=["POST"]),
    Route(f"{S}/metadata", snapshots.metadata, methods=["GET"]),
    Route(f"{S}/metadata", snapshots.set_metadata, methods=["POST", "PUT"]),
    Route(f"{S}/metadata/{{key}}", snapshots.metadata_item, methods=["GET"]),
    Route(f"{S}/metadata/{{key}}", snapshots.set_metadata_item, methods=["PUT"]),
    Route(f"{S}/metadata/{{key}}", snapshots.delete_metadata_item, methods=["DELETE"]),
    Route(f"{P}/types", types.index, methods=["GET"]),
    Route(f"{P}/types", types.create, methods=["POST"]),
    Route(T, types.show, methods=["GET"]),
    Route(T, types.update, methods=["PUT"]),
    Route(T, types.delete, methods=["DELETE"]),
    Route(f"{T}/extra_specs", types.specs, methods=["GET"]),
    Route(f"{T}/extra_specs", types.set_specs, methods=["POST"]),
    Route(f"{T}/extra_specs/{{key}}", types.spec, methods=["GET"]),
    Route(f"{T}/extra_specs/{{key}}", types.set_spec, methods=["PUT"]),
    Route(f"{T}/extra_specs/{{key}}", types.delete_spec, methods=["DELETE"]),
    Route(f"{T}/os-volume-type-access", types.access, methods=["GET"]),
    Route(f"{T}/action", types.action, methods=["POST"]),
    Route(f"{P}/attachments", attachments.create, methods=["POST"]),
    Route(f"{P}/attachments", attachments.index, methods=["GET"]),
    Route(f"{P}/attachments/detail", attachments.detail, methods=["GET"]),
    Route(A, attachments.show, methods=["GET"]),
    Route(A, attachments.update, methods=["PUT"]),
    Route(A, attachments.delete, methods=["DELETE"]),
    Route(f"{A}/action", attachments.complete, methods=["POST"]),
    *[route for coll in ("os-volume-transfer", "volume-transfers") for route in (
        Route(f"{P}/{coll}", transfers.create, methods=["POST"]),
        Route(f"{P}/{coll}", transfers.index, methods=["GET"]),
        Route(f"{P}/{coll}/detail", transfers.detail, methods=["GET"]),
        Route(f"{P}/{coll}/{{transfer_id}}", transfers.show, methods=["GET"]),
        Route(f"{P}/{coll}/{{transfer_id}}", transfers.delete, methods=["DELETE"]),
        Route(f"{P}/{coll}/{{transfer_id}}/accept", transfers.accept, methods=["POST"]))],
    Route(Q, misc.quota_show, methods=["GET"]),
    Route(Q, misc.quota_update, methods=["PUT"]),
    Route(Q, misc.quota_delete, methods=["DELETE"]),
    Route(f"{Q}/defaults", misc.quota_defaults, methods=["GET"]),
    Route(f"{P}/limits", misc.limits, methods=["GET"]),
    Route(f"{P}/os-availability-zone", misc.availability_zones, methods=["GET"]),
    Route(f"{P}/os-services", admin.service_list, methods=["GET"]),
    Route(f"{P}/os-services/{{action}}", admin.service_update, methods=["PUT"]),
    Route(f"{P}/os-hosts", admin.host_list, methods=["GET"]),
    Route(f"{P}/os-hosts/{{host_name}}", admin.host_show, methods=["GET"]),
    Route(f"{P}/scheduler-stats/get_pools", admin.pools, methods=["GET"]),
    Route(f"{P}/capabilities/{{host}}", admin.capabilities, methods=["GET"]),
    Route(f"{P}/os-quota-class-sets/{{class_name}}", admin.quota_class_show, methods=["GET"]),
    Route(f"{P}/os-quota-class-sets/{{class_name}}", admin.quota_class_update, methods=["PUT"]),
    Route(f"{P}/extensions", misc.extensions, methods=["GET"]),
    Route(f"{P}/messages", misc.message_list, methods=["GET"]),
    Route(f"{P}/messages/{{message_id}}", misc.message_show, methods=["GET"]),
    Route(f"{P}/messages/{{message_id}}", misc.message_delete, methods=["DELETE"]),
]
