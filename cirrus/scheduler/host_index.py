"""The host index: eligible hosts grouped by their free resources, so that a
decision looks at a few dozen hosts instead of all of them.

It is a tree of boxes over each host's point (free RAM, free vCPUs, free disk).
Leaves hold up to ``LEAF`` hosts that were close to each other when the tree
was built; every tree node keeps the least and the greatest free amounts of the
*eligible* hosts below it (hosts that pass every static filter: enabled and
up). Those boxes are kept exact: a change to a host re-computes its leaf and
the ancestors whose box moved. Which leaf a host sits in is fixed when the tree
is built; a host that becomes ineligible stays there without counting, one that
drifts far from its neighbours only makes its leaf's box larger (still right,
a little less selective) until the next build.

:meth:`HostIndex.search` walks the tree best first. A tree node ranks as its
best corner would, which bounds every host below it as long as the rank never
drops when an amount moves the preferred way; so hosts come out in rank order,
and equal ranks in node-id order (a tree node knows the least node id below
it), as the full scan orders them.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Optional

from cirrus.scheduler.host_state import HostState

ATTRS = ("free_ram_mb", "free_vcpus", "free_disk_gb")  # the dimensions, in this order
LEAF = 8  # hosts per leaf: each opened leaf ranks all of its hosts
INF = math.inf
EMPTY = [INF, INF, INF, -INF, -INF, -INF]  # the box of no host

Point = tuple[float, float, float]


def point(host: HostState) -> Point:
    """The host's free amounts, read exactly as filters and weighers read them."""
    return (host.free_ram_mb, host.free_vcpus, host.free_disk_gb)


class _Node:
    """A box over the eligible hosts below: ``box`` is [lo, lo, lo, hi, hi, hi]
    in ATTRS order (one flat list: searches read it a lot)."""

    __slots__ = ("box", "first", "parent", "kids", "hosts")

    def __init__(self, kids: Sequence["_Node"] = (), hosts: Sequence[HostState] = ()) -> None:
        self.box = list(EMPTY)
        self.parent: Optional[_Node] = None
        self.kids = tuple(kids)
        self.hosts = list(hosts)
        # Least node id below: ties in rank are broken by it, so that it must
        # be a lower bound only (it never changes after the build).
        self.first: int = min([h.node_id for h in self.hosts] + [k.first for k in self.kids])
        for kid in self.kids:
            kid.parent = self


