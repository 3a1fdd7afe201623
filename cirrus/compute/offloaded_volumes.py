"""Attaching and detaching a volume of a shelved-offloaded server (Nova's
``_attach_volume_shelved_offloaded`` / ``_detach_volume_shelved_offloaded``).

The server is on no host, so nothing is plugged: the attach is recorded (the
mapping, the attachment completed: the volume ``in-use``) and unshelve exports
and plugs it on the host it lands on (``BootVolumes.prep``); the detach deletes
the attachment and the mapping here, and the volume too when it was to be
deleted with the server.
"""
from __future__ import annotations

from cirrus.compute import bdms as bdm_db
from cirrus.compute.bdms import Bdm
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.volume.cinder import VolumeAPI


async def attach(ctx: RequestContext, db: Database, volume_api: VolumeAPI, bdm: Bdm) -> None:
    """The reserved volume marked in use; on a failure the attachment and
    the mapping are gone (the volume available again) and the error raised."""
    try:
        await volume_api.attachment_complete(ctx, bdm["attachment_id"])
    except BaseException:
        try:
            await volume_api.attachment_delete(ctx, bdm["attachment_id"])
        finally:
            await db.run(bdm_db.destroy, bdm["id"])
        raise


async def detach(ctx: RequestContext, db: Database, volume_api: VolumeAPI, bdm: Bdm) -> None:
    """The volume released (deleted if ``delete_on_termination``), the mapping gone."""
    if bdm.get("attachment_id"):
        await volume_api.attachment_delete(ctx, bdm["attachment_id"])
    await db.run(bdm_db.destroy, bdm["id"])
    if bdm["delete_on_termination"]:
        await volume_api.delete(ctx, bdm["volume_id"])
