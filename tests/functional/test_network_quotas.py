"""Network quotas over HTTP (``quotas``, ``quota_details``,
``quota-check-limit``): show, update, reset, details, defaults, the list of
projects with limits of their own, and the limits at work."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.functional.servers import server_body, upload_image
from tests.functional.test_network import NET, make_net, make_port

RESOURCES = {"network", "subnet", "port", "router", "floatingip", "security_group",
             "security_group_rule", "rbac_policy", "subnetpool"}


async def _project(client: httpx.AsyncClient) -> str:
    token = (await client.get("/identity/v3/auth/tokens",
                              headers={"X-Subject-Token": client.headers["X-Auth-Token"]}))
    return str(token.json()["token"]["project"]["id"])


async def test_show_defaults_and_details(demo: httpx.AsyncClient) -> None:
    project = await _project(demo)
    quota = (await demo.get(f"{NET}/quotas/{project}")).json()["quota"]
    assert set(quota) == RESOURCES
    assert quota["port"] == 500 and quota["network"] == 100 and quota["router"] == 10
    assert (await demo.get(f"{NET}/quotas/{project}/default")).json() == {"quota": quota}
    await make_net(demo, "counted")
    details = (await demo.get(f"{NET}/quotas/{project}/details")).json()["quota"]
    assert details["network"] == {"limit": 100, "used": 1, "reserved": 0}
    assert details["subnet"]["used"] == 1
    assert details["security_group"]["used"] == 0


async def test_update_reset_and_list(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    project = await _project(demo)
    resp = await admin.put(f"{NET}/quotas/{project}", json={"quota": {
        "port": 7, "network": "3", "router": -1, "check_limit": True}})
    assert resp.status_code == 200, resp.text
    quota = resp.json()["quota"]
    assert (quota["port"], quota["network"], quota["router"], quota["subnet"]) == (7, 3, -1, 100)
    assert (await demo.get(f"{NET}/quotas/{project}")).json()["quota"] == quota
    assert (await demo.get(f"{NET}/quotas/{project}/default")).json()["quota"]["port"] == 500
    listed = (await admin.get(f"{NET}/quotas")).json()["quotas"]
    assert [(q["project_id"], q["tenant_id"], q["port"]) for q in listed] == [
        (project, project, 7)]
    assert (await admin.delete(f"{NET}/quotas/{project}")).status_code == 204
    assert (await demo.get(f"{NET}/quotas/{project}")).json()["quota"]["port"] == 500
    assert (await admin.get(f"{NET}/quotas")).json() == {"quotas": []}


async def test_a_limit_holds_the_next_create(admin: httpx.AsyncClient,
                                             demo: httpx.AsyncClient) -> None:
    project = await _project(demo)
    net = await make_net(demo, "q")
    await admin.put(f"{NET}/quotas/{project}", json={"quota": {"port": 2, "network": 1}})
    assert (await make_port(demo, net["id"])).status_code == 201
    assert (await make_port(demo, net["id"])).status_code == 201
    over = await make_port(demo, net["id"])
    assert over.status_code == 409 and over.json()["NeutronError"]["type"] == "OverQuota"
    more = await demo.post(f"{NET}/networks", json={"network": {"name": "n2"}})
    assert more.status_code == 409
    await admin.put(f"{NET}/quotas/{project}", json={"quota": {"port": -1}})
    assert (await make_port(demo, net["id"])).status_code == 201


async def test_a_limit_below_use_needs_force(admin: httpx.AsyncClient,
                                             demo: httpx.AsyncClient) -> None:
    project = await _project(demo)
    net = await make_net(demo, "used")
    for _ in range(2):
        await make_port(demo, net["id"])
    below = await admin.put(f"{NET}/quotas/{project}", json={"quota": {"port": 1}})
    assert below.status_code == 400
    assert "greater than or equal to already used 2" in below.json()["NeutronError"]["message"]
    assert (await demo.get(f"{NET}/quotas/{project}")).json()["quota"]["port"] == 500
    forced = await admin.put(f"{NET}/quotas/{project}", json={"quota": {"port": 1,
                                                                         "force": True}})
    assert forced.status_code == 200 and forced.json()["quota"]["port"] == 1
    assert (await make_port(demo, net["id"])).status_code == 409


async def test_the_project_port_limit_bounds_server_creates(admin: httpx.AsyncClient,
                                                            demo: httpx.AsyncClient) -> None:
    """Nova's ``validate_networks`` reads the project's own port limit."""
    project = await _project(demo)
    image = await upload_image(demo)
    await make_net(demo, "boot")
    await admin.put(f"{NET}/quotas/{project}", json={"quota": {"port": 0}})
    resp = await demo.post("/compute/v2.1/servers", json=server_body(image))
    assert resp.status_code == 403, resp.text
    assert "Maximum number of ports exceeded" in resp.text


@pytest.mark.parametrize("body, reason", [
    ({"quota": {"port": -2}}, "Invalid input for port"),
    ({"quota": {"port": 2 ** 31}}, "Invalid input for port"),
    ({"quota": {"port": "many"}}, "Invalid input for port"),
    ({"quota": {"port": True}}, "Invalid input for port"),
    ({"quota": {"port": 1.5}}, "Invalid input for port"),
    ({"quota": {"instances": 3}}, "Unrecognized attribute(s) 'instances'"),
    ({"quota": {"force": "yes"}}, "Invalid input for force"),
    ({"quota": []}, "'quota' must be an object"),
    ({"quotas": {}}, "'quota' must be an object"),
])
async def test_bad_updates_are_400(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                   body: Any, reason: str) -> None:
    project = await _project(demo)
    resp = await admin.put(f"{NET}/quotas/{project}", json=body)
    assert resp.status_code == 400, resp.text
    assert reason in resp.json()["NeutronError"]["message"]
    assert (await admin.get(f"{NET}/quotas")).json() == {"quotas": []}


async def test_an_impossible_project_id(admin: httpx.AsyncClient) -> None:
    long_id = "p" * 65
    assert (await admin.put(f"{NET}/quotas/{long_id}", json={"quota": {"port": 1}})
            ).status_code == 404
    assert (await admin.get(f"{NET}/quotas/{long_id}")).status_code == 404


async def test_concurrent_updates_leave_one_limit(admin: httpx.AsyncClient,
                                                  demo: httpx.AsyncClient) -> None:
    project = await _project(demo)
    answers = await asyncio.gather(*[admin.put(f"{NET}/quotas/{project}", json={
        "quota": {"port": 100 + i}}) for i in range(6)])
    assert {a.status_code for a in answers} == {200}
    assert (await admin.get(f"{NET}/quotas/{project}")).json()["quota"]["port"] in range(100, 106)
    assert len((await admin.get(f"{NET}/quotas")).json()["quotas"]) == 1
