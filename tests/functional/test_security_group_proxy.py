"""``/os-security-groups`` and ``/os-security-group-rules`` (2.1–2.35):
Nova's proxy to the network service's security groups, in Nova's shapes, with
Nova's checks and error codes, gone (404) from 2.36."""
from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import Api
from tests.functional.actions import act
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.functional.test_identity_admin import make_user

GROUPS = "/compute/v2.1/os-security-groups"
RULES = "/compute/v2.1/os-security-group-rules"
GROUP_KEYS = {"id", "name", "description", "tenant_id", "rules"}
RULE_KEYS = {"id", "parent_group_id", "ip_protocol", "from_port", "to_port", "ip_range", "group"}


async def create_group(client: httpx.AsyncClient, name: str = "web",
                       description: str = "d") -> dict[str, Any]:
    resp = await client.post(GROUPS, json={"security_group": {"name": name,
                                                              "description": description}})
    assert resp.status_code == 200, resp.text
    group: dict[str, Any] = resp.json()["security_group"]
    return group


async def create_rule(client: httpx.AsyncClient, **rule: Any) -> httpx.Response:
    return await client.post(RULES, json={"security_group_rule": rule})


async def test_create_show_update_delete(demo: httpx.AsyncClient) -> None:
    group = await create_group(demo, " spaced name ", "first")
    assert set(group) == GROUP_KEYS
    assert (group["name"], group["description"], group["rules"]) == (" spaced name ", "first", [])
    shown = await demo.get(f"{GROUPS}/{group['id']}")
    assert shown.status_code == 200 and shown.json()["security_group"] == group
    updated = await demo.put(f"{GROUPS}/{group['id']}", json={"security_group": {
        "name": "renamed", "description": "second"}})
    assert updated.status_code == 200, updated.text
    assert (await demo.get(f"{GROUPS}/{group['id']}")).json()["security_group"]["name"] == "renamed"
    deleted = await demo.delete(f"{GROUPS}/{group['id']}")
    assert deleted.status_code == 202 and deleted.content == b""
    assert (await demo.get(f"{GROUPS}/{group['id']}")).status_code == 404


async def test_list_has_the_default_group_sorted_by_name(demo: httpx.AsyncClient) -> None:
    for name in ("zeta", "alpha"):
        await create_group(demo, name)
    resp = await demo.get(GROUPS)
    assert resp.status_code == 200
    names = [g["name"] for g in resp.json()["security_groups"]]
    assert names == ["alpha", "default", "zeta"]
    default = next(g for g in resp.json()["security_groups"] if g["name"] == "default")
    # its ingress rules from its own members, IPv4 first; egress rules are not shown
    assert [set(r) for r in default["rules"]] == [RULE_KEYS, RULE_KEYS]
    assert default["rules"][0]["group"] == {"name": "default", "tenant_id": default["tenant_id"]}
    limited = (await demo.get(GROUPS, params={"limit": 1, "offset": 1})).json()["security_groups"]
    assert len(limited) == 1


@pytest.mark.parametrize("params", [{"limit": "x"}, {"limit": "-1"}, {"offset": "-2"}])
async def test_bad_paging_is_400(demo: httpx.AsyncClient, params: dict[str, str]) -> None:
    assert (await demo.get(GROUPS, params=params)).status_code == 400


async def test_all_tenants_is_for_admins(api: Api, admin: httpx.AsyncClient,
                                         demo: httpx.AsyncClient) -> None:
    mine = await create_group(demo, "demo-only")
    everyone = (await admin.get(GROUPS, params={"all_tenants": "1"})).json()["security_groups"]
    assert mine["id"] in {g["id"] for g in everyone}
    own = (await admin.get(GROUPS)).json()["security_groups"]
    assert mine["id"] not in {g["id"] for g in own}
    await make_user(admin, "eve")
    async with await api.as_user("eve") as eve:
        listed = (await eve.get(GROUPS, params={"all_tenants": "1"})).json()["security_groups"]
        assert mine["id"] not in {g["id"] for g in listed}
        for method, body in (("GET", None), ("DELETE", None), ("PUT", {"security_group": {
                "name": "x", "description": "y"}})):
            resp = await eve.request(method, f"{GROUPS}/{mine['id']}", json=body)
            assert resp.status_code == 404, (method, resp.text)
        resp = await create_rule(eve, parent_group_id=mine["id"], ip_protocol="tcp",
                                 from_port=22, to_port=22)
        assert resp.status_code == 404


@pytest.mark.parametrize("body", [
    {}, {"security_group": "web"}, {"security_group": {"name": "web"}},
    {"security_group": {"description": "d"}}, {"security_group": {"name": 1, "description": "d"}},
    {"security_group": {"name": "n" * 256, "description": "d"}},
    {"security_group": {"name": "n", "description": "d" * 256}}])
