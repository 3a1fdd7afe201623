"""What a build is asked to do: the request, decoded once where it arrives.

The conductor casts ``build_and_run_instance`` with the request spec, the
filter properties and the build parameters as JSON-safe dicts (their wire
shapes are the TypedDicts below). The host turns them into one frozen
:class:`BuildRequest` at the entry, and every step of the build reads that.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, TypedDict


class RequestedNetwork(TypedDict, total=False):
    """One entry of ``networks`` in the create request."""

    network_id: str | None
    port_id: str | None
    fixed_ip: str | None


class BuildParams(TypedDict, total=False):
    """The build parameters as the API casts them (injected files base64)."""

    admin_password: str | None
    injected_files: list[list[str]]  # [path, base64 contents]
    requested_networks: list[RequestedNetwork] | None
    security_groups: list[str] | None
    block_device_mapping: list[dict[str, Any]] | None


class ImageSpec(TypedDict, total=False):
    """The image as the API checked it (``records.request_spec``)."""

    id: str | None
    disk_format: str | None
    properties: dict[str, Any]


class GroupSpec(TypedDict):
    uuid: str
    policy: str


class Retry(TypedDict, total=False):
    num_attempts: int
    hosts: list[list[str | None]]
    exc_reason: str


class RequestSpec(TypedDict, total=False):
    """The request spec (``cirrus.compute.records.request_spec``) as the build reads it."""

    instance_uuids: list[str]
    num_instances: int
    flavor: dict[str, Any]
    image: ImageSpec
    project_id: str | None
    user_id: str | None
    availability_zone: str | None
    force_hosts: list[str]
    force_nodes: list[str]
    requested_destination: dict[str, str | None] | None
    scheduler_hints: dict[str, Any]
    instance_group: GroupSpec | None
    retry: Retry
    is_bfv: bool  # the root is a volume: no root disk claimed on the host (issue 20)


class FilterProperties(TypedDict, total=False):
    scheduler_hints: dict[str, Any]
    retry: Retry


@dataclass(frozen=True)
class BuildRequest:
    """One instance's build on this host, decoded from the cast."""

    instance_uuid: str
    node: str | None
    request_spec: RequestSpec
    filter_properties: FilterProperties
    injected_files: list[tuple[str, bytes]]
    admin_password: str | None
    requested_networks: list[RequestedNetwork] | None
    security_groups: list[str] | None
    # The parameters as they came, handed on unchanged by a reschedule.
    wire_params: BuildParams = field(repr=False, compare=False,
                                     default_factory=lambda: BuildParams())

    @classmethod
    def from_cast(cls, instance_uuid: str, node: str | None, request_spec: RequestSpec,
                  filter_properties: FilterProperties, params: BuildParams) -> BuildRequest:
        """The request of a ``build_and_run_instance`` cast (files decoded here, once)."""
        return cls(instance_uuid=instance_uuid, node=node, request_spec=request_spec,
                   filter_properties=filter_properties,
                   injected_files=[(path, base64.b64decode(data))
                                   for path, data in params.get("injected_files") or []],
                   admin_password=params.get("admin_password"),
                   requested_networks=params.get("requested_networks"),
                   security_groups=params.get("security_groups") or None,
                   wire_params=params)

    @property
    def in_group(self) -> bool:
        """Whether the API placed the instance in a server group."""
        return bool(self.request_spec.get("instance_group"))

    def retried_from(self, host: str, node: str, reason: str) -> FilterProperties | None:
        """The filter properties of a reschedule away from ``host``/``node``, a
        new value (this request's stays as it came); None without retry info."""
        retry = self.filter_properties.get("retry")
        if not retry:
            return None
        new_retry: Retry = {**retry, "hosts": [*retry.get("hosts", []), [host, node]],
                            "num_attempts": retry.get("num_attempts", 1) + 1,
                            "exc_reason": reason}
        return {**self.filter_properties, "retry": new_retry}
