"""Withdrawn access ends existing tokens at once (Keystone's revocation events),
in every API process; tokens are validated as Keystone does (owner or admin,
404 for a subject token that is not valid)."""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from cirrus.bootstrap import Cloud
from cirrus.identity.revocation import RevocationList, RevokeEvent
from cirrus.identity.tokens import TokenData
from tests.client.conftest import free_port, start_cloud, stop, wait_up
from tests.conftest import Api
from tests.security.conftest import Tenants

ID = "/identity/v3"
# One compute and one network request: the middleware validates for both.
PROBES = ("/compute/v2.1/servers", "/network/v2.0/networks")


async def status_with(api: Api, token: str, path: str = PROBES[0]) -> int:
    async with api.client(token) as c:
        return (await c.get(path)).status_code


async def assert_refused(api: Api, token: str) -> None:
    for path in PROBES:
        assert await status_with(api, token, path) == 401, path


async def assert_works(api: Api, token: str) -> None:
    for path in PROBES:
        assert await status_with(api, token, path) == 200, path


@dataclass
class Victim:
    """A user who is member (and reader) of their own project, with a token."""

    name: str
    user_id: str
    project_id: str
    token: str


async def role_id(admin: httpx.AsyncClient, name: str) -> str:
    roles = (await admin.get(f"{ID}/roles", params={"name": name})).json()["roles"]
    return roles[0]["id"]


async def make_victim(t: Tenants, name: str, roles: tuple[str, ...] = ("member",)) -> Victim:
    admin = t.admin
    project = await admin.post(f"{ID}/projects", json={"project": {"name": name}})
    user = await admin.post(f"{ID}/users", json={"user": {"name": name, "password": name}})
    assert project.status_code == user.status_code == 201
    project_id, user_id = project.json()["project"]["id"], user.json()["user"]["id"]
    for role in roles:
        resp = await admin.put(f"{ID}/projects/{project_id}/users/{user_id}/roles/"
                               f"{await role_id(admin, role)}")
        assert resp.status_code == 204, resp.text
    victim = Victim(name, user_id, project_id, await t.issue(name, name, name))
    await assert_works(t.api, victim.token)
    return victim


# -- which tokens an event matches (the rule, as a table) ---------------------------------

def _token(**values: Any) -> TokenData:
    base: dict[str, Any] = {"user_id": "u", "project_id": "p", "roles": ["member", "reader"],
                            "audit_id": "a", "generation": 1}
    return TokenData(expires_at=0.0, issued_at=0.0, methods=["password"], **{**base, **values})


MATCHES: list[tuple[RevokeEvent, TokenData, bool]] = [
    (RevokeEvent(user_id="u"), _token(), True),
    (RevokeEvent(user_id="u"), _token(user_id="v"), False),
    (RevokeEvent(user_id="u"), _token(generation=2), False),  # issued after the event
    (RevokeEvent(project_id="p"), _token(), True),
    (RevokeEvent(project_id="p"), _token(project_id=None), False),
    (RevokeEvent(user_id="u", project_id="p", role="member"), _token(), True),
    (RevokeEvent(user_id="u", project_id="p", role="member"), _token(roles=["reader"]), False),
    (RevokeEvent(user_id="u", project_id="p", role="member"), _token(project_id="q"), False),
    (RevokeEvent(user_id="u", domain_id="d", role="admin"),
     _token(project_id=None, domain_id="d", roles=["admin"]), True),
    (RevokeEvent(user_id="u", domain_id="d", role="admin"), _token(roles=["admin"]), False),
    (RevokeEvent(role="reader"), _token(), True),
    (RevokeEvent(role="reader"), _token(roles=["member"]), False),
    (RevokeEvent(audit_id="a"), _token(), True),
    (RevokeEvent(audit_id="a"), _token(audit_id="b", parent_audit_id="a"), False),
    (RevokeEvent(audit_chain_id="a"), _token(audit_id="b", parent_audit_id="a"), True),
    (RevokeEvent(audit_chain_id="a"), _token(), True),  # the chain's first token
    (RevokeEvent(audit_chain_id="a"), _token(audit_id="b"), False),
]


@pytest.mark.parametrize("event, token, revoked", MATCHES)
def test_an_event_revokes_the_older_tokens_it_matches(event: RevokeEvent, token: TokenData,
                                                      revoked: bool) -> None:
    events = RevocationList()
    events.add(RevokeEvent(user_id="someone else"), 1, dt.datetime(2026, 1, 1))
    events.add(event, 2, dt.datetime(2026, 1, 1))
    assert events.revokes(token) is revoked
    events.prune(dt.datetime(2026, 1, 2))  # a token lifetime later: forgotten
    assert len(events) == 0 and not events.revokes(token)


