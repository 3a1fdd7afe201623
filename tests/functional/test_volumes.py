"""Block storage v3 over HTTP: lifecycle, sources, snapshots, metadata, types."""
from __future__ import annotations

import subprocess
from typing import Any
from pathlib import Path

import httpx
import pytest

from tests.functional.servers import upload_image
from tests.functional.volumes import action, create_volume, show, volume_url

V327 = {"OpenStack-API-Version": "volume 3.27"}


async def test_catalog_and_versions(demo: httpx.AsyncClient) -> None:
    catalog = (await demo.get("/identity/v3/auth/catalog")).json()["catalog"]
    kinds = {s["type"] for s in catalog}
    assert {"block-storage", "volumev3"} <= kinds
    versions = await demo.get("/volume/")
    assert versions.status_code == 300
    v3 = versions.json()["versions"][0]
    assert v3["min_version"] == "3.0" and v3["version"] == "3.66"
    assert (await demo.get("/volume/v3/")).status_code == 200


async def test_create_show_list_update_delete(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    vol = await create_volume(demo, size=1, name="v1", metadata={"k": "v"})
    assert vol["status"] == "available" and vol["size"] == 1 and vol["bootable"] == "false"
    assert vol["volume_type"] == "__DEFAULT__" and vol["metadata"] == {"k": "v"}
    shown = await show(demo, "volumes", vol["id"])
    assert shown["name"] == "v1" and "os-vol-host-attr:host" not in shown
    assert shown["os-vol-tenant-attr:tenant_id"] == base.rsplit("/", 1)[1]
    listed = (await demo.get(f"{base}/volumes")).json()["volumes"]
    assert [v["id"] for v in listed] == [vol["id"]] and set(listed[0]) == {"id", "name", "links"}
    detail = (await demo.get(f"{base}/volumes/detail?status=available")).json()["volumes"]
    assert detail[0]["id"] == vol["id"]
    resp = await demo.put(f"{base}/volumes/{vol['id']}", json={"volume": {"name": "v2"}})
    assert resp.status_code == 200 and resp.json()["volume"]["name"] == "v2"
    assert (await demo.delete(f"{base}/volumes/{vol['id']}")).status_code == 202
    assert (await demo.get(f"{base}/volumes/{vol['id']}")).status_code == 404


async def test_response_echoes_the_microversion(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    resp = await demo.get(f"{base}/volumes", headers={"OpenStack-API-Version": "volume 3.50"})
    assert resp.headers["OpenStack-API-Version"] == "volume 3.50"
    too_new = await demo.get(f"{base}/volumes", headers={"OpenStack-API-Version": "volume 3.99"})
    assert too_new.status_code == 406
    bad = await demo.get(f"{base}/volumes", headers={"OpenStack-API-Version": "volume 3.x"})
    assert bad.status_code == 400


async def test_paging(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    ids = [(await create_volume(demo, name=f"p{i}"))["id"] for i in range(3)]
    first = (await demo.get(f"{base}/volumes?limit=2&sort=name:asc")).json()
    assert [v["name"] for v in first["volumes"]] == ["p0", "p1"]
    assert first["volumes_links"][0]["rel"] == "next"
    rest = (await demo.get(f"{base}/volumes?limit=2&sort=name:asc&marker={ids[1]}")).json()
    assert [v["name"] for v in rest["volumes"]] == ["p2"] and "volumes_links" not in rest


async def test_sources_image_snapshot_clone(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    image = await upload_image(demo, name="img", data=b"\x01" * 4096)
    from_image = await create_volume(demo, size=1, imageRef=image)
    assert from_image["status"] == "available" and from_image["bootable"] == "true"
    shown = await show(demo, "volumes", from_image["id"])
    assert shown["volume_image_metadata"]["image_id"] == image
    snap = await demo.post(f"{base}/snapshots", json={"snapshot": {
        "volume_id": from_image["id"], "name": "s1"}})
    assert snap.status_code == 202, snap.text
    snap_id = snap.json()["snapshot"]["id"]
    assert (await show(demo, "snapshots", snap_id))["status"] == "available"
    from_snap = await create_volume(demo, size=2, snapshot_id=snap_id)
    assert from_snap["status"] == "available" and from_snap["size"] == 2
    assert from_snap["snapshot_id"] == snap_id
    clone = await create_volume(demo, size=None, source_volid=from_snap["id"])
    assert clone["status"] == "available" and clone["size"] == 2
    # A volume with snapshots goes only with cascade.
    refused = await demo.delete(f"{base}/volumes/{from_image['id']}")
    assert refused.status_code == 400
    assert (await demo.delete(f"{base}/volumes/{from_image['id']}?cascade=true")).status_code == 202
    assert (await demo.get(f"{base}/snapshots/{snap_id}")).status_code == 404


async def test_failed_create_ends_in_error_with_a_message(demo: httpx.AsyncClient,
                                                          tmp_path: Path) -> None:
    """An image whose virtual size (2 GiB) is larger than the volume (1 GiB):
    the backend refuses, the volume is ``error`` and the project's messages
    (3.3) say why."""
    base = await volume_url(demo)
    qcow = tmp_path / "big.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(qcow), "2G"], check=True)
    image = await upload_image(demo, name="big", data=qcow.read_bytes())
    vol = await create_volume(demo, size=1, imageRef=image)
    assert vol["status"] == "error"
    msgs = (await demo.get(f"{base}/messages", headers={"OpenStack-API-Version": "volume 3.3"}))
    found = [m for m in msgs.json()["messages"] if m["resource_uuid"] == vol["id"]]
    assert found and "does not fit" in found[0]["user_message"]
    assert (await demo.get(f"{base}/messages")).status_code == 404  # before 3.3
    assert (await demo.delete(f"{base}/volumes/{vol['id']}")).status_code == 202


async def test_an_image_without_data_is_refused(demo: httpx.AsyncClient) -> None:
    queued = (await demo.post("/image/v2/images", json={"name": "q", "disk_format": "raw",
                                                         "container_format": "bare"})).json()
    failed = await create_volume(demo, size=1, imageRef=queued["id"], expect=400)
    assert "not active" in failed["badRequest"]["message"]


async def test_extend_metadata_bootable_readonly(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    vol = await create_volume(demo, size=1)
    assert (await action(demo, vol["id"], "os-extend", {"new_size": 3})).status_code == 202
    assert (await show(demo, "volumes", vol["id"]))["size"] == 3
    shrink = await action(demo, vol["id"], "os-extend", {"new_size": 2})
    assert shrink.status_code == 400
    resp = await demo.post(f"{base}/volumes/{vol['id']}/metadata", json={"metadata": {"a": "1"}})
    assert resp.json()["metadata"] == {"a": "1"}
    resp = await demo.put(f"{base}/volumes/{vol['id']}/metadata/b", json={"meta": {"b": "2"}})
    assert resp.status_code == 200
    got = await demo.get(f"{base}/volumes/{vol['id']}/metadata")
    assert got.json()["metadata"] == {"a": "1", "b": "2"}
    assert (await demo.delete(f"{base}/volumes/{vol['id']}/metadata/a")).status_code == 200
    assert (await demo.delete(f"{base}/volumes/{vol['id']}/metadata/a")).status_code == 404
    assert (await action(demo, vol["id"], "os-set_bootable", {"bootable": True})).status_code == 200
    assert (await show(demo, "volumes", vol["id"]))["bootable"] == "true"
    ro = await action(demo, vol["id"], "os-update_readonly_flag", {"readonly": True})
    assert ro.status_code == 202


async def test_volume_types_admin(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    abase, dbase = await volume_url(admin), await volume_url(demo)
    resp = await admin.post(f"{abase}/types", json={"volume_type": {
        "name": "fast", "extra_specs": {"volume_backend_name": "file"}}})
    assert resp.status_code == 200, resp.text
    vtype = resp.json()["volume_type"]
    assert vtype["os-volume-type-access:is_public"] is True
    assert (await demo.post(f"{dbase}/types", json={"volume_type": {"name": "x"}})).status_code == 403
    dup = await admin.post(f"{abase}/types", json={"volume_type": {"name": "fast"}})
    assert dup.status_code == 409
    specs = await admin.put(f"{abase}/types/{vtype['id']}/extra_specs/k", json={"k": "v"})
    assert specs.status_code == 200
    got = await admin.get(f"{abase}/types/{vtype['id']}/extra_specs")
    assert got.json()["extra_specs"] == {"volume_backend_name": "file", "k": "v"}
    vol = await create_volume(demo, volume_type="fast")
    assert vol["volume_type"] == "fast"
    in_use = await admin.delete(f"{abase}/types/{vtype['id']}")
    assert in_use.status_code == 400
    other = await admin.post(f"{abase}/types", json={"volume_type": {"name": "slow"}})
    retype = await action(demo, vol["id"], "os-retype", {"new_type": "slow"})
    assert retype.status_code == 202 and other.status_code == 200
    assert (await show(demo, "volumes", vol["id"]))["volume_type"] == "slow"
    assert (await admin.delete(f"{abase}/types/{vtype['id']}")).status_code == 202
    private = (await admin.post(f"{abase}/types", json={"volume_type": {
        "name": "hidden", "os-volume-type-access:is_public": False}})).json()["volume_type"]
    names = {t["name"] for t in (await demo.get(f"{dbase}/types")).json()["volume_types"]}
    assert "hidden" not in names and "slow" in names
    project = dbase.rsplit("/", 1)[1]
    grant = await admin.post(f"{abase}/types/{private['id']}/action",
                             json={"addProjectAccess": {"project": project}})
    assert grant.status_code == 202
    names = {t["name"] for t in (await demo.get(f"{dbase}/types")).json()["volume_types"]}
    assert "hidden" in names


async def test_snapshot_update_metadata_delete(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    vol = await create_volume(demo)
    snap = (await demo.post(f"{base}/snapshots", json={"snapshot": {
        "volume_id": vol["id"], "metadata": {"a": "b"}}})).json()["snapshot"]
    resp = await demo.put(f"{base}/snapshots/{snap['id']}", json={"snapshot": {"name": "n"}})
    assert resp.status_code == 200 and resp.json()["snapshot"]["name"] == "n"
    meta = await demo.put(f"{base}/snapshots/{snap['id']}/metadata", json={"metadata": {"c": "d"}})
    assert meta.json()["metadata"] == {"c": "d"}
    listed = (await demo.get(f"{base}/snapshots/detail")).json()["snapshots"]
    assert listed[0]["os-extended-snapshot-attributes:progress"] == "100%"
    assert (await demo.delete(f"{base}/snapshots/{snap['id']}")).status_code == 202
    assert (await demo.get(f"{base}/snapshots/{snap['id']}")).status_code == 404
    assert (await demo.delete(f"{base}/volumes/{vol['id']}")).status_code == 202


async def test_quotas_limits_zones_services_extensions(admin: httpx.AsyncClient,
                                                       demo: httpx.AsyncClient) -> None:
    abase, dbase = await volume_url(admin), await volume_url(demo)
    project = dbase.rsplit("/", 1)[1]
    await create_volume(demo, size=2)
    usage = (await demo.get(f"{dbase}/os-quota-sets/{project}?usage=true")).json()["quota_set"]
    assert usage["volumes"]["in_use"] == 1 and usage["gigabytes"]["in_use"] == 2
    assert usage["volumes___DEFAULT__"]["in_use"] == 1
    resp = await admin.put(f"{abase}/os-quota-sets/{project}", json={"quota_set": {"volumes": 5}})
    assert resp.status_code == 200 and resp.json()["quota_set"]["volumes"] == 5
    below = await admin.put(f"{abase}/os-quota-sets/{project}", json={"quota_set": {"volumes": 0}})
    assert below.status_code == 400
    assert (await demo.put(f"{dbase}/os-quota-sets/{project}",
                           json={"quota_set": {"volumes": 5}})).status_code == 403
    limits = (await demo.get(f"{dbase}/limits")).json()["limits"]["absolute"]
    assert limits["maxTotalVolumes"] == 5 and limits["totalVolumesUsed"] == 1
    assert (await admin.delete(f"{abase}/os-quota-sets/{project}")).status_code == 200
    defaults = (await demo.get(f"{dbase}/os-quota-sets/{project}/defaults")).json()["quota_set"]
    assert defaults["volumes"] == 10
    zones = (await demo.get(f"{dbase}/os-availability-zone")).json()["availabilityZoneInfo"]
    assert zones[0]["zoneState"]["available"] is True
    services = (await admin.get(f"{abase}/os-services")).json()["services"]
    assert [s["binary"] for s in services] == ["cinder-scheduler", "cinder-volume"]
    assert {s["state"] for s in services} == {"up"}
    assert (await demo.get(f"{dbase}/os-services")).status_code == 403
    assert (await demo.get(f"{dbase}/extensions")).json()["extensions"]
    nova = (await admin.get("/compute/v2.1/os-services")).json()["services"]
    assert all(not s["binary"].startswith("cinder") for s in nova)


async def test_admin_views(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    """os-services filters and updates, os-hosts, pools, capabilities, quota classes."""
    abase, dbase = await volume_url(admin), await volume_url(demo)
    by_host = (await admin.get(f"{abase}/os-services?host=cirrus")).json()["services"]
    assert sorted(s["binary"] for s in by_host) == ["cinder-scheduler", "cinder-volume"]
    volume_host = next(s["host"] for s in by_host if s["binary"] == "cinder-volume")
    assert volume_host == "cirrus@file"
    off = await admin.put(f"{abase}/os-services/disable-log-reason", json={
        "host": volume_host, "binary": "cinder-volume", "disabled_reason": "maintenance"})
    assert off.status_code == 200 and off.json()["disabled"] is True
    no_reason = await admin.put(f"{abase}/os-services/disable-log-reason", json={
        "host": volume_host, "binary": "cinder-volume", "disabled_reason": None})
    assert no_reason.status_code == 400
    assert (await admin.put(f"{abase}/os-services/enable", json={
        "host": "nowhere", "binary": "cinder-volume"})).status_code == 404
    assert (await admin.put(f"{abase}/os-services/freeze", json={"host": "nowhere"})).status_code == 400
    hosts = (await admin.get(f"{abase}/os-hosts")).json()["hosts"]
    assert len(hosts) == 2
    shown = (await admin.get(f"{abase}/os-hosts/{volume_host}")).json()["host"]
    assert shown[0]["resource"]["project"] == "(total)"
    pools = (await admin.get(f"{abase}/scheduler-stats/get_pools?detail=true")).json()["pools"]
    assert pools[0]["name"] == "cirrus@file#file"
    assert pools[0]["capabilities"]["storage_protocol"] == "local"
    caps = (await admin.get(f"{abase}/capabilities/{volume_host}")).json()
    assert caps["volume_backend_name"] == "file"
    assert (await demo.get(f"{dbase}/scheduler-stats/get_pools")).status_code == 403
    update = await admin.put(f"{abase}/os-quota-class-sets/default",
                             json={"quota_class_set": {"volumes": 7}})
    assert update.status_code == 200 and update.json()["quota_class_set"]["volumes"] == 7
    project = dbase.rsplit("/", 1)[1]
    defaults = (await demo.get(f"{dbase}/os-quota-sets/{project}/defaults")).json()["quota_set"]
    assert defaults["volumes"] == 7


async def test_a_type_no_backend_offers_ends_in_error(admin: httpx.AsyncClient,
                                                     demo: httpx.AsyncClient) -> None:
    abase, dbase = await volume_url(admin), await volume_url(demo)
    vtype = (await admin.post(f"{abase}/types", json={"volume_type": {
        "name": "fc", "extra_specs": {"storage_protocol": "FC"}}})).json()["volume_type"]
    vol = await create_volume(demo, volume_type=vtype["id"])
    assert vol["status"] == "error"
    msgs = (await demo.get(f"{dbase}/messages", headers={"OpenStack-API-Version": "volume 3.3"}))
    assert "No valid backend" in msgs.json()["messages"][0]["user_message"]


async def test_summary_image_metadata_readonly(demo: httpx.AsyncClient) -> None:
    base = await volume_url(demo)
    vol = await create_volume(demo, size=2, metadata={"a": "1"})
    summary = await demo.get(f"{base}/volumes/summary",
                             headers={"OpenStack-API-Version": "volume 3.36"})
    assert summary.json()["volume-summary"] == {"total_count": 1, "total_size": 2,
                                                "metadata": {"a": ["1"]}}
    assert (await demo.get(f"{base}/volumes/summary")).status_code == 404  # before 3.12
    set_ = await action(demo, vol["id"], "os-set_image_metadata", {"metadata": {"k": "v"}})
    assert set_.status_code == 200 and set_.json()["metadata"] == {"k": "v"}
    assert (await action(demo, vol["id"], "os-unset_image_metadata", {"key": "k"})).status_code == 200
    assert (await action(demo, vol["id"], "os-unset_image_metadata", {"key": "k"})).status_code == 404
    await action(demo, vol["id"], "os-update_readonly_flag", {"readonly": True})
    assert (await show(demo, "volumes", vol["id"]))["metadata"] == {"a": "1", "readonly": "True"}
    assert (await demo.get(f"{base}/volumes/")).status_code == 404
    assert (await demo.get(f"{base}/volumes?marker={vol['id'][::-1]}")).status_code == 404


async def test_transfer_moves_a_volume_between_projects(tenants: Any) -> None:
    member, other = tenants.clients["member"], tenants.clients["other"]
    mbase, obase = await volume_url(member), await volume_url(other)
    vol = await create_volume(member, size=1)
    resp = await member.post(f"{mbase}/os-volume-transfer", json={"transfer": {
        "volume_id": vol["id"], "name": "gift"}})
    assert resp.status_code == 202, resp.text
    transfer = resp.json()["transfer"]
    assert (await show(member, "volumes", vol["id"]))["status"] == "awaiting-transfer"
    listed = (await member.get(f"{mbase}/os-volume-transfer/detail")).json()["transfers"]
    assert [t["id"] for t in listed] == [transfer["id"]] and "auth_key" not in listed[0]
    wrong = await other.post(f"{obase}/os-volume-transfer/{transfer['id']}/accept",
                             json={"accept": {"auth_key": "0" * 16}})
    assert wrong.status_code == 400
    ok = await other.post(f"{obase}/os-volume-transfer/{transfer['id']}/accept",
                          json={"accept": {"auth_key": transfer["auth_key"]}})
    assert ok.status_code == 202, ok.text
    assert (await member.get(f"{mbase}/volumes/{vol['id']}")).status_code == 404
    assert (await show(other, "volumes", vol["id"]))["status"] == "available"
    # Cancelled transfers give the volume back.
    vol2 = await create_volume(member, size=1)
    t2 = (await member.post(f"{mbase}/volume-transfers", headers={
        "OpenStack-API-Version": "volume 3.57"}, json={"transfer": {
            "volume_id": vol2["id"]}})).json()["transfer"]
    assert t2["accepted"] is False and t2["no_snapshots"] is False
    assert (await member.delete(f"{mbase}/os-volume-transfer/{t2['id']}")).status_code == 202
    assert (await show(member, "volumes", vol2["id"]))["status"] == "available"


@pytest.mark.parametrize("disk_format", ["raw", "qcow2"])
async def test_upload_to_image_copies_the_data(cloud: Any, demo: httpx.AsyncClient,
                                               disk_format: str) -> None:
    image = await upload_image(demo, name="src", data=b"volume-marker" + bytes(4083))
    vol = await create_volume(demo, size=1, imageRef=image)
    resp = await action(demo, vol["id"], "os-volume_upload_image", {
        "image_name": "from-volume", "disk_format": disk_format})
    assert resp.status_code == 202, resp.text
    new = resp.json()["os-volume_upload_image"]["image_id"]
    shown = (await demo.get(f"/image/v2/images/{new}")).json()
    assert shown["status"] == "active" and shown["disk_format"] == disk_format
    assert (await show(demo, "volumes", vol["id"]))["status"] == "available"
    if disk_format == "raw":
        assert shown["size"] == 1 << 30
        with open(cloud.settings.state_dir / "images" / new, "rb") as fh:
            assert fh.read(13) == b"volume-marker"
    bad = await action(demo, vol["id"], "os-volume_upload_image", {
        "image_name": "x", "disk_format": "vmdk"})
    assert bad.status_code == 400


async def test_qos_specs(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    base = await volume_url(admin)
    resp = await admin.post(f"{base}/qos-specs", json={"qos_specs": {
        "name": "gold", "consumer": "front-end", "read_iops_sec": "100"}})
    assert resp.status_code == 200, resp.text
    qos = resp.json()["qos_specs"]
    assert qos["specs"] == {"read_iops_sec": "100"}
    assert (await admin.post(f"{base}/qos-specs", json={"qos_specs": {"name": "gold"}})).status_code == 409
    assert (await demo.get(f"{await volume_url(demo)}/qos-specs")).status_code == 403
    put = await admin.put(f"{base}/qos-specs/{qos['id']}", json={"qos_specs": {"iops": "5"}})
    assert put.json() == {"qos_specs": {"iops": "5"}}
    assert (await admin.put(f"{base}/qos-specs/{qos['id']}/delete_keys",
                            json={"keys": ["read_iops_sec"]})).status_code == 202
    shown = (await admin.get(f"{base}/qos-specs/{qos['id']}")).json()["qos_specs"]
    assert shown["specs"] == {"iops": "5"}
    vtype = (await admin.post(f"{base}/types", json={"volume_type": {"name": "q"}})).json()
    tid = vtype["volume_type"]["id"]
    assert (await admin.get(f"{base}/qos-specs/{qos['id']}/associate?vol_type_id={tid}")).status_code == 202
    assocs = (await admin.get(f"{base}/qos-specs/{qos['id']}/associations")).json()
    assert assocs["qos_associations"] == [{"association_type": "volume_type", "id": tid, "name": "q"}]
    assert (await admin.delete(f"{base}/qos-specs/{qos['id']}")).status_code == 400  # in use
    assert (await admin.get(f"{base}/qos-specs/{qos['id']}/disassociate_all")).status_code == 202
    assert (await admin.delete(f"{base}/qos-specs/{qos['id']}")).status_code == 202
    assert (await admin.get(f"{base}/qos-specs/{qos['id']}")).status_code == 404


async def test_group_types(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    base, v311 = await volume_url(admin), {"OpenStack-API-Version": "volume 3.11"}
    assert (await admin.get(f"{base}/group_types")).status_code == 404  # before 3.11
    resp = await admin.post(f"{base}/group_types", headers=v311, json={"group_type": {
        "name": "g", "description": "d", "group_specs": {"a": "1"}}})
    assert resp.status_code == 202, resp.text
    gid = resp.json()["group_type"]["id"]
    await admin.post(f"{base}/group_types", headers=v311, json={"group_type": {
        "name": "private", "is_public": False}})
    dbase = await volume_url(demo)
    names = [g["name"] for g in (await demo.get(f"{dbase}/group_types", headers=v311)).json()[
        "group_types"]]
    assert names == ["g"]
    upd = await admin.put(f"{base}/group_types/{gid}", headers=v311,
                          json={"group_type": {"name": "g2"}})
    assert upd.json()["group_type"]["name"] == "g2"
    spec = await admin.put(f"{base}/group_types/{gid}/group_specs/b", headers=v311, json={"b": "2"})
    assert spec.json() == {"b": "2"}
    got = await admin.get(f"{base}/group_types/{gid}/group_specs", headers=v311)
    assert got.json()["group_specs"] == {"a": "1", "b": "2"}
    assert (await admin.delete(f"{base}/group_types/{gid}/group_specs/a",
                               headers=v311)).status_code == 202
    assert (await admin.get(f"{base}/group_types/{gid}/group_specs/a",
                            headers=v311)).status_code == 404
    assert (await admin.delete(f"{base}/group_types/{gid}", headers=v311)).status_code == 202
    assert (await admin.get(f"{base}/group_types/{gid}", headers=v311)).status_code == 404
