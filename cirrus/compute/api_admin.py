"""The compute API's reads of a guest and its host, and the admin actions:
the console output and the serial console, ``os-resetState``,
``injectNetworkInfo``, a hypervisor's uptime and the external events
(Nova's ``compute/api.py`` methods of those names).

A mixin of :class:`cirrus.compute.api.API`, kept apart so that each verb
group owns its own module. None of these moves the instance into a task
state: a read is answered by the host, a reset written here.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import VmState
from cirrus.config import Settings
from cirrus.console import tokens
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.exception import ConsoleTypeUnavailable

Row = dict[str, Any]
# Where a guest (or its log) is to be read: Nova refuses only a server on no host.
CONSOLE_STATES = frozenset(v.value for v in (VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED,
                                             VmState.SUSPENDED, VmState.RESCUED,
                                             VmState.RESIZED))


class AdminActions:
    """get_console_output, get_serial_console, get_diagnostics,
    get_instance_diagnostics, reset_state, inject_network_info,
    get_host_uptime, external_instance_event."""

    # What the compute API (cirrus/compute/api.py) gives these methods.
    settings: Settings
    db: Database
    compute_rpcapi: ComputeAPI
    get: Callable[[RequestContext, str], Awaitable[Row]]

    # -- consoles ----------------------------------------------------------------------
    async def get_console_output(self, ctx: RequestContext, uuid: str,
                                 tail_length: int | None) -> str:
        """The guest's console log (its last ``tail_length`` lines), read on its host."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        if not row["host"] or row["vm_state"] not in CONSOLE_STATES:
            raise exc.InstanceNotReady(instance_id=uuid)
        return await self.compute_rpcapi.get_console_output(ctx, row["host"], uuid, tail_length)

    async def get_serial_console(self, ctx: RequestContext, uuid: str) -> str:
        """A URL of the server's serial console through the proxy, with a new token."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        if not self.settings.serial_console_enabled:
            raise ConsoleTypeUnavailable(console_type="serial")
        if not row["host"] or row["vm_state"] != VmState.ACTIVE.value:
            raise exc.InstanceNotReady(instance_id=uuid)
        where = await self.compute_rpcapi.get_serial_console(ctx, row["host"], uuid)
        base = self.settings.serial_console_base_url
        info = tokens.ConnectInfo(instance_uuid=uuid, console_type="serial", host=where["host"],
                                  port=int(where["port"]), access_url_base=base,
                                  netns=str(where.get("netns") or ""))
        token = await self.db.run(tokens.authorize, info, self.settings.console_token_ttl)
        return f"{base}{'&' if '?' in base else '?'}token={token}"

    # -- diagnostics ---------------------------------------------------------------------
    async def _host_of(self, ctx: RequestContext, uuid: str) -> str:
        """The server's host; InstanceNotReady (409) on none (Nova's check_instance_host)."""
        row = await self.get(ctx, uuid)
        if not row["host"]:
            raise exc.InstanceNotReady(instance_id=uuid)
        return str(row["host"])

    async def get_diagnostics(self, ctx: RequestContext, uuid: str) -> dict[str, int]:
        """The hypervisor's counters of the running guest (before 2.48)."""
        return await self.compute_rpcapi.get_diagnostics(ctx, await self._host_of(ctx, uuid), uuid)

    async def get_instance_diagnostics(self, ctx: RequestContext, uuid: str) -> Row:
        """The running guest's standard diagnostics (from 2.48)."""
        host = await self._host_of(ctx, uuid)
        return await self.compute_rpcapi.get_instance_diagnostics(ctx, host, uuid)

    # -- admin actions -------------------------------------------------------------------
    async def reset_state(self, ctx: RequestContext, uuid: str, state: str) -> None:
        """Nova's ``os-resetState``: ``state`` (active or error) forced, the
        task cleared, whatever the server was doing; recorded as an action."""
        await self.get(ctx, uuid)
        await self.db.run(_reset_state, ctx, uuid, VmState(state))

    async def inject_network_info(self, ctx: RequestContext, uuid: str) -> None:
        """Nothing to push: guests read their network from DHCP and the config
        drive (libvirt's injection is a no-op too); 404 for a server the caller
        may not see."""
        await self.get(ctx, uuid)

    async def get_host_uptime(self, ctx: RequestContext, host: str) -> str:
        """Compute host ``host``'s ``uptime`` line (asked of the host itself)."""
        return await self.compute_rpcapi.get_host_uptime(ctx, host)

    # -- external events (network-vif-plugged) -------------------------------------------
    async def external_instance_event(self, ctx: RequestContext,
                                      events: list[Row]) -> list[Row]:
        """Route each event to the host of its instance; per-event status codes."""
        uuids = list({e["server_uuid"] for e in events})
        rows = {r["uuid"]: r for r in await self.db.read(inst.get_many, uuids)}
        by_host: dict[str, list[Row]] = {}
        results = []
        for event in events:
            row = rows.get(event["server_uuid"])
            result = dict(event)
            if row is None or row["deleted"]:
                result.update(code=404, status="failed")
            elif not row["host"]:
                result.update(code=422, status="failed")
            else:
                result.update(code=200, status=event.get("status", "completed"))
                by_host.setdefault(row["host"], []).append(event)
            results.append(result)
        for host, host_events in by_host.items():
            await self.compute_rpcapi.external_instance_event(ctx, host, host_events)
        return results


def _reset_state(conn: sa.Connection, ctx: RequestContext, uuid: str, state: VmState) -> None:
    inst.save(conn, uuid, {"vm_state": state, "task_state": None})
    instance_actions.action_start(conn, ctx, uuid, "resetState")
    instance_actions.action_finish(conn, ctx, uuid)
