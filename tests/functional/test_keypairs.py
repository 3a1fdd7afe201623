"""Key pairs and server groups over HTTP."""
from __future__ import annotations

import httpx
import pytest

from cirrus.compute.keypairs import generate

KEYS = "/compute/v2.1/os-keypairs"


async def test_generate_import_list_show_delete(demo: httpx.AsyncClient) -> None:
    made = await demo.post(KEYS, json={"keypair": {"name": "gen"}})
    assert made.status_code == 200 and "PRIVATE KEY" in made.json()["keypair"]["private_key"]
    _, public = generate()
    imported = await demo.post(KEYS, json={"keypair": {"name": "imp", "public_key": public}},
                               headers={"OpenStack-API-Version": "compute 2.2"})
    assert imported.status_code == 201 and "private_key" not in imported.json()["keypair"]
    assert imported.json()["keypair"]["fingerprint"].count(":") == 15
    names = {k["keypair"]["name"] for k in (await demo.get(KEYS)).json()["keypairs"]}
    assert names == {"gen", "imp"}
    assert (await demo.get(f"{KEYS}/imp")).json()["keypair"]["public_key"] == public
    assert (await demo.post(KEYS, json={"keypair": {"name": "imp"}})).status_code == 409
    assert (await demo.delete(f"{KEYS}/imp")).status_code == 202
    assert (await demo.get(f"{KEYS}/imp")).status_code == 404


@pytest.mark.parametrize("body", [{"keypair": {"name": "bad/name"}}, {"keypair": {}},
                                  {"keypair": {"name": "k", "public_key": "not a key"}}, {}])
async def test_bad_keypairs_are_400(demo: httpx.AsyncClient, body: dict) -> None:
    assert (await demo.post(KEYS, json=body)).status_code == 400


async def test_server_groups(demo: httpx.AsyncClient) -> None:
    url = "/compute/v2.1/os-server-groups"
    old = await demo.post(url, json={"server_group": {"name": "g", "policies": ["affinity"]}})
    assert old.json()["server_group"]["policies"] == ["affinity"]
    new = await demo.post(url, json={"server_group": {"name": "h", "policy": "anti-affinity",
                                                      "rules": {"max_server_per_host": 2}}},
                          headers={"OpenStack-API-Version": "compute 2.64"})
    assert new.status_code == 200 and new.json()["server_group"]["rules"] == {"max_server_per_host": 2}
    bad = await demo.post(url, json={"server_group": {"name": "x", "policies": ["nearby"]}})
    assert bad.status_code == 400
    assert len((await demo.get(url)).json()["server_groups"]) == 2
    gid = old.json()["server_group"]["id"]
    assert (await demo.delete(f"{url}/{gid}")).status_code == 204
    assert (await demo.get(f"{url}/{gid}")).status_code == 404
