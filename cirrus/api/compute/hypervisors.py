"""``os-hypervisors`` (admin): the compute nodes and their usage."""
from __future__ import annotations

import asyncio

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import query_boolean
from cirrus.api.wsgi import context, reply
from cirrus.compute import hosts
from cirrus.compute.exception import ComputeServiceUnavailable
from cirrus.exception import NotFound

Version = tuple[int, int]


class HypervisorNotFound(NotFound):
    msg_fmt = "Hypervisor %(id)s could not be found."



def _basic(node: dict[str, Any], version: Version, down: float) -> dict[str, Any]:
    svc = node["service"] or {}
    return {"id": node["uuid"] if version >= (2, 53) else node["id"],
            "hypervisor_hostname": node["hypervisor_hostname"],
            "state": "up" if svc and hosts.is_up(svc, down) else "down",
            "status": "disabled" if svc.get("disabled") else "enabled"}


def _detail(node: dict[str, Any], version: Version, down: float,
            uptime: str | None = None) -> dict[str, Any]:
    """The detail view; from 2.88 with ``uptime`` (None for a host that is down)."""
    svc = node["service"] or {}
    out = _basic(node, version, down)
    out.update({"host_ip": node["host_ip"], "hypervisor_type": node["hypervisor_type"],
                "hypervisor_version": node["hypervisor_version"],
                "service": {"host": node["host"],
                            "id": svc.get("uuid") if version >= (2, 53) else svc.get("id"),
                            "disabled_reason": svc.get("disabled_reason")}})
    if version < (2, 88):
        free_ram = node["memory_mb"] - node["memory_mb_used"]
        free_disk = node["local_gb"] - node["local_gb_used"]
        out.update({"vcpus": node["vcpus"], "memory_mb": node["memory_mb"],
                    "local_gb": node["local_gb"], "vcpus_used": node["vcpus_used"],
                    "memory_mb_used": node["memory_mb_used"], "local_gb_used": node["local_gb_used"],
                    "free_ram_mb": free_ram, "free_disk_gb": free_disk, "current_workload": 0,
                    "running_vms": node["running_vms"], "disk_available_least": free_disk,
                    "cpu_info": {"arch": node["cpu_arch"]} if version >= (2, 28) else
                    f'{{"arch": "{node["cpu_arch"]}"}}'})
    else:
        out["uptime"] = uptime if out["state"] == "up" else None
    return out


class VersionNotFound(NotFound):
    """A route this microversion no longer has (Nova's plain 404)."""

    msg_fmt = "The resource could not be found."


class HypervisorPatternNotFound(NotFound):
    msg_fmt = "No hypervisor matching '%(pattern)s' could be found."


async def _nodes(request: Request, pattern: str | None = None) -> list[dict[str, Any]]:
    """Every compute node, or those whose name holds ``pattern`` (404 when none:
    a search that finds nothing is not found, as Nova's)."""
    policy.enforce(context(request), "compute:hypervisors")
    nodes = await request.app.state.db.read(hosts.list_nodes)
    if pattern is None:
        return nodes
    found = [n for n in nodes if pattern in n["hypervisor_hostname"]]
    if not found:
        raise HypervisorPatternNotFound(pattern=pattern[:255])
    return found


def _with_servers(request: Request, version: Version) -> bool:
    """2.53's ``?with_servers=``."""
    value = request.query_params.get("with_servers")
    return version >= (2, 53) and value is not None and query_boolean(value, "with_servers")


async def _servers(request: Request, nodes: list[dict[str, Any]], views: list[dict[str, Any]],
                   always: bool) -> None:
    """Add each hypervisor's ``servers`` (present though empty when ``always``, 2.75)."""
    on = await request.app.state.db.read(hosts.servers_on_nodes,
                                         [n["hypervisor_hostname"] for n in nodes])
    for node, view in zip(nodes, views):
        servers = on.get(node["hypervisor_hostname"], [])
        if servers or always:
            view["servers"] = servers


async def _listing(request: Request, viewer: Any) -> Response:
    down, version = request.app.state.settings.service_down_time, api_version(request)
    pattern = request.query_params.get("hypervisor_hostname_pattern") \
        if version >= (2, 53) else None
    nodes = await _nodes(request, pattern)
    views = [viewer(n, version, down) for n in nodes]
    if viewer is _detail and version >= (2, 88):
        uptimes = await asyncio.gather(*(_uptime_or_none(request, n) for n in nodes))
        for view, line in zip(views, uptimes):
            view["uptime"] = line
    if _with_servers(request, version):
        await _servers(request, nodes, views, version >= (2, 75))
    return reply({"hypervisors": views})


