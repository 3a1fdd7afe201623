"""os-networks and os-tenant-networks over HTTP (2.1–2.35): the network
service's networks in nova-network's shapes, as the caller may see them
(its own, shared ones; every one for an admin); 404 from 2.36."""
from __future__ import annotations

import httpx
import pytest

from cirrus.api.compute.networks import ADMIN_FIELDS, FIELDS

NETS = "/compute/v2.1/os-networks"
TENANT_NETS = "/compute/v2.1/os-tenant-networks"
NEUTRON = "/network/v2.0/networks"


async def _network(client: httpx.AsyncClient, name: str, **extra: object) -> str:
    resp = await client.post(NEUTRON, json={"network": {"name": name, **extra}})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["network"]["id"])


@pytest.fixture
async def nets(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> dict[str, str]:
    return {"own": await _network(demo, "own"),
            "shared": await _network(admin, "everyone", shared=True),
            "foreign": await _network(admin, "admins-own")}


async def test_os_networks_lists_what_the_caller_sees(demo: httpx.AsyncClient,
                                                      admin: httpx.AsyncClient,
                                                      nets: dict[str, str]) -> None:
    listed = (await demo.get(NETS)).json()["networks"]
    by_id = {n["id"]: n for n in listed}
    assert {nets["own"], nets["shared"]} <= set(by_id) and nets["foreign"] not in by_id
    assert by_id[nets["own"]] == {"id": nets["own"], "label": "own", **dict.fromkeys(FIELDS)}
    everyone = {n["id"]: n for n in (await admin.get(NETS)).json()["networks"]}
    assert set(nets.values()) <= set(everyone)
    assert set(everyone[nets["own"]]) == {"id", "label", *FIELDS, *ADMIN_FIELDS}


async def test_os_networks_show(demo: httpx.AsyncClient, nets: dict[str, str]) -> None:
    shown = await demo.get(f"{NETS}/{nets['shared']}")
    assert shown.status_code == 200, shown.text
    assert shown.json()["network"]["label"] == "everyone"
    for missing in (nets["foreign"], "no-such-network"):
        resp = await demo.get(f"{NETS}/{missing}")
        assert resp.status_code == 404
        assert resp.json() == {"itemNotFound": {"code": 404, "message": "Network not found"}}


async def test_os_tenant_networks(demo: httpx.AsyncClient, nets: dict[str, str]) -> None:
    listed = (await demo.get(TENANT_NETS)).json()["networks"]
    assert {"id": nets["own"], "cidr": "None", "label": "own"} in listed
    assert nets["foreign"] not in {n["id"] for n in listed}
    shown = await demo.get(f"{TENANT_NETS}/{nets['shared']}")
    assert shown.json() == {"network": {"id": nets["shared"], "cidr": "None", "label": "everyone"}}
    assert (await demo.get(f"{TENANT_NETS}/{nets['foreign']}")).status_code == 404


@pytest.mark.parametrize("path", [NETS, TENANT_NETS])
async def test_gone_from_236(demo: httpx.AsyncClient, nets: dict[str, str], path: str) -> None:
    for url in (path, f"{path}/{nets['own']}"):
        at_235 = await demo.get(url, headers={"OpenStack-API-Version": "compute 2.35"})
        at_236 = await demo.get(url, headers={"OpenStack-API-Version": "compute 2.36"})
        assert (at_235.status_code, at_236.status_code) == (200, 404)
