"""Identity administration and project isolation over HTTP."""
from __future__ import annotations

import httpx

from tests.conftest import Api
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status


async def make_user(admin: httpx.AsyncClient, name: str) -> None:
    project = (await admin.post("/identity/v3/projects", json={"project": {"name": name}})).json()
    user = await admin.post("/identity/v3/users", json={"user": {
        "name": name, "password": name, "default_project_id": project["project"]["id"]}})
    assert user.status_code == 201, user.text
    roles = (await admin.get("/identity/v3/roles", params={"name": "member"})).json()["roles"]
    resp = await admin.put(f"/identity/v3/projects/{project['project']['id']}/users/"
                           f"{user.json()['user']['id']}/roles/{roles[0]['id']}")
    assert resp.status_code == 204


async def test_admin_creates_projects_users_and_grants(api: Api, admin: httpx.AsyncClient) -> None:
    await make_user(admin, "alice")
    assert (await admin.post("/identity/v3/projects", json={"project": {"name": "alice"}})).status_code == 409
    names = {p["name"] for p in (await admin.get("/identity/v3/projects")).json()["projects"]}
    assert {"admin", "demo", "alice"} <= names
    async with await api.as_user("alice") as alice:
        assert (await alice.get("/identity/v3/auth/projects")).json()["projects"][0]["name"] == "alice"
        assert (await alice.post("/identity/v3/projects", json={"project": {"name": "x"}})).status_code == 403
        assert (await alice.get("/identity/v3/users")).status_code == 403


async def test_bad_identity_bodies(admin: httpx.AsyncClient) -> None:
    assert (await admin.post("/identity/v3/users", json={"user": {}})).status_code == 400
    assert (await admin.post("/identity/v3/users", json=[])).status_code == 400
    assert (await admin.get("/identity/v3/users/nope")).status_code == 404


async def test_members_see_only_their_projects_things(api: Api, admin: httpx.AsyncClient,
                                                      demo: httpx.AsyncClient) -> None:
    await make_user(admin, "bob")
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    async with await api.as_user("bob") as bob:
        assert (await bob.get(f"/compute/v2.1/servers/{server['id']}")).status_code == 404
        assert (await bob.delete(f"/compute/v2.1/servers/{server['id']}")).status_code == 404
        assert (await bob.get("/compute/v2.1/servers")).json()["servers"] == []
        demo_project = (await admin.get(
            f"/compute/v2.1/servers/{server['id']}")).json()["server"]["tenant_id"]
        sneaky = await bob.get("/compute/v2.1/servers", params={"project_id": demo_project})
        assert sneaky.json()["servers"] == []
        assert (await bob.get(f"/image/v2/images/{image}")).status_code == 404
        assert (await bob.get("/compute/v2.1/servers", params={"all_tenants": 1})).status_code == 403
    listed = (await admin.get("/compute/v2.1/servers", params={"all_tenants": 1})).json()["servers"]
    assert server["id"] in {s["id"] for s in listed}


async def test_a_changed_password_is_the_one_that_works(api: Api, admin: httpx.AsyncClient) -> None:
    # Passwords are hashed before the write, off the event loop (scrypt is slow).
    await make_user(admin, "carol")
    users = (await admin.get("/identity/v3/users", params={"name": "carol"})).json()["users"]
    resp = await admin.patch(f"/identity/v3/users/{users[0]['id']}",
                             json={"user": {"password": "new-secret"}})
    assert resp.status_code == 200, resp.text
    assert "password" not in resp.json()["user"] and "password_hash" not in resp.json()["user"]
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "carol", "domain": {"name": "Default"}, "password": "carol"}}}}}
    async with api.client() as anonymous:
        assert (await anonymous.post("/identity/v3/auth/tokens", json=body)).status_code == 401
        body["auth"]["identity"]["password"]["user"]["password"] = "new-secret"
        assert (await anonymous.post("/identity/v3/auth/tokens", json=body)).status_code == 201


async def test_bootstrap_roles_are_keystones(admin: httpx.AsyncClient) -> None:
    """Tempest's dynamic credentials ask for "manager" and "service" by name and
    create "member" expecting 409 when it exists."""
    roles = {r["name"] for r in (await admin.get("/identity/v3/roles")).json()["roles"]}
    assert roles == {"admin", "manager", "member", "reader", "service"}
    for name in ("manager", "service"):
        found = (await admin.get("/identity/v3/roles", params={"name": name})).json()["roles"]
        assert [r["name"] for r in found] == [name]
    again = await admin.post("/identity/v3/roles", json={"role": {"name": "member"}})
    assert again.status_code == 409
