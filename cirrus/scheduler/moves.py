"""Claims for an instance that moves (resize, migration, live migration,
evacuation): Nova's ``move_allocations`` then a claim on the destination, in
the scheduler's one transaction.

The instance's claim on its source is re-owned by the migration's uuid, then
the instance claims the destination; if no destination fits, the source claim
goes back to the instance, so a failed move leaves the claims as they were.
An evacuation gives the source claim back at once (its host is down; the
guest left behind is destroyed when the host returns).
"""
from __future__ import annotations

from typing import Any, TypedDict

import sqlalchemy as sa

from cirrus import claims
from cirrus.scheduler.spec import Spec


class MoveSpec(TypedDict):
    """The ``move`` entry of a request spec."""

    migration_uuid: str
    release_source: bool


def move_of(request_spec: dict[str, Any]) -> MoveSpec | None:
    """The request's move, if it is one."""
    return request_spec.get("move")


def claim_move(conn: sa.Connection, instance_uuid: str, node_ids: list[int], spec: Spec,
               complete: bool = True, twin: bool = False, *, move: MoveSpec
               ) -> tuple[int | None, str, list[int]]:
    """Like the boot's ``_claim_first`` (same answer shape), for a move."""
    migration = move["migration_uuid"]
    if claims.held(conn, migration) is None:
        claims.move(conn, instance_uuid, migration)
    else:
        # A second delivery: the first one may have claimed the destination.
        held = claims.held(conn, instance_uuid)
        if held is not None:
            if held in node_ids:
                return held, "held", []
            claims.release(conn, instance_uuid)
    failed: list[int] = []
    for node_id in node_ids:
        try:
            claimed = claims.claim(conn, node_id, instance_uuid, spec.vcpus, spec.memory_mb,
                                   spec.disk_gb)
        except claims.AlreadyClaimed:
            held = claims.held(conn, instance_uuid)
            return (held, "held", failed) if held in node_ids else (None, "twin", failed)
        if claimed:
            if move["release_source"]:
                claims.release(conn, migration)
            return node_id, "new", failed
        failed.append(node_id)
    claims.move(conn, migration, instance_uuid)
    return None, "full", failed