async def test_bad_group_bodies_are_400(demo: httpx.AsyncClient, body: dict[str, Any]) -> None:
    assert (await demo.post(GROUPS, json=body)).status_code == 400
    group = await create_group(demo)
    assert (await demo.put(f"{GROUPS}/{group['id']}", json=body)).status_code == 400


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_ids_are_uuids_or_400_and_unknown_ones_404(demo: httpx.AsyncClient,
                                                         method: str) -> None:
    body = {"security_group": {"name": "n", "description": "d"}} if method == "PUT" else None
    assert (await demo.request(method, f"{GROUPS}/not-a-uuid", json=body)).status_code == 400
    resp = await demo.request(method, f"{GROUPS}/{uuid.uuid4()}", json=body)
    assert resp.status_code == 404, resp.text


async def test_rules_with_a_range_and_a_group(demo: httpx.AsyncClient) -> None:
    group = await create_group(demo, "web")
    peer = await create_group(demo, "peer")
    ssh = await create_rule(demo, parent_group_id=group["id"], ip_protocol="tcp",
                            from_port=22, to_port=22)
    assert ssh.status_code == 200, ssh.text
    assert ssh.json()["security_group_rule"] == {
        "id": ssh.json()["security_group_rule"]["id"], "parent_group_id": group["id"],
        "ip_protocol": "tcp", "from_port": 22, "to_port": 22,
        "ip_range": {"cidr": "0.0.0.0/0"}, "group": {}}
    ranged = await create_rule(demo, parent_group_id=group["id"], ip_protocol="tcp",
                               from_port=80, to_port=80, cidr="10.2.3.124/24")
    assert ranged.json()["security_group_rule"]["ip_range"] == {"cidr": "10.2.3.124/24"}
    icmp = await create_rule(demo, parent_group_id=group["id"], ip_protocol="icmp",
                             from_port=-1, to_port=-1)
    assert (icmp.json()["security_group_rule"]["from_port"],
            icmp.json()["security_group_rule"]["to_port"]) == (-1, -1)
    from_peer = await create_rule(demo, parent_group_id=group["id"], ip_protocol="udp",
                                  group_id=peer["id"])
    rule = from_peer.json()["security_group_rule"]
    assert (rule["from_port"], rule["to_port"], rule["ip_range"]) == (1, 65535, {})
    assert rule["group"] == {"name": "peer", "tenant_id": group["tenant_id"]}
    shown = (await demo.get(f"{GROUPS}/{group['id']}")).json()["security_group"]
    assert len(shown["rules"]) == 4 and all(set(r) == RULE_KEYS for r in shown["rules"])
    # the peer's deletion takes the rules naming it out of the view
    assert (await demo.delete(f"{GROUPS}/{peer['id']}")).status_code == 202
    shown = (await demo.get(f"{GROUPS}/{group['id']}")).json()["security_group"]
    assert rule["id"] not in {r["id"] for r in shown["rules"]}
    # … and from the network service (Neutron deletes the rules naming a deleted group)
    gone = await demo.get(f"/network/v2.0/security-group-rules/{rule['id']}")
    assert gone.status_code == 404, gone.text
    deleted = await demo.delete(f"{RULES}/{ssh.json()['security_group_rule']['id']}")
    assert deleted.status_code == 202
    shown = (await demo.get(f"{GROUPS}/{group['id']}")).json()["security_group"]
    assert len(shown["rules"]) == 2


@pytest.mark.parametrize("rule", [
    {"ip_protocol": "999", "from_port": 22, "to_port": 22},
    {"ip_protocol": "tcp", "from_port": 65536, "to_port": 22},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 65536},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 21},
    {"ip_protocol": "tcp", "from_port": 0, "to_port": 21},
    {"ip_protocol": "icmp", "from_port": 256, "to_port": 0},
    {"ip_protocol": "tcp", "from_port": "x", "to_port": 22},
    {"ip_protocol": "tcp", "from_port": [], "to_port": 22},
    {"ip_protocol": "tcp", "from_port": 22},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "nope"},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "10.0.0.1"},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "10.0.0.1/0"},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": 7},
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "group_id": "not-a-uuid"},
    {"parent_group_id": "not-a-uuid"}, {"parent_group_id": 5}])
async def test_bad_rules_are_400(demo: httpx.AsyncClient, rule: dict[str, Any]) -> None:
    group = await create_group(demo)
    resp = await create_rule(demo, **{"parent_group_id": group["id"], **rule})
    assert resp.status_code == 400, resp.text
    shown = (await demo.get(f"{GROUPS}/{group['id']}")).json()["security_group"]
    assert shown["rules"] == []