# -- each trigger: the token from before is refused, one from after works ---------------

async def role_removed(t: Tenants, v: Victim) -> str:
    """member removed; the reader role stays: a new token carries only that."""
    resp = await t.admin.delete(f"{ID}/projects/{v.project_id}/users/{v.user_id}/roles/"
                                f"{await role_id(t.admin, 'member')}")
    assert resp.status_code == 204
    token = await t.issue(v.name, v.name, v.name)
    async with t.api.client(t.tokens["admin"]) as c:
        body = (await c.get(f"{ID}/auth/tokens", headers={"X-Subject-Token": token})).json()
    assert [r["name"] for r in body["token"]["roles"]] == ["reader"]
    return token


async def role_deleted(t: Tenants, v: Victim) -> str:
    custom = await t.admin.post(f"{ID}/roles", json={"role": {"name": f"{v.name}-role"}})
    # (the token under test was issued before this role existed: give it one that has it)
    await t.admin.put(f"{ID}/projects/{v.project_id}/users/{v.user_id}/roles/"
                      f"{custom.json()['role']['id']}")
    v.token = await t.issue(v.name, v.name, v.name)
    assert (await t.admin.delete(f"{ID}/roles/{custom.json()['role']['id']}")).status_code == 204
    return await t.issue(v.name, v.name, v.name)


async def role_renamed(t: Tenants, v: Victim) -> str:
    custom = await t.admin.post(f"{ID}/roles", json={"role": {"name": f"{v.name}-old"}})
    await t.admin.put(f"{ID}/projects/{v.project_id}/users/{v.user_id}/roles/"
                      f"{custom.json()['role']['id']}")
    v.token = await t.issue(v.name, v.name, v.name)
    resp = await t.admin.patch(f"{ID}/roles/{custom.json()['role']['id']}",
                               json={"role": {"name": f"{v.name}-new"}})
    assert resp.status_code == 200
    return await t.issue(v.name, v.name, v.name)


async def user_disabled(t: Tenants, v: Victim) -> str:
    assert (await t.admin.patch(f"{ID}/users/{v.user_id}",
                                json={"user": {"enabled": False}})).status_code == 200
    async with t.api.client() as anonymous:
        denied = await anonymous.post(f"{ID}/auth/tokens", json=password_auth(v.name, v.name))
    assert denied.status_code == 401
    # enabled again: new tokens work, the old one stays revoked
    assert (await t.admin.patch(f"{ID}/users/{v.user_id}",
                                json={"user": {"enabled": True}})).status_code == 200
    return await t.issue(v.name, v.name, v.name)


async def user_deleted(t: Tenants, v: Victim) -> str:
    colleague = await t.admin.post(f"{ID}/users", json={"user": {"name": f"{v.name}-2",
                                                                 "password": "pw"}})
    colleague_id = colleague.json()["user"]["id"]
    await t.admin.put(f"{ID}/projects/{v.project_id}/users/{colleague_id}/roles/"
                      f"{await role_id(t.admin, 'member')}")
    before = await t.issue(f"{v.name}-2", "pw", v.name)
    assert (await t.admin.delete(f"{ID}/users/{v.user_id}")).status_code == 204
    return before  # another user of the project, from before: untouched


async def password_changed(t: Tenants, v: Victim) -> str:
    assert (await t.admin.patch(f"{ID}/users/{v.user_id}",
                                json={"user": {"password": "changed"}})).status_code == 200
    return await t.issue(v.name, "changed", v.name)


async def project_disabled(t: Tenants, v: Victim) -> str:
    assert (await t.admin.patch(f"{ID}/projects/{v.project_id}",
                                json={"project": {"enabled": False}})).status_code == 200
    assert (await t.admin.patch(f"{ID}/projects/{v.project_id}",
                                json={"project": {"enabled": True}})).status_code == 200
    return await t.issue(v.name, v.name, v.name)


async def project_deleted(t: Tenants, v: Victim) -> str:
    second = await t.admin.post(f"{ID}/projects", json={"project": {"name": f"{v.name}-2"}})
    second_id = second.json()["project"]["id"]
    await t.admin.put(f"{ID}/projects/{second_id}/users/{v.user_id}/roles/"
                      f"{await role_id(t.admin, 'member')}")
    before = await t.issue(v.name, v.name, f"{v.name}-2")
    assert (await t.admin.delete(f"{ID}/projects/{v.project_id}")).status_code == 204
    return before  # the user's token on their other project: untouched


async def token_revoked(t: Tenants, v: Victim) -> str:
    sibling = await t.issue(v.name, v.name, v.name)
    async with t.api.client(v.token) as owner:
        resp = await owner.delete(f"{ID}/auth/tokens", headers={"X-Subject-Token": v.token})
    assert resp.status_code == 204
    return sibling  # another token of the same user: untouched


