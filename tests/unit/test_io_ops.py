"""Builds in progress (Nova's num_io_ops): IoOpsFilter, IoOpsWeigher, and the
host manager's count going up with a claim and down with a look."""
from __future__ import annotations

import time

import pytest

from cirrus.config import Settings
from cirrus.scheduler.filters import DEFAULT_FILTERS, FILTERS, enabled
from cirrus.scheduler.filters.resources import IoOpsFilter
from cirrus.scheduler.host_manager import Changes, HostManager
from cirrus.scheduler.manager import FilterScheduler
from cirrus.scheduler.weights import IoOpsWeigher, weigh_hosts
from tests.unit.test_scheduler_rules import host, spec


@pytest.mark.parametrize("io_ops, limit, passes", [
    (0, 8, True), (7, 8, True), (8, 8, False), (9, 8, False), (1, 1, False), (0, 1, True)])
def test_io_ops_filter(io_ops: int, limit: int, passes: bool) -> None:
    result = IoOpsFilter(limit).host_passes(host(num_io_ops=io_ops), spec())
    assert result.passed is passes
    assert passes or "io ops" in result.reason


def test_io_ops_filter_is_opt_in_and_takes_its_limit_from_settings() -> None:
    assert "IoOpsFilter" in FILTERS and "IoOpsFilter" not in DEFAULT_FILTERS
    names = enabled("ComputeFilter, IoOpsFilter")
    sched = FilterScheduler(Settings(max_io_ops_per_host=3), None,  # type: ignore[arg-type]
                            HostManager(Settings(), db=None), names)  # type: ignore[arg-type]
    (flt,) = [f for f in sched.filters if f.name == "IoOpsFilter"]
    assert isinstance(flt, IoOpsFilter) and flt.max_io_ops_per_host == 3
    assert sched.host_manager.count_io_ops  # the filter needs the count


def test_count_is_read_only_when_something_uses_it() -> None:
    hm = HostManager(Settings(), db=None)  # type: ignore[arg-type]
    FilterScheduler(Settings(), None, hm)  # type: ignore[arg-type]
    assert not hm.count_io_ops  # Nova's weigher is off by default here: nothing read
    hm2 = HostManager(Settings(), db=None)  # type: ignore[arg-type]
    FilterScheduler(Settings(io_ops_weight_multiplier=-1.0), None, hm2)  # type: ignore[arg-type]
    assert hm2.count_io_ops


@pytest.mark.parametrize("multiplier, winner", [(-1.0, "idle"), (1.0, "busy")])
def test_io_ops_weigher(multiplier: float, winner: str) -> None:
    hosts = [host("busy", node_id=1, num_io_ops=5), host("idle", node_id=2, num_io_ops=1)]
    weighed = weigh_hosts(hosts, spec(), [IoOpsWeigher()],
                          Settings(io_ops_weight_multiplier=multiplier))
    assert weighed[0][1].host == winner


def test_scheduler_spreads_by_builds_in_progress_where_ram_ties() -> None:
    """Equal free RAM: the full scan's tie goes to the lower node id; with the
    weigher, to the host with fewer builds in progress, whichever the index
    or the full scan decides."""
    settings = Settings(io_ops_weight_multiplier=-1.0)
    for use_index in (True, False):
        hm = HostManager(settings, db=None)  # type: ignore[arg-type]
        sched = FilterScheduler(settings, None, hm, use_index=use_index,  # type: ignore[arg-type]
                                index_min_hosts=0)
        hm.load([host("h1", node_id=1, num_io_ops=3), host("h2", node_id=2, num_io_ops=0),
                 host("h3", node_id=3, num_io_ops=1)])
        assert sched._choose(spec(), False).weighed[0][1].host == "h2"
    plain = HostManager(Settings(), db=None)  # type: ignore[arg-type]
    sched = FilterScheduler(Settings(), None, plain, index_min_hosts=0)  # type: ignore[arg-type]
    plain.load([host("h1", node_id=1, num_io_ops=3), host("h2", node_id=2, num_io_ops=0)])
    assert sched._choose(spec(), False).weighed[0][1].host == "h1"  # off: RAM ties by id


def _changes(hm: HostManager, io_ops: dict[str, int] | None) -> Changes:
    return Changes([], [], hm._shape, None, io_ops)


def test_claim_counts_up_and_a_look_brings_it_down() -> None:
    hm = HostManager(Settings(), db=None)  # type: ignore[arg-type]
    hm.load([host("h1", node_id=1), host("h2", node_id=2)])
    before = time.monotonic()
    hm.consume(1, 1, 512, 1)
    hm.consume(1, 1, 512, 1)
    assert hm.by_node[1].num_io_ops == 2
    # A look that began before our claims: its count may predate them, kept.
    assert hm._apply(_changes(hm, {}), before)
    assert hm.by_node[1].num_io_ops == 2
    # A later look: one build still BUILDING (the other went ACTIVE, ERROR
    # or was deleted: no longer counted), h2's count read as it is.
    assert hm._apply(_changes(hm, {"h1": 1, "h2": 4}), time.monotonic())
    assert (hm.by_node[1].num_io_ops, hm.by_node[2].num_io_ops) == (1, 4)
    # Every build ended: the nodes missing from the count are back to 0.
    assert hm._apply(_changes(hm, {}), time.monotonic())
    assert (hm.by_node[1].num_io_ops, hm.by_node[2].num_io_ops) == (0, 0)


def test_a_look_without_the_count_leaves_it_alone() -> None:
    hm = HostManager(Settings(), db=None)  # type: ignore[arg-type]
    hm.load([host("h1", node_id=1, num_io_ops=2)])
    assert hm._apply(_changes(hm, None), time.monotonic())
    assert hm.by_node[1].num_io_ops == 2
