"""Routers, external gateways, static routes and floating IPs over HTTP
(Neutron's ``router``, ``ext-gw-mode``, ``extraroute``, ``fip-port-details``):
the happy paths, and tables of bad input that answer 4xx and leave nothing
half-made."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.test_network import NET, make_port
from tests.functional.test_network import make_net as _make_net
from tests.tenants import Tenants

EXT_CIDR = "172.24.4.0/24"


async def make_net(client: httpx.AsyncClient, name: str, cidr: str | None,
                   **extra: Any) -> dict[str, Any]:
    """A network with its subnet, as shown after the subnet was made."""
    net = await _make_net(client, name, cidr, **extra)
    return dict((await client.get(f"{NET}/networks/{net['id']}")).json()["network"])


async def make_external(admin: httpx.AsyncClient, name: str = "public",
                        cidr: str = EXT_CIDR) -> dict[str, Any]:
    """An admin's external network with one subnet (as ``prepare`` makes for Tempest)."""
    return await make_net(admin, name, cidr, **{"router:external": True})


async def make_router(client: httpx.AsyncClient, **extra: Any) -> dict[str, Any]:
    resp = await client.post(f"{NET}/routers", json={"router": {"name": "r", **extra}})
    assert resp.status_code == 201, resp.text
    return dict(resp.json()["router"])


async def add_interface(client: httpx.AsyncClient, router_id: str, **body: str) -> httpx.Response:
    return await client.put(f"{NET}/routers/{router_id}/add_router_interface", json=body)


async def remove_interface(client: httpx.AsyncClient, router_id: str,
                           **body: str) -> httpx.Response:
    return await client.put(f"{NET}/routers/{router_id}/remove_router_interface", json=body)


async def _counts(client: httpx.AsyncClient) -> tuple[int, int, int]:
    """Routers, floating IPs and ports the admin sees: what a failed request must not change."""
    routers = (await client.get(f"{NET}/routers")).json()["routers"]
    fips = (await client.get(f"{NET}/floatingips")).json()["floatingips"]
    ports = (await client.get(f"{NET}/ports")).json()["ports"]
    return len(routers), len(fips), len(ports)


