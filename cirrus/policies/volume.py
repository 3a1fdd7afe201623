"""Block storage v3 route rules, under Cinder's policy names and
secure-RBAC defaults (``cinder/policies``): project readers read, project
members create and change their project's volumes, snapshots and
attachments; volume types' writes, quota updates, services and the
``os-reset_status``/``os-force_delete`` actions are admin's (the action
route is a member's; the service checks the admin-only actions)."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, R, M, A = Level.PUBLIC, Level.READER, Level.MEMBER, Level.ADMIN
PR = "/v3/{project_id}"
V = f"{PR}/volumes/{{volume_id}}"
S = f"{PR}/snapshots/{{snapshot_id}}"
T = f"{PR}/types/{{type_id}}"
AT = f"{PR}/attachments/{{attachment_id}}"
Q = f"{PR}/os-quota-sets/{{target_project_id}}"
QS = f"{PR}/qos-specs/{{qos_id}}"
G = f"{PR}/group_types/{{group_type_id}}"

ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/"): Rule("versions", P),
    ("GET", "/v3/"): Rule("versions", P),
    ("POST", f"{PR}/volumes"): Rule("volume:create", M),
    ("GET", f"{PR}/volumes"): Rule("volume:get_all", R),
    ("GET", f"{PR}/volumes/detail"): Rule("volume:get_all", R),
    ("GET", f"{PR}/volumes/summary"): Rule("volume:get_all", R),
    ("GET", V): Rule("volume:get", R),
    ("PUT", V): Rule("volume:update", M),
    ("DELETE", V): Rule("volume:delete", M),
    ("POST", f"{V}/action"): Rule("volume_extension:volume_actions", M),
    ("GET", f"{V}/metadata"): Rule("volume:get_volume_metadata", R),
    ("POST", f"{V}/metadata"): Rule("volume:create_volume_metadata", M),
    ("PUT", f"{V}/metadata"): Rule("volume:update_volume_metadata", M),
    ("GET", f"{V}/metadata/{{key}}"): Rule("volume:get_volume_metadata", R),
    ("PUT", f"{V}/metadata/{{key}}"): Rule("volume:update_volume_metadata", M),
    ("DELETE", f"{V}/metadata/{{key}}"): Rule("volume:delete_volume_metadata", M),
    ("POST", f"{PR}/snapshots"): Rule("volume:create_snapshot", M),
    ("GET", f"{PR}/snapshots"): Rule("volume:get_all_snapshots", R),
    ("GET", f"{PR}/snapshots/detail"): Rule("volume:get_all_snapshots", R),
    ("GET", S): Rule("volume:get_snapshot", R),
    ("PUT", S): Rule("volume:update_snapshot", M),
    ("DELETE", S): Rule("volume:delete_snapshot", M),
    ("POST", f"{S}/action"): Rule("volume_extension:snapshot_actions", M),
    ("GET", f"{S}/metadata"): Rule("volume:get_snapshot_metadata", R),
    ("POST", f"{S}/metadata"): Rule("volume:update_snapshot_metadata", M),
    ("PUT", f"{S}/metadata"): Rule("volume:update_snapshot_metadata", M),
    ("GET", f"{S}/metadata/{{key}}"): Rule("volume:get_snapshot_metadata", R),
    ("PUT", f"{S}/metadata/{{key}}"): Rule("volume:update_snapshot_metadata", M),
    ("DELETE", f"{S}/metadata/{{key}}"): Rule("volume:delete_snapshot_metadata", M),
    ("GET", f"{PR}/types"): Rule("volume_extension:type_get_all", R),
    ("POST", f"{PR}/types"): Rule("volume_extension:type_create", A),
    ("GET", T): Rule("volume_extension:type_get", R),
    ("PUT", T): Rule("volume_extension:type_update", A),
    ("DELETE", T): Rule("volume_extension:type_delete", A),
    ("GET", f"{T}/extra_specs"): Rule("volume_extension:types_extra_specs:index", R),
    ("POST", f"{T}/extra_specs"): Rule("volume_extension:types_extra_specs:create", A),
    ("GET", f"{T}/extra_specs/{{key}}"): Rule("volume_extension:types_extra_specs:show", R),
    ("PUT", f"{T}/extra_specs/{{key}}"): Rule("volume_extension:types_extra_specs:update", A),
    ("DELETE", f"{T}/extra_specs/{{key}}"): Rule("volume_extension:types_extra_specs:delete", A),
    ("GET", f"{T}/os-volume-type-access"): Rule("volume_extension:volume_type_access", A),
    ("POST", f"{T}/action"): Rule("volume_extension:volume_type_access:addProjectAccess", A),
    ("GET", f"{T}/encryption"): Rule("volume_extension:volume_type_encryption:get", A),
    ("POST", f"{T}/encryption"): Rule("volume_extension:volume_type_encryption:create", A),
    ("GET", f"{T}/encryption/{{key}}"): Rule("volume_extension:volume_type_encryption:get", A),
    ("PUT", f"{T}/encryption/{{encryption_id}}"):
        Rule("volume_extension:volume_type_encryption:update", A),
    ("DELETE", f"{T}/encryption/{{encryption_id}}"):
        Rule("volume_extension:volume_type_encryption:delete", A),
    ("GET", f"{PR}/group_types"): Rule("group:group_types:get_all", R),
    ("POST", f"{PR}/group_types"): Rule("group:group_types:create", A),
    ("GET", G): Rule("group:group_types:get", R),
    ("PUT", G): Rule("group:group_types:update", A),
    ("DELETE", G): Rule("group:group_types:delete", A),
    ("GET", f"{G}/group_specs"): Rule("group:group_types_specs:get_all", A),
    ("POST", f"{G}/group_specs"): Rule("group:group_types_specs:create", A),
    ("GET", f"{G}/group_specs/{{key}}"): Rule("group:group_types_specs:get", A),
    ("PUT", f"{G}/group_specs/{{key}}"): Rule("group:group_types_specs:update", A),
    ("DELETE", f"{G}/group_specs/{{key}}"): Rule("group:group_types_specs:delete", A),
    ("POST", f"{PR}/qos-specs"): Rule("volume_extension:qos_specs_manage:create", A),
    ("GET", f"{PR}/qos-specs"): Rule("volume_extension:qos_specs_manage:get_all", A),
    ("GET", QS): Rule("volume_extension:qos_specs_manage:get", A),
    ("PUT", QS): Rule("volume_extension:qos_specs_manage:update", A),
    ("DELETE", QS): Rule("volume_extension:qos_specs_manage:delete", A),
    ("PUT", f"{QS}/delete_keys"): Rule("volume_extension:qos_specs_manage:update", A),
    ("GET", f"{QS}/associations"): Rule("volume_extension:qos_specs_manage:get", A),
    # Cinder's (state-changing) GETs, as its API has them.
    ("GET", f"{QS}/associate"): Rule("volume_extension:qos_specs_manage:update", A),
    ("GET", f"{QS}/disassociate"): Rule("volume_extension:qos_specs_manage:update", A),
    ("GET", f"{QS}/disassociate_all"): Rule("volume_extension:qos_specs_manage:update", A),
    ("POST", f"{PR}/attachments"): Rule("volume:attachment_create", M),
    ("GET", f"{PR}/attachments"): Rule("volume:attachment_get_all", R),
    ("GET", f"{PR}/attachments/detail"): Rule("volume:attachment_get_all", R),
    ("GET", AT): Rule("volume:attachment_get", R),
    ("PUT", AT): Rule("volume:attachment_update", M),
    ("DELETE", AT): Rule("volume:attachment_delete", M),
    ("POST", f"{AT}/action"): Rule("volume:attachment_complete", M),
    ("GET", Q): Rule("volume_extension:quotas:show", R),
    ("PUT", Q): Rule("volume_extension:quotas:update", A),
    ("DELETE", Q): Rule("volume_extension:quotas:delete", A),
    ("GET", f"{Q}/defaults"): Rule("volume_extension:quotas:show", R),
    ("GET", f"{PR}/limits"): Rule("limits_extension:used_limits", R),
    ("GET", f"{PR}/os-availability-zone"): Rule("volume_extension:availability_zone_list", R),
    ("GET", f"{PR}/os-services"): Rule("volume_extension:services:index", A),
    ("PUT", f"{PR}/os-services/{{action}}"): Rule("volume_extension:services:update", A),
    ("GET", f"{PR}/os-hosts"): Rule("volume_extension:hosts", A),
    ("GET", f"{PR}/os-hosts/{{host_name}}"): Rule("volume_extension:hosts", A),
    ("GET", f"{PR}/scheduler-stats/get_pools"): Rule("scheduler_extension:scheduler_stats:get_pools", A),
    ("GET", f"{PR}/capabilities/{{host}}"): Rule("volume_extension:capabilities", A),
    ("GET", f"{PR}/os-quota-class-sets/{{class_name}}"): Rule("volume_extension:quota_classes", A),
    ("PUT", f"{PR}/os-quota-class-sets/{{class_name}}"): Rule("volume_extension:quota_classes:update", A),
    ("GET", f"{PR}/extensions"): Rule("volume_extension:extensions", R),
    **{key: rule for coll in ("os-volume-transfer", "volume-transfers") for key, rule in {
        ("POST", f"{PR}/{coll}"): Rule("volume:create_transfer", M),
        ("GET", f"{PR}/{coll}"): Rule("volume:get_all_transfers", R),
        ("GET", f"{PR}/{coll}/detail"): Rule("volume:get_all_transfers", R),
        ("GET", f"{PR}/{coll}/{{transfer_id}}"): Rule("volume:get_transfer", R),
        ("DELETE", f"{PR}/{coll}/{{transfer_id}}"): Rule("volume:delete_transfer", M),
        ("POST", f"{PR}/{coll}/{{transfer_id}}/accept"): Rule("volume:accept_transfer", M),
    }.items()},
    ("GET", f"{PR}/messages"): Rule("message:get_all", R),
    ("GET", f"{PR}/messages/{{message_id}}"): Rule("message:get", R),
    ("DELETE", f"{PR}/messages/{{message_id}}"): Rule("message:delete", M),
}
