"""The instance records a compute host works on: reads and guarded saves.

A collaborator handed to each verb (build, power, delete, rebuild, …) instead
of the database itself: a verb says what it reads and which transition it
makes; each call is one transaction. For several changes that must commit
together a verb passes a function to :meth:`run`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypedDict, TypeVar

import sqlalchemy as sa

from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.queries import cached_network_info
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.network.model import VIF

T = TypeVar("T")
Instance = dict[str, Any]  # an instances row, as cirrus.compute.instance.get reads it


class BlockDeviceInfo(TypedDict):
    """What a virt driver is told about an instance's disks."""

    block_device_mapping: list[dict[str, Any]]
    root_device_name: str


def block_device_info(bdms: list[dict[str, Any]]) -> BlockDeviceInfo:
    """The block device info of ``bdms`` (the instance's mappings)."""
    return {"block_device_mapping": bdms, "root_device_name": "/dev/vda"}


@dataclass(frozen=True)
class InstanceStore:
    """Instance reads and writes of one compute host (``host``)."""

    db: Database
    host: str

    async def get(self, uuid: str, *, read_deleted: bool = False) -> Instance:
        """The instance; InstanceNotFound if it is gone (or deleted, unless asked)."""
        return await self.db.read(inst.get, uuid, read_deleted=read_deleted)

    async def save(self, uuid: str, values: dict[str, Any], **expected: Any) -> dict[str, Any]:
        """A guarded save (see :func:`cirrus.compute.instance.save` for ``expected``)."""
        return await self.db.run(inst.save, uuid, values, **expected)

    async def block_device_info(self, uuid: str) -> BlockDeviceInfo:
        """The instance's block device info, from its mappings."""
        return block_device_info(await self.db.read(inst.bdms, uuid))

    async def cached_network_info(self, uuid: str) -> list[VIF]:
        """The instance's network info cache (no call to the network service)."""
        return await self.db.read(cached_network_info, uuid)

    async def event_start(self, ctx: RequestContext, uuid: str, event: str) -> int | None:
        """Open the instance-action event ``event`` of the request, on this host."""
        return await self.db.run(instance_actions.event_start, ctx, uuid, event, self.host)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(conn, *args, **kwargs)`` in one write transaction."""
        return await self.db.run(fn, *args, **kwargs)

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(conn, *args, **kwargs)`` in one read transaction."""
        return await self.db.read(fn, *args, **kwargs)


def finish_action(conn: sa.Connection, ctx: RequestContext, uuid: str, event_id: int | None,
                  error: BaseException | None = None) -> None:
    """Close the event and the request's action (with "Error" when ``error``)."""
    instance_actions.event_finish(conn, event_id, exc=error)
    instance_actions.action_finish(conn, ctx, uuid, message="Error" if error else None)
