"""Moves and migrations by persona: a member resizes only its own project's
servers (another project's is 404), moving between hosts and reading
migrations is for admins (403 naming Nova's rule)."""
from __future__ import annotations

import pytest

from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants

V = {"OpenStack-API-Version": "compute 2.80"}


@pytest.fixture
async def server(tenants: Tenants) -> str:
    image = await upload_image(tenants.member, name="moved")
    created = await create_server(tenants.member, server_body(image, "moved"))
    await wait_for_status(tenants.member, created["id"], {"ACTIVE"})
    return created["id"]


@pytest.mark.parametrize("body", [{"resize": {"flavorRef": "2"}}, {"confirmResize": None},
                                  {"revertResize": None}])
async def test_another_projects_server_is_404(tenants: Tenants, server: str,
                                              body: dict) -> None:
    resp = await tenants.other.post(f"/compute/v2.1/servers/{server}/action", json=body)
    assert resp.status_code == 404, resp.text
    shown = (await tenants.member.get(f"/compute/v2.1/servers/{server}")).json()["server"]
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:task_state"] is None


@pytest.mark.parametrize("body, rule", [
    ({"migrate": None}, "os-migrate-server:migrate"),
    ({"os-migrateLive": {"host": None, "block_migration": "auto"}},
     "os-migrate-server:migrate_live"),
    ({"evacuate": {}}, "os-evacuate"),
])
async def test_moving_between_hosts_is_for_admins(tenants: Tenants, server: str, body: dict,
                                                  rule: str) -> None:
    resp = await tenants.member.post(f"/compute/v2.1/servers/{server}/action", json=body,
                                     headers=V)
    assert resp.status_code == 403 and rule in resp.text


async def test_migrate_to_a_named_host_needs_its_own_rule(tenants: Tenants) -> None:
    from cirrus.policies.compute import MOVE_OPTION_RULES
    from cirrus.policy import Level

    assert MOVE_OPTION_RULES["migrate:host"].level is Level.ADMIN
    assert MOVE_OPTION_RULES["migrate:host"].name == "os_compute_api:os-migrate-server:migrate:host"


@pytest.mark.parametrize("method, path, rule", [
    ("GET", "/compute/v2.1/os-migrations", "os-migrations:index"),
    ("GET", "/compute/v2.1/servers/{s}/migrations", "servers:migrations:index"),
    ("GET", "/compute/v2.1/servers/{s}/migrations/1", "servers:migrations:show"),
    ("DELETE", "/compute/v2.1/servers/{s}/migrations/1", "servers:migrations:delete"),
])
async def test_migrations_are_for_admins(tenants: Tenants, server: str, method: str, path: str,
                                         rule: str) -> None:
    resp = await tenants.member.request(method, path.format(s=server), headers=V)
    assert resp.status_code == 403 and rule in resp.text
    resp = await tenants.admin.request(method, path.format(s=server), headers=V)
    assert resp.status_code in (200, 404), resp.text
