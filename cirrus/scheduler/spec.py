"""The request spec as the filters and weighers read it, computed once per request."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Spec:
    vcpus: int
    memory_mb: int
    disk_gb: int
    availability_zone: str | None
    image_props: dict[str, Any]
    retry_hosts: set[tuple[str, str]] = field(default_factory=set)
    force_hosts: list[str] = field(default_factory=list)
    force_nodes: list[str] = field(default_factory=list)
    requested_host: str | None = None  # requested_destination (2.74): filters still run
    requested_node: str | None = None
    group_policy: str | None = None
    group_hosts: set[str] = field(default_factory=set)  # hosts of the group's members
    group_host_counts: dict[str, int] = field(default_factory=dict)
    same_host: set[str] | None = None  # hosts of the hinted instances
    different_host: set[str] = field(default_factory=set)
    max_server_per_host: int | None = None
    project_id: str | None = None  # AggregateMultiTenancyIsolation
    extra_specs: dict[str, str] = field(default_factory=dict)  # AggregateInstanceExtraSpecsFilter

    @classmethod
    def from_request(cls, request_spec: dict[str, Any]) -> "Spec":
        flavor = request_spec["flavor"]
        retry = request_spec.get("retry") or {}
        # A volume-backed server's root is in block storage, not on the host.
        root_gb = 0 if request_spec.get("is_bfv") else int(flavor.get("root_gb") or 0)
        disk = root_gb + int(flavor.get("ephemeral_gb") or 0)
        disk += -(-int(flavor.get("swap") or 0) // 1024)
        destination = request_spec.get("requested_destination") or {}
        return cls(vcpus=int(flavor["vcpus"]), memory_mb=int(flavor["memory_mb"]), disk_gb=disk,
                   availability_zone=request_spec.get("availability_zone"),
                   image_props=(request_spec.get("image") or {}).get("properties") or {},
                   retry_hosts={(h, n) for h, n in retry.get("hosts", [])},
                   force_hosts=list(request_spec.get("force_hosts") or []),
                   force_nodes=list(request_spec.get("force_nodes") or []),
                   requested_host=destination.get("host"),
                   requested_node=destination.get("node"),
                   group_policy=((request_spec.get("instance_group") or {}).get("policy")),
                   project_id=request_spec.get("project_id"),
                   extra_specs=dict(flavor.get("extra_specs") or {}))

    def chose(self, host: str) -> None:
        """An instance of this request went to ``host`` (for group policies)."""
        self.group_hosts.add(host)
        self.group_host_counts[host] = self.group_host_counts.get(host, 0) + 1
