"""A volume served over NBD from the API host, used by real guests on two
other hosts (issue 20, the backend for many hosts).

Two ``scripts/hostns.sh`` hosts with their own libvirtd, as in
``test_two_hosts.py``; the cloud runs ``volume_backend = nbd`` with the
volumes' files on the API host and their exports at the underlay bridge's
address (the API host's side of the hosts' links), which the hosts' QEMU
reach over the network. A guest on one host gets the volume hot-plugged,
writes a marker to it with ``dd``, and gives it back; a guest on the other
host gets it and reads the marker. After the detach and the volume's
delete no ``qemu-storage-daemon`` is left.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.realvm.conftest import MARKER, TINY_CACHE
from tests.realvm.hostns import NamespaceHost
from tests.realvm.twohost import TwoHostCloud, two_host_cloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]
HOSTS = (NamespaceHost("cirrus-nb1", "198.51.100.31/24"),
         NamespaceHost("cirrus-nb2", "198.51.100.32/24"))
NAMES = ("nb1", "nb2")
EXPORT_ADDR = "198.51.100.1"  # the underlay bridge: the API host as the hosts see it
TEXT = "cirrus-nbd-marker-20"


def _watch(volume_id: str, action: str) -> str:
    """User data: once a disk with the volume's serial shows, ``action`` on it."""
    serial = volume_id[:20]
    return ("#!/bin/sh\nwhile true; do\n  for d in /sys/block/vd*; do\n"
            f"    if [ \"$(cat $d/serial 2>/dev/null)\" = \"{serial}\" ]; then\n"
            "      dev=/dev/${d##*/}; echo \"volume at $dev\"\n"
            f"      {action}\n      exit 0\n    fi\n  done\n  sleep 1\ndone\n")


WRITE = (f"printf '{TEXT}' | dd of=$dev bs=512 count=1 conv=sync,fsync 2>&1; sync; "
         "echo \"wrote $?\"")
READ = "echo \"read: $(head -c 20 $dev)\""


@pytest.fixture(scope="module")
def cloud(realvm_lock: None, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[TwoHostCloud]:
    state = tmp_path_factory.mktemp("nbd") / "state"
    state.mkdir()
    volumes = state / "volumes"
    shared = {"CIRRUS_VOLUME_BACKEND": "nbd", "CIRRUS_VOLUME_NBD_ADDRESS": EXPORT_ADDR,
              "CIRRUS_VOLUMES_PATH": str(volumes)}
    try:
        with two_host_cloud(HOSTS, NAMES, state, lambda s, h: {}, shared) as running:
            built = subprocess.run(["cirrus", "image", "build-tiny", "--os-cloud",
                                    "cirrus-admin", "--output", str(TINY_CACHE)],
                                   env=running.env, capture_output=True, text=True, timeout=600)
            assert built.returncode == 0, built.stderr
            running.openstack("flavor", "create", "--ram", "128", "--vcpus", "1", "--disk",
                              "1", "nb.tiny")
            yield running
    finally:
        _stop_daemons(volumes)


def _stop_daemons(volumes: Path) -> None:
    from cirrus.volume.backends.nbd import NbdDriver

    driver = NbdDriver(volumes, "raw", EXPORT_ADDR)
    for volume_id in driver.exported():
        driver.remove_export(volume_id)


def _daemons(volume_id: str) -> list[str]:
    # -ww: piped, ps would cut each line at 80 columns, before the export name
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if line.startswith("qemu-storage-daemon") and f"volume-{volume_id}" in line]


def _boot(cloud: TwoHostCloud, name: str, host: str, user_data: str) -> dict[str, Any]:
    path = cloud.state_dir.parent / f"{name}.sh"
    path.write_text(user_data)
    server = cloud.openstack("--os-compute-api-version", "2.37", "server", "create",
                             "--flavor", "nb.tiny", "--image", "cirrus-tiny", "--nic", "none",
                             "--config-drive", "True", "--availability-zone", f"nova:{host}", "--user-data", str(path),
                             "--wait", name, "-f", "json", timeout=300)
    assert server["status"] == "ACTIVE"
    cloud.wait_console(name, re.escape(MARKER), timeout=300)
    return dict(server)


def _volume_status(cloud: TwoHostCloud, volume_id: str, status: str) -> None:
    cloud.wait(f"volume {status}", lambda: cloud.openstack(
        "volume", "show", volume_id, "-f", "json")["status"] == status, timeout=120)


def test_a_volume_written_on_one_host_is_read_on_the_other(cloud: TwoHostCloud) -> None:
    volume = cloud.openstack("volume", "create", "--size", "1", "nb-vol", "-f", "json")
    _volume_status(cloud, volume["id"], "available")
    _boot(cloud, "nb-writer", "nb1", _watch(volume["id"], WRITE))
    _boot(cloud, "nb-reader", "nb2", _watch(volume["id"], READ))

    # /dev/vdc: the config drive holds vdb, and the API's next free name
    # does not know it (it counts the mappings only).
    cloud.openstack("server", "add", "volume", "--device", "/dev/vdc", "nb-writer",
                    volume["id"])
    _volume_status(cloud, volume["id"], "in-use")
    shown = cloud.openstack("volume", "show", volume["id"], "-f", "json")
    assert shown["attachments"][0]["host_name"] == "nb1"
    assert len(_daemons(volume["id"])) == 1  # served from this (the API) host
    console = cloud.wait_console("nb-writer", r"user-data: wrote \d+", timeout=180)
    assert "user-data: wrote 0" in console, console[-2000:]

    cloud.openstack("server", "remove", "volume", "nb-writer", volume["id"])
    _volume_status(cloud, volume["id"], "available")
    cloud.wait("the export stopped", lambda: not _daemons(volume["id"]), timeout=30)

    cloud.openstack("server", "add", "volume", "--device", "/dev/vdc", "nb-reader",
                    volume["id"])
    _volume_status(cloud, volume["id"], "in-use")
    console = cloud.wait_console("nb-reader", r"user-data: read: ", timeout=180)
    assert f"user-data: read: {TEXT}" in console, console[-2000:]

    cloud.openstack("server", "remove", "volume", "nb-reader", volume["id"])
    _volume_status(cloud, volume["id"], "available")
    cloud.openstack("volume", "delete", volume["id"])
    cloud.wait("no daemon left", lambda: not _daemons(volume["id"]), timeout=30)
    for server in ("nb-writer", "nb-reader"):
        cloud.openstack("server", "delete", "--wait", server, timeout=180)
