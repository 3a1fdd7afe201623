"""The network service over HTTP, and allocate_for_instance through server boots (seeds 001/002)."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.context import RequestContext
from cirrus.network import exception as nexc
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

NET = "/network/v2.0"


async def make_net(client: httpx.AsyncClient, name: str, cidr: str | None = "10.20.0.0/24",
                   **extra: Any) -> dict[str, Any]:
    resp = await client.post(f"{NET}/networks", json={"network": {"name": name, **extra}})
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    if cidr:
        resp = await client.post(f"{NET}/subnets", json={"subnet": {
            "network_id": net["id"], "cidr": cidr, "ip_version": 4, "name": f"{name}-sub"}})
        assert resp.status_code == 201, resp.text
    return net


async def make_port(client: httpx.AsyncClient, net_id: str, **extra: Any) -> httpx.Response:
    return await client.post(f"{NET}/ports", json={"port": {"network_id": net_id, **extra}})


async def test_network_crud_and_errors(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "n1")
    shown = (await demo.get(f"{NET}/networks/{net['id']}")).json()["network"]
    assert shown["status"] == "ACTIVE" and len(shown["subnets"]) == 1
    overlap = await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.20.0.128/25", "ip_version": 4}})
    assert overlap.status_code == 400 and "overlaps" in overlap.json()["NeutronError"]["message"]
    bad = await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.300.0.0/24", "ip_version": 4}})
    assert bad.status_code == 400
    unknown = await demo.post(f"{NET}/networks", json={"network": {"name": "x", "bogus": 1}})
    assert unknown.status_code == 400
    port = (await make_port(demo, net["id"])).json()["port"]
    assert port["status"] == "DOWN" and port["mac_address"].startswith("fa:16:3e")
    busy = await demo.delete(f"{NET}/networks/{net['id']}")
    assert busy.status_code == 409 and busy.json()["NeutronError"]["type"] == "NetworkInUse"
    assert (await demo.delete(f"{NET}/ports/{port['id']}")).status_code == 204
    assert (await demo.delete(f"{NET}/networks/{net['id']}")).status_code == 204
    assert (await demo.get(f"{NET}/networks/{net['id']}")).status_code == 404


async def test_default_security_group_and_rules(demo: httpx.AsyncClient) -> None:
    groups = (await demo.get(f"{NET}/security-groups")).json()["security_groups"]
    default = next(g for g in groups if g["name"] == "default")
    assert {r["direction"] for r in default["security_group_rules"]} == {"ingress", "egress"}
    sg = (await demo.post(f"{NET}/security-groups", json={"security_group": {"name": "web"}})).json()
    rule = await demo.post(f"{NET}/security-group-rules", json={"security_group_rule": {
        "security_group_id": sg["security_group"]["id"], "direction": "ingress",
        "protocol": "tcp", "port_range_min": 80, "port_range_max": 80}})
    assert rule.status_code == 201
    dup = await demo.post(f"{NET}/security-group-rules", json={"security_group_rule": {
        "security_group_id": sg["security_group"]["id"], "direction": "ingress",
        "protocol": "tcp", "port_range_min": 80, "port_range_max": 80}})
    assert dup.status_code == 409


async def test_ipam_under_concurrency(demo: httpx.AsyncClient) -> None:
    """200 ports at once on a /24 get distinct addresses and MACs; past the
    pool's 253 addresses the answer is 409, never a duplicate."""
    net = await make_net(demo, "big", "10.30.0.0/24")
    results = await asyncio.gather(*[make_port(demo, net["id"]) for _ in range(200)])
    ports = [r.json()["port"] for r in results]
    assert all(r.status_code == 201 for r in results)
    ips = [p["fixed_ips"][0]["ip_address"] for p in ports]
    assert len(set(ips)) == 200 and len({p["mac_address"] for p in ports}) == 200
    more = await asyncio.gather(*[make_port(demo, net["id"]) for _ in range(60)])
    assert [r.status_code for r in more].count(201) == 53
    exhausted = [r for r in more if r.status_code == 409]
    assert len(exhausted) == 7
    assert exhausted[0].json()["NeutronError"]["type"] == "IpAddressGenerationFailure"
    listed = (await demo.get(f"{NET}/ports", params={"network_id": net["id"]})).json()["ports"]
    all_ips = [p["fixed_ips"][0]["ip_address"] for p in listed]
    assert len(all_ips) == len(set(all_ips)) == 253
    # Releasing one address makes it allocatable again.
    await demo.delete(f"{NET}/ports/{listed[0]['id']}")
    assert (await make_port(demo, net["id"])).status_code == 201


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


