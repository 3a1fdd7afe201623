"""Block storage with real guests (issue 20): a volume hot-plugged into a
running guest, written there, unplugged, and read by a second guest; a
server whose root disk is a volume made from the tiny image; what deleting a
server leaves of its volumes; a volume swapped under a running guest (its
data copied to the new one)."""
from __future__ import annotations

import re
import time
from typing import Any

import openstack
import pytest

from tests.realvm.conftest import MARKER, RealCloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]

DATA_MARK = "CIRRUS-VOLUME-MARK-7f3a"
# Each guest waits for a second disk to appear, then writes the mark to it
# (the writer) or reads what is on it (the reader), and says so.
WRITER = f"""#!/bin/sh
while [ ! -b /dev/vdb ]; do sleep 1; done
echo "vdb appeared"
if echo {DATA_MARK} | dd of=/dev/vdb bs=512 count=1 conv=sync 2>/tmp/dd.err; then
  sync; echo "wrote mark"
else
  echo "write failed: $(cat /tmp/dd.err)"
fi
while true; do sleep 5; [ -b /dev/vdb ] || {{ echo "vdb gone"; break; }}; done
"""
READER = """#!/bin/sh
while [ ! -b /dev/vdb ]; do sleep 1; done
echo "read: $(dd if=/dev/vdb bs=512 count=1 2>/dev/null | head -n 1)"
"""


def _boot(cloud: RealCloud, name: str, user_data: str) -> dict[str, Any]:
    path = cloud.state_dir.parent / f"{name}-user-data.sh"
    path.write_text(user_data)
    return cloud.openstack("server", "create", "--flavor", "rv.tiny", "--image", "cirrus-tiny",
                           "--network", "rv-net", "--user-data", str(path), "--wait", name,
                           "-f", "json", timeout=300)


def _volume_status(cloud: RealCloud, volume: str, status: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    shown: dict[str, Any] = {}
    while time.monotonic() < deadline:
        shown = cloud.openstack("volume", "show", volume, "-f", "json")
        if shown["status"] == status:
            return
        assert shown["status"] not in ("error", "error_deleting"), shown
        time.sleep(1)
    raise AssertionError(f"volume {volume} is {shown.get('status')}, not {status}")


def test_a_volume_carries_data_from_one_guest_to_another(real_cloud: RealCloud) -> None:
    c = real_cloud
    c.openstack("volume", "create", "--size", "1", "rv-data")
    _volume_status(c, "rv-data", "available")
    _boot(c, "rv-writer", WRITER)
    c.wait_console("rv-writer", re.escape(MARKER))
    c.openstack("server", "add", "volume", "rv-writer", "rv-data")
    _volume_status(c, "rv-data", "in-use")
    c.wait_console("rv-writer", "user-data: wrote mark", timeout=120)

    c.openstack("server", "remove", "volume", "rv-writer", "rv-data")
    _volume_status(c, "rv-data", "available")
    c.wait_console("rv-writer", "user-data: vdb gone", timeout=60)  # unplugged from the guest

    _boot(c, "rv-reader", READER)
    c.wait_console("rv-reader", re.escape(MARKER))
    c.openstack("server", "add", "volume", "rv-reader", "rv-data")
    console = c.wait_console("rv-reader", "user-data: read: ", timeout=120)
    assert f"user-data: read: {DATA_MARK}" in console, console

    # Deleting the server detaches what it did not create; the volume stays.
    c.openstack("server", "delete", "--wait", "rv-reader", timeout=180)
    _volume_status(c, "rv-data", "available")
    c.openstack("server", "delete", "--wait", "rv-writer", timeout=180)
    c.openstack("volume", "delete", "rv-data")


def test_a_guest_boots_from_a_volume_made_from_the_tiny_image(real_cloud: RealCloud) -> None:
    c = real_cloud
    image = c.openstack("image", "show", "cirrus-tiny", "-f", "json")
    server = c.openstack("server", "create", "--flavor", "rv.tiny", "--network", "rv-net",
                         "--block-device", f"source_type=image,uuid={image['id']},"
                         "destination_type=volume,volume_size=1,boot_index=0,"
                         "delete_on_termination=true", "--wait", "rv-bfv", "-f", "json",
                         timeout=400)
    assert server["status"] == "ACTIVE"
    console = c.wait_console("rv-bfv", re.escape(MARKER))
    assert "root disk vda: not found" not in console, console  # the volume is its root disk
    volumes = server["volumes_attached"]
    volume_id = volumes[0]["id"] if isinstance(volumes, list) else \
        re.search(r"[0-9a-f-]{36}", str(volumes)).group(0)
    _volume_status(c, volume_id, "in-use")
    c.openstack("server", "delete", "--wait", "rv-bfv", timeout=180)
    deadline = time.monotonic() + 60
    while c.openstack("volume", "show", volume_id, check=False).returncode == 0:
        assert time.monotonic() < deadline, "the boot volume outlived its server"
        time.sleep(1)


def _admin(cloud: RealCloud) -> openstack.connection.Connection:
    config = openstack.config.OpenStackConfig(config_files=[str(cloud.state_dir / "clouds.yaml")])
    return openstack.connection.Connection(config=config.get_one("cirrus-admin"))


def test_a_swap_moves_a_running_guests_data_to_the_new_volume(real_cloud: RealCloud) -> None:
    c = real_cloud
    old = c.openstack("volume", "create", "--size", "1", "rv-swap-old", "-f", "json")
    new = c.openstack("volume", "create", "--size", "1", "rv-swap-new", "-f", "json")
    _volume_status(c, old["id"], "available")
    _volume_status(c, new["id"], "available")
    server = _boot(c, "rv-swapper", WRITER)
    c.wait_console("rv-swapper", re.escape(MARKER))
    c.openstack("server", "add", "volume", "rv-swapper", old["id"])
    c.wait_console("rv-swapper", "user-data: wrote mark", timeout=120)

    # os-volume_attachments update with another volume: admins only (Nova's swap).
    done = _admin(c).compute.put(
        f"/servers/{server['id']}/os-volume_attachments/{old['id']}",
        json={"volumeAttachment": {"volumeId": new["id"]}}, microversion="2.1")
    assert done.status_code == 202, done.text
    _volume_status(c, new["id"], "in-use", timeout=300)
    _volume_status(c, old["id"], "available")
    # The guest's disk is now the new volume's file, and the mark came with it.
    assert (c.state_dir / "volumes" / new["id"]).read_bytes()[:len(DATA_MARK)] == \
        DATA_MARK.encode()
    attached = c.openstack("server", "volume", "list", "rv-swapper", "-f", "json")
    assert new["id"] in str(attached) and old["id"] not in str(attached), attached

    c.openstack("server", "remove", "volume", "rv-swapper", new["id"])
    c.wait_console("rv-swapper", "user-data: vdb gone", timeout=60)
    c.openstack("server", "delete", "--wait", "rv-swapper", timeout=180)
    c.openstack("volume", "delete", old["id"], new["id"])
