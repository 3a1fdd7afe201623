"""The port quota bounds server creates (seed 000: ``validate_networks`` →
max count reduced "due to network port quota", PortLimitExceeded at none), and
an allocation that would pass it fails the build without a port left behind.
"""
from __future__ import annotations

import asyncio

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import instance as inst
from cirrus.context import RequestContext
from cirrus.network import exception as nexc
from cirrus.network.models import ports
from tests.functional.servers import (create_server, db_count, server_body, upload_image,
                                      wait_for_status)
from tests.functional.test_network import NET, make_net, make_port

SERVERS = "/compute/v2.1/servers"
LIMIT = {"quota_ports": 3}


async def _servers(demo: httpx.AsyncClient) -> list[dict]:
    return (await demo.get(f"{SERVERS}/detail")).json()["servers"]


@pytest.mark.parametrize("settings_overrides", [LIMIT])
async def test_creates_stop_at_the_port_quota(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    # Five asked, one port each: as many as the quota has ports for.
    resp = await demo.post(SERVERS, json=server_body(image, min_count=1, max_count=5,
                                                     return_reservation_id=True))
    assert resp.status_code == 202, resp.text
    servers = await _servers(demo)
    assert len(servers) == 3
    for server in servers:
        assert (await wait_for_status(demo, server["id"], {"ACTIVE", "ERROR"}))["status"] == \
            "ACTIVE"
    # None left: refused before anything is made, as Nova refuses it.
    resp = await demo.post(SERVERS, json=server_body(image))
    assert resp.status_code == 403, resp.text
    assert resp.json() == {"forbidden": {"code": 403,
                                         "message": "Maximum number of ports exceeded"}}
    assert len(await _servers(demo)) == 3
    assert await db_count(cloud, ports, ports.c.device_owner.like("compute:%")) == 3


@pytest.mark.parametrize("settings_overrides", [LIMIT])
async def test_concurrent_creates_at_the_port_quota_leave_none_over(
        cloud: Cloud, demo: httpx.AsyncClient) -> None:
    """Eight creates at once, one port each, against a port quota of 3: the
    create-time check may let more through than fit (the ports are made by
    the builds), but the allocations' recheck lets exactly three have ports;
    the others are refused at create time or fail their build."""
    image = await upload_image(demo)
    resps = await asyncio.gather(*[demo.post(SERVERS, json=server_body(image, name=f"p{i}"))
                                   for i in range(8)])
    assert {r.status_code for r in resps} <= {202, 403}, [r.text for r in resps]
    accepted = [r.json()["server"]["id"] for r in resps if r.status_code == 202]
    statuses = [(await wait_for_status(demo, uuid, {"ACTIVE", "ERROR"}))["status"]
                for uuid in accepted]
    assert statuses.count("ACTIVE") == 3, statuses
    assert await db_count(cloud, ports, ports.c.device_owner.like("compute:%")) == 3


@pytest.mark.parametrize("settings_overrides", [{"quota_ports": 1}])
async def test_an_allocation_past_the_quota_creates_no_port(cloud: Cloud,
                                                            demo: httpx.AsyncClient) -> None:
    """The create-time check passed, then the project's ports filled up (a
    racing create): the allocation refuses, and no port stays."""
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    compute = next(s.endpoint for s in cloud.services if s.binary == "cirrus-compute")
    instance = await cloud.db.read(inst.get, created["id"])
    net_id = (await cloud.db.read(lambda conn: conn.execute(
        sa.select(ports.c.network_id)).scalar_one()))
    ctx = RequestContext(user_id=instance["user_id"], project_id=instance["project_id"])
    with pytest.raises(nexc.PortLimitExceeded):
        await compute.network_api.allocate_for_instance(
            ctx, instance, requested_networks=[{"network_id": net_id, "port_id": None,
                                                "fixed_ip": None}],
            bind_host_id=compute.host)
    assert await db_count(cloud, ports) == 1
    # Attaching one more interface is refused up front, with Nova's 403.
    resp = await demo.post(f"{SERVERS}/{created['id']}/os-interface",
                           json={"interfaceAttachment": {"net_id": net_id}})
    assert resp.status_code == 403, resp.text
    assert resp.json()["forbidden"]["message"] == "Maximum number of ports exceeded"


@pytest.mark.parametrize("settings_overrides", [LIMIT])
async def test_the_network_api_and_server_creates_share_the_port_quota(
        demo: httpx.AsyncClient) -> None:
    """Ports made through the network API and by server builds draw on the one
    quota, and the quota details count both."""
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    net = await make_net(demo, "own", "10.50.0.0/24")
    made = [await make_port(demo, net["id"]) for _ in range(3)]
    assert [r.status_code for r in made] == [201, 201, 409], made[-1].text
    assert made[-1].json()["NeutronError"]["type"] == "OverQuota"
    project = made[0].json()["port"]["project_id"]
    details = (await demo.get(f"{NET}/quotas/{project}/details")).json()["quota"]["port"]
    assert (details["used"], details["limit"]) == (3, 3)
    resp = await demo.post(SERVERS, json=server_body(image))
    assert resp.status_code == 403 and "ports" in resp.json()["forbidden"]["message"]
    # One port given back: one server fits again.
    port_id = made[0].json()["port"]["id"]
    assert (await demo.delete(f"{NET}/ports/{port_id}")).status_code == 204
    assert (await demo.post(SERVERS, json=server_body(image))).status_code == 202