async def _topology(admin: httpx.AsyncClient, demo: httpx.AsyncClient
                    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """An external network, a demo network and a demo router joining them."""
    ext = await make_external(admin)
    net = await make_net(demo, "inside", "10.30.0.0/24")
    router = await make_router(demo, external_gateway_info={"network_id": ext["id"]})
    resp = await add_interface(demo, router["id"], subnet_id=net["subnets"][0])
    assert resp.status_code == 200, resp.text
    return ext, net, router


async def test_router_crud_gateway_and_interfaces(admin: httpx.AsyncClient,
                                                  demo: httpx.AsyncClient) -> None:
    ext = await make_external(admin)
    net = await make_net(demo, "inside", "10.30.0.0/24")
    router = await make_router(demo)
    assert router["external_gateway_info"] is None and router["routes"] == []
    assert router["status"] == "ACTIVE" and router["admin_state_up"] is True

    resp = await demo.put(f"{NET}/routers/{router['id']}", json={"router": {
        "name": "edge", "external_gateway_info": {"network_id": ext["id"]}}})
    assert resp.status_code == 200, resp.text
    gw = resp.json()["router"]["external_gateway_info"]
    assert gw["network_id"] == ext["id"] and gw["enable_snat"] is True
    assert gw["external_fixed_ips"][0]["ip_address"].startswith("172.24.4.")

    subnet_id = net["subnets"][0]
    resp = await add_interface(demo, router["id"], subnet_id=subnet_id)
    assert resp.status_code == 200, resp.text
    info = resp.json()
    assert info["subnet_id"] == subnet_id and info["subnet_ids"] == [subnet_id]
    assert info["network_id"] == net["id"] and info["id"] == router["id"]
    port = (await demo.get(f"{NET}/ports/{info['port_id']}")).json()["port"]
    assert port["device_owner"] == "network:router_interface"
    assert port["device_id"] == router["id"]
    assert port["fixed_ips"] == [{"subnet_id": subnet_id, "ip_address": "10.30.0.1"}]

    listed = (await demo.get(f"{NET}/ports", params={"device_id": router["id"]})).json()["ports"]
    assert [p["id"] for p in listed] == [info["port_id"]]

    resp = await demo.delete(f"{NET}/routers/{router['id']}")
    assert resp.status_code == 409 and resp.json()["NeutronError"]["type"] == "RouterInUse"
    resp = await demo.delete(f"{NET}/ports/{info['port_id']}")
    assert resp.status_code == 409, resp.text
    assert resp.json()["NeutronError"]["type"] == "ServicePortInUse"
    resp = await demo.delete(f"{NET}/subnets/{subnet_id}")
    assert resp.status_code == 409 and resp.json()["NeutronError"]["type"] == "SubnetInUse"

    resp = await remove_interface(demo, router["id"], subnet_id=subnet_id)
    assert resp.status_code == 200 and resp.json()["port_id"] == info["port_id"]
    assert (await demo.get(f"{NET}/ports/{info['port_id']}")).status_code == 404
    assert (await demo.delete(f"{NET}/routers/{router['id']}")).status_code == 204
    assert (await demo.get(f"{NET}/routers/{router['id']}")).status_code == 404
    # the gateway port went with the router, so the external network can go
    assert (await admin.delete(f"{NET}/networks/{ext['id']}")).status_code == 204


async def test_interface_by_port_and_remove_by_port(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "inside", "10.31.0.0/24")
    router = await make_router(demo)
    port = (await make_port(demo, net["id"])).json()["port"]
    resp = await add_interface(demo, router["id"], port_id=port["id"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["port_id"] == port["id"]
    shown = (await demo.get(f"{NET}/ports/{port['id']}")).json()["port"]
    assert (shown["device_owner"], shown["device_id"]) == ("network:router_interface",
                                                           router["id"])
    again = await add_interface(demo, router["id"], port_id=port["id"])
    assert again.status_code == 409, again.text
    resp = await remove_interface(demo, router["id"], port_id=port["id"])
    assert resp.status_code == 200, resp.text
    assert (await demo.get(f"{NET}/ports/{port['id']}")).status_code == 404
    resp = await remove_interface(demo, router["id"], port_id=port["id"])
    assert resp.status_code == 404
    assert resp.json()["NeutronError"]["type"] == "RouterInterfaceNotFound"


async def test_static_routes(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    _, net, router = await _topology(admin, demo)
    url = f"{NET}/routers/{router['id']}"
    routes = [{"destination": "192.168.50.0/24", "nexthop": "10.30.0.20"}]
    resp = await demo.put(url, json={"router": {"routes": routes}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["routes"] == routes
    for bad in ([{"destination": "192.168.51.0/24", "nexthop": "10.99.0.1"}],
                [{"destination": "192.168.51.0/24", "nexthop": "10.30.0.1"}]):
        resp = await demo.put(url, json={"router": {"routes": bad}})
        assert resp.status_code == 400, resp.text
        assert resp.json()["NeutronError"]["type"] == "InvalidRoutes"
    assert (await demo.get(url)).json()["router"]["routes"] == routes
    resp = await remove_interface(demo, router["id"], subnet_id=net["subnets"][0])
    assert resp.status_code == 409
    assert resp.json()["NeutronError"]["type"] == "RouterInterfaceInUseByRoute"
    resp = await demo.put(url, json={"router": {"routes": []}})
    assert resp.json()["router"]["routes"] == []
    assert (await remove_interface(demo, router["id"],
                                   subnet_id=net["subnets"][0])).status_code == 200


async def test_floating_ip_lifecycle(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    ext, net, router = await _topology(admin, demo)
    port = (await make_port(demo, net["id"])).json()["port"]
    resp = await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}})
    assert resp.status_code == 201, resp.text
    fip = resp.json()["floatingip"]
    assert fip["floating_ip_address"].startswith("172.24.4.")
    assert (fip["port_id"], fip["router_id"], fip["fixed_ip_address"]) == (None, None, None)
    assert fip["status"] == "DOWN" and fip["port_details"] is None

    url = f"{NET}/floatingips/{fip['id']}"
    resp = await demo.put(url, json={"floatingip": {"port_id": port["id"]}})
    assert resp.status_code == 200, resp.text
    fip = resp.json()["floatingip"]
    assert fip["port_id"] == port["id"] and fip["router_id"] == router["id"]
    assert fip["fixed_ip_address"] == port["fixed_ips"][0]["ip_address"]
    assert fip["port_details"]["mac_address"] == port["mac_address"]

    listed = (await demo.get(f"{NET}/floatingips", params={"port_id": port["id"]})).json()
    assert [f["id"] for f in listed["floatingips"]] == [fip["id"]]
    resp = await remove_interface(demo, router["id"], subnet_id=net["subnets"][0])
    assert resp.status_code == 409
    assert resp.json()["NeutronError"]["type"] == "RouterInterfaceInUseByFloatingIP"
    resp = await demo.put(f"{NET}/routers/{router['id']}", json={"router": {
        "external_gateway_info": {}}})
    assert resp.status_code == 409, resp.text

    resp = await demo.put(url, json={"floatingip": {"port_id": None}})
    assert resp.status_code == 200 and resp.json()["floatingip"]["port_id"] is None
    # associated again at create, then the port goes: the floating IP stays, free
    resp = await demo.put(url, json={"floatingip": {"port_id": port["id"]}})
    assert (await demo.delete(f"{NET}/ports/{port['id']}")).status_code == 204
    shown = (await demo.get(url)).json()["floatingip"]
    assert (shown["port_id"], shown["fixed_ip_address"], shown["router_id"]) == (None, None, None)

    fip_port = (await admin.get(f"{NET}/ports", params={
        "device_owner": "network:floatingip"})).json()["ports"]
    assert len(fip_port) == 1 and fip_port[0]["device_id"] == fip["id"]
    resp = await admin.delete(f"{NET}/ports/{fip_port[0]['id']}")
    assert resp.status_code == 409
    assert (await demo.delete(url)).status_code == 204
    assert (await demo.get(url)).status_code == 404
    assert (await admin.get(f"{NET}/ports", params={
        "device_owner": "network:floatingip"})).json()["ports"] == []


async def test_floating_ip_needs_a_router_path(admin: httpx.AsyncClient,
                                               demo: httpx.AsyncClient) -> None:
    ext = await make_external(admin)
    net = await make_net(demo, "lonely", "10.32.0.0/24")
    port = (await make_port(demo, net["id"])).json()["port"]
    before = await _counts(admin)
    resp = await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "port_id": port["id"]}})
    assert resp.status_code == 404, resp.text
    assert resp.json()["NeutronError"]["type"] == "ExternalGatewayForFloatingIPNotFound"
    assert await _counts(admin) == before


async def test_quota_details_count_routers_and_floating_ips(admin: httpx.AsyncClient,
                                                            demo: httpx.AsyncClient) -> None:
    ext, _, router = await _topology(admin, demo)
    project = router["project_id"]
    await demo.post(f"{NET}/floatingips", json={"floatingip": {"floating_network_id": ext["id"]}})
    details = (await demo.get(f"{NET}/quotas/{project}/details")).json()["quota"]
    assert details["router"]["used"] == 1 and details["floatingip"]["used"] == 1
    await admin.put(f"{NET}/quotas/{project}", json={"quota": {"router": 1, "floatingip": 1}})
    before = await _counts(admin)
    resp = await demo.post(f"{NET}/routers", json={"router": {"name": "two"}})
    assert resp.status_code == 409 and resp.json()["NeutronError"]["type"] == "OverQuota"
    resp = await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}})
    assert resp.status_code == 409 and resp.json()["NeutronError"]["type"] == "OverQuota"
    assert await _counts(admin) == before


