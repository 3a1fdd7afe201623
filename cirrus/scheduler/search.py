"""The best hosts for a request through the host index: the answer filtering
and weighing every host would give, from the few dozen hosts it visits.

The full scan weighs the hosts that pass the filters: each weigher's numbers
are normalised over them (min–max), multiplied and added. With weighers whose
number is a host's free amount of something (RAM, vCPUs, disk), that weight is
a sum of one term per weigher that only grows (or, for a negative multiplier,
only falls) with the amount. So:

1. the normalisation bounds of each weigher are the least and greatest amount
   among passing hosts: two searches of the index for the first passing host
   from either end of that dimension;
2. the best ``k`` hosts then come out of one more search with the weight as
   its rank, each host checked by the filters when its turn comes.

Only hosts the index holds are candidates: those that pass the static filters
(ComputeFilter), which are exactly the hosts the full scan would keep past
them. Whatever this cannot answer — a weigher that depends on the request
(soft affinity), a search that runs over budget (a filter that rejects most of
the hosts the index offers) — returns None, and the full scan decides.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from cirrus.scheduler.filters import BaseHostFilter
from cirrus.scheduler.host_index import ATTRS, INF, HostIndex, Point, point
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.selection import FilterStep
from cirrus.scheduler.spec import Spec
from cirrus.scheduler.weights import BaseWeigher

DETAIL_HOSTS = 5  # rejected hosts kept per filter in a report
# A search over budget is work wasted before the full scan (~7 us a host)
# runs; at ~1.5 us a visit, 1/8 of the hosts wastes ~3 % of that scan at most.
# Visits grow as a cloud fills: its best hosts get used and more come close to
# the next best (the schedule benchmark at 10,000 hosts: ~100 visits at first,
# ~500 after 1,500 decisions, past the 1/32 this was).
BUDGET_MIN = 256  # visits a search may always make...
BUDGET_SHARE = 8  # ...or this share of all hosts, if more; then the full scan runs


@dataclass
class Found:
    """What a search found, and the report of what it looked at."""

    weighed: list[tuple[float, HostState]]  # best first
    complete: bool  # True: these are all the hosts that pass
    visited: int
    filters: list[FilterStep] = field(default_factory=list)


class _Checker:
    """Runs the request's filters on the hosts a search offers, once per host,
    and counts what each filter removed (the report of a search)."""

    def __init__(self, filters: Sequence[BaseHostFilter], spec: Spec) -> None:
        self.filters = filters
        self.spec = spec
        self.verdicts: dict[int, bool] = {}
        self.seen = [0] * len(filters)
        self.kept = [0] * len(filters)
        self.rejected: list[dict[str, str]] = [{} for _ in filters]

    def __call__(self, host: HostState) -> bool:
        verdict = self.verdicts.get(host.node_id)
        if verdict is not None:
            return verdict
        verdict = True
        for i, flt in enumerate(self.filters):
            self.seen[i] += 1
            result = flt.host_passes(host, self.spec)
            if not result.passed:
                if len(self.rejected[i]) < DETAIL_HOSTS:
                    self.rejected[i][host.nodename] = result.reason
                verdict = False
                break
            self.kept[i] += 1
        self.verdicts[host.node_id] = verdict
        return verdict

    def report(self) -> list[FilterStep]:
        return [{"name": f.name, "hosts_in": self.seen[i], "hosts_out": self.kept[i],
                 "rejected": self.rejected[i]} for i, f in enumerate(self.filters)]


def best_hosts(index: HostIndex, by_id: Sequence[HostState], filters: Sequence[BaseHostFilter],
               weighers: Sequence[tuple[BaseWeigher, float]], spec: Spec, k: int,
               total: int) -> Found | None:
    """The best ``k`` passing hosts with their weights, as ``weigh_hosts`` would
    weigh and order them (ties: lower node id), or None if the index cannot
    tell.

    ``filters`` are the request's filters that apply (static ones are the
    index's business), ``weighers`` those with a non-zero multiplier, in the
    full scan's order; ``by_id`` every host by node id; ``total`` the number
    of hosts (for the budget).
    """
    dims: list[tuple[int, float]] = []  # (dimension, multiplier) per weigher that counts
    for weigher, mult in weighers:
        if not weigher.applies(spec):
            continue  # the same number for every host: adds 0 after normalisation
        if weigher.attr not in ATTRS:
            return None
        dims.append((ATTRS.index(weigher.attr), mult))
    floor = [-INF] * len(ATTRS)
    for flt in filters:
        fit = flt.fit(spec)
        if fit is not None and fit[0] in ATTRS:
            d = ATTRS.index(fit[0])
            floor[d] = max(floor[d], fit[1])
    check = _Checker([f for f in filters if not f.static], spec)
    budget = max(BUDGET_MIN, total // BUDGET_SHARE)

    def extreme(d: int, sign: int) -> float | None:
        """The greatest (sign 1) or least (sign -1) amount in dimension d among
        passing hosts; None if none passes. Raises _OverBudget."""
        prefer = [0] * len(ATTRS)
        prefer[d] = sign
        got = index.search(lambda p: sign * p[d], prefer, 1, check, floor, budget,
                           ties=False)
        if got is None:
            raise _OverBudget
        return sign * got[0][0] if got else None

    # 1. normalisation bounds: terms (dimension, multiplier, low, span) in weigher order
    terms: list[tuple[int, float, float, float]] = []
    try:
        for d, mult in dims:
            high = extreme(d, 1)
            if high is None:  # nothing passes at all
                return Found([], True, len(check.verdicts), check.report())
            low = extreme(d, -1)
            assert low is not None
            if high != low:  # all-equal normalises to 0 everywhere: no term
                terms.append((d, mult, low, high - low))
    except _OverBudget:
        return None

    # 2. the best k by weight
    if not terms:
        # Every passing host weighs 0: the full scan keeps them in node-id order.
        found: list[tuple[float, HostState]] = []
        visits = 0
        for host in by_id:
            if host not in index or any(v < f for v, f in zip(point(host), floor)):
                continue
            visits += 1
            if visits > budget:
                return None
            if check(host):
                found.append((0.0, host))
                if len(found) == k:
                    break
    else:
        prefer = [0] * len(ATTRS)
        for d, mult, _, _ in terms:
            sign = 1 if mult > 0 else -1
            if prefer[d] not in (0, sign):
                return None  # two weighers pulling one amount both ways: not monotone
            prefer[d] = sign

        def weight(p: Point) -> float:
            # Exactly weigh_hosts' arithmetic: total += mult * ((v - low) / span),
            # weighers in order (terms that add 0.0 change no sum).
            total = 0.0
            for d, mult, low, span in terms:
                total += mult * ((p[d] - low) / span)
            return total

        got = index.search(weight, prefer, k, check, floor, budget)
        if got is None:
            return None
        found = got
    return Found(found, len(found) < k, len(check.verdicts), check.report())


class _OverBudget(Exception):
    pass