TRIGGERS: dict[str, Callable[[Tenants, Victim], Awaitable[str]]] = {
    "role removed": role_removed, "role deleted": role_deleted, "role renamed": role_renamed,
    "user disabled": user_disabled, "user deleted": user_deleted,
    "password changed": password_changed, "project disabled": project_disabled,
    "project deleted": project_deleted, "token revoked": token_revoked,
}


def password_auth(user: str, password: str, project: str | None = None) -> dict[str, Any]:
    auth: dict[str, Any] = {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}}}
    if project:
        auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    return {"auth": auth}


@pytest.mark.parametrize("trigger", list(TRIGGERS))
async def test_withdrawn_access_ends_existing_tokens_at_once(tenants: Tenants,
                                                             trigger: str) -> None:
    victim = await make_victim(tenants, "victim", roles=("member", "reader"))
    after = await TRIGGERS[trigger](tenants, victim)
    await assert_refused(tenants.api, victim.token)
    await assert_works(tenants.api, after)
    # nobody else's tokens went with it
    for persona in ("admin", "member", "other"):
        await assert_works(tenants.api, tenants.tokens[persona])


async def test_a_rescoped_token_goes_with_the_token_it_came_from(tenants: Tenants) -> None:
    """DELETE revokes the token's chain (Keystone's cascade); ?cascade=false only it."""
    unscoped = tenants.tokens["unscoped"]
    for cascade, child_status in ((False, 200), (True, 401)):
        parent = await tenants.issue("demo", tenants.api.cloud.settings.demo_password, None)
        async with tenants.api.client() as c:
            resp = await c.post(f"{ID}/auth/tokens", json={"auth": {
                "identity": {"methods": ["token"], "token": {"id": parent}},
                "scope": {"project": {"id": tenants.project["demo"]}}}})
        assert resp.status_code == 201, resp.text
        child = resp.headers["X-Subject-Token"]
        assert resp.json()["token"]["audit_ids"][1] == (await _audit(tenants, parent))
        async with tenants.api.client(parent) as owner:
            params = {} if cascade else {"cascade": "false"}
            gone = await owner.delete(f"{ID}/auth/tokens", params=params,
                                      headers={"X-Subject-Token": parent})
        assert gone.status_code == 204
        assert await status_with(tenants.api, child) == child_status
    await assert_works(tenants.api, tenants.tokens["member"])
    assert await status_with(tenants.api, unscoped, f"{ID}/auth/projects") == 200


async def _audit(t: Tenants, token: str) -> str:
    async with t.api.client(t.tokens["admin"]) as c:
        resp = await c.get(f"{ID}/auth/tokens", headers={"X-Subject-Token": token})
    return resp.json()["token"]["audit_ids"][0]


async def test_a_revoked_token_cannot_be_rescoped(tenants: Tenants) -> None:
    token = await tenants.issue("demo", tenants.api.cloud.settings.demo_password, None)
    async with tenants.api.client(token) as owner:
        await owner.delete(f"{ID}/auth/tokens", headers={"X-Subject-Token": token})
        resp = await owner.post(f"{ID}/auth/tokens", json={"auth": {
            "identity": {"methods": ["token"], "token": {"id": token}},
            "scope": {"project": {"id": tenants.project["demo"]}}}})
    assert resp.status_code == 401


# -- another API process on the same database ---------------------------------------------

@pytest.fixture
async def second_api(api: Api) -> AsyncIterator[Api]:
    """A second API (its own identity service and database engine) on the same
    database, as ``cirrus up --api-workers 2`` runs one per process."""
    other = Cloud(api.cloud.settings, api=True, roles=(), prepare_db=False)
    await other.start()
    try:
        yield Api(other)
    finally:
        await other.stop()  # its own tasks only: the first cloud's keep running


async def test_a_revocation_through_one_process_is_refused_by_the_next_request_of_another(
        tenants: Tenants, second_api: Api) -> None:
    victim = await make_victim(tenants, "victim")
    await assert_works(second_api, victim.token)  # known there, and kept opened
    await tenants.admin.patch(f"{ID}/users/{victim.user_id}", json={"user": {"enabled": False}})
    await assert_refused(second_api, victim.token)
    # and the other way round: revoked there, refused here
    member = tenants.tokens["member"]
    async with second_api.client(member) as owner:
        resp = await owner.delete(f"{ID}/auth/tokens", headers={"X-Subject-Token": member})
    assert resp.status_code == 204
    await assert_refused(tenants.api, member)
    await assert_works(second_api, tenants.tokens["other"])


# -- GET / HEAD / DELETE /v3/auth/tokens: owner or admin, 404 for what is not a token ----

