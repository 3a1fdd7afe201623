"""The nbd backend with real ``qemu-storage-daemon`` processes: exports,
their data, their supervision, and what is left after each failure."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from cirrus.volume.backends import qsd
from cirrus.volume.backends.nbd import NbdDriver, export_name
from cirrus.volume.exception import BackendError
from cirrus.volume.exports import sync

pytestmark = pytest.mark.skipif(shutil.which("qemu-storage-daemon") is None,
                                reason="qemu-storage-daemon is not installed "
                                       "(scripts/setup-libvirt.sh installs it)")
ADDR = "127.0.0.1"
CONNECTOR = {"host": "compute-1", "ip": ADDR}


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[NbdDriver]:
    d = NbdDriver(tmp_path / "volumes", "raw", ADDR)
    yield d
    for volume_id in d.exported():  # no daemon outlives its test
        d.remove_export(volume_id)


def qemu_io(url: str, command: str) -> str:
    return subprocess.run(["qemu-io", "-f", "raw", "-c", command, url], check=True,
                          capture_output=True, text=True).stdout


def url(info: dict) -> str:
    data = info["data"]
    return f"nbd://{data['host']}:{data['port']}/{data['name']}"


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return
        time.sleep(0.05)


async def test_an_attached_volume_is_served_and_its_writes_reach_the_file(
        driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    info = driver.initialize_connection("v1", CONNECTOR, "rw")
    assert info["driver_volume_type"] == "nbd"
    assert info["data"]["host"] == ADDR and info["data"]["name"] == export_name("v1")
    assert info["data"]["access_mode"] == "rw"
    assert "wrote 65536/65536" in qemu_io(url(info), "write -P 0x5a 4096 64k")
    driver.terminate_connection("v1", CONNECTOR)
    assert driver.running("v1") is None and driver.exported() == []
    with open(driver.path("v1"), "rb") as f:
        f.seek(4096)
        assert f.read(65536) == b"\x5a" * 65536


async def test_every_attachment_shares_the_one_export(driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    first = driver.initialize_connection("v1", CONNECTOR, "rw")
    pid = driver.running("v1")
    second = driver.initialize_connection("v1", {"host": "compute-2", "ip": ADDR}, "rw")
    assert second == first and driver.running("v1") == pid
    qemu_io(url(second), "read 0 4k")  # two clients at once (a live migration)


async def test_a_qcow2_volume_is_exported_as_its_raw_data(tmp_path: Path) -> None:
    d = NbdDriver(tmp_path / "q", "qcow2", ADDR)
    try:
        await d.create_volume("v1", 1)
        info = d.initialize_connection("v1", CONNECTOR, "rw")
        qemu_io(url(info), "write -P 0x33 0 4k")
        assert "read 4096/4096" in qemu_io(url(info), "read -P 0x33 0 4k")
        out = subprocess.run(["qemu-img", "info", "--output=json", url(info)],
                             check=True, capture_output=True, text=True).stdout
        assert '"format": "raw"' in out and '"virtual-size": 1073741824' in out
    finally:
        d.remove_export("v1")


async def test_copies_of_an_attached_volume_read_through_the_export(driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    info = driver.initialize_connection("v1", CONNECTOR, "rw")
    qemu_io(url(info), "write -P 0x77 0 64k")
    # The daemon holds the file's lock: a copy of the file itself would fail.
    await driver.create_snapshot("s1", "v1")
    await driver.create_cloned_volume("c1", "v1", 2)
    await driver.copy_volume_to_file("v1", str(driver.root / "upload.raw"), "raw")
    for name in ("s1", "c1", "upload.raw"):
        with open(driver.root / name, "rb") as f:
            assert f.read(65536) == b"\x77" * 65536, name


async def test_a_killed_daemon_comes_back_on_its_port(driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    info = driver.initialize_connection("v1", CONNECTOR, "rw")
    qemu_io(url(info), "write -P 0x11 0 4k")
    pid = driver.running("v1")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    assert driver.running("v1") is None
    result = sync(driver, {"v1": info["data"]["port"]})
    assert result.restarted == ["v1"] and not result.failed and not result.removed
    assert driver.running("v1") not in (None, pid)
    assert "read 4096/4096" in qemu_io(url(info), "read -P 0x11 0 4k")  # same address
    assert sync(driver, {"v1": info["data"]["port"]}).restarted == []  # nothing to do


async def test_an_export_no_attachment_wants_is_stopped_once_old_enough(
        driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    driver.initialize_connection("v1", CONNECTOR, "rw")
    pid = driver.running("v1")
    young = sync(driver, {})  # an attachment update may not have committed yet
    assert young.removed == [] and driver.running("v1") == pid
    old = sync(driver, {}, orphan_age=0)
    assert old.removed == ["v1"] and driver.running("v1") is None
    assert driver.exported() == []


async def test_an_export_that_cannot_come_back_is_reported(driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    with socket.socket() as taken:
        taken.bind((ADDR, 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = sync(driver, {"v1": port, "gone": port + 1})
    assert set(result.failed) == {"v1", "gone"}
    assert "gone has no data" in result.failed["gone"]
    assert "Address already in use" in result.failed["v1"]
    assert driver.running("v1") is None


async def test_deleting_a_volume_stops_its_export(driver: NbdDriver) -> None:
    await driver.create_volume("v1", 1)
    driver.initialize_connection("v1", CONNECTOR, "rw")
    await driver.delete_volume("v1")
    assert driver.running("v1") is None and not driver.path("v1").exists()
    assert driver.exported() == []
    driver.terminate_connection("v1", None)  # idempotent


def test_a_missing_volume_is_not_exported(driver: NbdDriver) -> None:
    with pytest.raises(BackendError, match="no data"):
        driver.initialize_connection("nope", CONNECTOR, "rw")
    assert driver.running("nope") is None


def test_a_pid_file_naming_another_process_is_not_a_daemon(tmp_path: Path) -> None:
    pidfile = tmp_path / "x.pid"
    pidfile.write_text(str(os.getpid()))  # this pytest process: not the daemon
    assert qsd.running(pidfile, "volume-x") is None
    pidfile.write_text("not a pid")
    assert qsd.running(pidfile, "volume-x") is None
    qsd.stop(pidfile, "volume-x")  # nothing to stop
    assert not pidfile.exists()


@pytest.mark.parametrize("fmt, nodes", [("raw", ["driver=file"]),
                                        ("qcow2", ["driver=file", "driver=qcow2"])])
def test_command_line(tmp_path: Path, fmt: str, nodes: list[str]) -> None:
    export = qsd.Export(tmp_path / "a,b", fmt, "198.51.100.1", 10809, "volume-v")
    args = qsd.command(export, tmp_path / "p", 7)
    blockdevs = [args[i + 1] for i, a in enumerate(args) if a == "--blockdev"]
    assert [b.split(",")[0] for b in blockdevs] == nodes
    assert f"filename={tmp_path}/a,,b," in blockdevs[0]  # a comma in a path is escaped
    assert args[args.index("--nbd-server") + 1] == "addr.type=fd,addr.str=7"
    assert "--daemonize" in args


def test_the_export_socket_does_not_wait_for_acks(tmp_path: Path) -> None:
    """TCP_NODELAY on the listening socket, which accepted connections inherit."""
    with qsd.listen(ADDR, 0) as sock:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        with socket.create_connection(sock.getsockname()) as client:
            accepted, _ = sock.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
                assert client is not None


def test_a_taken_port_is_a_backend_error() -> None:
    with socket.socket() as taken:
        taken.bind((ADDR, 0))
        taken.listen()
        with pytest.raises(BackendError, match="cannot listen"):
            qsd.listen(ADDR, taken.getsockname()[1])


def test_a_port_freed_meanwhile_is_taken() -> None:
    """A killed daemon's port is freed a moment after its main thread is
    gone (its other threads close the socket): a restart waits for it."""
    import threading

    taken = socket.socket()
    taken.bind((ADDR, 0))
    taken.listen()
    port = taken.getsockname()[1]
    closer = threading.Timer(0.2, taken.close)
    closer.start()
    try:
        with qsd.listen(ADDR, port) as sock:
            assert sock.getsockname()[1] == port
    finally:
        closer.join()


@pytest.mark.parametrize("overrides, root", [
    ({}, "state/volumes"),
    ({"volumes_path": "shared/vols"}, "shared/vols"),
])
def test_load_driver_nbd(tmp_path: Path, overrides: dict, root: str) -> None:
    from cirrus.config import Settings
    from cirrus.volume.backends import load_driver

    values = {k: str(tmp_path / v) for k, v in overrides.items()}
    settings = Settings(state_dir=tmp_path / "state", volume_backend="nbd",
                        volume_nbd_address="198.51.100.1", **values)
    d = load_driver(settings)
    assert isinstance(d, NbdDriver)
    assert d.root == tmp_path / root and d.address == "198.51.100.1"
    assert d.capabilities.storage_protocol == "nbd" and not d.capabilities.online_extend
