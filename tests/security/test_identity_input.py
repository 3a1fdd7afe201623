"""Identity requests of any shape answer 4xx, never 500, and store nothing that
breaks a listing; identity administration stays with admins, but for what
Keystone lets users do for themselves."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.conftest import Api
from tests.security.conftest import Tenants

ID = "/identity/v3"
HUGE = 2**64
LONG = "x" * 5000


def _auth(user: Any = None, scope: Any = "omit", **identity: Any) -> dict[str, Any]:
    """A password auth body for demo, with parts replaced."""
    user = {"name": "demo", "domain": {"id": "default"}, "password": "demo"} \
        if user is None else user
    ident = {"methods": ["password"], "password": {"user": user}, **identity}
    body: dict[str, Any] = {"identity": ident}
    if scope != "omit":
        body["scope"] = scope
    return {"auth": body}


def _user(**changes: Any) -> dict[str, Any]:
    user: dict[str, Any] = {"name": "demo", "domain": {"id": "default"}, "password": "demo"}
    for key, value in changes.items():
        if value is _DROP:
            user.pop(key)
        else:
            user[key] = value
    return user


_DROP = object()
BAD_VALUES = [["a"], {"a": 1}, HUGE, -HUGE, 10**400, True, None, 1.5, "\x00", "\ud800", LONG]

# (case, body, allowed statuses): a schema error is 400, wrong credentials 401.
AUTH_BODIES: list[tuple[str, Any, set[int]]] = [
    ("no auth", {}, {400}),
    ("auth list", {"auth": []}, {400}),
    ("auth string", {"auth": "x"}, {400}),
    ("identity null", {"auth": {"identity": None}}, {400}),
    ("methods missing", {"auth": {"identity": {}}}, {400}),
    ("methods empty", {"auth": {"identity": {"methods": []}}}, {400}),
    ("methods string", {"auth": {"identity": {"methods": "password"}}}, {400}),
    ("methods unknown", _auth(methods=["kerberos"]), {401}),
    ("method without section", {"auth": {"identity": {"methods": ["password"]}}}, {400}),
    ("token without id", {"auth": {"identity": {"methods": ["token"], "token": {}}}}, {400}),
    ("user neither id nor name", _auth(_user(name=_DROP)), {400}),
    ("name without domain", _auth(_user(domain=_DROP)), {400}),
    ("domain empty", _auth(_user(domain={})), {400}),
    ("password missing", _auth(_user(password=_DROP)), {400}),
    ("wrong password", _auth(_user(password="nope")), {401}),
    ("unknown user id", _auth({"id": "nope", "password": "x"}), {401}),
    ("scope number", _auth(scope=3), {400}),
    ("scope other string", _auth(scope="everything"), {400}),
    ("scope empty", _auth(scope={}), {400}),
    ("scope project and domain", _auth(scope={"project": {"id": "x"}, "domain": {"id": "x"}}),
     {400}),
    ("scope project empty", _auth(scope={"project": {}}), {400}),
    ("scope system", _auth(scope={"system": {"all": True}}), {401}),
    ("scope unknown project", _auth(scope={"project": {"id": "nope"}}), {401}),
    ("password over 4096", _auth(_user(password="p" * 4097)), {400}),
    ("name over 255", _auth(_user(name="n" * 256)), {400}),
]
for _field in ("name", "id", "password"):
    for _i, _value in enumerate(BAD_VALUES):
        if _field == "password" and _value == "\x00":
            continue  # a password may hold any character: just a wrong one
        AUTH_BODIES.append((f"user {_field} {_i}", _auth(_user(**{_field: _value})), {400}))
for _i, _value in enumerate(BAD_VALUES):
    AUTH_BODIES += [
        (f"user domain id {_i}", _auth(_user(domain={"id": _value})), {400}),
        (f"user domain name {_i}", _auth(_user(domain={"name": _value})), {400}),
        (f"user domain {_i}", _auth(_user(domain=_value)), {400}),
        (f"project id {_i}", _auth(scope={"project": {"id": _value}}), {400}),
        (f"project name {_i}", _auth(scope={"project": {"name": _value,
                                                        "domain": {"id": "default"}}}), {400}),
        (f"project domain {_i}", _auth(scope={"project": {"name": "demo",
                                                          "domain": {"name": _value}}}), {400}),
        (f"scope domain id {_i}", _auth(scope={"domain": {"id": _value}}), {400}),
        (f"token id {_i}", {"auth": {"identity": {"methods": ["token"],
                                                  "token": {"id": _value}}}},
         {400, 401} if _value == LONG else {400}),  # a long string: just not a token
        (f"methods item {_i}", _auth(methods=[_value]), {400}),
        (f"identity {_i}", {"auth": {"identity": _value}}, {400}),
        (f"password section {_i}", {"auth": {"identity": {"methods": ["password"],
                                                          "password": _value}}}, {400}),
        (f"password user {_i}", _auth(_value if _value is not None else 0), {400}),
    ]


def _encode(body: Any) -> bytes:
    """JSON text, with huge numbers and lone surrogates as they come on the wire."""
    return json.dumps(body, ensure_ascii=True).encode()


async def test_a_malformed_auth_body_is_400_or_401_never_500(api: Api) -> None:
    """Every case of the table, on one cloud (a cloud per case would take minutes)."""
    wrong = []
    async with api.client() as anonymous:
        for case, body, statuses in AUTH_BODIES:
            resp = await anonymous.post(f"{ID}/auth/tokens", content=_encode(body),
                                        headers={"content-type": "application/json"})
            if resp.status_code not in statuses or \
                    resp.json()["error"]["code"] != resp.status_code:
                wrong.append((case, resp.status_code, resp.text[:200]))
    assert wrong == [], f"{len(wrong)} of {len(AUTH_BODIES)}"


async def test_a_token_records_the_methods_it_was_issued_by_not_what_was_sent(
        tenants: Tenants) -> None:
    body = _auth(methods=["password"] * 1000, scope={"project": {"name": "demo",
                                                                 "domain": {"id": "default"}}})
    body["auth"]["identity"]["password"]["user"]["password"] = \
        tenants.api.cloud.settings.demo_password
    async with tenants.api.client() as anonymous:
        resp = await anonymous.post(f"{ID}/auth/tokens", json=body)
    assert resp.status_code == 201
    assert resp.json()["token"]["methods"] == ["password"]


# -- identity administration bodies ----------------------------------------------------

ADMIN_BAD: dict[str, list[tuple[str, Any]]] = {
    "project": [("name", v) for v in BAD_VALUES + ["", "   ", "p" * 65]]
    + [("description", v) for v in (["a"], {"a": 1}, HUGE, True, "\x00", "\ud800",
                                     "d" * 70000)]
    + [("enabled", v) for v in ("true", 1, 0, None, HUGE, ["x"])]
    + [("domain_id", v) for v in (["a"], HUGE, True, "", "no such/domain", "\x00", "d" * 65)],
    "user": [("name", v) for v in BAD_VALUES + ["", "u" * 256]]
    + [("password", v) for v in (["a"], {"a": 1}, HUGE, True, "\ud800", "p" * 4097)]
    + [("enabled", v) for v in ("false", 1, None, HUGE)]
    + [("email", v) for v in (["a"], HUGE, "\x00", "e" * 256)]
    + [("default_project_id", v) for v in (["a"], HUGE, "\ud800", "x" * 65)]
    + [("description", v) for v in (["a"], HUGE)],
    "role": [("name", v) for v in BAD_VALUES + ["", "r" * 256]]
    + [("domain_id", v) for v in ("no such/domain", ["a"], HUGE)]
    + [("description", v) for v in (["a"], HUGE)],
}
ADMIN_CASES = [(kind, field, value) for kind, cases in ADMIN_BAD.items()
               for field, value in cases]


async def _create(tenants: Tenants, kind: str, name: str) -> str:
    resp = await tenants.admin.post(f"{ID}/{kind}s", json={kind: {"name": name}})
    assert resp.status_code == 201, resp.text
    return resp.json()[kind]["id"]


async def test_a_bad_admin_body_is_400_and_stores_nothing(tenants: Tenants) -> None:
    """Every case of the table, on create and on update; the listings after."""
    admin = tenants.admin
    targets = {"project": tenants.project["other"], "user": tenants.user["mallory"],
               "role": await _create(tenants, "role", "target")}
    before = {kind: (await admin.get(f"{ID}/{kind}s")).json()[f"{kind}s"] for kind in targets}
    wrong = []
    for kind, field, value in ADMIN_CASES:
        plural = f"{kind}s"
        body = {kind: {"name": "fresh", field: value}}
        created = await admin.post(f"{ID}/{plural}", content=_encode(body),
                                   headers={"content-type": "application/json"})
        updated = await admin.patch(f"{ID}/{plural}/{targets[kind]}",
                                    content=_encode({kind: {field: value}}),
                                    headers={"content-type": "application/json"})
        if (created.status_code, updated.status_code) != (400, 400):
            wrong.append((kind, field, repr(value)[:40], created.status_code,
                          updated.status_code))
    assert wrong == [], f"{len(wrong)} of {len(ADMIN_CASES)}"
    for kind, rows in before.items():
        after = await admin.get(f"{ID}/{kind}s")
        assert after.status_code == 200
        assert after.json()[f"{kind}s"] == rows


async def test_a_domain_cannot_move_and_nulls_mean_defaults(tenants: Tenants) -> None:
    moved = await tenants.admin.patch(f"{ID}/projects/{tenants.project['other']}",
                                      json={"project": {"domain_id": "elsewhere"}})
    assert moved.status_code == 400
    made = await tenants.admin.post(f"{ID}/projects", json={"project": {
        "name": "nulls", "domain_id": None, "description": None}})
    assert made.status_code == 201, made.text
    assert made.json()["project"]["domain_id"] == "default"
    user = await tenants.admin.post(f"{ID}/users", json={"user": {
        "name": "nopass", "password": None, "email": None, "default_project_id": None}})
    assert user.status_code == 201, user.text


@pytest.mark.parametrize("path", [
    "/users/%00", "/users/" + "u" * 300, "/projects/%ED%A0%80", "/roles/%00",
    "/users/%00/projects", "/projects/%00/users/%00/roles", "/domains/%00",
    "/projects/x/users/y/roles/%00", "/users/x/users/y/roles", "/nothing/x/users/y/roles/z",
])
async def test_ids_that_name_nothing_are_404(tenants: Tenants, path: str) -> None:
    for method in ("GET", "DELETE", "PUT") if "roles/" in path else ("GET",):
        resp = await tenants.admin.request(method, f"{ID}{path}")
        assert resp.status_code in (404, 405), (method, resp.text)


@pytest.mark.parametrize("query", [
    "name=%00", "name=" + "n" * 300, "domain_id=%00", "enabled=%00",
])
@pytest.mark.parametrize("collection", ["users", "projects", "roles"])
async def test_filters_that_match_nothing_are_400_not_500(tenants: Tenants, collection: str,
                                                          query: str) -> None:
    resp = await tenants.admin.get(f"{ID}/{collection}?{query}")
    assert resp.status_code in (200, 400), resp.text
    if resp.status_code == 200:
        assert resp.json()[collection] == []
    resp = await tenants.admin.get(f"{ID}/role_assignments?user.id=%00&scope.project.id=%00")
    assert resp.status_code == 400


# -- who may administer identity -------------------------------------------------------------

ADMIN_ONLY = [
    ("GET", "/projects"), ("GET", "/users"), ("GET", "/roles"), ("GET", "/domains"),
    ("GET", "/role_assignments"), ("GET", "/services"), ("GET", "/endpoints"),
    ("GET", "/role_assignments?user.id={me}"),
    ("GET", "/users/{someone}"), ("GET", "/users/{someone}/projects"),
    ("GET", "/projects/{other_project}"),
    ("POST", "/projects"), ("POST", "/users"), ("POST", "/roles"),
    ("PATCH", "/users/{me}"), ("PATCH", "/projects/{my_project}"), ("DELETE", "/users/{me}"),
    ("PUT", "/projects/{my_project}/users/{me}/roles/{admin_role}"),
    ("GET", "/projects/{my_project}/users/{me}/roles"),
    ("DELETE", "/projects/{other_project}/users/{someone}/roles/{admin_role}"),
]


@pytest.mark.parametrize("persona", ["member", "reader", "other", "norole", "unscoped"])
async def test_identity_administration_is_for_admins(tenants: Tenants, persona: str) -> None:
    me = {"member": "demo", "reader": "alice", "other": "mallory", "norole": "nobody",
          "unscoped": "demo"}[persona]
    my_project = {"other": "other"}.get(persona, "demo")
    admin_role = (await tenants.admin.get(f"{ID}/roles", params={"name": "admin"})).json()
    values = {"me": tenants.user[me], "someone": tenants.user["admin"],
              "my_project": tenants.project[my_project],
              "other_project": tenants.project["admin"],
              "admin_role": admin_role["roles"][0]["id"]}
    client = getattr(tenants, persona)
    body = {"project": {"name": "x"}, "user": {"name": "x"}, "role": {"name": "x"}}
    for method, path in ADMIN_ONLY:
        url = f"{ID}{path.format(**values)}"
        kind = path.split("/")[1].rstrip("s")
        payload = {kind: copy.deepcopy(body.get(kind, {}))} if method in ("POST", "PATCH") \
            else None
        resp = await client.request(method, url, json=payload)
        assert resp.status_code == 403, (method, url, resp.status_code, resp.text)
    # what users may do for themselves; a domain is read by its projects' tokens
    assert (await client.get(f"{ID}/users/{values['me']}")).status_code == 200
    domain = await client.get(f"{ID}/domains/default")
    assert domain.status_code == (403 if persona in ("norole", "unscoped") else 200)
    for path in ("/auth/projects", f"/users/{values['me']}/projects"):
        projects = (await client.get(f"{ID}{path}")).json()["projects"]
        assert {p["name"] for p in projects} <= {"demo", "other"}
    domains = (await client.get(f"{ID}/auth/domains")).json()["domains"]
    assert domains == []  # no role on a domain


async def test_a_project_token_reads_its_own_project(tenants: Tenants) -> None:
    own = await tenants.member.get(f"{ID}/projects/{tenants.project['demo']}")
    assert own.status_code == 200
    assert (await tenants.admin.get(f"{ID}/auth/domains")).json()["domains"][0]["id"] == "default"
