"""Keystone credentials, application credentials and password changes over HTTP."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

import httpx
import sqlalchemy as sa

from cirrus.db.engine import Database
from cirrus.identity import models as m
from tests.conftest import Api
from tests.functional.test_identity_groups import create, login

V3 = "/identity/v3"


def _db(api: Api) -> Database:
    assert api.cloud.db is not None
    return api.cloud.db


def app_cred_auth(**ref: Any) -> dict[str, Any]:
    return {"auth": {"identity": {"methods": ["application_credential"],
                                  "application_credential": ref}}}


async def user_with_role(api: Api, admin: httpx.AsyncClient, name: str,
                         *roles: str) -> tuple[dict[str, Any], dict[str, Any], httpx.AsyncClient]:
    """A user with ``roles`` on a project of their own, and a client of theirs."""
    user = await create(admin, "user", name=name, password=f"{name}-pw")
    project = await create(admin, "project", name=f"{name}-p")
    ids = {r["name"]: r["id"] for r in (await admin.get(f"{V3}/roles")).json()["roles"]}
    for role in roles:
        resp = await admin.put(f"{V3}/projects/{project['id']}/users/{user['id']}/roles/"
                               f"{ids[role]}")
        assert resp.status_code == 204
    token = await login(api, name, f"{name}-pw", {"project": {"id": project["id"]}})
    return user, project, api.client(token.headers["X-Subject-Token"])


async def test_credentials_are_their_owners(api: Api, admin: httpx.AsyncClient,
                                            demo: httpx.AsyncClient) -> None:
    user, _, client = await user_with_role(api, admin, "cora", "member")
    async with client:
        made = await client.post(f"{V3}/credentials", json={"credential": {
            "user_id": user["id"], "type": "totp", "blob": "s3cret"}})
        assert made.status_code == 201, made.text
        cred = made.json()["credential"]
        assert cred["blob"] == "s3cret"
        for_other = await client.post(f"{V3}/credentials", json={"credential": {
            "user_id": "someone-else", "type": "totp", "blob": "x"}})
        assert for_other.status_code == 403
        listed = (await client.get(f"{V3}/credentials")).json()["credentials"]
        assert [c["id"] for c in listed] == [cred["id"]]
        changed = await client.patch(f"{V3}/credentials/{cred['id']}",
                                     json={"credential": {"blob": "n3w"}})
        assert changed.json()["credential"]["blob"] == "n3w"
    # Another user sees none of it; the admin sees it all.
    assert (await demo.get(f"{V3}/credentials")).json()["credentials"] == []
    assert (await demo.get(f"{V3}/credentials/{cred['id']}")).status_code == 404
    assert (await demo.delete(f"{V3}/credentials/{cred['id']}")).status_code == 404
    everyone = (await admin.get(f"{V3}/credentials", params={"user_id": user["id"]})).json()
    assert [c["id"] for c in everyone["credentials"]] == [cred["id"]]
    assert (await admin.delete(f"{V3}/credentials/{cred['id']}")).status_code == 204


async def test_a_blob_is_encrypted_at_rest(api: Api, admin: httpx.AsyncClient) -> None:
    user = await create(admin, "user", name="eve", password="x")
    blob = json.dumps({"access": "AKIA-EXAMPLE", "secret": "very-secret"})
    project_id = (await admin.get(f"{V3}/projects", params={"name": "demo"})).json()[
        "projects"][0]["id"]
    made = await admin.post(f"{V3}/credentials", json={"credential": {
        "user_id": user["id"], "project_id": project_id, "type": "ec2", "blob": blob}})
    assert made.status_code == 201, made.text
    cred = made.json()["credential"]
    stored = await _db(api).read(lambda conn: conn.execute(
        sa.select(m.credentials.c.encrypted_blob)).scalar_one())
    assert "very-secret" not in stored and "AKIA" not in stored
    # An ec2 credential is found by its access key's hash, as Keystone names it.
    assert cred["id"] == hashlib.sha256(b"AKIA-EXAMPLE").hexdigest()
    no_project = await admin.post(f"{V3}/credentials", json={"credential": {
        "user_id": user["id"], "type": "ec2", "blob": blob}})
    assert no_project.status_code == 400


async def test_bad_credential_bodies(admin: httpx.AsyncClient) -> None:
    for body in ({}, {"credential": {"type": "totp", "blob": "b"}},
                 {"credential": {"user_id": "u", "type": "totp", "blob": 3}},
                 {"credential": {"user_id": "u", "type": "ec2", "blob": "not json"}}):
        resp = await admin.post(f"{V3}/credentials", json=body)
        assert resp.status_code in (400, 404), (body, resp.text)


async def test_an_application_credential_authenticates_with_its_roles(
        api: Api, admin: httpx.AsyncClient) -> None:
    user, project, client = await user_with_role(api, admin, "appy", "member", "reader")
    base = f"{V3}/users/{user['id']}/application_credentials"
    async with client:
        made = await client.post(base, json={"application_credential": {
            "name": "ci", "roles": [{"name": "reader"}]}})
        assert made.status_code == 201, made.text
        cred = made.json()["application_credential"]
        assert cred["project_id"] == project["id"] and cred["secret"]
        assert [r["name"] for r in cred["roles"]] == ["reader"]
        shown = (await client.get(f"{base}/{cred['id']}")).json()["application_credential"]
        assert "secret" not in shown
        refused = await client.post(base, json={"application_credential": {
            "name": "too-much", "roles": [{"name": "admin"}]}})
        assert refused.status_code == 403
        async with api.client() as anon:
            token = await anon.post(f"{V3}/auth/tokens", json=app_cred_auth(
                id=cred["id"], secret=cred["secret"]))
            assert token.status_code == 201, token.text
            body = token.json()["token"]
            assert body["project"]["id"] == project["id"]
            assert [r["name"] for r in body["roles"]] == ["reader"]
            assert body["application_credential"]["id"] == cred["id"]
            by_name = await anon.post(f"{V3}/auth/tokens", json=app_cred_auth(
                name="ci", secret=cred["secret"],
                user={"name": "appy", "domain": {"id": "default"}}))
            assert by_name.status_code == 201
            wrong = await anon.post(f"{V3}/auth/tokens", json=app_cred_auth(
                id=cred["id"], secret="guess"))
            assert wrong.status_code == 401
        app_token = token.headers["X-Subject-Token"]
        async with api.client(app_token) as app:
            # A restricted credential's token makes no more credentials.
            assert (await app.post(base, json={"application_credential": {
                "name": "child"}})).status_code == 403
        assert (await client.delete(f"{base}/{cred['id']}")).status_code == 204
        async with api.client(app_token) as app:
            assert (await app.get(f"{V3}/auth/projects")).status_code == 401  # revoked


async def test_application_credentials_are_their_users(api: Api, admin: httpx.AsyncClient,
                                                       demo: httpx.AsyncClient) -> None:
    user, _, client = await user_with_role(api, admin, "owen", "member")
    base = f"{V3}/users/{user['id']}/application_credentials"
    async with client:
        cred = (await client.post(base, json={"application_credential": {
            "name": "mine"}})).json()["application_credential"]
    assert (await demo.get(base)).status_code == 403
    assert (await demo.get(f"{base}/{cred['id']}")).status_code == 403
    assert (await demo.delete(f"{base}/{cred['id']}")).status_code == 403
    # Not even an admin makes one for another user.
    assert (await admin.post(base, json={"application_credential": {
        "name": "theirs"}})).status_code == 403
    listed = (await admin.get(base, params={"name": "mine"})).json()["application_credentials"]
    assert [c["id"] for c in listed] == [cred["id"]] and "secret" not in listed[0]


async def test_an_expired_application_credential_is_refused(api: Api,
                                                            admin: httpx.AsyncClient) -> None:
    user, _, client = await user_with_role(api, admin, "exp", "member")
    base = f"{V3}/users/{user['id']}/application_credentials"
    past = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)).isoformat()
    soon = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).isoformat()
    async with client:
        assert (await client.post(base, json={"application_credential": {
            "name": "old", "expires_at": past}})).status_code == 400
        made = await client.post(base, json={"application_credential": {
            "name": "new", "expires_at": soon}})
        assert made.status_code == 201
    cred = made.json()["application_credential"]
    await _db(api).run(lambda conn: conn.execute(
        m.application_credentials.update().values(expires_at=dt.datetime(2000, 1, 1))))
    async with api.client() as anon:
        resp = await anon.post(f"{V3}/auth/tokens", json=app_cred_auth(
            id=cred["id"], secret=cred["secret"]))
    assert resp.status_code == 401


async def test_a_user_changes_their_own_password(api: Api, admin: httpx.AsyncClient) -> None:
    user, project, client = await user_with_role(api, admin, "pat", "member")
    path = f"{V3}/users/{user['id']}/password"
    async with api.client() as anon:
        wrong = await anon.post(path, json={"user": {"original_password": "nope",
                                                     "password": "pat-new"}})
        assert wrong.status_code == 401
        assert (await anon.post(path, json={"user": {"password": "x"}})).status_code == 400
        ok = await anon.post(path, json={"user": {"original_password": "pat-pw",
                                                  "password": "pat-new"}})
        assert ok.status_code == 204, ok.text
    async with client:
        assert (await client.get(f"{V3}/auth/projects")).status_code == 401  # tokens revoked
    scope = {"project": {"id": project["id"]}}
    assert (await login(api, "pat", "pat-pw", scope)).status_code == 401
    assert (await login(api, "pat", "pat-new", scope)).status_code == 201
    stored = await _db(api).read(lambda conn: conn.execute(sa.select(
        m.users.c.password_hash).where(m.users.c.id == user["id"])).scalar_one())
    assert stored.startswith("scrypt$") and "pat-new" not in stored


async def test_no_scope_means_the_default_project(api: Api, admin: httpx.AsyncClient) -> None:
    user, project, _ = await user_with_role(api, admin, "dora", "member")
    await admin.patch(f"{V3}/users/{user['id']}", json={"user": {
        "default_project_id": project["id"]}})
    token = (await login(api, "dora", "dora-pw")).json()["token"]
    assert token["project"]["id"] == project["id"]
    unscoped = (await login(api, "dora", "dora-pw", "unscoped")).json()["token"]
    assert "project" not in unscoped


async def test_a_user_keeps_attributes_cirrus_does_not_know(admin: httpx.AsyncClient) -> None:
    user = await create(admin, "user", name="xena", description="hi", project_id="p1")
    assert (user["description"], user["project_id"]) == ("hi", "p1")
    changed = await admin.patch(f"{V3}/users/{user['id']}", json={"user": {"description": "bye"}})
    assert changed.json()["user"]["description"] == "bye"
    assert changed.json()["user"]["project_id"] == "p1"
    nested = await admin.post(f"{V3}/users", json={"user": {"name": "y", "x": {"a": 1}}})
    assert nested.status_code == 400
