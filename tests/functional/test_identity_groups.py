"""Keystone domains, groups, grants, role assignments and implied roles over HTTP."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.identity import admin as identity_admin
from cirrus.identity.exception import ForbiddenAction
from tests.conftest import Api

V3 = "/identity/v3"


async def create(admin: httpx.AsyncClient, kind: str, **body: Any) -> dict[str, Any]:
    resp = await admin.post(f"{V3}/{kind}s", json={kind: body})
    assert resp.status_code == 201, resp.text
    return resp.json()[kind]


async def login(api: Api, name: str, password: str, scope: Any = None) -> httpx.Response:
    auth: dict[str, Any] = {"identity": {"methods": ["password"], "password": {"user": {
        "name": name, "domain": {"id": "default"}, "password": password}}}}
    if scope is not None:
        auth["scope"] = scope
    async with api.client() as c:
        return await c.post(f"{V3}/auth/tokens", json={"auth": auth})


async def test_a_domain_is_made_changed_and_deleted_only_once_disabled(
        admin: httpx.AsyncClient) -> None:
    dom = await create(admin, "domain", name="d1", description="first")
    assert (dom["enabled"], dom["description"]) == (True, "first")
    assert (await admin.post(f"{V3}/domains", json={"domain": {"name": "d1"}})).status_code == 409
    assert (await admin.post(f"{V3}/domains", json={"domain": {"name": "x" * 65}})).status_code == 400
    assert (await admin.post(f"{V3}/domains", json={"domain": {"name": ""}})).status_code == 400
    project = await create(admin, "project", name="p-in-d1", domain_id=dom["id"])
    user = await create(admin, "user", name="u-in-d1", domain_id=dom["id"])
    assert (await admin.delete(f"{V3}/domains/{dom['id']}")).status_code == 403
    listed = (await admin.get(f"{V3}/domains", params={"enabled": "false"})).json()["domains"]
    assert dom["id"] not in {d["id"] for d in listed}
    resp = await admin.patch(f"{V3}/domains/{dom['id']}", json={"domain": {"enabled": False}})
    assert resp.json()["domain"]["enabled"] is False
    assert (await admin.delete(f"{V3}/domains/{dom['id']}")).status_code == 204
    for path in (f"domains/{dom['id']}", f"projects/{project['id']}", f"users/{user['id']}"):
        assert (await admin.get(f"{V3}/{path}")).status_code == 404, path
    assert (await admin.delete(f"{V3}/domains/{dom['id']}")).status_code == 404


async def test_the_default_domain_cannot_be_deleted(api: Api, admin: httpx.AsyncClient) -> None:
    assert (await admin.delete(f"{V3}/domains/default")).status_code == 403  # enabled
    # Disabled, even: through the service (an admin of the default domain that
    # disabled it would have no token left to ask with).
    db = api.cloud.db
    assert db is not None
    await db.run(identity_admin.update, "domain", "default", {"enabled": False}, lifetime=60)
    with pytest.raises(ForbiddenAction):
        await db.run(identity_admin.delete, "domain", "default", lifetime=60)


async def test_a_member_reads_their_own_domain_only(api: Api, admin: httpx.AsyncClient,
                                                    demo: httpx.AsyncClient) -> None:
    other = await create(admin, "domain", name="elsewhere")
    assert (await demo.get(f"{V3}/domains/default")).json()["domain"]["name"] == "Default"
    assert (await demo.get(f"{V3}/domains/{other['id']}")).status_code == 403
    assert (await demo.post(f"{V3}/domains", json={"domain": {"name": "mine"}})).status_code == 403


async def test_a_group_gives_its_members_its_roles(api: Api, admin: httpx.AsyncClient) -> None:
    group = await create(admin, "group", name="ops", description="operators")
    user = await create(admin, "user", name="gina", password="gina-pw")
    project = await create(admin, "project", name="gproj")
    roles = {r["name"]: r["id"] for r in (await admin.get(f"{V3}/roles")).json()["roles"]}
    grant = f"{V3}/projects/{project['id']}/groups/{group['id']}/roles/{roles['member']}"
    assert (await admin.put(grant)).status_code == 204
    assert (await admin.head(grant)).status_code == 204
    scope = {"project": {"id": project["id"]}}
    assert (await login(api, "gina", "gina-pw", scope)).status_code == 401  # not a member yet
    member = f"{V3}/groups/{group['id']}/users/{user['id']}"
    assert (await admin.head(member)).status_code == 404
    assert (await admin.put(member)).status_code == 204
    assert (await admin.head(member)).status_code == 204
    token = await login(api, "gina", "gina-pw", scope)
    assert [r["name"] for r in token.json()["token"]["roles"]] == ["member"]
    users = (await admin.get(f"{V3}/groups/{group['id']}/users")).json()["users"]
    assert [u["name"] for u in users] == ["gina"]
    async with api.client(token.headers["X-Subject-Token"]) as gina:
        mine = (await gina.get(f"{V3}/users/{user['id']}/groups")).json()["groups"]
        assert [g["name"] for g in mine] == ["ops"]
        assert [p["id"] for p in (await gina.get(f"{V3}/auth/projects")).json()["projects"]] \
            == [project["id"]]
        assert (await admin.delete(member)).status_code == 204
        # Leaving the group ends the tokens it gave.
        assert (await gina.get(f"{V3}/auth/projects")).status_code == 401
    assert (await login(api, "gina", "gina-pw", scope)).status_code == 401


async def test_grants_on_domains_and_the_system(api: Api, admin: httpx.AsyncClient) -> None:
    user = await create(admin, "user", name="sam", password="sam-pw")
    roles = {r["name"]: r["id"] for r in (await admin.get(f"{V3}/roles")).json()["roles"]}
    for where in ("domains/default", "system"):
        base = f"{V3}/{where}/users/{user['id']}/roles"
        assert (await admin.put(f"{base}/{roles['reader']}")).status_code == 204
        listed = (await admin.get(base)).json()["roles"]
        assert [r["name"] for r in listed] == ["reader"]
    token = await login(api, "sam", "sam-pw", {"system": {"all": True}})
    assert token.status_code == 201, token.text
    body = token.json()["token"]
    assert body["system"] == {"all": True} and [r["name"] for r in body["roles"]] == ["reader"]
    async with api.client(token.headers["X-Subject-Token"]) as sam:
        assert (await sam.get(f"{V3}/auth/system")).json()["system"] == [{"all": True}]
        assert [d["id"] for d in (await sam.get(f"{V3}/auth/domains")).json()["domains"]] \
            == ["default"]
        assert (await sam.get(f"{V3}/users")).status_code == 403  # a reader, not an admin
    base = f"{V3}/system/users/{user['id']}/roles/{roles['reader']}"
    assert (await admin.delete(base)).status_code == 204
    assert (await admin.delete(base)).status_code == 404
    assert (await login(api, "sam", "sam-pw", {"system": {"all": True}})).status_code == 401


async def test_role_assignments_filters_names_and_effective(admin: httpx.AsyncClient) -> None:
    group = await create(admin, "group", name="devs")
    user = await create(admin, "user", name="dana", password="x")
    project = await create(admin, "project", name="ra")
    prior = await create(admin, "role", name="prior")
    implied = await create(admin, "role", name="implied")
    await admin.put(f"{V3}/groups/{group['id']}/users/{user['id']}")
    await admin.put(f"{V3}/projects/{project['id']}/groups/{group['id']}/roles/{prior['id']}")
    resp = await admin.put(f"{V3}/roles/{prior['id']}/implies/{implied['id']}")
    assert resp.status_code == 201, resp.text
    params = {"scope.project.id": project["id"]}
    direct = (await admin.get(f"{V3}/role_assignments", params=params)).json()
    assert [(a["group"]["id"], a["role"]["id"]) for a in direct["role_assignments"]] == [
        (group["id"], prior["id"])]
    named = (await admin.get(f"{V3}/role_assignments",
                             params={**params, "include_names": "true"})).json()
    assert named["role_assignments"][0]["scope"]["project"]["name"] == "ra"
    assert named["role_assignments"][0]["group"]["name"] == "devs"
    effective = (await admin.get(f"{V3}/role_assignments", params={
        **params, "effective": "true", "user.id": user["id"]})).json()["role_assignments"]
    assert sorted(a["role"]["id"] for a in effective) == sorted([prior["id"], implied["id"]])
    assert all(a["user"]["id"] == user["id"] and "membership" in a["links"] for a in effective)
    bad = await admin.get(f"{V3}/role_assignments", params={"effective": "1",
                                                             "group.id": group["id"]})
    assert bad.status_code == 400


async def test_implied_roles_rules(admin: httpx.AsyncClient) -> None:
    dom = await create(admin, "domain", name="rd")
    a, b = await create(admin, "role", name="a"), await create(admin, "role", name="b")
    local = await create(admin, "role", name="local", domain_id=dom["id"])
    assert local["domain_id"] == dom["id"]
    assert [r["id"] for r in (await admin.get(f"{V3}/roles", params={
        "domain_id": dom["id"]})).json()["roles"]] == [local["id"]]
    assert local["id"] not in {r["id"] for r in (await admin.get(f"{V3}/roles")).json()["roles"]}
    rule = f"{V3}/roles/{a['id']}/implies/{b['id']}"
    assert (await admin.head(rule)).status_code == 404
    assert (await admin.put(rule)).status_code == 201
    shown = (await admin.get(rule)).json()["role_inference"]
    assert (shown["prior_role"]["name"], shown["implies"]["name"]) == ("a", "b")
    listed = (await admin.get(f"{V3}/roles/{a['id']}/implies")).json()["role_inference"]
    assert [r["id"] for r in listed["implies"]] == [b["id"]]
    every = (await admin.get(f"{V3}/role_inferences")).json()["role_inferences"]
    assert any(r["prior_role"]["id"] == a["id"] for r in every)
    # A global role may not imply a domain's; a domain's may imply a global one.
    assert (await admin.put(f"{V3}/roles/{a['id']}/implies/{local['id']}")).status_code == 403
    assert (await admin.put(f"{V3}/roles/{local['id']}/implies/{a['id']}")).status_code == 201
    assert (await admin.put(f"{V3}/roles/{a['id']}/implies/{a['id']}")).status_code == 403
    assert (await admin.delete(rule)).status_code == 204
    assert (await admin.get(rule)).status_code == 404


async def test_a_domain_role_is_never_effective(admin: httpx.AsyncClient) -> None:
    dom = await create(admin, "domain", name="dr")
    local = await create(admin, "role", name="dlocal", domain_id=dom["id"])
    user = await create(admin, "user", name="dee", password="x")
    project = await create(admin, "project", name="drp")
    assert (await admin.put(f"{V3}/projects/{project['id']}/users/{user['id']}/roles/"
                            f"{local['id']}")).status_code == 204
    params = {"scope.project.id": project["id"], "user.id": user["id"]}
    assert len((await admin.get(f"{V3}/role_assignments", params=params)).json()[
        "role_assignments"]) == 1
    assert (await admin.get(f"{V3}/role_assignments", params={**params, "effective": ""})
            ).json()["role_assignments"] == []


async def test_project_parents_and_tags(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                        api: Api) -> None:
    parent = await create(admin, "project", name="parent", tags=["a", "b"])
    assert parent["parent_id"] == "default" and parent["tags"] == ["a", "b"]
    child = await create(admin, "project", name="child", parent_id=parent["id"])
    assert child["parent_id"] == parent["id"]
    children = (await admin.get(f"{V3}/projects", params={"parent_id": parent["id"]})).json()
    assert [p["id"] for p in children["projects"]] == [child["id"]]
    tagged = (await admin.get(f"{V3}/projects", params={"tags": "a,b"})).json()["projects"]
    assert [p["id"] for p in tagged] == [parent["id"]]
    base = f"{V3}/projects/{parent['id']}/tags"
    assert (await admin.put(f"{base}/c")).status_code == 201
    assert (await admin.get(f"{base}/c")).status_code == 204
    assert (await admin.put(base, json={"tags": ["x", "y"]})).json()["tags"] == ["x", "y"]
    assert (await admin.delete(f"{base}/x")).status_code == 204
    assert (await admin.get(f"{base}/x")).status_code == 404
    assert (await admin.put(base, json={"tags": ["no/slash"]})).status_code == 400
    assert (await admin.put(base, json={"tags": [str(i) for i in range(81)]})).status_code == 400
    assert (await admin.delete(base)).status_code == 204
    assert (await admin.get(base)).json()["tags"] == []
    assert (await demo.get(base)).status_code == 403  # another project's
    assert (await demo.put(f"{base}/z")).status_code == 403


async def test_a_disabled_domain_ends_its_users_tokens(api: Api, admin: httpx.AsyncClient) -> None:
    dom = await create(admin, "domain", name="closing")
    user = await create(admin, "user", name="cleo", password="cleo-pw", domain_id=dom["id"])
    project = await create(admin, "project", name="cp", domain_id=dom["id"])
    roles = {r["name"]: r["id"] for r in (await admin.get(f"{V3}/roles")).json()["roles"]}
    await admin.put(f"{V3}/projects/{project['id']}/users/{user['id']}/roles/{roles['member']}")

    async def cleo_login() -> httpx.Response:
        async with api.client() as c:
            return await c.post(f"{V3}/auth/tokens", json={"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "id": user["id"], "password": "cleo-pw"}}},
                "scope": {"project": {"id": project["id"]}}}})
    token = await cleo_login()
    assert token.status_code == 201, token.text
    await admin.patch(f"{V3}/domains/{dom['id']}", json={"domain": {"enabled": False}})
    async with api.client(token.headers["X-Subject-Token"]) as cleo:
        assert (await cleo.get(f"{V3}/auth/projects")).status_code == 401
    assert (await cleo_login()).status_code == 401
    await admin.patch(f"{V3}/domains/{dom['id']}", json={"domain": {"enabled": True}})
    assert (await cleo_login()).status_code == 201


async def test_deleting_a_group_ends_the_roles_it_gave(api: Api, admin: httpx.AsyncClient) -> None:
    group = await create(admin, "group", name="temp")
    await create(admin, "user", name="gus", password="gus-pw")
    gus = (await admin.get(f"{V3}/users", params={"name": "gus"})).json()["users"][0]
    project = await create(admin, "project", name="gp")
    roles = {r["name"]: r["id"] for r in (await admin.get(f"{V3}/roles")).json()["roles"]}
    await admin.put(f"{V3}/groups/{group['id']}/users/{gus['id']}")
    await admin.put(f"{V3}/projects/{project['id']}/groups/{group['id']}/roles/{roles['member']}")
    token = await login(api, "gus", "gus-pw", {"project": {"id": project["id"]}})
    assert token.status_code == 201
    assert (await admin.delete(f"{V3}/groups/{group['id']}")).status_code == 204
    async with api.client(token.headers["X-Subject-Token"]) as client:
        assert (await client.get(f"{V3}/auth/projects")).status_code == 401
    assert (await login(api, "gus", "gus-pw", {"project": {"id": project["id"]}})).status_code \
        == 401
