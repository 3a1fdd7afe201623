"""The network service behind the v2.0 HTTP API: quotas, visibility, binding."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus import policy
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database, fetch_all
from cirrus.network import exception as exc
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network.backends import get_backend
from cirrus.network.binding import Binder, EventSink
from cirrus.network.common import apply_filters, owned
from cirrus.network.models import (networks, ports, security_group_rules, security_groups,
                                   subnets)

QUOTA_TABLES = {"network": networks, "subnet": subnets, "port": ports,
                "security_group": security_groups, "security_group_rule": security_group_rules}
QUOTA_SETTINGS = {"network": "quota_networks", "subnet": "quota_subnets", "port": "quota_ports",
                  "security_group": "quota_security_groups",
                  "security_group_rule": "quota_security_group_rules"}


class NetworkService:
    """What the network HTTP handlers call."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        backend = get_backend(settings, None) if settings.network_backend == "noop" else None
        self.binder = Binder(db, backend)

    def set_event_sink(self, sink: EventSink) -> None:
        """Where ``network-vif-plugged`` goes (compute's external events)."""
        self.binder.event_sink = sink

    # -- quotas ----------------------------------------------------------------------
    @staticmethod
    def _used(conn: sa.Connection, resource: str, project_id: str) -> int:
        """The project's count of ``resource``: ports from their counter (kept by
        triggers, the one the boot path reads), the rest counted."""
        if resource == "port":
            return port_db.ports_of_project(conn, project_id)
        table = QUOTA_TABLES[resource]
        return conn.execute(sa.select(sa.func.count()).select_from(table).where(
            table.c.project_id == project_id)).scalar_one()

    def check_quota(self, conn: sa.Connection, resource: str, project_id: str) -> None:
        limit = int(getattr(self.settings, QUOTA_SETTINGS[resource]))
        if limit < 0:
            return
        if self._used(conn, resource, project_id) >= limit:
            raise exc.OverQuota(resource=resource)

    def quota_view(self, conn: sa.Connection, project_id: str, detail: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for resource, setting in QUOTA_SETTINGS.items():
            limit = int(getattr(self.settings, setting))
            if detail:
                out[resource] = {"limit": limit, "used": self._used(conn, resource, project_id),
                                 "reserved": 0}
            else:
                out[resource] = limit
        for extra in ("floatingip", "router", "rbac_policy", "subnetpool"):
            out[extra] = {"limit": 0, "used": 0, "reserved": 0} if detail else 0
        return out

    # -- listing ---------------------------------------------------------------------
    def list_rows(self, conn: sa.Connection, ctx: RequestContext, table: sa.Table,
                  filters: dict[str, list[str]], columns: dict[str, str],
                  visible: Any = None) -> list[dict[str, Any]]:
        q = apply_filters(sa.select(table), table, filters, columns)
        rows = fetch_all(conn, q.order_by(table.c.created_at, table.c.id))
        check = visible or owned
        return [r for r in rows if check(ctx, r)]

    # -- networks ----------------------------------------------------------------------
    async def create_network(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        if values.get("shared") or values.get("router_external") or \
                (values.get("project_id") not in (None, ctx.project_id)):
            policy.enforce(ctx, "network:admin")

        def create(conn: sa.Connection) -> dict[str, Any]:
            self.check_quota(conn, "network", values.get("project_id") or ctx.project_id)
            return net_db.create_network(conn, ctx, values)
        return await self.db.run(create)

    async def create_subnet(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        def create(conn: sa.Connection) -> dict[str, Any]:
            self.check_quota(conn, "subnet", values.get("project_id") or ctx.project_id)
            return net_db.create_subnet(conn, ctx, values)
        return await self.db.run(create)

    # -- ports -------------------------------------------------------------------------
    async def create_port(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        if values.get("binding_host_id"):
            policy.enforce(ctx, "network:admin")

        def create(conn: sa.Connection) -> dict[str, Any]:
            project = values.get("project_id") or ctx.project_id
            self.check_quota(conn, "port", project)
            groups = values.get("security_groups")
            if groups:
                values["security_groups"] = sg_db.resolve(conn, project, groups)
            default = None if groups is not None else sg_db.ensure_default(conn, project)["id"]
            return port_db.create_port(conn, ctx, values, self.settings.base_mac, default)
        port = await self.db.run(create)
        await self.binder.bound(port)
        return port

    async def update_port(self, ctx: RequestContext, port_id: str, values: dict[str, Any]) -> dict[str, Any]:
        if "binding_host_id" in values or "binding_profile" in values:
            policy.enforce(ctx, "network:admin")

        def update(conn: sa.Connection) -> tuple[dict[str, Any], dict[str, Any]]:
            if values.get("security_groups"):
                port = port_db.get_port(conn, ctx, port_id)
                values["security_groups"] = sg_db.resolve(conn, port["project_id"],
                                                          values["security_groups"])
            return port_db.update_port(conn, ctx, port_id, values)
        before, after = await self.db.run(update)
        if before["binding_host_id"] and not after["binding_host_id"]:
            await self.binder.unbound(before)
        elif after["binding_host_id"] and after["binding_host_id"] != before["binding_host_id"]:
            await self.binder.bound(after)
        return after

    async def delete_port(self, ctx: RequestContext, port_id: str) -> None:
        port = await self.db.run(port_db.delete_port, ctx, port_id)
        if port["binding_host_id"]:
            await self.binder.unbound(port)

    # -- security groups -----------------------------------------------------------
    async def create_security_group(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        def create(conn: sa.Connection) -> dict[str, Any]:
            project = values.get("project_id") or ctx.project_id
            sg_db.ensure_default(conn, project)
            self.check_quota(conn, "security_group", project)
            if values.get("name") == "default":
                raise exc.InvalidInput(reason="Default security group already exists.")
            return sg_db.create_group(conn, ctx, values.get("name", ""),
                                      values.get("description", ""), project)
        return await self.db.run(create)

    async def create_rule(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        def create(conn: sa.Connection) -> dict[str, Any]:
            group = sg_db.get_group(conn, ctx, values["security_group_id"])
            self.check_quota(conn, "security_group_rule", group["project_id"])
            return sg_db.create_rule(conn, ctx, values)
        return await self.db.run(create)


def make_network_service(settings: Settings, db: Database, transport: Any = None) -> NetworkService:
    return NetworkService(settings, db)
