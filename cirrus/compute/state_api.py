"""The compute API's guest-state actions (issue #19): lock/unlock, pause,
suspend, rescue, changePassword, security groups, restore and forceDelete.

Mixed into :class:`cirrus.compute.api.API`: each action is Nova's
``compute/api.py`` method of the same name — the lock and state checks
(``_begin_action``), the instance action recorded, then a cast to the host
(or, for lock and security groups, the change made here and now)."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.transitions import TRANSITIONS, Transition
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.exception import NotFound
from cirrus.network import exception as nexc
from cirrus.notifications import Notifier
from cirrus.policies.compute import UNLOCK_OVERRIDE
from cirrus.virt import exception as vexc

Row = dict[str, Any]


def is_expected_locked_by(ctx: RequestContext, row: Row) -> bool:
    """Whether the caller is who holds the lock (or there is none): the owner
    unlocks the owner's lock, an admin of another project an admin's."""
    expected = "owner" if row["project_id"] == ctx.project_id else "admin"
    return not row["locked_by"] or row["locked_by"] == expected


class StateActions:
    """Mixin: needs the API's db, settings, network, images, compute_rpcapi and
    notifier (the API's own notifications: lock, unlock)."""

    db: Database
    notifier: Notifier
    settings: Settings
    network: Any
    images: Any
    compute_rpcapi: ComputeAPI

    async def get(self, ctx: RequestContext, uuid: str) -> Row:
        raise NotImplementedError

    async def _begin_action(self, ctx: RequestContext, uuid: str, t: Transition) -> Row:
        raise NotImplementedError

    async def _begin(self, ctx: RequestContext, uuid: str, name: str) -> tuple[Row, str]:
        row = await self._begin_action(ctx, uuid, TRANSITIONS[name])
        return row, row["host"]

    # -- lock ------------------------------------------------------------------------
    async def lock(self, ctx: RequestContext, uuid: str, reason: str | None = None) -> None:
        """Lock the server; an owner's second lock changes nothing."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        is_owner = row["project_id"] == ctx.project_id
        if row["locked"] and is_owner:
            return
        values: dict[str, Any] = {"locked": True, "locked_by": "owner" if is_owner else "admin"}
        if reason:
            values["locked_reason"] = reason
        await self.db.run(_api_action, ctx, uuid, "lock", values)
        self.notifier.info(ctx, "compute.instance.lock", {"instance_id": uuid, "reason": reason})

    async def unlock(self, ctx: RequestContext, uuid: str) -> None:
        """Unlock the server; another's lock only with the unlock_override rule."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        if not is_expected_locked_by(ctx, row):
            policy.enforce_route(ctx, UNLOCK_OVERRIDE)
        await self.db.run(_api_action, ctx, uuid, "unlock",
                          {"locked": False, "locked_by": None, "locked_reason": None})
        self.notifier.info(ctx, "compute.instance.unlock", {"instance_id": uuid})

    # -- host actions ----------------------------------------------------------------
    async def pause(self, ctx: RequestContext, uuid: str) -> None:
        _row, host = await self._begin(ctx, uuid, "pause")
        await self.compute_rpcapi.pause_instance(ctx, host, uuid)

    async def unpause(self, ctx: RequestContext, uuid: str) -> None:
        _row, host = await self._begin(ctx, uuid, "unpause")
        await self.compute_rpcapi.unpause_instance(ctx, host, uuid)

    async def suspend(self, ctx: RequestContext, uuid: str) -> None:
        _row, host = await self._begin(ctx, uuid, "suspend")
        await self.compute_rpcapi.suspend_instance(ctx, host, uuid)

    async def resume(self, ctx: RequestContext, uuid: str) -> None:
        _row, host = await self._begin(ctx, uuid, "resume")
        await self.compute_rpcapi.resume_instance(ctx, host, uuid)

    async def rescue(self, ctx: RequestContext, uuid: str, rescue_password: str,
                     rescue_image_ref: str | None = None) -> None:
        """Start the rescue: the guest boots ``rescue_image_ref`` (else its own
        image) with ``rescue_password`` as its admin password."""
        if rescue_image_ref:
            await self._check_rescue_image(ctx, rescue_image_ref)
        _row, host = await self._begin(ctx, uuid, "rescue")
        await self.compute_rpcapi.rescue_instance(ctx, host, uuid, rescue_password,
                                                  rescue_image_ref)

    async def _check_rescue_image(self, ctx: RequestContext, image_ref: str) -> None:
        try:
            await self.images.get(ctx, image_ref)
        except NotFound:
            raise exc.UnsupportedRescueImage(image=image_ref) from None

    async def unrescue(self, ctx: RequestContext, uuid: str) -> None:
        _row, host = await self._begin(ctx, uuid, "unrescue")
        await self.compute_rpcapi.unrescue_instance(ctx, host, uuid)

    async def set_admin_password(self, ctx: RequestContext, uuid: str, password: str) -> None:
        """Ask the host to set it and wait: its driver's answer is the caller's."""
        _row, host = await self._begin(ctx, uuid, "changePassword")
        try:
            await self.compute_rpcapi.set_admin_password(ctx, host, uuid, password)
        except vexc.DriverNotImplemented:
            raise exc.SetAdminPasswordNotImplemented() from None

    async def restore(self, ctx: RequestContext, uuid: str) -> None:
        """Bring back a soft-deleted server (it still counts against the quota)."""
        _row, host = await self._begin(ctx, uuid, "restore")
        await self.compute_rpcapi.restore_instance(ctx, host, uuid)

    # -- security groups (synchronous, through the network API) -----------------------
    async def add_security_group(self, ctx: RequestContext, uuid: str, name: str) -> None:
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        await self._security_groups(ctx, row, name, add=True)

    async def remove_security_group(self, ctx: RequestContext, uuid: str, name: str) -> None:
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        await self._security_groups(ctx, row, name, add=False)

    async def _security_groups(self, ctx: RequestContext, row: Row, name: str,
                               add: bool) -> None:
        change = self.network.add_to_instance if add else self.network.remove_from_instance
        try:
            await change(ctx, row, name)
        except nexc.NoUniqueMatch as error:
            raise exc.SecurityGroupNotUnique(name=error.kwargs.get("name", name)) from None
        except nexc.SecurityGroupCannotBeApplied as error:
            raise exc.InvalidRequest(reason=error.format_message()) from None


def _api_action(conn: sa.Connection, ctx: RequestContext, uuid: str, action: str,
                values: dict[str, Any]) -> None:
    """An action done in the API (Nova's ``wrap_instance_event(prefix='api')``):
    the action, its ``api_<action>`` event and the change, in one transaction."""
    instance_actions.action_start(conn, ctx, uuid, action)
    inst.save(conn, uuid, values)
    instance_actions.record_event(conn, ctx, uuid, f"api_{action}")
    instance_actions.action_finish(conn, ctx, uuid)
