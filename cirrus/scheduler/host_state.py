"""What the scheduler knows about one compute node."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(slots=True)
class HostState:
    host: str
    nodename: str
    node_id: int
    vcpus: int
    memory_mb: int
    local_gb: int
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    reserved_memory_mb: int
    cpu_allocation_ratio: float
    ram_allocation_ratio: float
    disk_allocation_ratio: float
    cpu_arch: str
    hypervisor_type: str
    availability_zone: str
    enabled: bool
    up: bool
    running_vms: int = 0
    # The service's heartbeat, kept so that ``up`` can turn False as time
    # passes without the row changing (the host manager re-evaluates it).
    forced_down: bool = False
    last_seen_up: dt.datetime | None = None
    # Nova's ``aggregate_metadata_get_by_host``: each key of the host's
    # aggregates with every value (comma-separated values split), for the
    # aggregate filters; loaded with the host, never read per request.
    aggregate_metadata: dict[str, frozenset[str]] = field(default_factory=dict)
    # Nova's num_io_ops: builds in progress on the node (instances placed on
    # it still BUILDING), counted at each look when IoOpsWeigher or
    # IoOpsFilter is in use; a claim adds one at once.
    num_io_ops: int = 0

    @property
    def free_ram_mb(self) -> float:
        return (self.memory_mb - self.reserved_memory_mb) * self.ram_allocation_ratio - self.memory_mb_used

    @property
    def free_vcpus(self) -> float:
        return self.vcpus * self.cpu_allocation_ratio - self.vcpus_used

    @property
    def free_disk_gb(self) -> float:
        return self.local_gb * self.disk_allocation_ratio - self.local_gb_used

    def consume(self, vcpus: int, memory_mb: int, disk_gb: int) -> None:
        """Account locally for a claim just made in the database."""
        self.vcpus_used += vcpus
        self.memory_mb_used += memory_mb
        self.local_gb_used += disk_gb
        self.running_vms += 1
        self.num_io_ops += 1
