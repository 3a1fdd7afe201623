"""RAM, vCPU and disk with allocation ratios."""
from __future__ import annotations

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
