"""What ``select_destinations`` answers (Nova's ``Selection`` objects, as JSON)."""
from __future__ import annotations

from typing import TypedDict


class FilterStep(TypedDict):
    """What one filter did to the hosts it was given."""

    name: str
    hosts_in: int
    hosts_out: int
    rejected: dict[str, str]  # a few of the nodes it rejected → why


class Weighed(TypedDict):
    host: str  # the node's name
    weight: float


class Decision(TypedDict):
    """How a host was chosen: the filters in turn, the best weights."""

    filters: list[FilterStep]
    hosts: int  # there were to choose from
    scanned: int  # looked at (the host index skips most)
    weighed: list[Weighed]


class Destination(TypedDict):
    """Where one instance goes; its resources are claimed there already."""

    host: str
    nodename: str
    node_id: int
    availability_zone: str  # the host's (its aggregate's, or the default)


class Selection(TypedDict):
    """A destination per instance, in request order, and the filter report
    the decision was made on (recorded on the instance action's event)."""

    destinations: list[Destination]
    decision: Decision | None  # None when no instance was asked for
