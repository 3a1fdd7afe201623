"""Block storage attachments over HTTP: the attachments API (3.27/3.44), the
legacy actions, refusals that change nothing, and the sweep."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.volume.models import volumes
from cirrus.volume.periodic import sweep
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.functional.volumes import action, create_volume, show, volume_url

V344 = {"OpenStack-API-Version": "volume 3.44"}
CONNECTOR = {"host": "compute-1", "ip": "127.0.0.1", "initiator": "iqn.x"}


async def _attach(client: httpx.AsyncClient, volume_id: str, instance: str,
                  connector: dict[str, Any] | None = None) -> httpx.Response:
    base = await volume_url(client)
    body: dict[str, Any] = {"volume_uuid": volume_id, "instance_uuid": instance}
    if connector:
        body["connector"] = connector
    return await client.post(f"{base}/attachments", json={"attachment": body}, headers=V344)


async def test_attachment_lifecycle(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    vol = await create_volume(demo)
    instance = str(uuid.uuid4())
    resp = await _attach(demo, vol["id"], instance)
    assert resp.status_code == 200, resp.text
    att = resp.json()["attachment"]
    assert att["status"] == "reserved"
    assert (await show(demo, "volumes", vol["id"]))["status"] == "reserved"
    upd = await demo.put(f"{base}/attachments/{att['id']}", json={"attachment": {
        "connector": CONNECTOR}}, headers=V344)
    assert upd.status_code == 200, upd.text
    info = upd.json()["attachment"]["connection_info"]
    assert info["driver_volume_type"] == "local" and info["data"]["device_path"].endswith(vol["id"])
    assert (await show(demo, "volumes", vol["id"]))["status"] == "attaching"
    done = await demo.post(f"{base}/attachments/{att['id']}/action", json={"os-complete": None},
                           headers=V344)
    assert done.status_code == 204
    shown = await show(demo, "volumes", vol["id"])
    assert shown["status"] == "in-use" and shown["attachments"][0]["server_id"] == instance
    listed = (await demo.get(f"{base}/attachments", headers=V344)).json()["attachments"]
    assert [a["id"] for a in listed] == [att["id"]]
    assert (await demo.delete(f"{base}/attachments/{att['id']}", headers=V344)).status_code == 200
    shown = await show(demo, "volumes", vol["id"])
    assert shown["status"] == "available" and shown["attachments"] == []


async def test_attachments_need_327(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    assert (await demo.get(f"{base}/attachments")).status_code == 404


async def test_attaching_an_in_use_volume_is_refused_and_changes_nothing(
        demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    vol = await create_volume(demo)
    first = (await _attach(demo, vol["id"], str(uuid.uuid4()), CONNECTOR)).json()["attachment"]
    await demo.post(f"{base}/attachments/{first['id']}/action", json={"os-complete": None},
                    headers=V344)
    before = await show(demo, "volumes", vol["id"])
    second = await _attach(demo, vol["id"], str(uuid.uuid4()))
    assert second.status_code == 400 and "in-use" in second.text
    assert await show(demo, "volumes", vol["id"]) == before
    # ... nor can it be deleted while attached.
    assert (await demo.delete(f"{base}/volumes/{vol['id']}")).status_code == 400
    assert await show(demo, "volumes", vol["id"]) == before


async def test_legacy_actions(demo: httpx.AsyncClient) -> None:
    vol = await create_volume(demo)
    vid, instance = vol["id"], str(uuid.uuid4())
    assert (await action(demo, vid, "os-reserve")).status_code == 202
    assert (await show(demo, "volumes", vid))["status"] == "attaching"
    assert (await action(demo, vid, "os-reserve")).status_code == 400
    assert (await action(demo, vid, "os-unreserve")).status_code == 202
    assert (await show(demo, "volumes", vid))["status"] == "available"
    init = await action(demo, vid, "os-initialize_connection", {"connector": CONNECTOR})
    assert init.status_code == 200 and init.json()["connection_info"]["data"]["access_mode"] == "rw"
    attach = await action(demo, vid, "os-attach", {"instance_uuid": instance,
                                                   "mountpoint": "/dev/vdb", "mode": "rw"})
    assert attach.status_code == 202, attach.text
    shown = await show(demo, "volumes", vid)
    assert shown["status"] == "in-use" and shown["attachments"][0]["device"] == "/dev/vdb"
    assert (await action(demo, vid, "os-begin_detaching")).status_code == 202
    assert (await show(demo, "volumes", vid))["status"] == "detaching"
    assert (await action(demo, vid, "os-roll_detaching")).status_code == 202
    assert (await show(demo, "volumes", vid))["status"] == "in-use"
    term = await action(demo, vid, "os-terminate_connection", {"connector": CONNECTOR})
    assert term.status_code == 202
    assert (await action(demo, vid, "os-detach", {})).status_code == 202
    assert (await show(demo, "volumes", vid))["status"] == "available"


async def test_admin_actions(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    vol = await create_volume(demo)
    refused = await action(demo, vol["id"], "os-reset_status", {"status": "error"})
    assert refused.status_code == 403
    assert (await action(admin, vol["id"], "os-reset_status", {"status": "error"})).status_code == 202
    assert (await show(demo, "volumes", vol["id"]))["status"] == "error"
    assert (await action(demo, vol["id"], "os-force_delete")).status_code == 403
    assert (await action(admin, vol["id"], "os-force_delete")).status_code == 202
    base = await volume_url(demo)
    assert (await demo.get(f"{base}/volumes/{vol['id']}")).status_code == 404


BAD_CREATES = [
    ({"size": 0}, "size"),
    ({"size": -1}, "size"),
    ({"size": "big"}, "size"),
    ({"size": 1, "volume_type": "no-such-type"}, "could not be found"),
    ({"size": 1, "snapshot_id": "not-a-uuid"}, "snapshot_id"),
    ({"size": 1, "color": "red"}, "Additional properties"),
    ({"size": 1, "name": 5}, "name"),
    ({"size": 1, "availability_zone": "elsewhere"}, "Availability zone"),
    ({"size": 1, "metadata": {"k": 1}}, "metadata"),
    ({}, "Size must be specified"),
]


@pytest.mark.parametrize("body, says", BAD_CREATES)
async def test_bad_creates_are_4xx_and_create_nothing(demo: httpx.AsyncClient,
                                                      body: dict[str, Any], says: str) -> None:
    base = await volume_url(demo)
    resp = await demo.post(f"{base}/volumes", json={"volume": body})
    assert 400 <= resp.status_code < 500 and says in resp.text, resp.text
    assert (await demo.get(f"{base}/volumes")).json()["volumes"] == []


async def test_beyond_quota_is_413_and_creates_nothing(admin: httpx.AsyncClient,
                                                       demo: httpx.AsyncClient) -> None:
    abase, dbase = await volume_url(admin), await volume_url(demo)
    project = dbase.rsplit("/", 1)[1]
    await admin.put(f"{abase}/os-quota-sets/{project}", json={"quota_set": {"gigabytes": 3}})
    big = await demo.post(f"{dbase}/volumes", json={"volume": {"size": 4}})
    assert big.status_code == 413 and "gigabytes" in big.text
    await create_volume(demo, size=3)
    more = await demo.post(f"{dbase}/volumes", json={"volume": {"size": 1}})
    assert more.status_code == 413
    assert len((await demo.get(f"{dbase}/volumes")).json()["volumes"]) == 1


async def test_another_projects_volume_is_404(api: Any, demo: httpx.AsyncClient,
                                             admin: httpx.AsyncClient) -> None:
    vol = await create_volume(demo)
    abase = await volume_url(admin)
    # The admin sees it; a member of another project does not, by id.
    assert (await admin.get(f"{abase}/volumes/{vol['id']}")).status_code == 200
    other = await admin.post("/identity/v3/projects", json={"project": {"name": "p2",
                                                                         "domain_id": "default"}})
    assert other.status_code == 201
    dbase = await volume_url(demo)
    project_b = other.json()["project"]["id"]
    # Through another project's URL: refused before anything is read.
    assert (await demo.get(f"/volume/v3/{project_b}/volumes")).status_code == 403
    assert (await demo.get(f"{dbase}/volumes/{uuid.uuid4()}")).status_code == 404


async def test_sweep_fails_stuck_volumes_and_releases_orphans(cloud: Cloud,
                                                             demo: httpx.AsyncClient) -> None:
    db = cloud.db
    assert db is not None
    stuck = await create_volume(demo)
    await db.run(lambda c: c.execute(volumes.update().where(volumes.c.id == stuck["id"])
                                     .values(status="creating")))
    # Not yet past the timeout: nothing changes.
    assert (await db.run(sweep, 600.0)).failed == []
    later = dt.datetime.utcnow() + dt.timedelta(seconds=601)
    result = await db.run(sweep, 600.0, later)
    assert result.failed == [stuck["id"]]
    assert (await show(demo, "volumes", stuck["id"]))["status"] == "error"
    # An attachment to a server that is then deleted is released.
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    vol = await create_volume(demo)
    att = (await _attach(demo, vol["id"], server["id"], CONNECTOR)).json()["attachment"]
    base = await volume_url(demo)
    await demo.post(f"{base}/attachments/{att['id']}/action", json={"os-complete": None},
                    headers=V344)
    assert (await db.run(sweep, 600.0)).released == []
    assert (await demo.delete(f"/compute/v2.1/servers/{server['id']}")).status_code == 204
    await wait_for_status(demo, server["id"], {"DELETED"})
    assert (await db.run(sweep, 600.0)).released == [att["id"]]
    assert (await show(demo, "volumes", vol["id"]))["status"] == "available"


async def test_nothing_left_after_cascade(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    vol = await create_volume(demo)
    base = await volume_url(demo)
    await demo.post(f"{base}/snapshots", json={"snapshot": {"volume_id": vol["id"]}})
    assert (await demo.delete(f"{base}/volumes/{vol['id']}?cascade=true")).status_code == 202
    assert sorted(p.name for p in (cloud.settings.state_dir / "volumes").iterdir()) == []
    rows = await cloud.db.read(lambda c: c.execute(sa.select(volumes.c.status).where(
        volumes.c.id == vol["id"])).all())  # type: ignore[union-attr]
    assert [r[0] for r in rows] == ["deleted"]
