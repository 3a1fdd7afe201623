"""The port quota bounds server creates (seed 000: ``validate_networks`` →
max count reduced "due to network port quota", PortLimitExceeded at none), and
an allocation that would pass it fails the build without a port left behind.
"""
from __future__ import annotations

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
