"""Real guests through the ``openstack`` CLI: rebuild, a snapshot that boots,
shelve (offloaded) and unshelve — each time the guest's console shows the
root disk's marker, so the disk (and for shelve, its contents) came back."""
from __future__ import annotations

import re

import pytest

from tests.realvm.conftest import MARKER, RealCloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]
DISK_LINE = "cirrus-tiny: root disk vda: cirrus tiny root disk"


def _boot(cloud: RealCloud, name: str, image: str) -> dict:
    return cloud.openstack("server", "create", "--flavor", "rv.tiny", "--image", image,
                           "--network", "rv-net", "--wait", name, "-f", "json", timeout=300)


def test_rebuild_snapshot_shelve_unshelve(real_cloud: RealCloud) -> None:
    server = _boot(real_cloud, "rv-img", "cirrus-tiny")
    real_cloud.wait_console("rv-img", re.escape(MARKER))
    fixed = real_cloud.openstack("port", "list", "--server", server["id"], "-f", "json")

    real_cloud.openstack("server", "rebuild", "--image", "cirrus-tiny", "--wait", "rv-img",
                         timeout=300)
    assert DISK_LINE in real_cloud.wait_console("rv-img", re.escape(MARKER))

    real_cloud.openstack("server", "image", "create", "--name", "rv-snap", "--wait", "rv-img",
                         timeout=300)
    snap = real_cloud.openstack("image", "show", "rv-snap", "-f", "json")
    assert snap["status"] == "active" and snap["disk_format"] == "qcow2"
    _boot(real_cloud, "rv-from-snap", "rv-snap")
    assert DISK_LINE in real_cloud.wait_console("rv-from-snap", re.escape(MARKER))
    real_cloud.openstack("server", "delete", "--wait", "rv-from-snap", timeout=180)

    real_cloud.openstack("server", "shelve", "rv-img")
    real_cloud.wait_status("rv-img", "SHELVED_OFFLOADED", timeout=300)
    assert not (real_cloud.state_dir / "instances" / server["id"]).exists()
    real_cloud.openstack("server", "unshelve", "rv-img")
    real_cloud.wait_status("rv-img", "ACTIVE", timeout=300)
    assert DISK_LINE in real_cloud.wait_console("rv-img", re.escape(MARKER))
    # The same port (and address) came back.
    assert real_cloud.openstack("port", "list", "--server", server["id"], "-f", "json") == fixed
    real_cloud.openstack("server", "delete", "--wait", "rv-img", timeout=180)
