"""Tenants stay apart in the network API (issue 18): roles, ``project_id`` in
bodies, networks of other projects, ports bound to other projects' servers,
listings scoped to the caller's project."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.context import RequestContext
from cirrus.exception import Forbidden
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants

NET = "/network/v2.0"
COLLECTIONS = ("networks", "subnets", "ports", "security-groups", "security-group-rules")


async def _post(client: httpx.AsyncClient, collection: str, body: dict[str, Any]) -> httpx.Response:
    resource = {"security-groups": "security_group", "security-group-rules": "security_group_rule"}.get(
        collection, collection[:-1])
    return await client.post(f"{NET}/{collection}", json={resource: body})


async def _created(client: httpx.AsyncClient, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = await _post(client, collection, body)
    assert resp.status_code == 201, resp.text
    return next(iter(resp.json().values()))


async def _network(client: httpx.AsyncClient, cidr: str, **extra: Any) -> tuple[dict, dict]:
    net = await _created(client, "networks", {"name": f"net-{cidr}", **extra})
    sub = await _created(client, "subnets", {"network_id": net["id"], "cidr": cidr,
                                             "ip_version": 4})
    return net, sub


async def _ids(client: httpx.AsyncClient, collection: str, **params: Any) -> set[str]:
    resp = await client.get(f"{NET}/{collection}", params=params)
    assert resp.status_code == 200, resp.text
    return {item["id"] for item in next(iter(resp.json().values()))}


async def _everything(tenants: Tenants) -> dict[str, set[str]]:
    """Every network resource of every project, as the admin lists them."""
    return {c: await _ids(tenants.admin, c) for c in COLLECTIONS}


@pytest.fixture
async def demo_things(tenants: Tenants) -> dict[str, dict[str, Any]]:
    """A network, subnet, port, security group and rule of project demo (A)."""
    net, sub = await _network(tenants.member, "10.60.0.0/24")
    port = await _created(tenants.member, "ports", {"network_id": net["id"]})
    group = await _created(tenants.member, "security-groups", {"name": "web"})
    rule = await _created(tenants.member, "security-group-rules", {
        "security_group_id": group["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 22, "port_range_max": 22})
    return {"networks": net, "subnets": sub, "ports": port, "security-groups": group,
            "security-group-rules": rule}


# -- roles: a reader reads, only members and admins write ------------------------
def _creates(things: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {"networks": {"name": "r"},
            "subnets": {"network_id": things["networks"]["id"], "cidr": "10.61.0.0/24",
                        "ip_version": 4},
            "ports": {"network_id": things["networks"]["id"]},
            "security-groups": {"name": "r"},
            "security-group-rules": {"security_group_id": things["security-groups"]["id"],
                                     "direction": "egress", "protocol": "udp"}}


UPDATES = {"networks": {"network": {"name": "x"}}, "subnets": {"subnet": {"name": "x"}},
           "ports": {"port": {"name": "x"}}, "security-groups": {"security_group": {"name": "x"}}}


async def test_a_reader_reads_but_cannot_create_update_or_delete(
        tenants: Tenants, demo_things: dict[str, dict[str, Any]]) -> None:
    before = await _everything(tenants)
    wrong = []
    for collection, thing in demo_things.items():
        url = f"{NET}/{collection}/{thing['id']}"
        assert (await tenants.reader.get(url)).status_code == 200
        assert thing["id"] in await _ids(tenants.reader, collection)
        answers = [await _post(tenants.reader, collection, _creates(demo_things)[collection]),
                   await tenants.reader.delete(url)]
        if collection in UPDATES:
            answers.append(await tenants.reader.put(url, json=UPDATES[collection]))
        wrong += [(collection, r.request.method, r.status_code) for r in answers
                  if r.status_code != 403]
    assert wrong == []
    assert await _everything(tenants) == before
    for collection in UPDATES:
        shown = (await tenants.member.get(f"{NET}/{collection}/{demo_things[collection]['id']}"))
        assert next(iter(shown.json().values()))["name"] != "x"


async def test_the_service_refuses_a_reader_even_when_called_directly(tenants: Tenants) -> None:
    """Whatever sits in front of it, the network service checks the role itself."""
    svc = tenants.api.cloud.app.state.network
    reader = RequestContext(user_id=tenants.user["alice"], project_id=tenants.project["demo"],
                            roles=["reader"])
    with pytest.raises(Forbidden):
        await svc.create_network(reader, {"name": "direct"})
    with pytest.raises(Forbidden):
        await svc.create_security_group(reader, {"name": "direct"})
    unscoped = RequestContext(user_id=tenants.user["demo"], roles=["member"])
    with pytest.raises(Forbidden):
        await svc.create_network(unscoped, {"name": "nowhere"})


# -- project_id in a body: admins only; a refused create leaves nothing -----------
async def test_another_projects_id_in_a_body_is_refused_and_creates_nothing(
        tenants: Tenants, demo_things: dict[str, dict[str, Any]]) -> None:
    own_net, _ = await _network(tenants.other, "10.62.0.0/24")
    own_group = await _created(tenants.other, "security-groups", {"name": "mine"})
    bodies = {"networks": {"name": "evil"},
              "subnets": {"network_id": own_net["id"], "cidr": "10.63.0.0/24", "ip_version": 4},
              "ports": {"network_id": own_net["id"]},
              "security-groups": {"name": "evil"},
              "security-group-rules": {"security_group_id": own_group["id"],
                                       "direction": "ingress", "protocol": "icmp"}}
    before = await _everything(tenants)
    wrong = []
    for collection, body in bodies.items():
        for key in ("project_id", "tenant_id"):
            resp = await _post(tenants.other, collection, {**body, key: tenants.project["demo"]})
            if resp.status_code not in (403, 404):
                wrong.append((collection, key, resp.status_code))
    assert wrong == []
    assert await _everything(tenants) == before


async def test_an_admin_may_create_for_another_project(tenants: Tenants) -> None:
    net = await _created(tenants.admin, "networks", {"name": "given",
                                                     "project_id": tenants.project["demo"]})
    assert net["project_id"] == tenants.project["demo"]
    assert net["id"] in await _ids(tenants.member, "networks")


async def test_project_id_and_tenant_id_must_agree(tenants: Tenants) -> None:
    demo = tenants.project["demo"]
    resp = await _post(tenants.member, "networks", {"name": "x", "project_id": demo,
                                                    "tenant_id": tenants.project["other"]})
    assert resp.status_code == 400, resp.text
    assert (await _post(tenants.member, "networks", {"name": "x", "project_id": demo,
                                                     "tenant_id": demo})).status_code == 201


# -- other projects' networks -------------------------------------------------------
async def test_subnets_and_ports_only_on_own_or_shared_networks(
        tenants: Tenants, demo_things: dict[str, dict[str, Any]]) -> None:
    victim = demo_things["networks"]["id"]
    before = await _everything(tenants)
    for collection, body in (("subnets", {"network_id": victim, "cidr": "10.64.0.0/24",
                                          "ip_version": 4}),
                             ("ports", {"network_id": victim})):
        resp = await _post(tenants.other, collection, body)
        assert resp.status_code == 404, resp.text
    assert await _everything(tenants) == before
    shared, _ = await _network(tenants.admin, "10.65.0.0/24", shared=True)
    sub = await _post(tenants.other, "subnets", {"network_id": shared["id"],
                                                 "cidr": "10.66.0.0/24", "ip_version": 4})
    assert sub.status_code == 403, sub.text  # only the network's owner adds subnets
    port = await _post(tenants.other, "ports", {"network_id": shared["id"]})
    assert port.status_code == 201, port.text
    assert port.json()["port"]["project_id"] == tenants.project["other"]


async def test_others_cannot_touch_demos_things(tenants: Tenants,
                                                demo_things: dict[str, dict[str, Any]]) -> None:
    await _ids(tenants.other, "security-groups")  # creates other's default group
    before = await _everything(tenants)
    for collection, thing in demo_things.items():
        assert (await tenants.other.get(f"{NET}/{collection}/{thing['id']}")).status_code == 404
        assert thing["id"] not in await _ids(tenants.other, collection)
        if collection in UPDATES:
            resp = await tenants.other.put(f"{NET}/{collection}/{thing['id']}",
                                           json=UPDATES[collection])
            assert resp.status_code == 404, resp.text
        assert (await tenants.other.delete(f"{NET}/{collection}/{thing['id']}")).status_code == 404
    assert await _everything(tenants) == before
    quota = await tenants.other.get(f"{NET}/quotas/{tenants.project['demo']}")
    assert quota.status_code == 403


@pytest.mark.parametrize("persona", ["unscoped", "norole"])
async def test_an_unscoped_token_never_lists_any_projects_things(
        tenants: Tenants, demo_things: dict[str, dict[str, Any]], persona: str) -> None:
    await _network(tenants.admin, "10.67.0.0/24", shared=True)
    client = getattr(tenants, persona)
    for collection in COLLECTIONS:
        resp = await client.get(f"{NET}/{collection}")
        assert resp.status_code in (200, 401, 403), resp.text
        if resp.status_code == 200:
            assert next(iter(resp.json().values())) == [], collection
        created = await _post(client, collection, _creates(demo_things)[collection])
        assert created.status_code in (401, 403, 404), created.text


async def test_listings_are_scoped_in_the_query(tenants: Tenants,
                                                demo_things: dict[str, dict[str, Any]]) -> None:
    """Another project's rows are not read at all: a filter naming them finds nothing."""
    demo = tenants.project["demo"]
    for collection in COLLECTIONS:
        assert await _ids(tenants.other, collection, project_id=demo) == set()
        assert demo_things[collection]["id"] in await _ids(tenants.admin, collection,
                                                           project_id=demo)