@pytest.mark.parametrize("caller, status", [("admin", 200), ("member", 200), ("unscoped", 200),
                                            ("other", 403), ("reader", 403), ("norole", 403)])
async def test_a_token_is_validated_by_its_owner_or_an_admin(tenants: Tenants, caller: str,
                                                            status: int) -> None:
    """The subject is demo's project token: demo (scoped or not) owns it."""
    subject = {"X-Subject-Token": tenants.tokens["member"]}
    client = getattr(tenants, caller)
    shown = await client.get(f"{ID}/auth/tokens", headers=subject)
    assert shown.status_code == status, shown.text
    if status == 200:
        assert shown.json()["token"]["user"]["name"] == "demo"
    else:
        assert shown.json()["error"]["code"] == 403
    assert (await client.head(f"{ID}/auth/tokens", headers=subject)).status_code == status


@pytest.mark.parametrize("caller", ["other", "reader", "norole"])
async def test_only_the_owner_or_an_admin_revokes_a_token(tenants: Tenants, caller: str) -> None:
    subject = {"X-Subject-Token": tenants.tokens["member"]}
    resp = await getattr(tenants, caller).delete(f"{ID}/auth/tokens", headers=subject)
    assert resp.status_code == 403
    await assert_works(tenants.api, tenants.tokens["member"])
    assert (await tenants.admin.delete(f"{ID}/auth/tokens", headers=subject)).status_code == 204
    await assert_refused(tenants.api, tenants.tokens["member"])


async def _revoked(t: Tenants) -> str:
    token = await t.issue("mallory", "mallory", "other")
    assert (await t.admin.delete(f"{ID}/auth/tokens",
                                 headers={"X-Subject-Token": token})).status_code == 204
    return token


SUBJECTS: dict[str, Callable[[Tenants], Awaitable[str | None]]] = {
    "revoked": _revoked,
    "garbage": lambda t: _const("not-a-token"),
    "forged": lambda t: _const(t.tokens["other"][:-6] + "AAAAAA"),
    "empty": lambda t: _const(""),
    "missing": lambda t: _const(None),
    "huge": lambda t: _const("g" * 20000),
}


async def _const(value: str | None) -> str | None:
    return value


@pytest.mark.parametrize("kind", list(SUBJECTS))
@pytest.mark.parametrize("caller", ["admin", "other"])
async def test_a_subject_token_that_is_not_valid_is_404(tenants: Tenants, kind: str,
                                                        caller: str) -> None:
    subject = await SUBJECTS[kind](tenants)
    headers = {} if subject is None else {"X-Subject-Token": subject}
    client = getattr(tenants, caller)
    for method in ("GET", "DELETE"):
        resp = await client.request(method, f"{ID}/auth/tokens", headers=headers)
        assert resp.status_code == 404, (method, resp.text)
        assert resp.json()["error"]["code"] == 404
    assert (await client.head(f"{ID}/auth/tokens", headers=headers)).status_code == 404


async def test_the_callers_own_bad_token_is_still_401(tenants: Tenants) -> None:
    revoked = await _revoked(tenants)
    subject = {"X-Subject-Token": tenants.tokens["member"]}
    for token in (revoked, "not-a-token"):
        async with tenants.api.client(token) as c:
            resp = await c.get(f"{ID}/auth/tokens", headers=subject)
        assert resp.status_code == 401
        assert resp.json()["error"]["code"] == 401


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="api workers need Linux")
def test_a_revocation_holds_across_the_api_workers_of_cirrus_up(tmp_path: Path) -> None:
    """``cirrus up --api-workers 2``: a token revoked through whichever worker is
    refused by every later request, on new connections that land on either."""
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    proc = start_cloud(state, port, "--computes", "1", "--api-workers", "2")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc)
        admin = yaml.safe_load((state / "clouds.yaml").read_text())["clouds"]["cirrus-admin"]
        password = admin["auth"]["password"]
        accepted = []
        for _ in range(5):
            token = _issue_sync(url, "admin", password, "admin")
            headers = {"X-Auth-Token": token}
            assert {httpx.get(f"{url}{PROBES[0]}", headers=headers).status_code
                    for _ in range(6)} == {200}
            gone = httpx.delete(f"{url}{ID}/auth/tokens",
                                headers={**headers, "X-Subject-Token": token})
            assert gone.status_code == 204
            accepted += [c for c in (httpx.get(f"{url}{PROBES[0]}", headers=headers).status_code
                                     for _ in range(8)) if c != 401]
        assert accepted == []
    finally:
        stop(proc)


def _issue_sync(url: str, user: str, password: str, project: str) -> str:
    resp = httpx.post(f"{url}{ID}/auth/tokens", json=password_auth(user, password, project))
    assert resp.status_code == 201, resp.text
    return resp.headers["X-Subject-Token"]
