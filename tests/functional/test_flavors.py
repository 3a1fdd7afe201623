"""Flavors over HTTP: Nova's spellings of booleans, the is_public filter and
the extra-spec delete status (contracts Tempest's flavor tests hold)."""
from __future__ import annotations

import httpx
import pytest

FLAVORS = "/compute/v2.1/flavors"


def flavor(fid: str, **extra: object) -> dict:
    return {"flavor": {"name": f"f-{fid}", "id": fid, "ram": 64, "vcpus": 1, "disk": 0, **extra}}


@pytest.mark.parametrize("spelling, public", [
    (True, True), ("True", True), ("TRUE", True), ("true", True), ("1", True), ("on", True),
    ("YES", True), ("yes", True), (False, False), ("False", False), ("false", False),
    ("0", False), ("OFF", False), ("no", False), ("No", False)])
async def test_is_public_takes_novas_boolean_spellings(admin: httpx.AsyncClient, spelling: object,
                                                       public: bool) -> None:
    made = await admin.post(FLAVORS, json=flavor("b", **{"os-flavor-access:is_public": spelling}))
    assert made.status_code == 200, made.text
    assert made.json()["flavor"]["os-flavor-access:is_public"] is public


@pytest.mark.parametrize("spelling", ["t", "y", "maybe", "", 1, 0, None, [], {}])
async def test_is_public_other_values_are_400(admin: httpx.AsyncClient, spelling: object) -> None:
    made = await admin.post(FLAVORS, json=flavor("b", **{"os-flavor-access:is_public": spelling}))
    assert made.status_code == 400
    assert "os-flavor-access:is_public" in made.json()["badRequest"]["message"]


async def test_ram_vcpus_disk_as_digit_strings(admin: httpx.AsyncClient) -> None:
    made = await admin.post(FLAVORS, json={"flavor": {"name": "s", "id": "s", "ram": "128",
                                                      "vcpus": "2", "disk": "1"}})
    assert made.status_code == 200, made.text
    assert {k: made.json()["flavor"][k] for k in ("ram", "vcpus", "disk")} == \
        {"ram": 128, "vcpus": 2, "disk": 1}


async def _ids(client: httpx.AsyncClient, is_public: str | None) -> set[str]:
    params = {} if is_public is None else {"is_public": is_public}
    resp = await client.get(f"{FLAVORS}/detail", params=params)
    assert resp.status_code == 200, resp.text
    return {f["id"] for f in resp.json()["flavors"]}


async def test_is_public_filter(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    for fid, public in (("pub", True), ("priv", False)):
        made = await admin.post(FLAVORS, json=flavor(fid, **{"os-flavor-access:is_public": public}))
        assert made.status_code == 200
    assert {"pub"} <= await _ids(admin, None) and "priv" not in await _ids(admin, None)
    assert {"pub", "priv"} <= await _ids(admin, "None")
    assert {"pub", "priv"} <= await _ids(admin, "none")
    assert "priv" in await _ids(admin, "false") and "pub" not in await _ids(admin, "false")
    assert "pub" in await _ids(admin, "t") and "priv" not in await _ids(admin, "t")
    # A user who is no admin sees public flavors whatever the filter says.
    assert "priv" not in await _ids(demo, "false")
    assert "priv" not in await _ids(demo, "None")


@pytest.mark.parametrize("value", ["maybe", "2", "truth"])
async def test_is_public_filter_rejects_other_values(admin: httpx.AsyncClient, value: str) -> None:
    resp = await admin.get(f"{FLAVORS}/detail", params={"is_public": value})
    assert resp.status_code == 400
    assert "is_public" in resp.json()["badRequest"]["message"]


async def test_extra_spec_delete_is_200_with_no_body(admin: httpx.AsyncClient) -> None:
    assert (await admin.post(FLAVORS, json=flavor("x"))).status_code == 200
    specs = f"{FLAVORS}/x/os-extra_specs"
    assert (await admin.post(specs, json={"extra_specs": {"hw:a": "1"}})).status_code == 200
    deleted = await admin.delete(f"{specs}/hw:a")
    assert deleted.status_code == 200 and deleted.content == b""
    assert (await admin.get(f"{specs}/hw:a")).status_code == 404
    assert (await admin.delete(f"{specs}/hw:a")).status_code == 404


async def test_paging_links(demo: httpx.AsyncClient) -> None:
    page = (await demo.get(f"{FLAVORS}/detail", params={"limit": 2})).json()
    assert [f["id"] for f in page["flavors"]] == ["1", "2"]
    assert page["flavors_links"] == [{"rel": "next", "href": (
        f"http://127.0.0.1:8774{FLAVORS}/detail?limit=2&marker=2")}]
    rest = (await demo.get(FLAVORS, params={"marker": "2"})).json()
    assert [f["id"] for f in rest["flavors"]] == ["3", "4", "5"] and "flavors_links" not in rest
    assert (await demo.get(FLAVORS, params={"limit": 0})).json() == {"flavors": []}
    assert (await demo.get(FLAVORS, params={"marker": "nope"})).status_code == 400
