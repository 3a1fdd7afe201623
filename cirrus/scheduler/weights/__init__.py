"""Weighers return one raw number per host; the framework normalises them
(min–max to [0, 1], as Nova does), multiplies and adds. A positive multiplier
spreads (more free wins), a negative one stacks."""
from __future__ import annotations

from typing import Any

from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec


class BaseWeigher:
    name = "BaseWeigher"
    setting: str | None = None  # Settings field holding the multiplier
    # A weigher whose number is a HostState attribute names it here: the host
    # index keeps hosts ordered by it, so the best hosts are found without
    # weighing every host. None: the number depends on the request.
    attr: str | None = None

    def multiplier(self, settings: Any) -> float:
        return float(getattr(settings, self.setting)) if self.setting else 1.0

    def applies(self, spec: Spec) -> bool:
        """False when every host would get the same number for ``spec`` (it
        then adds nothing after normalisation)."""
        return True

    def weigh(self, host: HostState, spec: Spec) -> float:
        if self.attr is None:
            raise NotImplementedError
        return float(getattr(host, self.attr))


class RAMWeigher(BaseWeigher):
    name, setting, attr = "RAMWeigher", "ram_weight_multiplier", "free_ram_mb"


class CPUWeigher(BaseWeigher):
    name, setting, attr = "CPUWeigher", "cpu_weight_multiplier", "free_vcpus"


class DiskWeigher(BaseWeigher):
    name, setting, attr = "DiskWeigher", "disk_weight_multiplier", "free_disk_gb"


class IoOpsWeigher(BaseWeigher):
    """Nova's IoOpsWeigher: the host's builds in progress. With a negative
    multiplier (Nova's default -1.0) idle hosts win, so that the hosts' build
    queues stay even. Not a host-index dimension: a non-zero multiplier makes
    decisions scan every host."""

    name, setting, attr = "IoOpsWeigher", "io_ops_weight_multiplier", "num_io_ops"


class ServerGroupSoftAffinityWeigher(BaseWeigher):
    """soft-affinity: hosts with more group members weigh more;
    soft-anti-affinity: fewer."""

    name = "ServerGroupSoftAffinityWeigher"

    def applies(self, spec: Spec) -> bool:
        return spec.group_policy in ("soft-affinity", "soft-anti-affinity")

    def weigh(self, host: HostState, spec: Spec) -> float:
        count = spec.group_host_counts.get(host.host, 0)
        if spec.group_policy == "soft-affinity":
            return count
        if spec.group_policy == "soft-anti-affinity":
            return -count
        return 0.0


WEIGHERS: dict[str, type[BaseWeigher]] = {cls.name: cls for cls in (
    RAMWeigher, CPUWeigher, DiskWeigher, IoOpsWeigher, ServerGroupSoftAffinityWeigher)}


def normalize(values: list[float]) -> list[float]:
    """Min–max to [0, 1]; all-equal values become 0."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    span = high - low
    return [(v - low) / span for v in values]


def weigh_hosts(hosts: list[HostState], spec: Spec, weighers: list[BaseWeigher],
                settings: Any) -> list[tuple[float, HostState]]:
    """(weight, host) sorted best first."""
    totals = [0.0] * len(hosts)
    for weigher in weighers:
        mult = weigher.multiplier(settings)
        if mult == 0:
            continue
        for i, value in enumerate(normalize([weigher.weigh(h, spec) for h in hosts])):
            totals[i] += mult * value
    return sorted(zip(totals, hosts), key=lambda pair: -pair[0])