async def test_admin_only_fields(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    ext = await make_external(admin)
    before = await _counts(admin)
    for body in ({"external_gateway_info": {"network_id": ext["id"], "enable_snat": False}},
                 {"external_gateway_info": {"network_id": ext["id"], "external_fixed_ips": [
                     {"ip_address": "172.24.4.50"}]}}):
        resp = await demo.post(f"{NET}/routers", json={"router": body})
        assert resp.status_code == 403, resp.text
    resp = await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "floating_ip_address": "172.24.4.60"}})
    assert resp.status_code == 403, resp.text
    assert await _counts(admin) == before
    router = await make_router(admin, external_gateway_info={
        "network_id": ext["id"], "enable_snat": False,
        "external_fixed_ips": [{"ip_address": "172.24.4.50"}]})
    gw = router["external_gateway_info"]
    assert gw["enable_snat"] is False
    assert [ip["ip_address"] for ip in gw["external_fixed_ips"]] == ["172.24.4.50"]
    resp = await admin.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "floating_ip_address": "172.24.4.60"}})
    assert resp.status_code == 201 and resp.json()["floatingip"]["floating_ip_address"] \
        == "172.24.4.60"


BAD_ROUTERS = [
    ({"router": {"routes": []}}, 400),
    ({"router": {"name": 5}}, 400),
    ({"router": {"external_gateway_info": "x"}}, 400),
    ({"router": {"external_gateway_info": {"enable_snat": True}}}, 400),
    ({"router": {"external_gateway_info": {"network_id": "not-a-uuid"}}}, 400),
    ({"router": {"external_gateway_info": {"network_id":
                                           "00000000-0000-0000-0000-000000000000"}}}, 404),
    ({"router": {"distributed": True}}, 400),
    ({"router": {"bogus": 1}}, 400),
    ({"routers": [{}]}, 400),
]


