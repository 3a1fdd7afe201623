"""Changing a server's tags (Nova's ``ServerTagsController``): each change in
one transaction with the check that the server is in a state that allows it.

Who may see the server is the caller's business (``API.get`` first, 404);
this module only says whether its state allows the change (409) and makes it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import tags
from cirrus.compute.states import VmState
from cirrus.db.engine import Database

# Nova lets tags change only in these states (not while building or deleted).
TAGGABLE = frozenset({VmState.ACTIVE.value, VmState.PAUSED.value, VmState.SUSPENDED.value,
                      VmState.STOPPED.value})
T = TypeVar("T")


def _in_taggable_state(conn: sa.Connection, uuid: str, action: str) -> None:
    row = inst.get(conn, uuid)
    if row["vm_state"] not in TAGGABLE:
        raise exc.InstanceInvalidState(method=action, instance_uuid=uuid, attr="vm_state",
                                       state=row["vm_state"])


async def _change(db: Database, uuid: str, action: str, change: Callable[[sa.Connection], T]) -> T:
    def run(conn: sa.Connection) -> T:
        _in_taggable_state(conn, uuid, action)
        return change(conn)
    return await db.run(run)


async def update_all(db: Database, uuid: str, new_tags: list[str]) -> list[str]:
    """Replace the server's tags; the tags it has now."""
    return await _change(db, uuid, "update tags",
                         lambda conn: tags.instance_tag_set(conn, uuid, new_tags))


async def update(db: Database, uuid: str, tag: str) -> bool:
    """Add one tag; whether it was new."""
    return await _change(db, uuid, "update tag",
                         lambda conn: tags.instance_tag_add(conn, uuid, tag))


async def delete(db: Database, uuid: str, tag: str) -> None:
    await _change(db, uuid, "delete tag", lambda conn: tags.instance_tag_delete(conn, uuid, tag))


async def delete_all(db: Database, uuid: str) -> None:
    await _change(db, uuid, "delete tags",
                  lambda conn: tags.instance_tag_delete_all(conn, uuid))
