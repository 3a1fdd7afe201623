"""What the L3 API hands a host: router scheduling to a live agent (fewest
routers first), the :class:`RouterSpec` of each router on a host, and the
host view's routed subnets (the bridge gives the gateway up to the router)."""
from __future__ import annotations

from typing import Any

import httpx

from cirrus.network.agents import Agent, report
from cirrus.network.host_view import load_host_view
from cirrus.network.l3.hostview import load_router_specs
from cirrus.network.l3.spec import FloatingIP, Route
from tests.functional.test_network import NET, make_port
from tests.functional.test_network_l3 import (add_interface, make_external, make_net,
                                              make_router)


async def _agents(cloud: Any, *hosts: str) -> None:
    for host in hosts:
        await cloud.db.run(report, Agent(host))


async def _host_of(cloud: Any, router_id: str) -> str:
    specs = {h: await cloud.db.read(load_router_specs, h) for h in ("net-a", "net-b")}
    return next((h for h, found in specs.items() if any(s.router_id == router_id
                                                        for s in found)), "")


async def test_routers_go_to_the_least_loaded_live_agent(cloud: Any,
                                                         demo: httpx.AsyncClient) -> None:
    first = await make_router(demo)
    assert await _host_of(cloud, first["id"]) == ""  # no port yet: no namespace needed
    await _agents(cloud, "net-a", "net-b")
    hosts = []
    for i in range(4):
        net = await make_net(demo, f"n{i}", f"10.{60 + i}.0.0/24")
        router = await make_router(demo)
        assert (await add_interface(demo, router["id"],
                                    subnet_id=net["subnets"][0])).status_code == 200
        hosts.append(await _host_of(cloud, router["id"]))
    assert sorted(hosts) == ["net-a", "net-a", "net-b", "net-b"]


async def test_the_spec_of_a_router(cloud: Any, admin: httpx.AsyncClient,
                                    demo: httpx.AsyncClient) -> None:
    await _agents(cloud, "net-a")
    ext = await make_external(admin)
    net = await make_net(demo, "inside", "10.30.0.0/24")
    router = await make_router(demo, external_gateway_info={"network_id": ext["id"]})
    await add_interface(demo, router["id"], subnet_id=net["subnets"][0])
    await demo.put(f"{NET}/routers/{router['id']}", json={"router": {"routes": [
        {"destination": "192.168.7.0/24", "nexthop": "10.30.0.9"}]}})
    port = (await make_port(demo, net["id"])).json()["port"]
    fip = (await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "port_id": port["id"]}})).json()["floatingip"]

    [spec] = await cloud.db.read(load_router_specs, "net-a")
    assert spec.router_id == router["id"] and spec.admin_state_up
    [iface] = spec.interfaces
    assert iface.cidrs == ("10.30.0.1/24",) and iface.network_id == net["id"]
    assert iface.bridge == "brq" + net["id"][:11]
    assert spec.gateway is not None and spec.gateway.default_gateways == ("172.24.4.1",)
    assert spec.gateway.port.bridge == "brq" + ext["id"][:11] and spec.gateway.enable_snat
    assert spec.gateway.port.cidrs[0].endswith("/24")
    assert spec.floating_ips == (FloatingIP(fip["floating_ip_address"],
                                            port["fixed_ips"][0]["ip_address"]),)
    assert spec.routes == (Route("192.168.7.0/24", "10.30.0.9"),)
    assert await cloud.db.read(load_router_specs, "net-b") == []

    view = await cloud.db.read(load_host_view, "net-a")
    assert set(view.networks) == {net["id"], ext["id"]}  # the router's bridges are here
    [sub] = view.bridge_subnets(net["id"])
    dhcp = (await admin.get(f"{NET}/ports", params={
        "network_id": net["id"], "device_owner": "network:dhcp"})).json()["ports"][0]
    assert sub["gateway_ip"] == dhcp["fixed_ips"][0]["ip_address"] != "10.30.0.1"
    assert [s["gateway_ip"] for s in view.bridge_subnets(ext["id"])] == ["172.24.4.1"]


async def test_no_router_no_change_to_the_host_view(cloud: Any,
                                                    admin: httpx.AsyncClient) -> None:
    await _agents(cloud, "net-a")
    net = await make_net(admin, "plain", "10.50.0.0/24")
    resp = await make_port(admin, net["id"], **{"binding:host_id": "net-a"})
    assert resp.status_code == 201, resp.text
    view = await cloud.db.read(load_host_view, "net-a")
    assert view.routed == {} and view.bridge_subnets(net["id"]) == view.subnets[net["id"]]
