"""os-quota-class-sets over HTTP (admin): a class's limits by microversion
(Tempest's schemas); the class "default" is every project's defaults, so
updating it changes os-quota-sets and what a create may use."""
from __future__ import annotations

import httpx
import pytest

from cirrus.compute import quotas
from tests.functional.actions import show
from tests.functional.servers import create_server, server_body, upload_image

CLASSES = "/compute/v2.1/os-quota-class-sets"
NETWORK = {"fixed_ips", "floating_ips", "security_groups", "security_group_rules"}
PERSONALITY = {"injected_files", "injected_file_content_bytes", "injected_file_path_bytes"}
GROUPS = {"server_groups", "server_group_members"}
EVERY = {*quotas.ALL_RESOURCES, *quotas.UNENFORCED}


def v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


@pytest.mark.parametrize("version, keys", [
    ("2.1", EVERY - GROUPS), ("2.49", EVERY - GROUPS), ("2.50", EVERY - NETWORK),
    ("2.56", EVERY - NETWORK), ("2.57", EVERY - NETWORK - PERSONALITY),
])
async def test_show_by_version(admin: httpx.AsyncClient, version: str, keys: set[str]) -> None:
    resp = await admin.get(f"{CLASSES}/default", headers=v(version))
    assert resp.status_code == 200, resp.text
    body = resp.json()["quota_class_set"]
    assert body.pop("id") == "default" and set(body) == keys
    assert all(isinstance(x, int) for x in body.values())


async def test_updating_default_changes_every_projects_defaults(admin: httpx.AsyncClient,
                                                                 demo: httpx.AsyncClient) -> None:
    shown = (await admin.get(f"{CLASSES}/default")).json()["quota_class_set"]
    shown.pop("id")
    raised = {k: x + 100 for k, x in shown.items()}
    resp = await admin.put(f"{CLASSES}/default", json={"quota_class_set": raised})
    assert resp.status_code == 200, resp.text
    assert resp.json()["quota_class_set"] == raised  # no id in Nova's answer
    again = (await admin.get(f"{CLASSES}/default")).json()["quota_class_set"]
    assert again == {"id": "default", **raised}
    project = (await demo.get("/compute/v2.1/limits")).json()["limits"]["absolute"]
    defaults = (await demo.get(f"/compute/v2.1/os-quota-sets/{'x' * 8}/defaults")).json()
    assert project["maxTotalInstances"] == raised["instances"]
    assert project["maxServerMeta"] == raised["metadata_items"]
    assert defaults["quota_set"]["cores"] == raised["cores"]


async def test_a_default_limit_holds_creates(admin: httpx.AsyncClient,
                                             demo: httpx.AsyncClient) -> None:
    resp = await admin.put(f"{CLASSES}/default", json={"quota_class_set": {"instances": "1"}})
    assert resp.status_code == 200 and resp.json()["quota_class_set"]["instances"] == 1
    image = await upload_image(demo)
    one = await create_server(demo, server_body(image, name="one"))
    second = await demo.post("/compute/v2.1/servers", json=server_body(image, name="two"))
    assert second.status_code == 403, second.text
    # A project's own limit still wins over the default class.
    project = (await show(demo, one["id"]))["tenant_id"]
    own = await admin.put(f"/compute/v2.1/os-quota-sets/{project}",
                          json={"quota_set": {"instances": 5}})
    assert own.status_code == 200, own.text
    third = await demo.post("/compute/v2.1/servers", json=server_body(image, name="three"))
    assert third.status_code == 202, third.text


async def test_another_class_is_kept_and_unused(admin: httpx.AsyncClient) -> None:
    resp = await admin.put(f"{CLASSES}/gold", json={"quota_class_set": {"cores": 64, "ram": -1}},
                           headers=v("2.57"))
    assert resp.status_code == 200, resp.text
    gold = (await admin.get(f"{CLASSES}/gold", headers=v("2.57"))).json()["quota_class_set"]
    default = (await admin.get(f"{CLASSES}/default", headers=v("2.57"))).json()["quota_class_set"]
    assert (gold["id"], gold["cores"], gold["ram"]) == ("gold", 64, -1)
    assert default["cores"] != 64 and gold["instances"] == default["instances"]


@pytest.mark.parametrize("version, body", [
    ("2.1", {}),
    ("2.1", {"quota_class_set": []}),
    ("2.1", {"quota_class_set": {"instances": -2}}),
    ("2.1", {"quota_class_set": {"instances": 2**31}}),
    ("2.1", {"quota_class_set": {"instances": "ten"}}),
    ("2.1", {"quota_class_set": {"instances": True}}),
    ("2.1", {"quota_class_set": {"bogus": 1}}),
    ("2.1", {"quota_class_set": {"cores": 1}, "extra": 1}),
    ("2.50", {"quota_class_set": {"fixed_ips": 1}}),
    ("2.50", {"quota_class_set": {"networks": 1}}),
    ("2.57", {"quota_class_set": {"injected_files": 1}}),
])
async def test_bad_updates_are_400(admin: httpx.AsyncClient, version: str, body: dict) -> None:
    resp = await admin.put(f"{CLASSES}/default", json=body, headers=v(version))
    assert resp.status_code == 400, resp.text
    assert "badRequest" in resp.json()


async def test_networks_is_taken_below_250_and_kept_nowhere(admin: httpx.AsyncClient) -> None:
    resp = await admin.put(f"{CLASSES}/default", json={"quota_class_set": {"networks": 3}})
    assert resp.status_code == 200 and "networks" not in resp.json()["quota_class_set"]


async def test_admin_only(demo: httpx.AsyncClient) -> None:
    assert (await demo.get(f"{CLASSES}/default")).status_code == 403
    assert (await demo.put(f"{CLASSES}/default",
                           json={"quota_class_set": {"cores": 1}})).status_code == 403
