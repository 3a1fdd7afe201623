"""``os-resetState`` and ``injectNetworkInfo`` (admin only)."""
from __future__ import annotations

import httpx

from tests.functional.servers import active_server, wait_for_status


async def _act(client: httpx.AsyncClient, server: str, body: dict) -> httpx.Response:
    return await client.post(f"/compute/v2.1/servers/{server}/action", json=body)


async def test_reset_state_forces_error_then_active(demo: httpx.AsyncClient,
                                                    admin: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    assert (await _act(admin, server, {"os-resetState": {"state": "error"}})).status_code == 202
    await wait_for_status(demo, server, {"ERROR"})
    assert (await _act(admin, server, {"os-resetState": {"state": "active"}})).status_code == 202
    shown = await wait_for_status(demo, server, {"ACTIVE"})
    assert shown["OS-EXT-STS:task_state"] is None
    actions = (await demo.get(f"/compute/v2.1/servers/{server}/os-instance-actions")).json()
    assert [a["action"] for a in actions["instanceActions"]].count("resetState") == 2


async def test_admin_actions_refuse_members_and_bad_bodies(demo: httpx.AsyncClient,
                                                           admin: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    assert (await _act(demo, server, {"os-resetState": {"state": "error"}})).status_code == 403
    assert (await _act(demo, server, {"injectNetworkInfo": None})).status_code == 403
    for bad in ({"state": "stopped"}, {}, None, {"state": "active", "x": 1}):
        assert (await _act(admin, server, {"os-resetState": bad})).status_code == 400
    assert (await _act(admin, server, {"injectNetworkInfo": {"x": 1}})).status_code == 400
    for empty in (None, {}):
        assert (await _act(admin, server, {"injectNetworkInfo": empty})).status_code == 202
    missing = "00000000-0000-0000-0000-000000000000"
    assert (await _act(admin, missing, {"os-resetState": {"state": "error"}})).status_code == 404
