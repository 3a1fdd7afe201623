"""RAM, vCPU and disk with allocation ratios; builds in progress."""
from __future__ import annotations

from typing import Any

from cirrus.scheduler.filters.base import PASS, BaseHostFilter, FilterResult
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec


class RamFilter(BaseHostFilter):
    name = "RamFilter"

    def fit(self, spec: Spec) -> tuple[str, float] | None:
        return "free_ram_mb", spec.memory_mb

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        free = host.free_ram_mb
        if free < spec.memory_mb:
            return FilterResult.reject(f"ram: {free:.0f} MiB free < {spec.memory_mb} requested")
        return PASS


class CoreFilter(BaseHostFilter):
    name = "CoreFilter"

    def fit(self, spec: Spec) -> tuple[str, float] | None:
        return "free_vcpus", spec.vcpus

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        free = host.free_vcpus
        if free < spec.vcpus:
            return FilterResult.reject(f"vcpus: {free:.0f} free < {spec.vcpus} requested")
        return PASS


class DiskFilter(BaseHostFilter):
    name = "DiskFilter"

    def fit(self, spec: Spec) -> tuple[str, float] | None:
        return "free_disk_gb", spec.disk_gb

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        free = host.free_disk_gb
        if free < spec.disk_gb:
            return FilterResult.reject(f"disk: {free:.0f} GiB free < {spec.disk_gb} requested")
        return PASS


class IoOpsFilter(BaseHostFilter):
    """Nova's IoOpsFilter: hosts with ``max_io_ops_per_host`` builds in
    progress or more are filtered out (opt-in: name it in enabled_filters).
    Not static: the count moves with every claim and every build's end, and
    the host index keeps no such dimension."""

    name = "IoOpsFilter"

    def __init__(self, max_io_ops_per_host: int = 8) -> None:
        self.max_io_ops_per_host = max_io_ops_per_host

    @classmethod
    def from_settings(cls, settings: Any) -> "IoOpsFilter":
        return cls(settings.max_io_ops_per_host)

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if host.num_io_ops >= self.max_io_ops_per_host:
            return FilterResult.reject(
                f"io ops: {host.num_io_ops} builds in progress >= {self.max_io_ops_per_host}")
        return PASS