async def test_duplicate_rule_is_400_and_unknown_groups_404(demo: httpx.AsyncClient) -> None:
    group = await create_group(demo)
    rule = {"parent_group_id": group["id"], "ip_protocol": "tcp", "from_port": 22, "to_port": 22}
    assert (await create_rule(demo, **rule)).status_code == 200
    again = await create_rule(demo, **{**rule, "ip_protocol": "TCP"})
    assert again.status_code == 400 and "already exists" in again.text
    assert (await create_rule(demo, **{**rule, "parent_group_id": str(uuid.uuid4())})
            ).status_code == 404
    assert (await create_rule(demo, **{**rule, "group_id": str(uuid.uuid4())})).status_code == 404
    assert (await demo.delete(f"{RULES}/{uuid.uuid4()}")).status_code == 404
    assert (await demo.delete(f"{RULES}/not-a-uuid")).status_code == 400


async def test_default_and_used_groups_cannot_be_deleted(demo: httpx.AsyncClient) -> None:
    again = await demo.post(GROUPS, json={"security_group": {"name": "default", "description": ""}})
    assert again.status_code == 400, again.text
    groups = (await demo.get(GROUPS)).json()["security_groups"]
    default = next(g for g in groups if g["name"] == "default")
    resp = await demo.delete(f"{GROUPS}/{default['id']}")
    assert resp.status_code == 400, resp.text
    used = await create_group(demo, "used")
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image, name="guarded"))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert (await act(demo, server["id"], {"addSecurityGroup": {"name": "used"}})).status_code == 202
    resp = await demo.delete(f"{GROUPS}/{used['id']}")
    assert resp.status_code == 400, resp.text
    assert (await demo.get(f"{GROUPS}/{used['id']}")).status_code == 200


@pytest.mark.parametrize("method, path", [
    ("GET", GROUPS), ("POST", GROUPS), ("GET", f"{GROUPS}/{{id}}"), ("PUT", f"{GROUPS}/{{id}}"),
    ("DELETE", f"{GROUPS}/{{id}}"), ("POST", RULES), ("DELETE", f"{RULES}/{{id}}")])
async def test_gone_from_2_36(demo: httpx.AsyncClient, method: str, path: str) -> None:
    group = await create_group(demo)
    old = {"OpenStack-API-Version": "compute 2.35"}
    assert (await demo.get(f"{GROUPS}/{group['id']}", headers=old)).status_code == 200
    body = {"security_group": {"name": "n", "description": "d"}} if method != "GET" else None
    resp = await demo.request(method, path.format(id=group["id"]), json=body,
                              headers={"OpenStack-API-Version": "compute 2.36"})
    assert resp.status_code == 404, resp.text
    assert (await demo.get(f"{GROUPS}/{group['id']}")).status_code == 200


async def test_a_reader_reads_but_does_not_write(api: Api, admin: httpx.AsyncClient,
                                                 demo: httpx.AsyncClient) -> None:
    group = await create_group(demo)
    projects = (await admin.get("/identity/v3/projects", params={"name": "demo"})).json()
    await make_user(admin, "rita")
    users = (await admin.get("/identity/v3/users", params={"name": "rita"})).json()["users"]
    roles = (await admin.get("/identity/v3/roles", params={"name": "reader"})).json()["roles"]
    assign = (f"/identity/v3/projects/{projects['projects'][0]['id']}/users/{users[0]['id']}"
              f"/roles/{roles[0]['id']}")
    assert (await admin.put(assign)).status_code == 204
    async with await api.as_user("rita", project="demo") as rita:
        assert (await rita.get(f"{GROUPS}/{group['id']}")).status_code == 200
        assert (await rita.delete(f"{GROUPS}/{group['id']}")).status_code == 403
        assert (await create_group_status(rita)) == 403


async def create_group_status(client: httpx.AsyncClient) -> int:
    resp = await client.post(GROUPS, json={"security_group": {"name": "n", "description": "d"}})
    return resp.status_code


async def test_a_rules_prefix_is_kept_as_given(demo: httpx.AsyncClient) -> None:
    """As Neutron keeps it (Nova shows it back); ``normalized_cidr`` is its network."""
    group = await create_group(demo)
    made = await create_rule(demo, parent_group_id=group["id"], ip_protocol="tcp",
                             from_port=443, to_port=443, cidr="10.2.3.124/24")
    rule_id = made.json()["security_group_rule"]["id"]
    shown = (await demo.get(f"/network/v2.0/security-group-rules/{rule_id}")).json()
    assert (shown["security_group_rule"]["remote_ip_prefix"],
            shown["security_group_rule"]["normalized_cidr"]) == ("10.2.3.124/24", "10.2.3.0/24")
    # the same network, written another way, is the same rule
    again = await create_rule(demo, parent_group_id=group["id"], ip_protocol="tcp",
                              from_port=443, to_port=443, cidr="10.2.3.0/24")
    assert again.status_code == 400, again.text
