"""What ``select_destinations`` answers (Nova's ``Selection`` objects, as JSON)."""
from __future__ import annotations

from typing import Any, TypedDict


class Destination(TypedDict):
    """Where one instance goes; its resources are claimed there already."""

    host: str
    nodename: str
    node_id: int


class Selection(TypedDict):
    """A destination per instance, in request order, and the filter report
    the decision was made on (recorded on the instance action's event)."""

    destinations: list[Destination]
    decision: dict[str, Any]
