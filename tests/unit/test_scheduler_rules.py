"""Scheduler filters and weighers as tables; the host index against the full scan."""
from __future__ import annotations

import random
from typing import Any

import pytest

from cirrus.config import Settings
from cirrus.scheduler.filters import FILTERS
from cirrus.scheduler.host_manager import HostManager
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.manager import INDEX_MIN_HOSTS, FilterScheduler
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


# -- the host index decides as the full scan does --------------------------------
#
# Random clouds and requests, with few distinct amounts (so that many hosts tie)
# and every filter and weigher in play: the index's best hosts must be the full
# scan's first ones, with the same weights in the same order (ties by node id).


def random_host(rng: random.Random, node_id: int) -> HostState:
    vcpus, memory, disk = rng.choice([8, 16, 32]), rng.choice([4096, 8192, 16384]), rng.choice([100, 200])
    return host(f"h{node_id}", node_id=node_id, vcpus=vcpus, memory_mb=memory, local_gb=disk,
                vcpus_used=rng.randrange(0, vcpus + 1, 2), memory_mb_used=rng.randrange(0, memory + 1, 2048),
                local_gb_used=rng.choice([0, 20, 60, disk]), reserved_memory_mb=rng.choice([0, 0, 512]),
                cpu_allocation_ratio=rng.choice([1.0, 4.0]), ram_allocation_ratio=rng.choice([1.0, 1.5]),
                cpu_arch=rng.choice(["x86_64", "x86_64", "aarch64"]),
                availability_zone=rng.choice(["nova", "nova", "az2"]),
                enabled=rng.random() > 0.1, up=rng.random() > 0.1)


def random_spec(rng: random.Random, hosts: list[HostState]) -> Spec:
    names = [h.host for h in hosts]
    s = spec(vcpus=rng.choice([1, 2, 4]), memory_mb=rng.choice([512, 2048, 8192]),
             disk_gb=rng.choice([1, 20, 80]), availability_zone=rng.choice([None, None, "az2"]),
             image_props=rng.choice([{}, {}, {"architecture": "aarch64"}]))
    s.retry_hosts = {(n, n) for n in rng.sample(names, min(len(names), rng.choice([0, 2])))}
    s.different_host = set(rng.sample(names, min(len(names), rng.choice([0, 0, 3]))))
    policy = rng.choice([None, None, "anti-affinity", "soft-affinity", "soft-anti-affinity"])
    if policy:
        s.group_policy = policy
        for name in rng.sample(names, min(len(names), 3)):
            s.chose(name)
    return s


def schedulers(rng: random.Random, hosts: list[HostState]) -> tuple[FilterScheduler, FilterScheduler]:
    """(through the index, full scan), over the same hosts and settings."""
    settings = Settings(host_subset_size=rng.choice([1, 3]),
                        ram_weight_multiplier=rng.choice([-1.0, 0.0, 1.0, 2.5]),
                        cpu_weight_multiplier=rng.choice([-2.0, 0.0, 0.5, 1.0]),
                        disk_weight_multiplier=rng.choice([-1.0, 0.0, 1.0]))
    hm = HostManager(settings, db=None)  # type: ignore[arg-type]  # no DB: hosts given
    indexed = FilterScheduler(settings, None, hm, index_min_hosts=0)  # type: ignore[arg-type]
    hm.load(hosts)
    return indexed, FilterScheduler(settings, None, hm, use_index=False)  # type: ignore[arg-type]


def assert_same_choice(indexed: FilterScheduler, full: FilterScheduler, s: Spec) -> None:
    got, want = indexed._choose(s, False), full._choose(s, False)
    pairs = [(w, h.node_id) for w, h in got.weighed]
    assert pairs == [(w, h.node_id) for w, h in want.weighed][:len(pairs)]
    if got.complete:
        assert len(got.weighed) == len(want.weighed)
    else:
        assert len(got.weighed) >= indexed.settings.host_subset_size


@pytest.mark.parametrize("seed", range(60))
def test_index_chooses_as_the_full_scan(seed: int) -> None:
    rng = random.Random(seed)
    hosts = [random_host(rng, i) for i in range(1, rng.choice([1, 5, 40, 300, 1500]) + 1)]
    indexed, full = schedulers(rng, hosts)
    hm = indexed.host_manager
    for _ in range(8):
        s = random_spec(rng, hosts)
        assert_same_choice(indexed, full, s)
        # What decisions and looks do between two requests: claims taken in,
        # hosts going down or disabled, usage read back lower.
        for h in rng.sample(hosts, min(len(hosts), 20)):
            change = rng.random()
            if change < 0.5:
                hm.consume(h.node_id, s.vcpus, s.memory_mb, s.disk_gb)
                continue
            if change < 0.7:
                h.up = not h.up
            elif change < 0.8:
                h.enabled = not h.enabled
            else:
                h.memory_mb_used = max(0, h.memory_mb_used - 4096)
            hm.index.update(h)


def test_a_small_cloud_is_scanned_and_a_larger_one_searched_through_the_index() -> None:
    rng = random.Random(7)
    for count, through_index in ((INDEX_MIN_HOSTS - 1, False), (INDEX_MIN_HOSTS * 4, True)):
        hosts = [random_host(rng, i) for i in range(1, count + 1)]
        settings = Settings()
        hm = HostManager(settings, db=None)  # type: ignore[arg-type]
        scheduler = FilterScheduler(settings, None, hm)  # type: ignore[arg-type]
        hm.load(hosts)
        choice = scheduler._choose(spec(), False)
        # The full scan looks at every host; the index at fewer.
        assert (choice.scanned < count) is through_index, (count, choice.scanned)
        assert choice.weighed


def test_index_keeps_node_id_order_among_ties() -> None:
    hosts = [host(f"h{i}", node_id=i) for i in (3, 1, 2)]
    indexed, full = schedulers(random.Random(0), sorted(hosts, key=lambda h: h.node_id))
    got = indexed._choose(spec(), False)
    assert [h.node_id for _, h in got.weighed] == [1, 2, 3]
    assert_same_choice(indexed, full, spec())
