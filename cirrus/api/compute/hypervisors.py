"""``os-hypervisors`` (admin): the compute nodes and their usage."""
from __future__ import annotations

import datetime as dt
import os
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, reply
from cirrus.compute import hosts
from cirrus.exception import CirrusException, Invalid, NotFound

Version = tuple[int, int]


class HypervisorNotFound(NotFound):
    msg_fmt = "Hypervisor %(id)s could not be found."


class NotImplementedYet(CirrusException):
    code = 501
    msg_fmt = "Feature not supported with instances that have this host's driver."


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


async def _nodes(request: Request) -> list[dict[str, Any]]:
    policy.enforce(context(request), "compute:hypervisors")
    nodes = await request.app.state.db.read(hosts.list_nodes)
    pattern = request.query_params.get("hypervisor_hostname_pattern")
    if pattern:
        nodes = [n for n in nodes if pattern in n["hypervisor_hostname"]]
    return nodes


async def index(request: Request) -> Response:
    down, version = request.app.state.settings.service_down_time, api_version(request)
    return reply({"hypervisors": [_basic(n, version, down) for n in await _nodes(request)]})


async def detail(request: Request) -> Response:
    down, version = request.app.state.settings.service_down_time, api_version(request)
    uptime = _uptime_or_none() if version >= (2, 88) else None
    return reply({"hypervisors": [_detail(n, version, down, uptime)
                                  for n in await _nodes(request)]})


async def _node(request: Request) -> dict[str, Any]:
    ident = request.path_params["hypervisor_id"]
    for node in await _nodes(request):
        if ident in (str(node["id"]), node["uuid"]):
            return node
    raise HypervisorNotFound(id=ident[:64])


async def show(request: Request) -> Response:
    down, version = request.app.state.settings.service_down_time, api_version(request)
    uptime = _uptime_or_none() if version >= (2, 88) else None
    return reply({"hypervisor": _detail(await _node(request), version, down, uptime)})


def host_uptime(now: dt.datetime | None = None) -> str:
    """The ``uptime`` command's line for the machine this runs on (cirrus's
    hosts are processes on it); NotImplementedError where it cannot tell."""
    try:
        with open("/proc/uptime") as fh:
            seconds = int(float(fh.read().split()[0]))
        load = os.getloadavg()
    except (OSError, ValueError, IndexError) as exc:
        raise NotImplementedError("host uptime") from exc
    days, rest = divmod(seconds, 86400)
    since = f"{days} day{'s' if days != 1 else ''}, " if days else ""
    clock = (now or dt.datetime.now()).strftime("%H:%M:%S")
    return (f" {clock} up {since}{rest // 3600}:{rest % 3600 // 60:02d},  0 users,  "
            f"load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}")


def _uptime_or_none() -> str | None:
    try:
        return host_uptime()
    except NotImplementedError:
        return None


async def uptime(request: Request) -> Response:
    """Before 2.88 (which put ``uptime`` in the detail view): the host's uptime
    line; 400 while its compute service is down, 501 where it cannot be told."""
    down, version = request.app.state.settings.service_down_time, api_version(request)
    if version >= (2, 88):
        raise NotFound()
    node = await _node(request)
    out = _basic(node, version, down)
    if out["state"] != "up":
        raise Invalid(f"Compute service of {node['host']} is unavailable at this time.")
    try:
        out["uptime"] = host_uptime()
    except NotImplementedError:
        raise NotImplementedYet() from None
    return reply({"hypervisor": out})


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
]
