"""Compute as hostile tenants see it: whose servers, groups and limits each
persona reaches, and what it may change (issue #18).

Project A is ``demo`` (``tenants.member`` owns the resources); ``other`` is
a member of project B, ``reader`` reads A, ``norole`` and ``unscoped`` hold
tokens scoped to no project.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants

COMPUTE = "/compute/v2.1"
SERVERS = f"{COMPUTE}/servers"
ANY_IMAGE = "6f0b3c1e-0000-4000-8000-000000000000"  # refused before it is looked up


@dataclass
class Victim:
    """Project A's resources: an ACTIVE server with metadata, its port and
    its create action, and a server group."""

    server: str
    port: str
    request_id: str
    group: str


@pytest.fixture
async def victim(tenants: Tenants) -> Victim:
    member = tenants.member
    image = await upload_image(member)
    server = (await create_server(member, server_body(image, name="a-secret",
                                                      metadata={"k": "v"})))["id"]
    await wait_for_status(member, server, {"ACTIVE"})
    ports = (await member.get(f"{SERVERS}/{server}/os-interface")).json()["interfaceAttachments"]
    actions = (await member.get(f"{SERVERS}/{server}/os-instance-actions")).json()
    group = (await member.post(f"{COMPUTE}/os-server-groups", json={"server_group": {
        "name": "g", "policies": ["affinity"]}})).json()["server_group"]["id"]
    return Victim(server, ports[0]["port_id"], actions["instanceActions"][0]["request_id"], group)


async def listings_still_answer(tenants: Tenants) -> None:
    """What every refused request leaves working: the victim's listing and
    the admin's listing of every project."""
    assert (await tenants.member.get(f"{SERVERS}/detail")).status_code == 200
    resp = await tenants.admin.get(f"{SERVERS}/detail", params={"all_tenants": 1})
    assert resp.status_code == 200, resp.text


def _server_routes(v: Victim) -> list[tuple[str, str, Any]]:
    """Every compute route on one server (and its group): method, path, body."""
    s = f"{SERVERS}/{v.server}"
    return [
        ("GET", s, None), ("DELETE", s, None),
        ("POST", f"{s}/action", {"os-stop": None}), ("POST", f"{s}/action", {"os-start": None}),
        ("POST", f"{s}/action", {"reboot": {"type": "HARD"}}),
        ("POST", f"{s}/action", {"os-getConsoleOutput": {}}),
        ("GET", f"{s}/metadata", None), ("POST", f"{s}/metadata", {"metadata": {"x": "1"}}),
        ("PUT", f"{s}/metadata", {"metadata": {}}), ("GET", f"{s}/metadata/k", None),
        ("PUT", f"{s}/metadata/k", {"meta": {"k": "stolen"}}), ("DELETE", f"{s}/metadata/k", None),
        ("GET", f"{s}/os-interface", None), ("GET", f"{s}/os-interface/{v.port}", None),
        ("POST", f"{s}/os-interface", {"interfaceAttachment": {"port_id": v.port}}),
        ("DELETE", f"{s}/os-interface/{v.port}", None),
        ("GET", f"{s}/os-instance-actions", None),
        ("GET", f"{s}/os-instance-actions/{v.request_id}", None),
        ("GET", f"{COMPUTE}/os-server-groups/{v.group}", None),
        ("DELETE", f"{COMPUTE}/os-server-groups/{v.group}", None),
    ]


async def _unchanged(tenants: Tenants, v: Victim) -> None:
    server = (await tenants.member.get(f"{SERVERS}/{v.server}")).json()["server"]
    assert server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None
    assert server["metadata"] == {"k": "v"}
    ports = (await tenants.member.get(f"{SERVERS}/{v.server}/os-interface")).json()
    assert [p["port_id"] for p in ports["interfaceAttachments"]] == [v.port]
    assert (await tenants.member.get(f"{COMPUTE}/os-server-groups/{v.group}")).status_code == 200
    actions = (await tenants.member.get(f"{SERVERS}/{v.server}/os-instance-actions")).json()
    assert [a["action"] for a in actions["instanceActions"]] == ["create"]


@pytest.mark.parametrize("persona", ["other", "norole", "unscoped"])
async def test_another_projects_server_and_group_do_not_exist(tenants: Tenants, victim: Victim,
                                                              persona: str) -> None:
    client: httpx.AsyncClient = getattr(tenants, persona)
    answers = {}
    for method, path, body in _server_routes(victim):
        resp = await client.request(method, path, json=body)
        answers[(method, path, str(body))] = resp.status_code
    # Nova answers 404 for another project's server (and group): nothing leaks
    # that it exists, and nothing changes. A token with no project may also
    # be refused outright (403).
    wrong = {k: code for k, code in answers.items() if code not in (404, 403)}
    assert not wrong, wrong
    if persona == "other":
        assert set(answers.values()) == {404}, answers
    await _unchanged(tenants, victim)
    await listings_still_answer(tenants)


