"""Network segments over HTTP: Neutron's provider extension (admins see and
name segments), VNIs for projects' networks, the MTU an overlay leaves."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

NET = "/network/v2.0"
PROVIDER = ("provider:network_type", "provider:physical_network", "provider:segmentation_id")


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"tenant_network_types": "vxlan", "vni_ranges": "100:102",
            "network_vlan_ranges": "physnet1:10:11,physnet2", "flat_networks": "physnet1"}


async def create(client: httpx.AsyncClient, **values: Any) -> httpx.Response:
    return await client.post(f"{NET}/networks", json={"network": {"name": "n", **values}})


def error(resp: httpx.Response) -> tuple[int, str, str]:
    body = resp.json()["NeutronError"]
    return resp.status_code, body["type"], body["message"]


async def test_projects_get_a_vni_that_only_admins_see(demo: httpx.AsyncClient,
                                                       admin: httpx.AsyncClient) -> None:
    resp = await create(demo)
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert net["mtu"] == 1450 and not set(PROVIDER) & set(net)
    shown = (await admin.get(f"{NET}/networks/{net['id']}")).json()["network"]
    assert {k: shown[k] for k in PROVIDER} == {
        "provider:network_type": "vxlan", "provider:physical_network": None,
        "provider:segmentation_id": 100}
    listed = (await admin.get(f"{NET}/networks")).json()["networks"]
    assert next(n for n in listed if n["id"] == net["id"])["provider:segmentation_id"] == 100
    by_type = (await admin.get(f"{NET}/networks?provider:network_type=vxlan"
                               "&provider:segmentation_id=100")).json()["networks"]
    assert [n["id"] for n in by_type] == [net["id"]]
    assert (await admin.get(f"{NET}/networks?provider:segmentation_id=101")).json() == {
        "networks": []}
    for path in (f"{NET}/networks/{net['id']}", f"{NET}/networks"):
        body = (await demo.get(path)).json()
        views = body["networks"] if "networks" in body else [body["network"]]
        assert views and not any(set(PROVIDER) & set(v) for v in views)
    aliases = {e["alias"] for e in (await demo.get(f"{NET}/extensions")).json()["extensions"]}
    assert "provider" in aliases


async def test_only_admins_name_a_segment(demo: httpx.AsyncClient) -> None:
    for key, value in (("provider:network_type", "vxlan"), ("provider:segmentation_id", 101),
                       ("provider:physical_network", "physnet1")):
        resp = await create(demo, **{key: value})
        assert error(resp) == (403, "PolicyNotAuthorized",
                               f"(rule:create_network:{key}) is disallowed by policy")


@pytest.mark.parametrize("values, view", [
    ({"provider:network_type": "vlan", "provider:physical_network": "physnet1",
      "provider:segmentation_id": 10}, ("vlan", "physnet1", 10, 1500)),
    ({"provider:network_type": "vlan", "provider:physical_network": "physnet1"},
     ("vlan", "physnet1", 10, 1500)),  # the range's first
    ({"provider:network_type": "vxlan", "provider:segmentation_id": 5000},
     ("vxlan", None, 5000, 1450)),
    ({"provider:network_type": "flat", "provider:physical_network": "physnet1"},
     ("flat", "physnet1", None, 1500)),
    ({"provider:network_type": "local"}, ("local", None, None, 1500)),
])
async def test_admins_create_provider_networks(admin: httpx.AsyncClient, values: dict[str, Any],
                                               view: tuple[Any, ...]) -> None:
    resp = await create(admin, **values)
    assert resp.status_code == 201, resp.text
    net = resp.json()["network"]
    assert (*(net[k] for k in PROVIDER), net["mtu"]) == view


async def test_a_taken_or_exhausted_segment(admin: httpx.AsyncClient,
                                            demo: httpx.AsyncClient) -> None:
    vlan = {"provider:network_type": "vlan", "provider:physical_network": "physnet1"}
    assert (await create(admin, **vlan, **{"provider:segmentation_id": 11})).status_code == 201
    status, kind, message = error(await create(admin, **vlan, **{"provider:segmentation_id": 11}))
    assert (status, kind) == (409, "VlanIdInUse") and "VLAN 11 on physical network physnet1" in message
    assert (await create(admin, **vlan)).status_code == 201  # takes 10
    assert error(await create(admin, **vlan))[:2] == (503, "NoNetworkAvailable")
    flat = {"provider:network_type": "flat", "provider:physical_network": "physnet1"}
    assert (await create(admin, **flat)).status_code == 201
    assert error(await create(admin, **flat))[:2] == (409, "FlatNetworkInUse")
    # The projects' VNIs: 100 to 102, then none; an admin's VNI 101 is skipped.
    tunnel = {"provider:network_type": "vxlan", "provider:segmentation_id": 101}
    assert (await create(admin, **tunnel)).status_code == 201
    assert error(await create(admin, **tunnel))[:2] == (409, "TunnelIdInUse")
    made = [(await create(demo)).json()["network"]["id"] for _ in range(2)]
    shown = [(await admin.get(f"{NET}/networks/{n}")).json()["network"] for n in made]
    assert [s["provider:segmentation_id"] for s in shown] == [100, 102]
    assert error(await create(demo))[:2] == (503, "NoNetworkAvailable")
    # Deleting a network frees its VNI.
    assert (await demo.delete(f"{NET}/networks/{made[0]}")).status_code == 204
    assert (await create(demo)).status_code == 201


@pytest.mark.parametrize("values, message", [
    ({"provider:network_type": "gre"}, "network_type value 'gre' not supported"),
    ({"provider:network_type": "vlan", "provider:physical_network": "nowhere"},
     "physical_network 'nowhere' unknown for VLAN provider network"),
    ({"provider:network_type": "vlan", "provider:physical_network": "physnet1",
      "provider:segmentation_id": 4095}, "out of range (1 through 4094)"),
    ({"provider:network_type": "vxlan", "provider:physical_network": "physnet1"},
     "provider:physical_network prohibited for VXLAN provider network"),
    ({"provider:network_type": "flat", "provider:physical_network": "physnet2"},
     "physical_network 'physnet2' unknown for flat provider network"),
    ({"provider:segmentation_id": 7}, "provider:network_type required"),
    ({"provider:network_type": "vlan", "provider:physical_network": "physnet2"},
     "No tenant network is available"),  # physnet2 has no range to allocate from
])
async def test_bad_segments_are_refused(admin: httpx.AsyncClient, values: dict[str, Any],
                                        message: str) -> None:
    status, _, text = error(await create(admin, **values))
    assert status in (400, 503) and message in text


async def test_the_mtu_an_overlay_leaves(demo: httpx.AsyncClient) -> None:
    status, kind, message = error(await create(demo, mtu=1500))
    assert (status, kind) == (400, "InvalidInput") and "maximum is 1450" in message
    net = (await create(demo, mtu=1400)).json()["network"]
    assert net["mtu"] == 1400
    resp = await demo.put(f"{NET}/networks/{net['id']}", json={"network": {"mtu": 1450}})
    assert resp.status_code == 200 and resp.json()["network"]["mtu"] == 1450
    status, _, message = error(await demo.put(f"{NET}/networks/{net['id']}",
                                              json={"network": {"mtu": 1451}}))
    assert status == 400 and "maximum is 1450" in message
    status, _, message = error(await demo.put(f"{NET}/networks/{net['id']}", json={
        "network": {"provider:segmentation_id": 7}}))
    assert status == 400 and "read-only" in message


async def test_get_me_a_network_takes_a_vni(demo: httpx.AsyncClient,
                                            admin: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image, networks="auto"))
    project = (await wait_for_status(demo, created["id"], {"ACTIVE"}))["tenant_id"]
    topology = (await demo.get(f"{NET}/auto-allocated-topology/{project}")).json()
    net = (await admin.get(f"{NET}/networks/{topology['auto_allocated_topology']['id']}")).json()
    assert (net["network"]["provider:network_type"], net["network"]["mtu"]) == ("vxlan", 1450)
    assert net["network"]["provider:segmentation_id"] == 100
