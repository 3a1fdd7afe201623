"""``POST /servers`` refuses, before its 202, the network requests Nova refuses
at the API (``validate_networks``): bad or busy fixed IPs, ports in use,
unknown security groups — not a reschedule loop ending in ERROR (issue 18)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.context import RequestContext
from cirrus.network import exception as nexc
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants

NET = "/network/v2.0"
SERVERS = "/compute/v2.1/servers"


async def _network(client: httpx.AsyncClient, cidr: str) -> dict[str, Any]:
    resp = await client.post(f"{NET}/networks", json={"network": {"name": cidr}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    resp = await client.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": cidr, "ip_version": 4}})
    assert resp.status_code == 201, resp.text
    return net


async def _counts(tenants: Tenants) -> tuple[int, int]:
    servers = (await tenants.admin.get(f"{SERVERS}/detail", params={"all_tenants": 1})).json()
    ports = (await tenants.admin.get(f"{NET}/ports")).json()
    return len(servers["servers"]), len(ports["ports"])


@pytest.fixture
async def boot(tenants: Tenants) -> dict[str, Any]:
    """An image, a network (10.80.0.0/24) with one port using 10.80.0.2, and
    a server of project demo."""
    image = await upload_image(tenants.member)
    net = await _network(tenants.member, "10.80.0.0/24")
    used = await tenants.member.post(f"{NET}/ports", json={"port": {"network_id": net["id"]}})
    assert used.json()["port"]["fixed_ips"][0]["ip_address"] == "10.80.0.2"
    server = await create_server(tenants.member, server_body(image, networks="none"))
    await wait_for_status(tenants.member, server["id"], {"ACTIVE"})
    return {"image": image, "net": net, "server": server}


def _nics(boot: dict[str, Any], *fixed: str) -> list[dict[str, str]]:
    return [{"uuid": boot["net"]["id"], "fixed_ip": ip} for ip in fixed]


@pytest.mark.parametrize("fixed, status", [
    (("10.81.0.5",), 400),                   # outside every subnet of the network
    (("10.80.0.1",), 400),                   # the gateway
    (("10.80.0.0",), 400),                   # the network address
    (("10.80.0.255",), 400),                 # the broadcast address
    (("fd00::5",), 400),                     # the wrong family
    (("10.80.0.2",), 400),                   # in use (Nova: FixedIpAlreadyInUse, 400)
    (("10.80.0.9", "10.80.0.9"), 400),       # the same address on two NICs
])
async def test_a_bad_fixed_ip_is_refused_before_the_202(
        tenants: Tenants, boot: dict[str, Any], fixed: tuple[str, ...], status: int) -> None:
    before = await _counts(tenants)
    resp = await tenants.member.post(SERVERS, json=server_body(boot["image"],
                                                               networks=_nics(boot, *fixed)))
    assert resp.status_code == status, resp.text
    assert await _counts(tenants) == before


async def test_a_good_fixed_ip_boots(tenants: Tenants, boot: dict[str, Any]) -> None:
    server = await create_server(tenants.member, server_body(
        boot["image"], networks=_nics(boot, "10.80.0.9")))
    shown = await wait_for_status(tenants.member, server["id"], {"ACTIVE", "ERROR"})
    assert shown["status"] == "ACTIVE", shown.get("fault")


async def test_a_port_in_use_is_a_conflict(tenants: Tenants, boot: dict[str, Any]) -> None:
    port = (await tenants.member.post(f"{NET}/ports", json={"port": {
        "network_id": boot["net"]["id"], "device_id": boot["server"]["id"],
        "device_owner": "compute:nova"}})).json()["port"]
    before = await _counts(tenants)
    resp = await tenants.member.post(SERVERS, json=server_body(boot["image"], networks=[
        {"port": port["id"]}]))
    assert resp.status_code == 409, resp.text
    assert await _counts(tenants) == before


async def test_another_projects_port_or_network_is_a_bad_request(
        tenants: Tenants, boot: dict[str, Any]) -> None:
    port = (await tenants.member.post(f"{NET}/ports", json={"port": {
        "network_id": boot["net"]["id"]}})).json()["port"]
    image = await upload_image(tenants.other)
    before = await _counts(tenants)
    for nics in ([{"port": port["id"]}], [{"uuid": boot["net"]["id"]}]):
        resp = await tenants.other.post(SERVERS, json=server_body(image, networks=nics))
        assert resp.status_code == 400, resp.text
    assert await _counts(tenants) == before


async def test_os_interface_attach_checks_the_fixed_ip_too(tenants: Tenants,
                                                           boot: dict[str, Any]) -> None:
    server = boot["server"]
    for ip in ("10.81.0.5", "10.80.0.1", "10.80.0.2"):
        resp = await tenants.member.post(f"{SERVERS}/{server['id']}/os-interface", json={
            "interfaceAttachment": {"net_id": boot["net"]["id"],
                                    "fixed_ips": [{"ip_address": ip}]}})
        assert 400 <= resp.status_code < 500, resp.text
    listed = await tenants.member.get(f"{SERVERS}/{server['id']}/os-interface")
    assert listed.json()["interfaceAttachments"] == []


async def test_unknown_security_groups_are_refused_by_validate_networks(
        tenants: Tenants, boot: dict[str, Any]) -> None:
    """What ``POST /servers`` needs to refuse an unknown group with 400
    (compute passes the request's groups; a NotFound there is a 400)."""
    network = tenants.api.cloud.app.state.compute_api.network
    ctx = RequestContext(user_id=tenants.user["demo"], project_id=tenants.project["demo"],
                         roles=["member"])
    requested = [{"network_id": boot["net"]["id"], "port_id": None, "fixed_ip": None}]
    with pytest.raises(nexc.SecurityGroupNotFound):
        await network.validate_networks(ctx, requested, 1, security_groups=["nope"])
    other = await tenants.other.post(f"{NET}/security-groups", json={
        "security_group": {"name": "theirs"}})
    with pytest.raises(nexc.SecurityGroupNotFound):
        await network.validate_networks(ctx, requested, 1,
                                        security_groups=[other.json()["security_group"]["id"]])
    mine = await tenants.member.post(f"{NET}/security-groups", json={
        "security_group": {"name": "web"}})
    assert mine.status_code == 201
    assert await network.validate_networks(ctx, requested, 1,
                                           security_groups=["default", "web"]) == 1
