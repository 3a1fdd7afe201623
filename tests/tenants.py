"""Hostile tenants: the personas the security tests (and any test that needs
more than one project) log in as.

``tenants`` (the fixture, in tests/conftest.py) gives one HTTP client per
persona, all against one in-process cloud (both databases, as every
``cloud`` test):

* ``admin``    – the cloud admin (admin in project ``admin``);
* ``member``   – ``demo``, member of project ``demo`` (the victim, project A);
* ``reader``   – ``alice``, reader of project ``demo``;
* ``other``    – ``mallory``, member of project ``other`` (project B);
* ``norole``   – ``nobody``, a user with no role anywhere: an unscoped token;
* ``unscoped`` – ``demo`` again, with an unscoped token.

Project ids are in ``tenants.project`` (``"demo"``, ``"other"``, ``"admin"``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # tests/conftest.py imports this module for its ``tenants`` fixture
    from tests.conftest import Api

PERSONAS = ("admin", "member", "reader", "other", "norole", "unscoped")


@dataclass
class Tenants:
    api: Api
    clients: dict[str, httpx.AsyncClient] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    project: dict[str, str] = field(default_factory=dict)
    user: dict[str, str] = field(default_factory=dict)
    # persona → (user name, password, project name or None), to issue more tokens
    creds: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)

    def __getattr__(self, name: str) -> httpx.AsyncClient:
        try:
            return self.__dict__["clients"][name]
        except KeyError:
            raise AttributeError(name) from None

    async def issue(self, user: str, password: str, project: str | None) -> str:
        """A new token for ``user``, scoped to ``project`` (by name) or unscoped."""
        auth: dict[str, Any] = {"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}}}
        # Explicitly unscoped: without a scope Keystone scopes to the default project.
        auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}} \
            if project else "unscoped"
        async with self.api.client() as c:
            resp = await c.post("/identity/v3/auth/tokens", json={"auth": auth})
        assert resp.status_code == 201, resp.text
        return resp.headers["X-Subject-Token"]


async def _create(client: httpx.AsyncClient, kind: str, body: dict[str, Any]) -> str:
    resp = await client.post(f"/identity/v3/{kind}s", json={kind: body})
    assert resp.status_code == 201, resp.text
    return resp.json()[kind]["id"]


async def _role_id(client: httpx.AsyncClient, name: str) -> str:
    resp = await client.get("/identity/v3/roles", params={"name": name})
    return next(r["id"] for r in resp.json()["roles"] if r["name"] == name)


async def make_tenants(api: Api) -> Tenants:
    """Create project ``other`` and the users above; log each persona in."""
    t = Tenants(api)
    admin = await api.as_user("admin")
    t.clients["admin"] = admin
    t.tokens["admin"] = await api.token("admin")
    projects = (await admin.get("/identity/v3/projects")).json()["projects"]
    t.project = {p["name"]: p["id"] for p in projects}
    t.project["other"] = await _create(admin, "project", {"name": "other", "domain_id": "default"})
    users = (await admin.get("/identity/v3/users")).json()["users"]
    t.user = {u["name"]: u["id"] for u in users}
    roles = {n: await _role_id(admin, n) for n in ("member", "reader")}
    for name, project, role in (("alice", "demo", "reader"), ("mallory", "other", "member"),
                                ("nobody", None, None)):
        t.user[name] = await _create(admin, "user", {"name": name, "password": name,
                                                     "domain_id": "default"})
        if project and role:
            resp = await admin.put(f"/identity/v3/projects/{t.project[project]}/users/"
                                   f"{t.user[name]}/roles/{roles[role]}")
            assert resp.status_code == 204, resp.text
    demo_pw = api.cloud.settings.demo_password
    t.creds = {"admin": ("admin", api.cloud.settings.admin_password, "admin"),
               "member": ("demo", demo_pw, "demo"), "reader": ("alice", "alice", "demo"),
               "other": ("mallory", "mallory", "other"), "norole": ("nobody", "nobody", None),
               "unscoped": ("demo", demo_pw, None)}
    for persona, (user, pw, project) in t.creds.items():
        if persona == "admin":
            continue
        t.tokens[persona] = await t.issue(user, pw, project)
        t.clients[persona] = api.client(t.tokens[persona])
    return t