@pytest.mark.parametrize("body,status", BAD_ROUTERS)
async def test_bad_router_bodies(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                 body: dict[str, Any], status: int) -> None:
    before = await _counts(admin)
    resp = await demo.post(f"{NET}/routers", json=body)
    assert resp.status_code == status, resp.text
    assert await _counts(admin) == before


async def test_gateway_on_internal_network_is_400(admin: httpx.AsyncClient,
                                                  demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "inside", "10.33.0.0/24")
    before = await _counts(admin)
    resp = await demo.post(f"{NET}/routers", json={"router": {
        "external_gateway_info": {"network_id": net["id"]}}})
    assert resp.status_code == 400, resp.text
    assert "is not an external network" in resp.json()["NeutronError"]["message"]
    assert await _counts(admin) == before


async def test_bad_interfaces(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    ext = await make_external(admin)
    a = await make_net(demo, "a", "10.34.0.0/24")
    b = await make_net(demo, "b", "10.34.0.0/25")
    no_gw = await make_net(demo, "c", None)
    sub = await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": no_gw["id"], "cidr": "10.35.0.0/24", "ip_version": 4, "gateway_ip": None}})
    router = await make_router(demo)
    assert (await add_interface(demo, router["id"], subnet_id=a["subnets"][0])).status_code == 200
    before = await _counts(admin)
    cases = [
        ({"subnet_id": b["subnets"][0]}, 400),  # overlaps a
        ({"subnet_id": a["subnets"][0]}, 400),  # already there
        ({"subnet_id": ext["subnets"][0]}, 404),  # the admin's external subnet
        ({"subnet_id": sub.json()["subnet"]["id"]}, 400),  # no gateway
        ({}, 400), ({"subnet_id": a["subnets"][0], "port_id": a["subnets"][0]}, 400),
        ({"subnet_id": "nope"}, 400), ({"bogus": 1}, 400),
        ({"subnet_id": "00000000-0000-0000-0000-000000000000"}, 404),
        ({"port_id": "00000000-0000-0000-0000-000000000000"}, 404),
    ]
    for body, status in cases:
        resp = await add_interface(demo, router["id"], **body)
        assert resp.status_code == status, (body, resp.text)
    assert await _counts(admin) == before
    own = await make_router(admin)
    resp = await add_interface(admin, own["id"], subnet_id=ext["subnets"][0])
    assert resp.status_code == 400 and "external network" in resp.text
    resp = await remove_interface(demo, router["id"], subnet_id=b["subnets"][0])
    assert resp.status_code == 404
    assert resp.json()["NeutronError"]["type"] == "RouterInterfaceNotFoundForSubnet"


async def test_bad_floating_ips(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    ext, net, _ = await _topology(admin, demo)
    port = (await make_port(demo, net["id"])).json()["port"]
    before = await _counts(admin)
    cases = [
        ({}, 400), ({"floating_network_id": "x"}, 400),
        ({"floating_network_id": net["id"]}, 400),  # not external
        ({"floating_network_id": ext["id"], "fixed_ip_address": "10.30.0.9"}, 400),
        ({"floating_network_id": ext["id"], "port_id": port["id"],
          "fixed_ip_address": "10.30.0.250"}, 400),  # not the port's
        ({"floating_network_id": ext["id"], "router_id": None}, 400),
        ({"floating_network_id": "00000000-0000-0000-0000-000000000000"}, 404),
        ({"floating_network_id": ext["id"],
          "port_id": "00000000-0000-0000-0000-000000000000"}, 404),
    ]
    for body, status in cases:
        resp = await demo.post(f"{NET}/floatingips", json={"floatingip": body})
        assert resp.status_code == status, (body, resp.text)
    assert await _counts(admin) == before


async def test_other_projects_do_not_see_routers_or_floating_ips(tenants: Tenants) -> None:
    ext, net, router = await _topology(tenants.admin, tenants.member)
    fip = (await tenants.member.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}})).json()["floatingip"]
    alt = tenants.other
    if True:
        assert (await alt.get(f"{NET}/routers")).json()["routers"] == []
        assert (await alt.get(f"{NET}/floatingips")).json()["floatingips"] == []
        for url in (f"{NET}/routers/{router['id']}", f"{NET}/floatingips/{fip['id']}"):
            assert (await alt.get(url)).status_code == 404
            assert (await alt.delete(url)).status_code == 404
        resp = await add_interface(alt, router["id"], subnet_id=net["subnets"][0])
        assert resp.status_code == 404