# -- ports bound to another project's server ---------------------------------------
async def _interfaces(client: httpx.AsyncClient, server_id: str) -> set[str]:
    resp = await client.get(f"/compute/v2.1/servers/{server_id}/os-interface")
    assert resp.status_code == 200, resp.text
    return {a["port_id"] for a in resp.json()["interfaceAttachments"]}


def _addresses(server: dict[str, Any]) -> set[str]:
    return {a["addr"] for addrs in server["addresses"].values() for a in addrs}


async def test_a_port_bound_to_another_projects_server_never_becomes_its_port(
        tenants: Tenants) -> None:
    """B cannot bind its port to A's server; a port of B's that names A's server
    anyway (an admin made it) is not A's: not listed, not detached, not deleted
    with A's server."""
    image = await upload_image(tenants.member)
    a_net, _ = await _network(tenants.member, "10.70.0.0/24")
    server = await create_server(tenants.member, server_body(image, networks=[{"uuid": a_net["id"]}]))
    await wait_for_status(tenants.member, server["id"], {"ACTIVE"})
    b_net, _ = await _network(tenants.other, "10.71.0.0/24")
    binding = {"device_id": server["id"], "device_owner": "compute:nova"}
    before = await _everything(tenants)
    refused = await _post(tenants.other, "ports", {"network_id": b_net["id"], **binding})
    assert refused.status_code == 403, refused.text
    assert await _everything(tenants) == before
    b_port = await _created(tenants.other, "ports", {"network_id": b_net["id"]})
    moved = await tenants.other.put(f"{NET}/ports/{b_port['id']}", json={"port": binding})
    assert moved.status_code == 403, moved.text
    # an admin may; the port stays project B's
    planted = await _created(tenants.admin, "ports", {
        "network_id": b_net["id"], "project_id": tenants.project["other"], **binding})
    b_ip = planted["fixed_ips"][0]["ip_address"]
    assert planted["id"] not in await _interfaces(tenants.member, server["id"])
    detach = await tenants.member.delete(
        f"/compute/v2.1/servers/{server['id']}/os-interface/{planted['id']}")
    assert detach.status_code == 404, detach.text
    # a rebuild of A's network info (an attach) does not pick B's port up
    attach = await tenants.member.post(f"/compute/v2.1/servers/{server['id']}/os-interface",
                                       json={"interfaceAttachment": {"net_id": a_net["id"]}})
    assert attach.status_code == 200, attach.text
    shown = (await tenants.member.get(f"/compute/v2.1/servers/{server['id']}")).json()["server"]
    assert b_ip not in _addresses(shown) and len(_addresses(shown)) == 2
    assert planted["id"] not in await _interfaces(tenants.member, server["id"])
    assert (await tenants.member.delete(f"/compute/v2.1/servers/{server['id']}")).status_code == 204
    await wait_for_status(tenants.member, server["id"], {"DELETED"})
    kept = await tenants.other.get(f"{NET}/ports/{planted['id']}")
    assert kept.status_code == 200, kept.text
    assert kept.json()["port"]["fixed_ips"][0]["ip_address"] == b_ip


