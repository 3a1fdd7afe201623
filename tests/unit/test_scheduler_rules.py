"""Scheduler filters and weighers as tables."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.scheduler.filters import FILTERS
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec
from cirrus.scheduler.weights import RAMWeigher, normalize, weigh_hosts


def host(name: str = "h1", **kw: Any) -> HostState:
    values = dict(host=name, nodename=name, node_id=1, vcpus=4, memory_mb=4096, local_gb=100,
                  vcpus_used=0, memory_mb_used=0, local_gb_used=0, reserved_memory_mb=0,
                  cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0, disk_allocation_ratio=1.0,
                  cpu_arch="x86_64", hypervisor_type="fake", availability_zone="nova",
                  enabled=True, up=True)
    values.update(kw)
    return HostState(**values)


def spec(**kw: Any) -> Spec:
    values = dict(vcpus=1, memory_mb=512, disk_gb=1, availability_zone=None, image_props={})
    values.update(kw)
    return Spec(**values)


@pytest.mark.parametrize("name, h, s, passes", [
    ("RamFilter", host(memory_mb_used=3584), spec(memory_mb=512), True),
    ("RamFilter", host(memory_mb_used=3585), spec(memory_mb=512), False),
    ("RamFilter", host(memory_mb_used=4096, ram_allocation_ratio=1.5), spec(memory_mb=2048), True),
    ("CoreFilter", host(vcpus_used=4), spec(vcpus=1), False),
    ("CoreFilter", host(vcpus_used=4, cpu_allocation_ratio=2.0), spec(vcpus=4), True),
    ("DiskFilter", host(local_gb_used=99), spec(disk_gb=2), False),
    ("ComputeFilter", host(enabled=False), spec(), False),
    ("ComputeFilter", host(up=False), spec(), False),
    ("AvailabilityZoneFilter", host(availability_zone="az2"), spec(availability_zone="az1"), False),
    ("ImagePropertiesFilter", host(), spec(image_props={"architecture": "aarch64"}), False),
    ("ImagePropertiesFilter", host(), spec(image_props={"hw_architecture": "x86_64"}), True),
    ("RetryFilter", host(), spec(retry_hosts={("h1", "h1")}), False),
    ("ServerGroupAntiAffinityFilter", host(), spec(group_policy="anti-affinity",
                                                   group_host_counts={"h1": 1}), False),
    ("ServerGroupAffinityFilter", host(), spec(group_policy="affinity", group_hosts={"h2"}), False),
    ("ServerGroupAffinityFilter", host(), spec(group_policy="affinity", group_hosts=set()), True),
    ("SameHostFilter", host(), spec(same_host={"h2"}), False),
    ("DifferentHostFilter", host(), spec(different_host={"h1"}), False),
])
def test_filters(name: str, h: HostState, s: Spec, passes: bool) -> None:
    result = FILTERS[name]().host_passes(h, s)
    assert result.passed is passes
    if not passes:
        assert result.reason  # every rejection says why


def test_normalize() -> None:
    assert normalize([1, 3, 5]) == [0.0, 0.5, 1.0]
    assert normalize([2, 2]) == [0.0, 0.0]


@pytest.mark.parametrize("multiplier, winner", [(1.0, "free"), (-1.0, "full")])
def test_ram_weigher_spreads_or_stacks(multiplier: float, winner: str) -> None:
    hosts = [host("full", memory_mb_used=3000), host("free")]
    settings = type("S", (), {"ram_weight_multiplier": multiplier})()
    best = weigh_hosts(hosts, spec(), [RAMWeigher()], settings)[0][1]
    assert best.host == winner
