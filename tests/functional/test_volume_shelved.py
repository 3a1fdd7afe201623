"""Attaching and detaching a volume of a shelved-offloaded server (Nova's
``_attach_volume_shelved_offloaded``): recorded without a host, plugged at
unshelve; a detach releases it at once. With the fake block storage."""
from __future__ import annotations

import httpx
import pytest

from cirrus.bootstrap import Cloud
from tests.fakes_volume import FakeVolumes, VolumeBackendError
from tests.functional.actions import last_action
from tests.functional.servers import active_server, wait_for_status
from tests.functional.fake_block_storage import (SERVERS, attachments, cloud_options,  # noqa: F401
                                                 guest_volumes, project_of, settings_overrides,
                                                 volumes)


@pytest.fixture
async def offloaded(demo: httpx.AsyncClient) -> str:
    server = await active_server(demo)
    assert (await demo.post(f"{SERVERS}/{server}/action", json={"shelve": None})).status_code == 202
    await wait_for_status(demo, server, {"SHELVED_OFFLOADED"})
    return server


@pytest.fixture
async def volume(demo: httpx.AsyncClient, volumes: FakeVolumes) -> str:
    return volumes.add_volume(await project_of(demo), size=1)


async def _attach(client: httpx.AsyncClient, server: str, volume: str) -> httpx.Response:
    return await client.post(f"{SERVERS}/{server}/os-volume_attachments",
                             json={"volumeAttachment": {"volumeId": volume}})


async def test_attach_to_an_offloaded_server_is_plugged_at_unshelve(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, offloaded: str,
        volume: str) -> None:
    resp = await _attach(demo, offloaded, volume)
    assert resp.status_code == 200, resp.text
    # Recorded at once, in the API: in use, no host, nothing exported yet.
    assert volumes.status(volume) == "in-use"
    assert not [c for c in volumes.calls if c[0] == "attachment_update"]
    [view] = await attachments(demo, offloaded)
    assert (view["volumeId"], view["device"]) == (volume, "/dev/vdb")
    assert (await last_action(demo, offloaded))["action"] == "attach_volume"

    assert (await demo.post(f"{SERVERS}/{offloaded}/action",
                            json={"unshelve": None})).status_code == 202
    await wait_for_status(demo, offloaded, {"ACTIVE"})
    assert set(guest_volumes(cloud, offloaded)) == {"/dev/vdb"}
    [ref] = volumes.volumes[volume]["attachments"]
    assert ref["host_name"] and volumes.status(volume) == "in-use"


async def test_detach_from_an_offloaded_server_releases_it_at_once(
        demo: httpx.AsyncClient, volumes: FakeVolumes, offloaded: str, volume: str) -> None:
    assert (await _attach(demo, offloaded, volume)).status_code == 200
    resp = await demo.delete(f"{SERVERS}/{offloaded}/os-volume_attachments/{volume}")
    assert resp.status_code == 202, resp.text
    assert volumes.status(volume) == "available" and not volumes.attachments
    assert await attachments(demo, offloaded) == []
    assert (await last_action(demo, offloaded))["action"] == "detach_volume"


async def test_detach_deletes_a_volume_to_be_deleted_with_the_server(
        demo: httpx.AsyncClient, volumes: FakeVolumes, offloaded: str, volume: str) -> None:
    resp = await demo.post(f"{SERVERS}/{offloaded}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": volume,
                                                      "delete_on_termination": True}},
                           headers={"OpenStack-API-Version": "compute 2.79"})
    assert resp.status_code == 200, resp.text
    resp = await demo.delete(f"{SERVERS}/{offloaded}/os-volume_attachments/{volume}")
    assert resp.status_code == 202, resp.text
    assert volume not in volumes.volumes


async def test_a_failed_completion_leaves_the_volume_available(
        demo: httpx.AsyncClient, volumes: FakeVolumes, offloaded: str, volume: str) -> None:
    volumes.faults["attachment_complete"].append(VolumeBackendError(reason="down"))
    resp = await _attach(demo, offloaded, volume)
    assert resp.status_code == 500, resp.text  # the backend's error, passed on
    assert volumes.status(volume) == "available" and not volumes.attachments
    assert await attachments(demo, offloaded) == []