async def index(request: Request) -> Response:
    return await _listing(request, _basic)


async def detail(request: Request) -> Response:
    return await _listing(request, _detail)


async def _node(request: Request) -> dict[str, Any]:
    ident = request.path_params["hypervisor_id"]
    for node in await _nodes(request):
        if ident in (str(node["id"]), node["uuid"]):
            return node
    raise HypervisorNotFound(id=ident[:255])


async def _uptime(request: Request, node: dict[str, Any]) -> str:
    """The node's host's ``uptime`` line; 400 when its compute service is down."""
    if _basic(node, (2, 1), request.app.state.settings.service_down_time)["state"] != "up":
        raise ComputeServiceUnavailable(host=node["host"])
    return await request.app.state.compute_api.get_host_uptime(context(request), node["host"])


async def _uptime_or_none(request: Request, node: dict[str, Any]) -> str | None:
    """The 2.88 detail views' ``uptime``: None while the host's service is down."""
    try:
        return await _uptime(request, node)
    except ComputeServiceUnavailable:
        return None


async def show(request: Request) -> Response:
    down, version = request.app.state.settings.service_down_time, api_version(request)
    node = await _node(request)
    view = _detail(node, version, down)
    if version >= (2, 88):
        view["uptime"] = await _uptime_or_none(request, node)
    if _with_servers(request, version):
        await _servers(request, [node], [view], version >= (2, 75))
    return reply({"hypervisor": view})


async def uptime(request: Request) -> Response:
    """``/os-hypervisors/{id}/uptime`` (2.1–2.87; show carries it from 2.88)."""
    version = api_version(request)
    if version >= (2, 88):
        raise VersionNotFound()
    node = await _node(request)
    view = _basic(node, version, request.app.state.settings.service_down_time)
    view["uptime"] = await _uptime(request, node)
    return reply({"hypervisor": view})


async def search(request: Request) -> Response:
    """``/os-hypervisors/{pattern}/search`` (2.1–2.52)."""
    version = api_version(request)
    if version >= (2, 53):
        raise VersionNotFound()
    down = request.app.state.settings.service_down_time
    nodes = await _nodes(request, request.path_params["pattern"])
    return reply({"hypervisors": [_basic(n, version, down) for n in nodes]})


async def servers(request: Request) -> Response:
    """``/os-hypervisors/{pattern}/servers`` (2.1–2.52): matching hypervisors
    with their servers (the key absent where there are none)."""
    version = api_version(request)
    if version >= (2, 53):
        raise VersionNotFound()
    down = request.app.state.settings.service_down_time
    nodes = await _nodes(request, request.path_params["pattern"])
    views = [_basic(n, version, down) for n in nodes]
    await _servers(request, nodes, views, always=False)
    return reply({"hypervisors": views})


async def statistics(request: Request) -> Response:
    nodes = await _nodes(request)

    def total(key: str) -> int:
        return sum(n[key] for n in nodes)
    return reply({"hypervisor_statistics": {
        "count": len(nodes), "vcpus": total("vcpus"), "vcpus_used": total("vcpus_used"),
        "memory_mb": total("memory_mb"), "memory_mb_used": total("memory_mb_used"),
        "free_ram_mb": total("memory_mb") - total("memory_mb_used"),
        "local_gb": total("local_gb"), "local_gb_used": total("local_gb_used"),
        "free_disk_gb": total("local_gb") - total("local_gb_used"),
        "disk_available_least": total("local_gb") - total("local_gb_used"),
        "current_workload": 0, "running_vms": total("running_vms")}})


ROUTES = [
    Route("/v2.1/os-hypervisors", index, methods=["GET"]),
    Route("/v2.1/os-hypervisors/detail", detail, methods=["GET"]),
    Route("/v2.1/os-hypervisors/statistics", statistics, methods=["GET"]),
    Route("/v2.1/os-hypervisors/{hypervisor_id}", show, methods=["GET"]),
    Route("/v2.1/os-hypervisors/{hypervisor_id}/uptime", uptime, methods=["GET"]),
    Route("/v2.1/os-hypervisors/{pattern}/search", search, methods=["GET"]),
    Route("/v2.1/os-hypervisors/{pattern}/servers", servers, methods=["GET"]),
]
