"""addSecurityGroup/removeSecurityGroup (Nova's security_groups actions):
synchronous, through the server's ports; by name or id; 404 for a group the
project does not have or the server does not carry, 409 for an ambiguous
name, 400 for a port without port security."""
from __future__ import annotations

import httpx
import pytest

from tests.functional.actions import act, show
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

GROUPS = "/network/v2.0/security-groups"


@pytest.fixture
async def server(demo: httpx.AsyncClient) -> str:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image, name="guarded"))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    return created["id"]


async def group(client: httpx.AsyncClient, name: str) -> str:
    resp = await client.post(GROUPS, json={"security_group": {"name": name}})
    assert resp.status_code == 201, resp.text
    return resp.json()["security_group"]["id"]


async def port_groups(client: httpx.AsyncClient, server: str) -> list[list[str]]:
    ports = (await client.get("/network/v2.0/ports", params={"device_id": server})).json()
    return [p["security_groups"] for p in ports["ports"]]


async def names(client: httpx.AsyncClient, server: str) -> list[str]:
    return [g["name"] for g in (await show(client, server))["security_groups"]]


async def test_add_and_remove_by_name_and_id(demo: httpx.AsyncClient, server: str) -> None:
    web = await group(demo, "web")
    assert (await act(demo, server, {"addSecurityGroup": {"name": "web"}})).status_code == 202
    assert await names(demo, server) == ["default", "web"]
    assert all(web in groups for groups in await port_groups(demo, server))
    listed = (await demo.get(f"/compute/v2.1/servers/{server}/os-security-groups")).json()
    assert sorted(g["name"] for g in listed["security_groups"]) == ["default", "web"]
    # Adding it again (by id) keeps it once, as Neutron does.
    assert (await act(demo, server, {"addSecurityGroup": {"name": web}})).status_code == 202
    assert all(groups.count(web) == 1 for groups in await port_groups(demo, server))
    assert (await act(demo, server, {"removeSecurityGroup": {"name": web}})).status_code == 202
    assert await names(demo, server) == ["default"]
    assert all(web not in groups for groups in await port_groups(demo, server))


async def test_a_server_in_no_group_shows_no_groups_key(demo: httpx.AsyncClient,
                                                        server: str) -> None:
    """Nova leaves ``security_groups`` out of the view of a server in none
    (Tempest's test_remove_server_all_security_groups)."""
    assert (await act(demo, server, {"removeSecurityGroup": {"name": "default"}})).status_code == 202
    assert "security_groups" not in await show(demo, server)
    listed = (await demo.get("/compute/v2.1/servers/detail")).json()["servers"]
    assert [s["id"] for s in listed if "security_groups" not in s] == [server]
    assert (await act(demo, server, {"addSecurityGroup": {"name": "default"}})).status_code == 202
    assert await names(demo, server) == ["default"]


async def test_removing_a_group_the_server_lacks_is_404(demo: httpx.AsyncClient,
                                                       server: str) -> None:
    await group(demo, "web")
    resp = await act(demo, server, {"removeSecurityGroup": {"name": "web"}})
    assert resp.status_code == 404, resp.text
    assert f"Security group web not associated with the instance {server}" in resp.text


@pytest.mark.parametrize("action", ["addSecurityGroup", "removeSecurityGroup"])
async def test_unknown_or_foreign_group_is_404(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                               server: str, action: str) -> None:
    foreign = await group(admin, "admins-only")
    for ref in ("no-such-group", foreign):
        resp = await act(demo, server, {action: {"name": ref}})
        assert resp.status_code == 404, resp.text
        assert "is not found for project" in resp.text
    assert await names(demo, server) == ["default"]


async def test_ambiguous_name_is_409(demo: httpx.AsyncClient, server: str) -> None:
    await group(demo, "twin")
    await group(demo, "twin")
    resp = await act(demo, server, {"addSecurityGroup": {"name": "twin"}})
    assert resp.status_code == 409 and "Multiple security groups" in resp.text, resp.text


async def test_port_without_port_security_is_400(demo: httpx.AsyncClient,
                                                 admin: httpx.AsyncClient, server: str) -> None:
    await group(demo, "web")
    ports = (await admin.get("/network/v2.0/ports", params={"device_id": server})).json()["ports"]
    resp = await admin.put(f"/network/v2.0/ports/{ports[0]['id']}", json={"port": {
        "security_groups": [], "port_security_enabled": False}})
    assert resp.status_code == 200, resp.text
    resp = await act(demo, server, {"addSecurityGroup": {"name": "web"}})
    assert resp.status_code == 400 and "port_security_enabled" in resp.text, resp.text


async def test_server_without_ports_is_404(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image, name="offline", networks="none"),
                                  version="2.37")
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    resp = await act(demo, created["id"], {"addSecurityGroup": {"name": "default"}})
    assert resp.status_code == 404 and "could not be found as device id" in resp.text
