"""Assisted volume snapshots (Nova's ``os-assisted-volume-snapshots``): a
block storage driver that keeps volumes as files on a share (Cinder's
remote-filesystem drivers) asks the host running the server to snapshot an
attached volume, because only the hypervisor may change the file the guest
writes to. The API finds the server from the volume's mapping, checks it is
on a host and doing nothing else, and casts the work to that host; the host
reports the outcome to block storage (``os-update_snapshot_status``).
"""
from __future__ import annotations

from typing import Any

from cirrus.compute import bdms as bdm_db
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.context import RequestContext
from cirrus.db.engine import Database

Row = dict[str, Any]


class AssistedSnapshotActions:
    """Mixin: needs the API's db and compute_rpcapi."""

    db: Database
    compute_rpcapi: ComputeAPI

    async def _snapshot_target(self, volume_id: str, method: str) -> Row:
        """The instance the volume is attached to, ready for ``method``:
        400 if it is attached nowhere, to several servers, to a server on no
        host or busy with a task (Nova's ``get_by_volume`` and its checks)."""
        if len(volume_id) > 36 or "\x00" in volume_id:  # no volume id: no mapping
            raise exc.VolumeNotMapped(volume_id=volume_id[:36])

        def load(conn: Any) -> Row:
            mappings = bdm_db.for_volume(conn, volume_id)
            if not mappings:
                raise exc.VolumeNotMapped(volume_id=volume_id)
            if len(mappings) > 1:
                raise exc.VolumeBDMIsMultiAttach(volume_id=volume_id)
            try:
                return inst.get(conn, mappings[0]["instance_uuid"])
            except exc.InstanceNotFound:
                raise exc.VolumeNotMapped(volume_id=volume_id) from None
        row = await self.db.read(load)
        if not row["host"]:
            raise exc.SnapshotInstanceNotReady(method=method, instance_uuid=row["uuid"],
                                               why="on no host")
        if row["task_state"] is not None:
            raise exc.SnapshotInstanceNotReady(method=method, instance_uuid=row["uuid"],
                                               why=f"in task_state {row['task_state']}")
        return row

    async def volume_snapshot_create(self, ctx: RequestContext, volume_id: str,
                                     create_info: dict[str, Any]) -> dict[str, Any]:
        """Ask the server's host to snapshot the volume as ``create_info``
        says; Nova's answer (``id``: the ``id`` of ``create_info``, if any)."""
        row = await self._snapshot_target(volume_id, "volume_snapshot_create")
        await self.compute_rpcapi.volume_snapshot_create(ctx, row["host"], row["uuid"],
                                                         volume_id, create_info)
        return {"id": create_info.get("id"), "volumeId": volume_id}

    async def volume_snapshot_delete(self, ctx: RequestContext, volume_id: str,
                                     snapshot_id: str, delete_info: dict[str, Any]) -> None:
        """Ask the server's host to merge snapshot ``snapshot_id`` away."""
        row = await self._snapshot_target(volume_id, "volume_snapshot_delete")
        await self.compute_rpcapi.volume_snapshot_delete(ctx, row["host"], row["uuid"],
                                                         volume_id, snapshot_id, delete_info)