async def test_a_routed_subnet_gets_a_dhcp_port(admin: httpx.AsyncClient,
                                                demo: httpx.AsyncClient) -> None:
    _, net, router = await _topology(admin, demo)
    dhcp = (await admin.get(f"{NET}/ports", params={
        "network_id": net["id"], "device_owner": "network:dhcp"})).json()["ports"]
    assert len(dhcp) == 1
    assert dhcp[0]["fixed_ips"][0]["subnet_id"] == net["subnets"][0]
    assert dhcp[0]["fixed_ips"][0]["ip_address"] != "10.30.0.1"
    # the network can still go once the router lets go of it: the DHCP port goes with it
    await remove_interface(demo, router["id"], subnet_id=net["subnets"][0])
    assert (await demo.delete(f"{NET}/networks/{net['id']}")).status_code == 204


async def test_extraroute_atomic(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    _, _, router = await _topology(admin, demo)
    url = f"{NET}/routers/{router['id']}"
    a = {"destination": "192.168.60.0/24", "nexthop": "10.30.0.20"}
    b = {"destination": "192.168.61.0/24", "nexthop": "10.30.0.21"}
    resp = await demo.put(f"{url}/add_extraroutes", json={"router": {"routes": [a, b]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["router"]["routes"] == [a, b]
    resp = await demo.put(f"{url}/add_extraroutes", json={"router": {"routes": [a]}})
    assert resp.json()["router"]["routes"] == [a, b]  # once
    resp = await demo.put(f"{url}/remove_extraroutes", json={"router": {"routes": [a]}})
    assert resp.json()["router"]["routes"] == [b]
    bad = await demo.put(f"{url}/add_extraroutes", json={"router": {"routes": [
        {"destination": "192.168.62.0/24", "nexthop": "10.99.0.1"}]}})
    assert bad.status_code == 400
    for body in ({"routes": []}, {"router": {"routes": None}}, {"router": {"name": "x"}}):
        assert (await demo.put(f"{url}/add_extraroutes", json=body)).status_code == 400
    assert (await demo.get(url)).json()["router"]["routes"] == [b]


async def test_an_external_network_goes_with_its_free_floating_ips(
        tenants: Tenants) -> None:
    ext = await make_external(tenants.admin)
    # its subnets are the admin's to see (no ``subnet-external-network``)
    listed = (await tenants.member.get(f"{NET}/subnets", params={
        "network_id": ext["id"]})).json()["subnets"]
    assert listed == []
    assert (await tenants.member.get(f"{NET}/subnets/{ext['subnets'][0]}")).status_code == 404
    fip = (await tenants.member.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}})).json()["floatingip"]
    assert (await tenants.admin.delete(f"{NET}/networks/{ext['id']}")).status_code == 204
    assert (await tenants.member.get(f"{NET}/floatingips/{fip['id']}")).status_code == 404
