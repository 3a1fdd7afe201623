"""The network service behind the v2.0 HTTP API: quotas, visibility, binding.

Every write is checked here, whoever calls: roles and ownership by
``authz``, values by ``schema`` (the handlers parse) and ``subnet_rules``."""
from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database, fetch_all
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network import quotas
from cirrus.network import security_groups as sg_db
from cirrus.network import tags
from cirrus.network.backends import get_backend
from cirrus.network.binding import Binder, EventSink
from cirrus.network.l3.router_ports import prevent_l3_port_deletion
from cirrus.network.common import apply_filters, own_rows_clause
from cirrus.network.models import (networks, ports, security_group_rules, security_groups,
                                   subnets)
from cirrus.network.segments import PROVIDER_KEYS, SegmentConfig, requested_segment

Creator = Callable[[sa.Connection], dict[str, Any]]


class NetworkService:
    """What the network HTTP handlers call."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.segments = SegmentConfig.from_settings(settings)
        backend = get_backend(settings, None) if settings.network_backend == "noop" else None
        self.binder = Binder(db, backend)

    def set_event_sink(self, sink: EventSink) -> None:
        """Where ``network-vif-plugged`` goes (compute's external events)."""
        self.binder.event_sink = sink

    def check_quota(self, conn: sa.Connection, resource: str, project_id: str) -> None:
        quotas.check(conn, self.settings, resource, project_id)

    # -- listing ---------------------------------------------------------------------
    def list_rows(self, conn: sa.Connection, ctx: RequestContext, table: sa.Table,
                  filters: dict[str, list[str]], columns: dict[str, str],
                  visible: Any = None, where: Any = None) -> list[dict[str, Any]]:
        """The rows of ``table`` the caller may see (``visible``: the WHERE clause
        saying which, default its project's), filtered (``where``: a clause of
        the caller's too): scoped in the query, so another project's rows are
        never read."""
        q = apply_filters(sa.select(table), table, filters, columns)
        clause = visible if visible is not None else own_rows_clause(ctx, table)
        for extra in (clause, where):
            if extra is not None:
                q = q.where(extra)
        return fetch_all(conn, q.order_by(table.c.created_at, table.c.id))

    # -- networks ----------------------------------------------------------------------
    async def create_network(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        return await self.db.run(self.network_creator(ctx, values))

    def network_creator(self, ctx: RequestContext, values: dict[str, Any]) -> Creator:
        """The unit of work creating network ``values`` once the caller may: of
        the caller's project (or, for an admin, the one named) on its own
        segment, the ``provider:*`` one an admin names, else the tenant type's
        next free one."""
        values = dict(values)
        provider = {key: values.pop(key) for key in PROVIDER_KEYS if key in values}
        for column in ("shared", "router_external", *provider):
            if values.get(column) or column in provider:
                authz.admin_only(ctx, f"create_network:{column}")
        segment = requested_segment(self.segments, provider)
        project = authz.owner_of_new(ctx, values, "network")

        def create(conn: sa.Connection) -> dict[str, Any]:
            self.check_quota(conn, "network", project)
            row = net_db.create_network(conn, ctx, {**values, "project_id": project},
                                        self.segments, segment)
            return _tagged(conn, "network", row, values)
        return create

    async def update_network(self, ctx: RequestContext, net_id: str,
                             values: dict[str, Any]) -> dict[str, Any]:
        for column in ("shared", "router_external"):
            if column in values:
                authz.admin_only(ctx, f"update_network:{column}")
        return await self.db.run(net_db.update_network, ctx, net_id, values, self.segments)

    async def delete_network(self, ctx: RequestContext, net_id: str) -> None:
        await self.db.run(net_db.delete_network, ctx, net_id)

    # -- subnets -----------------------------------------------------------------------
    async def create_subnet(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        return await self.db.run(self.subnet_creator(ctx, values))

    def subnet_creator(self, ctx: RequestContext, values: dict[str, Any]) -> Creator:
        """The unit of work creating subnet ``values``, once the caller may."""
        project = authz.owner_of_new(ctx, values, "subnet")

        def create(conn: sa.Connection) -> dict[str, Any]:
            network = net_db.get_network(conn, ctx, values["network_id"])
            authz.check_network_use(ctx, network, project, "subnet")
            self.check_quota(conn, "subnet", project)
            row = net_db.create_subnet(conn, ctx, {**values, "project_id": project}, network)
            return _tagged(conn, "subnet", row, values)
        return create

    async def update_subnet(self, ctx: RequestContext, subnet_id: str,
                            values: dict[str, Any]) -> None:
        await self.db.run(net_db.update_subnet, ctx, subnet_id, values)

    async def delete_subnet(self, ctx: RequestContext, subnet_id: str) -> None:
        await self.db.run(net_db.delete_subnet, ctx, subnet_id)

    # -- ports -------------------------------------------------------------------------
    async def create_port(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        port = await self.db.run(self.port_creator(ctx, values))
        await self.binder.bound(port)
        return port

    def port_creator(self, ctx: RequestContext, values: dict[str, Any]) -> Creator:
        """The unit of work creating port ``values``, once the caller may; the
        caller tells the binder about the port after it commits."""
        for column, name in (("binding_host_id", "binding:host_id"),
                             ("binding_profile", "binding:profile")):
            if values.get(column):
                authz.admin_only(ctx, f"create_port:{name}")
        project = authz.owner_of_new(ctx, values, "port")

        def create(conn: sa.Connection) -> dict[str, Any]:
            network = net_db.get_network(conn, ctx, values["network_id"])
            authz.check_network_use(ctx, network, project, "port")
            authz.check_port_fields(ctx, network, values, creating=True)
            authz.check_device(conn, ctx, {**values, "project_id": project}, creating=True)
            self.check_quota(conn, "port", project)
            groups = values.get("security_groups")
            checked = {**values, "project_id": project}
            if groups:
                checked["security_groups"] = sg_db.resolve(conn, project, groups)
            default = None if groups is not None else sg_db.ensure_default(conn, project)["id"]
            row = port_db.create_port(conn, ctx, checked, self.settings.base_mac, default,
                                      network=network)
            return _tagged(conn, "port", row, values)
        return create

    async def update_port(self, ctx: RequestContext, port_id: str, values: dict[str, Any]) -> dict[str, Any]:
        for column, name in (("binding_host_id", "binding:host_id"),
                             ("binding_profile", "binding:profile")):
            if column in values:
                authz.admin_only(ctx, f"update_port:{name}")

        def update(conn: sa.Connection) -> tuple[dict[str, Any], dict[str, Any]]:
            port = port_db.get_port(conn, ctx, port_id)
            authz.enforce(ctx, "network:update", "port", port)
            network = net_db.network_by_id(conn, port["network_id"]) or {}
            authz.check_port_fields(ctx, network, values, creating=False)
            if "device_id" in values or "device_owner" in values:
                authz.check_device(conn, ctx, {**port, **values}, creating=False)
            checked = dict(values)
            if values.get("security_groups"):
                checked["security_groups"] = sg_db.resolve(conn, port["project_id"],
                                                           values["security_groups"])
            return port_db.update_port(conn, ctx, port_id, checked)
        before, after = await self.db.run(update)
        if before["binding_host_id"] and not after["binding_host_id"]:
            await self.binder.unbound(before)
        elif after["binding_host_id"] and after["binding_host_id"] != before["binding_host_id"]:
            await self.binder.bound(after)
        return after

    async def delete_port(self, ctx: RequestContext, port_id: str) -> None:
        def delete(conn: sa.Connection) -> dict[str, Any]:
            row = port_db.get_port(conn, ctx, port_id)
            authz.enforce(ctx, "network:delete", "port", row)
            prevent_l3_port_deletion(row)
            return port_db.delete_port_row(conn, row)
        port = await self.db.run(delete)
        if port["binding_host_id"]:
            await self.binder.unbound(port)

    # -- security groups -----------------------------------------------------------
    async def create_security_group(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        project = authz.owner_of_new(ctx, values, "security_group")

        def create(conn: sa.Connection) -> dict[str, Any]:
            sg_db.ensure_default(conn, project)
            self.check_quota(conn, "security_group", project)
            if values.get("name") == "default":
                raise exc.SecurityGroupDefaultAlreadyExists()
            row = sg_db.create_group(conn, ctx, values.get("name", ""),
                                     values.get("description", ""), project)
            return _tagged(conn, "security_group", row, values)
        return await self.db.run(create)

    async def update_security_group(self, ctx: RequestContext, group_id: str,
                                    values: dict[str, Any]) -> dict[str, Any]:
        def update(conn: sa.Connection) -> dict[str, Any]:
            row = sg_db.get_group(conn, ctx, group_id)
            authz.enforce(ctx, "network:update", "security_group", row)
            if row["name"] == "default" and values.get("name", "default") != "default":
                raise exc.InvalidInput(reason="Updating default security group name not allowed.")
            if row["name"] != "default" and values.get("name") == "default":
                raise exc.SecurityGroupDefaultAlreadyExists()  # one default per project
            if values:
                conn.execute(security_groups.update().where(
                    security_groups.c.id == row["id"]).values(**values))
            return sg_db.get_group(conn, ctx, row["id"])
        return await self.db.run(update)

    async def delete_security_group(self, ctx: RequestContext, group_id: str) -> None:
        def delete(conn: sa.Connection) -> None:
            row = sg_db.get_group(conn, ctx, group_id)
            authz.enforce(ctx, "network:delete", "security_group", row)
            sg_db.delete_group(conn, ctx, row["id"])
        await self.db.run(delete)

    async def create_rule(self, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
        authz.owner_of_new(ctx, values, "security_group_rule")

        def create(conn: sa.Connection) -> dict[str, Any]:
            group = sg_db.get_group(conn, ctx, values["security_group_id"])
            authz.enforce(ctx, "network:create", "security_group_rule", group)
            self.check_quota(conn, "security_group_rule", group["project_id"])
            return sg_db.create_rule(conn, ctx, values)
        return await self.db.run(create)

    async def delete_rule(self, ctx: RequestContext, rule_id: str) -> None:
        def delete(conn: sa.Connection) -> None:
            row = sg_db.get_rule(conn, ctx, rule_id)
            authz.enforce(ctx, "network:delete", "security_group_rule", row)
            conn.execute(security_group_rules.delete().where(security_group_rules.c.id == row["id"]))
        await self.db.run(delete)


def _tagged(conn: sa.Connection, kind: str, row: dict[str, Any],
            values: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the tags asked for on create (``tag-creation``) set."""
    row["tags"] = tags.add_tags(conn, kind, row["id"], values["tags"]) if values.get("tags") else []
    return row


def make_network_service(settings: Settings, db: Database, transport: Any = None) -> NetworkService:
    return NetworkService(settings, db)