async def test_a_reader_reads_but_changes_nothing(tenants: Tenants, victim: Victim) -> None:
    answers = {}
    for method, path, body in _server_routes(victim):
        resp = await tenants.reader.request(method, path, json=body)
        answers[(method, path)] = resp.status_code
    for (method, path), code in answers.items():
        expected = 200 if method == "GET" else 403
        assert code == expected, (method, path, code)
    resp = await tenants.reader.post(f"{COMPUTE}/os-server-groups", json={"server_group": {
        "name": "mine", "policies": ["affinity"]}})
    assert resp.status_code == 403, resp.text
    resp = await tenants.reader.post(SERVERS, json=server_body(ANY_IMAGE, name="r"))
    assert resp.status_code == 403, resp.text
    await _unchanged(tenants, victim)
    groups = (await tenants.member.get(f"{COMPUTE}/os-server-groups")).json()["server_groups"]
    assert [g["name"] for g in groups] == ["g"]


@pytest.mark.parametrize("persona", ["norole", "unscoped"])
@pytest.mark.parametrize("path", ["servers", "servers/detail", "os-server-groups", "limits"])
@pytest.mark.parametrize("params", [{}, {"all_tenants": 1, "all_projects": 1}])
async def test_no_project_lists_nothing_not_everything(tenants: Tenants, victim: Victim,
                                                       persona: str, path: str,
                                                       params: dict[str, int]) -> None:
    resp = await getattr(tenants, persona).get(f"{COMPUTE}/{path}", params=params)
    assert resp.status_code == 403, resp.text
    assert victim.server not in resp.text and victim.group not in resp.text


@pytest.mark.parametrize("persona", ["norole", "unscoped"])
async def test_no_project_creates_nothing(tenants: Tenants, persona: str) -> None:
    client = getattr(tenants, persona)
    for path, body in (("servers", server_body(ANY_IMAGE, name="x")),
                       ("os-server-groups", {"server_group": {"name": "x",
                                                              "policies": ["affinity"]}}),
                       ("os-keypairs", {"keypair": {"name": "x"}})):
        resp = await client.post(f"{COMPUTE}/{path}", json=body)
        assert resp.status_code == 403, (path, resp.text)
    all_groups = await tenants.admin.get(f"{COMPUTE}/os-server-groups",
                                         params={"all_projects": "true"})
    assert all_groups.json()["server_groups"] == []


async def test_listings_show_the_callers_project_only(tenants: Tenants, victim: Victim) -> None:
    for persona in ("other", "admin"):
        client = getattr(tenants, persona)
        assert (await client.get(f"{SERVERS}/detail")).json()["servers"] == []
        assert (await client.get(f"{COMPUTE}/os-server-groups")).json()["server_groups"] == []
    # A project filter is for admins listing every project; others get their own.
    resp = await tenants.other.get(f"{SERVERS}/detail",
                                   params={"project_id": tenants.project["demo"]})
    assert resp.json()["servers"] == []
    admin_all = await tenants.admin.get(f"{SERVERS}/detail", params={"all_tenants": 1})
    assert [s["id"] for s in admin_all.json()["servers"]] == [victim.server]
    groups = await tenants.admin.get(f"{COMPUTE}/os-server-groups", params={"all_projects": 1})
    assert [g["id"] for g in groups.json()["server_groups"]] == [victim.group]


async def test_another_projects_quota_and_limits(tenants: Tenants) -> None:
    demo = tenants.project["demo"]
    assert (await tenants.other.get(f"{COMPUTE}/os-quota-sets/{demo}")).status_code == 403
    assert (await tenants.other.get(f"{COMPUTE}/os-quota-sets/{demo}/detail")).status_code == 403
    resp = await tenants.other.put(f"{COMPUTE}/os-quota-sets/{demo}",
                                   json={"quota_set": {"instances": 1000}})
    assert resp.status_code == 403
    # tenant_id is for admins; another project's member sees its own limits.
    limits = await tenants.other.get(f"{COMPUTE}/limits", params={"tenant_id": demo})
    assert limits.status_code == 200
    own = await tenants.member.get(f"{COMPUTE}/limits")
    assert own.json()["limits"]["absolute"]["maxTotalInstances"] == 10


async def test_key_pairs_are_their_users_own(tenants: Tenants) -> None:
    resp = await tenants.member.post(f"{COMPUTE}/os-keypairs", json={"keypair": {"name": "k"}})
    assert resp.status_code in (200, 201), resp.text
    demo_user = tenants.user["demo"]
    for persona in ("other", "reader"):
        client = getattr(tenants, persona)
        assert (await client.get(f"{COMPUTE}/os-keypairs")).json()["keypairs"] == []
        assert (await client.get(f"{COMPUTE}/os-keypairs/k")).status_code == 404
        assert (await client.delete(f"{COMPUTE}/os-keypairs/k")).status_code == 404
        resp = await client.get(f"{COMPUTE}/os-keypairs", params={"user_id": demo_user},
                                headers={"OpenStack-API-Version": "compute 2.10"})
        assert resp.status_code == 403, resp.text
    assert (await tenants.member.get(f"{COMPUTE}/os-keypairs/k")).status_code == 200