def addresses(server: dict[str, Any]) -> list[tuple[str, str]]:
    return [(label, a["addr"]) for label, addrs in server["addresses"].items() for a in addrs]


async def test_boot_with_fixed_ip_and_two_networks_in_order(demo: httpx.AsyncClient,
                                                            image: str) -> None:
    a = await make_net(demo, "net-a", "10.41.0.0/24")
    b = await make_net(demo, "net-b", "10.42.0.0/24")
    created = await create_server(demo, server_body(image, networks=[
        {"uuid": b["id"], "fixed_ip": "10.42.0.50"}, {"uuid": a["id"]}]))
    server = await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"})
    assert server["status"] == "ACTIVE", server.get("fault")
    assert list(server["addresses"]) == ["net-b", "net-a"]
    assert ("net-b", "10.42.0.50") in addresses(server)


async def test_boot_with_requested_port_preserves_it(demo: httpx.AsyncClient, image: str) -> None:
    net = await make_net(demo, "p-net", "10.43.0.0/24")
    port = (await make_port(demo, net["id"], name="mine")).json()["port"]
    created = await create_server(demo, server_body(image, networks=[{"port": port["id"]}]))
    server = await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"})
    assert addresses(server) == [("p-net", port["fixed_ips"][0]["ip_address"])]
    bound = (await demo.get(f"{NET}/ports/{port['id']}")).json()["port"]
    assert bound["device_id"] == created["id"] and bound["status"] == "ACTIVE"
    in_use = await demo.post("/compute/v2.1/servers", json=server_body(image, networks=[{"port": port["id"]}]))
    assert in_use.status_code == 409
    await demo.delete(f"/compute/v2.1/servers/{created['id']}")
    await wait_for_status(demo, created["id"], {"DELETED"})
    kept = (await demo.get(f"{NET}/ports/{port['id']}")).json()["port"]
    assert kept["device_id"] == "" and kept["binding:host_id"] == ""


async def test_boot_with_none_and_auto(demo: httpx.AsyncClient, image: str) -> None:
    created = await create_server(demo, server_body(image, networks="none"))
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["addresses"] == {}
    created = await create_server(demo, server_body(image, networks="auto"))
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert list(server["addresses"]) == ["auto_allocated_network"]


async def test_ambiguous_networks(demo: httpx.AsyncClient, image: str) -> None:
    await make_net(demo, "one", "10.44.0.0/24")
    await make_net(demo, "two", "10.45.0.0/24")
    body = server_body(image)
    del body["server"]["networks"]
    resp = await demo.post("/compute/v2.1/servers", json=body)
    assert resp.status_code == 409
    assert "Multiple possible networks" in resp.json()["conflictingRequest"]["message"]


async def test_failure_after_two_of_three_ports_leaks_nothing(cloud: Cloud, demo: httpx.AsyncClient,
                                                              image: str) -> None:
    """The third network has no room: the two created ports go, the user's port is unbound."""
    a = await make_net(demo, "fa", "10.46.0.0/24")
    b = await make_net(demo, "fb", "10.47.0.0/24")
    full = await make_net(demo, "full", "10.48.0.0/30")  # one usable address
    assert (await make_port(demo, full["id"])).status_code == 201
    mine = (await make_port(demo, a["id"], name="user-port")).json()["port"]
    created = await create_server(demo, server_body(image, networks=[
        {"port": mine["id"]}, {"uuid": b["id"]}, {"uuid": full["id"]}]))
    server = await wait_for_status(demo, created["id"], {"ERROR", "ACTIVE"})
    assert server["status"] == "ERROR"
    assert "No more IP addresses" in server["fault"]["message"]
    left = (await demo.get(f"{NET}/ports", params={"device_id": created["id"]})).json()["ports"]
    assert left == []
    kept = (await demo.get(f"{NET}/ports/{mine['id']}")).json()["port"]
    assert kept["device_id"] == "" and kept["binding:host_id"] == ""
    on_b = (await demo.get(f"{NET}/ports", params={"network_id": b["id"]})).json()["ports"]
    assert on_b == []