async def test_a_member_binds_its_own_port_to_its_own_server(tenants: Tenants) -> None:
    image = await upload_image(tenants.member)
    net, _ = await _network(tenants.member, "10.72.0.0/24")
    server = await create_server(tenants.member, server_body(image, networks="none"))
    await wait_for_status(tenants.member, server["id"], {"ACTIVE"})
    port = await _post(tenants.member, "ports", {"network_id": net["id"], "device_id": server["id"],
                                                 "device_owner": "compute:nova"})
    assert port.status_code == 201, port.text


async def test_not_even_an_admin_gives_a_server_another_projects_port(tenants: Tenants) -> None:
    """Nova's rule: a server's ports are its project's (the only ones its
    network info, detach and delete consider), whoever asks."""
    from cirrus.network import exception as nexc
    from cirrus.network.api import make_network_api

    cloud = tenants.api.cloud
    b_net, _ = await _network(tenants.other, "10.73.0.0/24")
    b_port = await _created(tenants.other, "ports", {"network_id": b_net["id"]})
    api = make_network_api(cloud.settings, cloud.db, "compute1", None)
    instance = {"uuid": "11111111-2222-4333-8444-555555555555",
                "project_id": tenants.project["demo"], "availability_zone": "nova",
                "hostname": "x"}
    admin = RequestContext(user_id=tenants.user["admin"], project_id=tenants.project["admin"],
                           roles=["admin", "member", "reader"])
    with pytest.raises(nexc.PortNotUsable):
        await api.allocate_for_instance(admin, instance, requested_networks=[
            {"port_id": b_port["id"], "network_id": None, "fixed_ip": None}],
            bind_host_id="compute1")
    shown = (await tenants.other.get(f"{NET}/ports/{b_port['id']}")).json()["port"]
    assert shown["device_id"] == "" and shown["binding:host_id"] == ""
