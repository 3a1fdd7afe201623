"""Choosing where a server runs is for admins, and honoured for them:
microversion 2.74's ``host``/``hypervisor_hostname`` (Nova's
``compute:servers:create:requested_destination``) and the
``zone:host:node`` forced host (issue #18)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.scheduler.filters.host import RequestedDestinationFilter
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec
from tests.functional.servers import server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants

SERVERS = "/compute/v2.1/servers"
V274 = {"OpenStack-API-Version": "compute 2.74"}


@pytest.fixture
async def image(tenants: Tenants) -> str:
    return await upload_image(tenants.admin, visibility="public")


async def _nodes(admin: httpx.AsyncClient) -> dict[str, str]:
    """hypervisor_hostname → host of each compute node."""
    resp = await admin.get("/compute/v2.1/os-hypervisors/detail")
    assert resp.status_code == 200, resp.text
    return {h["hypervisor_hostname"]: h["service"]["host"] for h in resp.json()["hypervisors"]}


async def _boot(client: httpx.AsyncClient, image: str, **extra: Any) -> httpx.Response:
    return await client.post(SERVERS, json=server_body(image, **extra), headers=V274)


async def _host_of(tenants: Tenants, server_id: str) -> tuple[str, str]:
    await wait_for_status(tenants.admin, server_id, {"ACTIVE"})
    server = (await tenants.admin.get(f"{SERVERS}/{server_id}")).json()["server"]
    return server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-SRV-ATTR:hypervisor_hostname"]


@pytest.mark.parametrize("persona", ["member", "reader", "other"])
@pytest.mark.parametrize("extra", [{"host": "compute1"}, {"hypervisor_hostname": "compute1"},
                                   {"availability_zone": "nova:compute1"},
                                   {"availability_zone": "nova::compute1"}])
async def test_only_admins_choose_the_host(tenants: Tenants, image: str, persona: str,
                                           extra: dict[str, str]) -> None:
    resp = await _boot(getattr(tenants, persona), image, **extra)
    assert resp.status_code == 403, resp.text
    assert (await tenants.admin.get(SERVERS, params={"all_tenants": 1})).json()["servers"] == []


async def test_the_admins_requested_host_is_where_it_runs(tenants: Tenants, image: str) -> None:
    nodes = await _nodes(tenants.admin)
    for host in ("compute2", "compute1", "compute2"):
        resp = await _boot(tenants.admin, image, host=host)
        assert resp.status_code == 202, resp.text
        assert (await _host_of(tenants, resp.json()["server"]["id"]))[0] == host
    for node, host in nodes.items():
        resp = await _boot(tenants.admin, image, hypervisor_hostname=node)
        assert resp.status_code == 202, resp.text
        assert await _host_of(tenants, resp.json()["server"]["id"]) == (host, node)
        resp = await _boot(tenants.admin, image, host=host, hypervisor_hostname=node)
        assert await _host_of(tenants, resp.json()["server"]["id"]) == (host, node)


@pytest.mark.parametrize("extra, status, fragment", [
    ({"host": "nowhere"}, 400, "Compute host nowhere could not be found"),
    ({"hypervisor_hostname": "nowhere"}, 400, "could not be found"),
    ({"host": "compute1", "hypervisor_hostname": "compute2"}, 400, "could not be found"),
    ({"host": "compute1", "availability_zone": "nova:compute1"}, 400, "mutually exclusive"),
    ({"host": "bad host!"}, 400, "host"),
    ({"host": ""}, 400, "host"),
    ({"hypervisor_hostname": ["compute1"]}, 400, "hypervisor_hostname"),
])
async def test_a_requested_destination_that_cannot_be(tenants: Tenants, image: str,
                                                      extra: dict[str, Any], status: int,
                                                      fragment: str) -> None:
    resp = await _boot(tenants.admin, image, **extra)
    assert resp.status_code == status, resp.text
    assert fragment in resp.text
    assert (await tenants.admin.get(SERVERS, params={"all_tenants": 1})).json()["servers"] == []


async def test_host_is_unknown_before_274(tenants: Tenants, image: str) -> None:
    resp = await tenants.admin.post(SERVERS, json=server_body(image, host="compute1"),
                                    headers={"OpenStack-API-Version": "compute 2.73"})
    assert resp.status_code == 400 and "host" in resp.text


def _host(name: str) -> HostState:
    return HostState(host=name, nodename=f"{name}-node", node_id=1, vcpus=8, memory_mb=8192,
                     local_gb=100, vcpus_used=0, memory_mb_used=0, local_gb_used=0,
                     reserved_memory_mb=0, cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
                     disk_allocation_ratio=1.0, cpu_arch="x86_64", hypervisor_type="fake",
                     availability_zone="nova", enabled=True, up=True)


@pytest.mark.parametrize("destination, host, passes", [
    ({"host": "h1", "node": None}, "h1", True),
    ({"host": "h1", "node": None}, "h2", False),
    ({"host": "h1", "node": "h1-node"}, "h1", True),
    ({"host": "h2", "node": "h1-node"}, "h1", False),
    (None, "h2", True),
])
def test_requested_destination_filter(destination: dict[str, Any] | None, host: str,
                                      passes: bool) -> None:
    spec = Spec.from_request({"flavor": {"vcpus": 1, "memory_mb": 1, "root_gb": 1},
                              "requested_destination": destination})
    flt = RequestedDestinationFilter()
    assert flt.applies(spec) is (destination is not None)
    assert flt.host_passes(_host(host), spec).passed is passes
    if destination:
        assert flt.candidates(spec) == {destination["host"]}