@pytest.mark.parametrize("case, error", [
    ("external", nexc.ExternalNetworkAttachForbidden),
    ("dup-sg", nexc.NoUniqueMatch),
    ("missing-sg", nexc.SecurityGroupNotFound),
    ("no-subnet", nexc.SecurityGroupCannotBeApplied),
    ("missing-net", nexc.NetworkNotFound),
])
async def test_allocate_for_instance_branches(cloud: Cloud, admin: httpx.AsyncClient,
                                              demo: httpx.AsyncClient, case: str,
                                              error: type[Exception]) -> None:
    from cirrus.network.api import make_network_api

    identity = cloud.state["identity"]
    demo_ctx = identity.context_for(await identity.validate(demo.headers["X-Auth-Token"]), "")
    requested: list[dict[str, Any]] | None = None
    groups = ["default"]
    if case == "external":
        ext = await make_net(admin, "ext", "192.0.2.0/24", **{"router:external": True})
        requested = [{"network_id": ext["id"]}]
    elif case == "dup-sg":
        for _ in range(2):
            await demo.post(f"{NET}/security-groups", json={"security_group": {"name": "same"}})
        await make_net(demo, "sg-net", "10.50.0.0/24")
        groups = ["same"]
    elif case == "missing-sg":
        await make_net(demo, "sg-net", "10.50.0.0/24")
        groups = ["nope"]
    elif case == "no-subnet":
        net = await make_net(demo, "bare", None)
        requested = [{"network_id": net["id"]}]
    else:
        requested = [{"network_id": "6f0b3c1e-0000-4000-8000-000000000000"}]
    api = make_network_api(cloud.settings, cloud.db, "compute1", None)
    instance = {"uuid": "11111111-2222-4333-8444-555555555555", "project_id": demo_ctx.project_id,
                "availability_zone": "nova", "hostname": "x"}
    with pytest.raises(error):
        await api.allocate_for_instance(RequestContext(**{**demo_ctx.to_dict()}), instance,
                                        requested_networks=requested, security_groups=groups,
                                        bind_host_id="compute1")
    ports = (await admin.get(f"{NET}/ports", params={"device_id": instance["uuid"]})).json()["ports"]
    assert ports == []


async def test_interface_attach_and_detach(demo: httpx.AsyncClient, image: str) -> None:
    first = await make_net(demo, "if-a", "10.61.0.0/24")
    second = await make_net(demo, "if-b", "10.62.0.0/24")
    created = await create_server(demo, server_body(image, networks=[{"uuid": first["id"]}]))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    url = f"/compute/v2.1/servers/{created['id']}/os-interface"
    assert len((await demo.get(url)).json()["interfaceAttachments"]) == 1
    resp = await demo.post(url, json={"interfaceAttachment": {"net_id": second["id"]}})
    assert resp.status_code == 200, resp.text
    attached = resp.json()["interfaceAttachment"]
    assert attached["net_id"] == second["id"] and attached["fixed_ips"][0]["ip_address"].startswith("10.62.")
    server = (await demo.get(f"/compute/v2.1/servers/{created['id']}")).json()["server"]
    assert set(server["addresses"]) == {"if-a", "if-b"}
    assert (await demo.delete(f"{url}/{attached['port_id']}")).status_code == 202
    server = (await demo.get(f"/compute/v2.1/servers/{created['id']}")).json()["server"]
    assert set(server["addresses"]) == {"if-a"}
    assert (await demo.get(f"{NET}/ports/{attached['port_id']}")).status_code == 404
    assert (await demo.delete(f"{url}/{attached['port_id']}")).status_code == 404


async def _portless_server(cloud: Cloud, demo: httpx.AsyncClient, image: str
                           ) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """An ACTIVE server without ports, demo's context, and the instance fields
    the network API reads."""
    created = await create_server(demo, server_body(image, networks="none"))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    identity = cloud.state["identity"]
    ctx = identity.context_for(await identity.validate(demo.headers["X-Auth-Token"]), "")
    return created, ctx, {"uuid": created["id"], "project_id": ctx.project_id,
                          "availability_zone": "nova", "hostname": "x"}


