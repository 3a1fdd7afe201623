"""os-instance-actions of a deleted server: readable from 2.21 by whoever could
read the server (Nova's read_deleted='yes'), not before, and never by another project."""
from __future__ import annotations

import httpx

from tests.conftest import Api
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.functional.test_identity_admin import make_user

SERVERS = "/compute/v2.1/servers"


def at(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def _deleted_server(demo: httpx.AsyncClient) -> str:
    server = await create_server(demo, server_body(await upload_image(demo)))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert (await demo.delete(f"{SERVERS}/{server['id']}")).status_code == 204
    await wait_for_status(demo, server["id"], {"DELETED"})
    return str(server["id"])


async def test_actions_of_a_deleted_server_from_2_21(api: Api, admin: httpx.AsyncClient,
                                                     demo: httpx.AsyncClient) -> None:
    server = await _deleted_server(demo)
    for client in (demo, admin):
        listed = await client.get(f"{SERVERS}/{server}/os-instance-actions", headers=at("2.21"))
        assert listed.status_code == 200, listed.text
        actions = listed.json()["instanceActions"]
        assert sorted(a["action"] for a in actions) == ["create", "delete"]
        delete = next(a for a in actions if a["action"] == "delete")
        shown = await client.get(f"{SERVERS}/{server}/os-instance-actions/{delete['request_id']}",
                                 headers=at("2.21"))
        assert shown.status_code == 200 and shown.json()["instanceAction"]["action"] == "delete"
        before = await client.get(f"{SERVERS}/{server}/os-instance-actions", headers=at("2.20"))
        assert before.status_code == 404
    await make_user(admin, "mallory")
    async with await api.as_user("mallory") as other:
        theirs = await other.get(f"{SERVERS}/{server}/os-instance-actions", headers=at("2.21"))
        assert theirs.status_code == 404
