"""``/servers/{id}/os-interface``: list, show, attach, detach a server's ports."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.server_schema import _networks
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import NotFound, ValidationError


class PortNotAttached(NotFound):
    msg_fmt = "Port %(port_id)s is not attached to server %(server_id)s"


def view(port: dict[str, Any]) -> dict[str, Any]:
    return {"port_id": port["id"], "net_id": port["network_id"], "mac_addr": port["mac_address"],
            "port_state": port["status"],
            "fixed_ips": [{"subnet_id": ip["subnet_id"], "ip_address": ip["ip_address"]}
                          for ip in port["fixed_ips"]]}


async def _ports(request: Request) -> list[dict[str, Any]]:
    ctx = context(request)
    row = await request.app.state.compute_api.get(ctx, request.path_params["server_id"])
    return await request.app.state.compute_api.network.list_ports(ctx, row["uuid"])


async def index(request: Request) -> Response:
    return reply({"interfaceAttachments": [view(p) for p in await _ports(request)]})


async def show(request: Request) -> Response:
    for port in await _ports(request):
        if port["id"] == request.path_params["port_id"]:
            return reply({"interfaceAttachment": view(port)})
    raise PortNotAttached(port_id=request.path_params["port_id"],
                          server_id=request.path_params["server_id"])


def parse_attach(body: Any, version: tuple[int, int]) -> dict[str, Any]:
    """``POST os-interface`` body (Nova's attach_interfaces ``create``
    schema) → a requested network as ``POST /servers`` has them."""
    data = body.get("interfaceAttachment") if isinstance(body, dict) else None
    allowed = {"net_id", "port_id", "fixed_ips"} | ({"tag"} if version >= (2, 49) else set())
    if not isinstance(data, dict) or set(data) - allowed:
        raise ValidationError(field="interfaceAttachment",
                              reason=f"an object with only {', '.join(sorted(allowed))}")
    fixed_ips = data.get("fixed_ips")
    fixed = None
    if fixed_ips is not None:
        if not isinstance(fixed_ips, list) or len(fixed_ips) != 1 or \
                not isinstance(fixed_ips[0], dict) or set(fixed_ips[0]) != {"ip_address"}:
            raise ValidationError(field="interfaceAttachment/fixed_ips",
                                  reason="a list of one object with ip_address (only)")
        fixed = fixed_ips[0]["ip_address"]
    entry: dict[str, Any] = {"uuid": data.get("net_id"), "port": data.get("port_id"),
                             "fixed_ip": fixed}
    if "tag" in data:
        entry["tag"] = data["tag"]
    return _networks([{k: v for k, v in entry.items() if v is not None}], version)[0]


async def attach(request: Request) -> Response:
    ctx = context(request)
    request_ = parse_attach(await json_body(request), api_version(request))
    server_id = request.path_params["server_id"]
    port_id = await request.app.state.compute_api.attach_interface(ctx, server_id, request_)
    for port in await request.app.state.compute_api.network.list_ports(ctx, server_id):
        if port["id"] == port_id:
            return reply({"interfaceAttachment": view(port)})
    raise PortNotAttached(port_id=port_id, server_id=server_id)


async def detach(request: Request) -> Response:
    ctx = context(request)
    server_id, port_id = request.path_params["server_id"], request.path_params["port_id"]
    if port_id not in {p["id"] for p in await _ports(request)}:
        raise PortNotAttached(port_id=port_id, server_id=server_id)
    await request.app.state.compute_api.detach_interface(ctx, server_id, port_id)
    return Response(status_code=202)


ROUTES = [
    Route("/v2.1/servers/{server_id}/os-interface", index, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/os-interface", attach, methods=["POST"]),
    Route("/v2.1/servers/{server_id}/os-interface/{port_id}", show, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/os-interface/{port_id}", detach, methods=["DELETE"]),
]