async def _scoped_to_other(tenants: Tenants, name: str, role: str) -> httpx.AsyncClient:
    """A new user holding only ``role`` in project B, logged in to B."""
    admin = tenants.admin
    roles = (await admin.get("/identity/v3/roles", params={"name": role})).json()["roles"]
    role_id = roles[0]["id"] if roles else (await admin.post(
        "/identity/v3/roles", json={"role": {"name": role}})).json()["role"]["id"]
    user = (await admin.post("/identity/v3/users", json={"user": {
        "name": name, "password": name, "domain_id": "default"}})).json()["user"]["id"]
    resp = await admin.put(f"/identity/v3/projects/{tenants.project['other']}/users/{user}"
                           f"/roles/{role_id}")
    assert resp.status_code == 204, resp.text
    return tenants.api.client(await tenants.issue(name, name, "other"))


@pytest.mark.parametrize("role", ["reader", "observer"])
async def test_another_projects_server_is_404_whatever_the_callers_role(
        tenants: Tenants, victim: Victim, role: str) -> None:
    """Nova finds the server within the caller's project before it checks the
    caller's role: a reader (or a holder of a role cirrus does not know) of
    project B is told project A's server does not exist, not that it may not
    touch it (issue #19)."""
    client = await _scoped_to_other(tenants, f"b-{role}", role)
    async with client:
        answers = {}
        for method, path, body in _server_routes(victim):
            if victim.server not in path:
                continue  # server groups: Nova reads them unscoped (its 403 is the policy's)
            resp = await client.request(method, path, json=body)
            answers[(method, path, str(body))] = resp.status_code
            assert resp.status_code != 404 or "itemNotFound" in resp.json(), resp.text
        assert set(answers.values()) == {404}, answers
        # Its own project's servers: the role decides (403), none is hidden.
        resp = await client.delete(f"{SERVERS}/{'0' * 8}-0000-4000-8000-{'0' * 12}")
        assert resp.status_code == 404
    await _unchanged(tenants, victim)


async def test_a_reader_of_the_servers_project_is_refused_not_hidden(
        tenants: Tenants, victim: Victim) -> None:
    """The 404 is for what is not the caller's: project A's reader may see
    the server, and is told 403 when it tries to delete it."""
    resp = await tenants.reader.delete(f"{SERVERS}/{victim.server}")
    assert resp.status_code == 403, resp.text
    assert "forbidden" in resp.json()
    await _unchanged(tenants, victim)


def _routes_of_issue_19(v: Victim) -> list[tuple[str, str, Any]]:
    """The server routes issue #19 added: method, path, body (at 2.26)."""
    s = f"{SERVERS}/{v.server}"
    return [("PUT", s, {"server": {"name": "stolen"}}), ("GET", f"{s}/ips", None),
            ("GET", f"{s}/ips/private", None), ("GET", f"{s}/tags", None),
            ("PUT", f"{s}/tags", {"tags": ["stolen"]}), ("DELETE", f"{s}/tags", None),
            ("GET", f"{s}/tags/t", None), ("PUT", f"{s}/tags/t", None),
            ("DELETE", f"{s}/tags/t", None), ("GET", f"{s}/os-server-password", None),
            ("DELETE", f"{s}/os-server-password", None),
            ("GET", f"{s}/os-security-groups", None)]


@pytest.mark.parametrize("persona,expected", [("other", {404}), ("reader", {200, 204, 403}),
                                              ("norole", {403}), ("unscoped", {403})])
async def test_the_new_server_routes_by_persona(tenants: Tenants, victim: Victim, persona: str,
                                                expected: set[int]) -> None:
    client = getattr(tenants, persona)
    v226 = {"OpenStack-API-Version": "compute 2.26"}
    await tenants.member.put(f"{SERVERS}/{victim.server}/tags/t", headers=v226)
    for method, path, body in _routes_of_issue_19(victim):
        resp = await client.request(method, path, json=body, headers=v226)
        if persona == "reader":  # reads, changes nothing
            assert resp.status_code == (403 if method != "GET" else
                                        404 if "/ips/" in path else 200 if "/tags/" not in path
                                        else 204), (method, path, resp.text)
        else:
            assert resp.status_code in expected, (method, path, resp.text)
            assert list(resp.json()) == ["itemNotFound" if persona == "other" else "forbidden"]
    tags = await tenants.member.get(f"{SERVERS}/{victim.server}/tags", headers=v226)
    assert tags.json()["tags"] == ["t"]
    await _unchanged(tenants, victim)