async def test_new_ports_info_cache_is_what_a_rebuild_gives(cloud: Cloud, demo: httpx.AsyncClient,
                                                           image: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The info model of ports just created is built from what the transaction
    wrote, not read back: it must equal the model rebuilt from the database.
    An instance with another port already is built from the database."""
    from cirrus.network import info_cache
    from cirrus.network.api import make_network_api

    net = await make_net(demo, "fresh", "10.51.0.0/24")
    resp = await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "fd00:51::/64", "ip_version": 6}})
    assert resp.status_code == 201, resp.text
    created, ctx, instance = await _portless_server(cloud, demo, image)
    rebuilt: list[str] = []
    general = info_cache.build_network_info_model
    monkeypatch.setattr(info_cache, "build_network_info_model",
                        lambda conn, uuid, *args: rebuilt.append(uuid) or general(conn, uuid, *args))
    api = make_network_api(cloud.settings, cloud.db, "compute1", None)
    requested = [{"network_id": net["id"]}, {"network_id": net["id"]}]
    info = await api.allocate_for_instance(ctx, instance, requested_networks=requested,
                                           bind_host_id="compute1")
    assert rebuilt == []
    assert [len(vif["network"]["subnets"]) for vif in info] == [2, 2]
    assert await cloud.db.read(info_cache.cache_of, created["id"]) == list(info)
    assert list(await api.get_instance_nw_info(ctx, instance)) == list(info)
    more = await api.allocate_for_instance(ctx, instance, requested_networks=[requested[0]],
                                           bind_host_id="compute1")
    assert rebuilt == [created["id"], created["id"]]  # the rebuild above, then this one
    assert [vif["id"] for vif in more][:2] == [vif["id"] for vif in info] and len(more) == 3
    assert await cloud.db.read(info_cache.cache_of, created["id"]) == list(more)


async def test_deallocate_keeps_the_preserved_port_and_tells_the_backend(
        cloud: Cloud, demo: httpx.AsyncClient, image: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One unit of work releases the ports: the info cache says which port the
    user brought (kept, unbound), the backend gets each port's network from
    that unit (no read per port)."""
    from cirrus.network.api import make_network_api
    from cirrus.network.info_cache import cache_of

    net = await make_net(demo, "dealloc", "10.52.0.0/24")
    mine = (await make_port(demo, net["id"], name="user-port")).json()["port"]
    created, ctx, instance = await _portless_server(cloud, demo, image)
    api = make_network_api(cloud.settings, cloud.db, "compute1", None)
    info = await api.allocate_for_instance(ctx, instance, requested_networks=[
        {"port_id": mine["id"]}, {"network_id": net["id"]}], bind_host_id="compute1")
    assert [vif["preserve_on_delete"] for vif in info] == [True, False]
    told: list[tuple[str, str]] = []

    async def port_unbound(port: dict[str, Any], network: dict[str, Any]) -> None:
        told.append((port["id"], network["id"]))
    monkeypatch.setattr(api.binder.backend, "port_unbound", port_unbound)
    monkeypatch.setattr(api.binder.backend, "unbind_needs_network", True)
    monkeypatch.setattr(api.binder, "db", None)  # any read of the binder's would fail
    await api.deallocate_for_instance(ctx, instance)
    assert sorted(told) == sorted([(mine["id"], net["id"]), (info[1]["id"], net["id"])])
    left = (await demo.get(f"{NET}/ports", params={"network_id": net["id"]})).json()["ports"]
    assert [(p["id"], p["device_id"], p["binding:host_id"]) for p in left] == [(mine["id"], "", "")]
    assert await cloud.db.read(cache_of, created["id"]) == []


async def test_a_request_failing_its_checks_rolls_nothing_back(cloud: Cloud, demo: httpx.AsyncClient,
                                                               image: str) -> None:
    """The checks run in the allocation's unit of work now: a port in use by
    another server fails them, and stays bound to that server."""
    from cirrus.network.api import make_network_api

    net = await make_net(demo, "in-use", "10.53.0.0/24")
    port = (await make_port(demo, net["id"])).json()["port"]
    owner = await create_server(demo, server_body(image, networks=[{"port": port["id"]}]))
    await wait_for_status(demo, owner["id"], {"ACTIVE"})
    identity = cloud.state["identity"]
    ctx = identity.context_for(await identity.validate(demo.headers["X-Auth-Token"]), "")
    other = {"uuid": "22222222-3333-4444-8555-666666666666", "project_id": ctx.project_id,
             "availability_zone": "nova", "hostname": "y"}
    api = make_network_api(cloud.settings, cloud.db, "compute1", None)
    with pytest.raises(nexc.PortInUse):
        await api.allocate_for_instance(ctx, other, requested_networks=[{"port_id": port["id"]}],
                                        bind_host_id="compute1")
    kept = (await demo.get(f"{NET}/ports/{port['id']}")).json()["port"]
    assert kept["device_id"] == owner["id"] and kept["binding:host_id"] != ""


@pytest.mark.parametrize("protocol, low, high, message", [
    ("tcp", -16, 80, "Invalid value for port -16"),
    ("tcp", 80, 79, "port_range_min must be <= port_range_max"),
    ("tcp", 80, 65536, "Invalid value for port 65536"),
    ("tcp", None, 6, "port_range_min must be <= port_range_max"),
    ("udp", 0, 10, "Invalid value for port 0"),
    ("icmp", 1, 256, "Invalid value for ICMP code"),
    ("icmp", -1, 25, "Invalid value"),
    ("icmp", None, 6, "ICMP type (port-range-min) is missing"),
    ("icmp", 300, 1, "Invalid value for ICMP type"),
])
async def test_security_group_rule_port_ranges(demo: httpx.AsyncClient, protocol: str,
                                               low: int | None, high: int | None,
                                               message: str) -> None:
    """Neutron's ``_validate_port_range`` and its messages (Tempest checks them)."""
    sg = (await demo.post(f"{NET}/security-groups", json={"security_group": {"name": "r"}})).json()
    resp = await demo.post(f"{NET}/security-group-rules", json={"security_group_rule": {
        "security_group_id": sg["security_group"]["id"], "direction": "ingress",
        "protocol": protocol, "port_range_min": low, "port_range_max": high}})
    assert resp.status_code == 400 and message in resp.text, resp.text


async def test_there_is_one_default_security_group(demo: httpx.AsyncClient) -> None:
    again = await demo.post(f"{NET}/security-groups", json={"security_group": {"name": "default"}})
    assert again.status_code == 409
    assert again.json()["NeutronError"]["type"] == "SecurityGroupDefaultAlreadyExists"
    sg = (await demo.post(f"{NET}/security-groups", json={"security_group": {"name": "x"}})).json()
    renamed = await demo.put(f"{NET}/security-groups/{sg['security_group']['id']}",
                             json={"security_group": {"name": "default"}})
    assert renamed.status_code == 409


async def test_deallocate_releases_in_one_unit_what_each_statement_did(
        cloud: Cloud, admin: httpx.AsyncClient, demo: httpx.AsyncClient, image: str) -> None:
    """The release (one statement on PostgreSQL): the port cirrus created goes
    with its address and tags, its floating IP stays, free and DOWN; the port
    the request brought and the one the cache marks preserved stay, unbound;
    a port of another project naming the server is not its; the cache ends
    empty."""
    from cirrus.network.api import make_network_api
    from cirrus.network.info_cache import cache_of
    from tests.functional.test_network_l3 import _topology

    ext, net, _router = await _topology(admin, demo)
    brought = (await make_port(demo, net["id"], name="brought")).json()["port"]
    marked = (await make_port(demo, net["id"], name="marked")).json()["port"]
    created, ctx, instance = await _portless_server(cloud, demo, image)
    api = make_network_api(cloud.settings, cloud.db, "compute1", None)
    requested = [{"port_id": brought["id"]}, {"network_id": net["id"]}, {"port_id": marked["id"]}]
    info = await api.allocate_for_instance(ctx, instance, requested_networks=requested,
                                           bind_host_id="compute1")
    (new_vif,) = [vif for vif in info if not vif["preserve_on_delete"]]
    new = new_vif["id"]
    assert len(info) == 3
    assert (await demo.put(f"{NET}/ports/{new}/tags/t1")).status_code == 201
    fip = (await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"], "port_id": new}})).json()["floatingip"]
    assert fip["port_id"] == new
    foreign = (await admin.post(f"{NET}/ports", json={"port": {
        "network_id": ext["id"], "device_id": created["id"]}})).json()["port"]

    await api.deallocate_for_instance(ctx, instance, requested_networks=requested[:2])
    left = {p["id"]: p for p in (await admin.get(f"{NET}/ports")).json()["ports"]}
    assert new not in left and foreign["id"] in left
    assert [(left[p]["device_id"], left[p]["binding:host_id"], left[p]["status"])
            for p in (brought["id"], marked["id"])] == [("", "", "DOWN")] * 2
    shown = (await demo.get(f"{NET}/floatingips/{fip['id']}")).json()["floatingip"]
    assert (shown["port_id"], shown["fixed_ip_address"], shown["router_id"], shown["status"]) \
        == (None, None, None, "DOWN")
    assert (await demo.get(f"{NET}/ports", params={"tags": "t1"})).json()["ports"] == []
    assert await cloud.db.read(cache_of, created["id"]) == []
    # the created port's address is free again: the next port on the network gets it
    again = (await make_port(demo, net["id"], fixed_ips=[
        {"ip_address": new_vif["network"]["subnets"][0]["ips"][0]["address"]}]))
    assert again.status_code == 201, again.text
