"""``/os-networks`` and ``/os-tenant-networks`` (2.1–2.35): Nova's deprecated
proxies to the network service's networks, read-only, in nova-network's
shapes (``nova/api/openstack/compute/networks.py``, ``tenant_networks.py``).
The caller sees what the network API would show it: its own networks and the
shared or external ones, every network for an admin."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import until
from cirrus.api.wsgi import context, reply
from cirrus.context import RequestContext
from cirrus.exception import NotFound
from cirrus.network import networks as net_db
from cirrus.network.exception import NetworkNotFound
from cirrus.network.models import networks

LAST_VERSION = (2, 35)  # Nova's MAX_PROXY_API_SUPPORT_VERSION: 404 from 2.36
# nova-network's fields: Neutron has none of them, so Nova shows each as null;
# an admin sees the second set as well.
FIELDS = ("cidr", "netmask", "gateway", "broadcast", "dns1", "dns2", "cidr_v6", "gateway_v6",
          "netmask_v6")
ADMIN_FIELDS = ("created_at", "updated_at", "deleted_at", "deleted", "injected", "bridge", "vlan",
                "vpn_public_address", "vpn_public_port", "vpn_private_address", "dhcp_start",
                "project_id", "host", "bridge_interface", "multi_host", "priority", "rxtx_base",
                "mtu", "dhcp_server", "enable_dhcp", "share_address")


class NetworkProxyNotFound(NotFound):
    msg_fmt = "Network not found"


def network_dict(row: dict[str, Any], is_admin: bool) -> dict[str, Any]:
    """Nova's ``os-networks`` view of a network: its id and name (as
    ``label``), every nova-network field null."""
    fields = FIELDS + ADMIN_FIELDS if is_admin else FIELDS
    return {"id": row["id"], "label": row["name"], **dict.fromkeys(fields)}


def tenant_network_dict(row: dict[str, Any]) -> dict[str, Any]:
    """Nova's ``os-tenant-networks`` view: ``cidr`` is the text "None" there."""
    return {"id": row["id"], "cidr": "None", "label": row["name"]}


def _visible(conn: sa.Connection, ctx: RequestContext) -> list[dict[str, Any]]:
    query = sa.select(networks).order_by(networks.c.created_at, networks.c.id)
    clause = net_db.visible_networks_clause(ctx)
    if clause is not None:
        query = query.where(clause)
    return [dict(r) for r in conn.execute(query).mappings()]


def _one(conn: sa.Connection, ctx: RequestContext, net_id: str) -> dict[str, Any]:
    try:
        return net_db.get_network(conn, ctx, net_id)
    except NetworkNotFound as e:
        raise NetworkProxyNotFound() from e


async def index(request: Request) -> Response:
    until(request, LAST_VERSION)
    ctx = context(request)
    rows = await request.app.state.db.read(_visible, ctx)
    return reply({"networks": [network_dict(r, ctx.is_admin) for r in rows]})


async def show(request: Request) -> Response:
    until(request, LAST_VERSION)
    ctx = context(request)
    row = await request.app.state.db.read(_one, ctx, request.path_params["network_id"])
    return reply({"network": network_dict(row, ctx.is_admin)})


async def tenant_index(request: Request) -> Response:
    until(request, LAST_VERSION)
    rows = await request.app.state.db.read(_visible, context(request))
    return reply({"networks": [tenant_network_dict(r) for r in rows]})


async def tenant_show(request: Request) -> Response:
    until(request, LAST_VERSION)
    row = await request.app.state.db.read(_one, context(request),
                                          request.path_params["network_id"])
    return reply({"network": tenant_network_dict(row)})


ROUTES = [
    Route("/v2.1/os-networks", index, methods=["GET"]),
    Route("/v2.1/os-networks/{network_id}", show, methods=["GET"]),
    Route("/v2.1/os-tenant-networks", tenant_index, methods=["GET"]),
    Route("/v2.1/os-tenant-networks/{network_id}", tenant_show, methods=["GET"]),
]
