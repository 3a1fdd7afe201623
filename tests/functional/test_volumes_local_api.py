"""LocalVolumeAPI: compute's VolumeAPI protocol answered in process, against
the real service and file backend (what the compute side is written to)."""
from __future__ import annotations

import uuid

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.context import RequestContext
from cirrus.exception import CirrusException
from cirrus.volume.local_api import LocalVolumeAPI
from tests.functional.servers import upload_image
from tests.functional.volumes import volume_url


async def _ctx(demo: httpx.AsyncClient) -> RequestContext:
    project = (await volume_url(demo)).rsplit("/", 1)[1]
    return RequestContext(user_id="u", project_id=project, roles=["member"])


async def test_nova_attach_cycle(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    api = LocalVolumeAPI(cloud.state["volume"])
    ctx = await _ctx(demo)
    image = await upload_image(demo, data=b"boot" + bytes(1020))
    vol = await api.create(ctx, 1, "root", "", image_id=image)
    assert vol["status"] == "available" and vol["bootable"]
    assert vol["volume_image_metadata"]["image_id"] == image
    instance = str(uuid.uuid4())
    att = await api.attachment_create(ctx, vol["id"], instance,
                                      connector={"host": "compute1"}, mountpoint="/dev/vda")
    info = att["connection_info"]
    assert att["status"] == "attaching" and info is not None
    assert info["driver_volume_type"] == "local" and info["data"]["format"] == "raw"
    with open(info["data"]["device_path"], "rb") as fh:
        assert fh.read(4) == b"boot"
    await api.attachment_complete(ctx, att["id"])
    got = await api.get(ctx, vol["id"])
    assert got["status"] == "in-use" and got["attachments"][0]["server_id"] == instance
    snap = await api.create_snapshot_force(ctx, vol["id"], "s", "")
    assert (await api.get_snapshot(ctx, snap["id"]))["status"] == "available"
    # A single-attach volume in use: a second instance is refused (400).
    with pytest.raises(CirrusException) as refused:
        await api.attachment_create(ctx, vol["id"], str(uuid.uuid4()))
    assert refused.value.code == 400
    await api.attachment_delete(ctx, att["id"])
    assert (await api.get(ctx, vol["id"]))["status"] == "available"
    await api.delete_snapshot(ctx, snap["id"])
    await api.delete(ctx, vol["id"])
    with pytest.raises(CirrusException) as gone:
        await api.get(ctx, vol["id"])
    assert gone.value.code == 404


async def test_errors_carry_cinders_codes(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    api = LocalVolumeAPI(cloud.state["volume"])
    ctx = await _ctx(demo)
    other = RequestContext(user_id="x", project_id="p" * 32, roles=["member"])
    vol = await api.create(ctx, 1, "v", "")
    for call, code in ((api.get(other, vol["id"]), 404),
                       (api.create(ctx, 100000, "big", ""), 413),
                       (api.create(ctx, 1, "t", "", volume_type="nope"), 404),
                       (api.attachment_complete(ctx, str(uuid.uuid4())), 404)):
        with pytest.raises(CirrusException) as err:
            await call
        assert err.value.code == code
