"""The ``openstack`` CLI and openstacksdk on the block storage API: volumes,
types and snapshots as a user and an admin drive them."""
from __future__ import annotations

import time
import uuid

from tests.client.conftest import RunningCloud
from tests.client.test_sdk_and_novaclient import connect


def _wait_status(running: RunningCloud, kind: str, name: str, status: str) -> dict:
    deadline = time.monotonic() + 60
    while True:
        shown = running.openstack(*kind.split(), "show", name, "-f", "json")
        if shown["status"] == status:
            return shown
        assert time.monotonic() < deadline, f"{kind} {name} stuck in {shown['status']}"
        time.sleep(0.2)


def test_volume_lifecycle_with_the_cli(running: RunningCloud) -> None:
    name = f"cli-vol-{uuid.uuid4().hex[:6]}"
    created = running.openstack("volume", "create", "--size", "1", name, "-f", "json")
    assert created["size"] == 1
    _wait_status(running, "volume", name, "available")
    listed = running.openstack("volume", "list", "-f", "json")
    assert name in [v["Name"] for v in listed]
    snap = f"{name}-snap"
    running.openstack("volume", "snapshot", "create", "--volume", name, snap, "-f", "json")
    _wait_status(running, "volume snapshot", snap, "available")
    running.openstack("volume", "set", "--size", "2", "--property", "k=v", name)
    shown = running.openstack("volume", "show", name, "-f", "json")
    assert shown["size"] == 2 and shown["properties"] in ({"k": "v"}, "k='v'")
    running.openstack("volume", "snapshot", "delete", snap)
    running.openstack("volume", "delete", name)
    assert name not in [v["Name"] for v in running.openstack("volume", "list", "-f", "json")]


def test_volume_type_create_with_the_cli(running: RunningCloud) -> None:
    name = f"cli-type-{uuid.uuid4().hex[:6]}"
    running.openstack("volume", "type", "create", "--property", "tier=gold", name,
                      "-f", "json", cloud="cirrus-admin")
    shown = running.openstack("volume", "type", "show", name, "-f", "json", cloud="cirrus-admin")
    assert shown["name"] == name
    refused = running.openstack("volume", "type", "create", "x" + name, check=False)
    assert refused.returncode != 0  # a member may not create types
    vol = running.openstack("volume", "create", "--size", "1", "--type", name, f"{name}-v",
                            "-f", "json")
    assert vol["type"] == name
    running.openstack("volume", "delete", f"{name}-v")


def test_volumes_with_the_sdk(running: RunningCloud) -> None:
    conn = connect(running)
    vol = conn.block_storage.create_volume(size=1, name=f"sdk-{uuid.uuid4().hex[:6]}")
    vol = conn.block_storage.wait_for_status(vol, "available", wait=60)
    assert vol.size == 1
    assert vol.id in [v.id for v in conn.block_storage.volumes()]
    conn.block_storage.delete_volume(vol)
    conn.block_storage.wait_for_delete(vol, wait=60)
