"""Keystone tokens over HTTP."""
from __future__ import annotations

import pytest

from tests.conftest import Api


def password_body(user: str, password: str, project: str | None = "demo") -> dict:
    body: dict = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": "Default"}, "password": password}}}}}
    if project:
        body["auth"]["scope"] = {"project": {"name": project, "domain": {"name": "Default"}}}
    return body


async def test_issue_project_token_with_catalog(api: Api) -> None:
    async with api.client() as c:
        resp = await c.post("/identity/v3/auth/tokens", json=password_body("demo", "demo"))
    assert resp.status_code == 201
    assert resp.headers["X-Subject-Token"]
    token = resp.json()["token"]
    assert token["project"]["name"] == "demo"
    assert [r["name"] for r in token["roles"]] == ["member"]
    types = {s["type"] for s in token["catalog"]}
    assert types == {"identity", "compute", "network", "image", "block-storage", "volumev3"}
    volume = next(s for s in token["catalog"] if s["type"] == "block-storage")
    assert volume["endpoints"][0]["url"].endswith(f"/volume/v3/{token['project']['id']}")


async def test_wrong_password_is_401_with_error_body(api: Api) -> None:
    async with api.client() as c:
        resp = await c.post("/identity/v3/auth/tokens", json=password_body("demo", "nope"))
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == 401


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"auth": 3}',
                                  b'{"auth": {"identity": {"methods": []}}}'])
async def test_malformed_auth_body_is_400(api: Api, body: bytes) -> None:
    async with api.client() as c:
        resp = await c.post("/identity/v3/auth/tokens", content=body,
                            headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == 400


async def test_validate_and_revoke(api: Api) -> None:
    token = await api.token("demo")
    admin_token = await api.token("admin")
    async with api.client(admin_token) as c:
        shown = await c.get("/identity/v3/auth/tokens", headers={"X-Subject-Token": token})
        assert shown.status_code == 200
        assert shown.json()["token"]["user"]["name"] == "demo"
        head = await c.head("/identity/v3/auth/tokens", headers={"X-Subject-Token": token})
        assert head.status_code == 200
        gone = await c.delete("/identity/v3/auth/tokens", headers={"X-Subject-Token": token})
        assert gone.status_code == 204
    async with api.client(token) as c:
        resp = await c.get("/identity/v3/auth/catalog")
    assert resp.status_code == 401


async def test_no_token_is_401_in_compute_format(api: Api) -> None:
    async with api.client() as c:
        resp = await c.get("/compute/v2.1/flavors")
    assert resp.status_code == 401
    assert resp.json()["unauthorized"]["code"] == 401


async def test_garbage_token_is_401(api: Api) -> None:
    async with api.client("not-a-token") as c:
        resp = await c.get("/identity/v3/auth/catalog")
    assert resp.status_code == 401


async def test_oversized_body_is_413(api: Api) -> None:
    async with api.client() as c:
        resp = await c.post("/identity/v3/auth/tokens", content=b"{" + b" " * (2 << 20) + b"}",
                            headers={"content-type": "application/json"})
    assert resp.status_code == 413
    assert resp.json()["error"]["code"] == 413
