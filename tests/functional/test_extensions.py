"""/extensions over HTTP: Nova's fixed v2.1 extension list, for any project
user; one by alias, 404 for an alias Nova does not list."""
from __future__ import annotations

import httpx

from tests.conftest import Api

EXTENSIONS = "/compute/v2.1/extensions"
KEYS = {"alias", "description", "links", "name", "namespace", "updated"}


async def test_list(demo: httpx.AsyncClient) -> None:
    resp = await demo.get(EXTENSIONS)
    assert resp.status_code == 200, resp.text
    listed = resp.json()["extensions"]
    aliases = [e["alias"] for e in listed]
    assert len(listed) == 99 and aliases == sorted(aliases) and len(set(aliases)) == 99
    assert all(set(e) == KEYS and e["links"] == [] for e in listed)
    assert {"Hosts", "Consoles", "ServerDiagnostics", "QuotaClasses"} <= {e["name"] for e in listed}
    assert {e["updated"] for e in listed} == {"2014-12-03T00:00:00Z"}


async def test_show_by_alias(demo: httpx.AsyncClient) -> None:
    resp = await demo.get(f"{EXTENSIONS}/os-consoles")
    assert resp.status_code == 200, resp.text
    assert resp.json()["extension"] == {
        "alias": "os-consoles", "description": "Interactive Console support.", "links": [],
        "name": "Consoles", "namespace": "http://docs.openstack.org/compute/ext/fake_xml",
        "updated": "2014-12-03T00:00:00Z"}
    missing = await demo.get(f"{EXTENSIONS}/os-nothing")
    assert missing.status_code == 404 and "itemNotFound" in missing.json()


async def test_needs_a_token(api: Api) -> None:
    async with api.client() as anonymous:
        assert (await anonymous.get(EXTENSIONS)).status_code == 401