class HostIndex:
    """Eligible hosts by free resources; see the module docstring."""

    def __init__(self, hosts: Iterable[HostState],
                 eligible: Callable[[HostState], bool]) -> None:
        self._eligible = eligible
        self._points: dict[int, Point | None] = {}  # None: not eligible now
        self._leaf: dict[int, _Node] = {}
        hosts = list(hosts)
        for host in hosts:
            self._points[host.node_id] = point(host) if eligible(host) else None
        self.size = sum(p is not None for p in self._points.values())  # eligible hosts
        self._root = self._build(hosts)

    # -- building ---------------------------------------------------------

    def _build(self, hosts: list[HostState]) -> _Node | None:
        """Sort-tile-recursive: slabs by free RAM, each cut into slices by free
        vCPUs, each into leaves by free disk; then pairs of neighbours up to
        the root. Three sorts instead of one per tree level."""
        if not hosts:
            return None
        slabs = max(1, round((len(hosts) / LEAF) ** (1 / len(ATTRS))))
        keyed = [(point(h), h) for h in hosts]
        groups = [keyed]
        for dim in range(len(ATTRS)):
            cut: list[list[tuple[Point, HostState]]] = []
            for group in groups:
                group = sorted(group, key=lambda ph: (ph[0][dim], ph[1].node_id))
                size = LEAF if dim == len(ATTRS) - 1 else math.ceil(len(group) / slabs)
                cut.extend(group[i:i + size] for i in range(0, len(group), size))
            groups = cut
        level = [_Node(hosts=[h for _, h in group]) for group in groups]
        for leaf in level:
            for host in leaf.hosts:
                self._leaf[host.node_id] = leaf
            self._fit_leaf(leaf)
        while len(level) > 1:
            level = [self._fit_parent(_Node(kids=level[i:i + 2]))
                     for i in range(0, len(level), 2)]
        return level[0]

    def _fit_leaf(self, leaf: _Node) -> bool:
        """Re-compute a leaf's box from its hosts; True if it changed."""
        box = list(EMPTY)
        for host in leaf.hosts:
            p = self._points[host.node_id]
            if p is None:
                continue
            for d in range(3):
                if p[d] < box[d]:
                    box[d] = p[d]
                if p[d] > box[d + 3]:
                    box[d + 3] = p[d]
        changed = box != leaf.box
        leaf.box = box
        return changed

    @staticmethod
    def _fit_parent(node: _Node) -> _Node:
        boxes = [k.box for k in node.kids]
        node.box = [min(b[i] for b in boxes) for i in range(3)] + [
            max(b[i] for b in boxes) for i in range(3, 6)]
        return node

    # -- keeping it current ------------------------------------------------

    def __contains__(self, host: HostState) -> bool:
        """Whether ``host`` is eligible (as of its last update)."""
        return self._points.get(host.node_id) is not None

    def knows(self, node_id: int) -> bool:
        """Whether the tree was built with this node (else: rebuild)."""
        return node_id in self._leaf

    def update(self, host: HostState) -> None:
        """Take in a change of ``host``'s state (resources, service state)."""
        new = point(host) if self._eligible(host) else None
        old = self._points[host.node_id]
        if new == old:
            return
        self._points[host.node_id] = new
        self.size += (new is not None) - (old is not None)
        node: _Node | None = self._leaf[host.node_id]
        if not self._fit_leaf(node):  # type: ignore[arg-type]
            return
        node = node.parent  # type: ignore[union-attr]
        while node is not None:
            box = node.box
            if self._fit_parent(node).box == box:
                break  # nothing above can change either
            node = node.parent

    # -- searching ---------------------------------------------------------

    def search(self, rank: Callable[[Point], float], prefer: Sequence[int], k: int,
               accept: Callable[[HostState], bool], floor: Sequence[float], budget: int,
               ties: bool = True) -> list[tuple[float, HostState]] | None:
        """Up to ``k`` eligible hosts that ``accept`` takes, best ``rank`` first,
        or None when that takes more than ``budget`` visits (a tree node opened
        or a host offered to ``accept``).

        ``prefer[d]`` is +1 when ``rank`` grows with dimension d, -1 when it
        falls, 0 when it ignores it. ``floor[d]`` is the least amount a host
        needs in dimension d to have any chance with ``accept``: boxes and
        hosts below it are skipped unseen. ``ties``: equal ranks come in
        node-id order (else in any order, which is cheaper when many hosts
        share a rank and only the rank matters).
        """
        found: list[tuple[float, HostState]] = []
        root = self._root
        if root is None or self.size == 0:
            return found
        # A box's best corner: its lo or hi entry per dimension. Three
        # dimensions spelt out: this loop is the scheduler's hot path.
        c0, c1, c2 = (d if prefer[d] < 0 else d + 3 for d in range(3))
        f0, f1, f2 = floor
        # Heap entries (-rank, tie, kind, seq, item). With ties, a tree node
        # (kind 0) ranks by the least node id below it and comes before a host
        # (kind 1) of equal rank and id. Without, hosts come first and the
        # latest entry next (depth first: straight down to some host of that
        # rank, not across every box that has one).
        node_kind, host_kind = (0, 1) if ties else (1, 0)
        step = 1 if ties else -1
        box = root.box
        heap: list[tuple[float, int, int, int, object]] = [
            (-rank((box[c0], box[c1], box[c2])), root.first if ties else 0, node_kind, 0, root)]
        points = self._points
        push, pop = heapq.heappush, heapq.heappop
        seq, visits = step, 0
        while heap and len(found) < k:
            neg, _, kind, _, item = pop(heap)
            visits += 1
            if visits > budget:
                return None
            if kind == host_kind:
                if accept(item):  # type: ignore[arg-type]
                    found.append((-neg, item))  # type: ignore[arg-type]
                continue
            for kid in item.kids:  # type: ignore[attr-defined]
                box = kid.box
                if box[3] < box[0] or box[3] < f0 or box[4] < f1 or box[5] < f2:
                    continue  # no eligible host below, or none that could fit
                push(heap, (-rank((box[c0], box[c1], box[c2])), kid.first if ties else 0,
                            node_kind, seq, kid))
                seq += step
            for h in item.hosts:  # type: ignore[attr-defined]
                p = points[h.node_id]
                if p is None or p[0] < f0 or p[1] < f1 or p[2] < f2:
                    continue
                push(heap, (-rank(p), h.node_id if ties else 0, host_kind, seq, h))
                seq += step
        return found
