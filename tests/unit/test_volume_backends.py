"""The file backend with real qemu-img: sizes, copies, atomic placement."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cirrus.config import Settings
from cirrus.volume.backends import load_driver
from cirrus.volume.backends.file import FileDriver
from cirrus.volume.exception import BackendError

GiB = 1 << 30


def info(path: Path) -> dict:
    out = subprocess.run(["qemu-img", "info", "--output=json", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("fmt", ["raw", "qcow2"])
async def test_create_extend_snapshot_clone(tmp_path: Path, fmt: str) -> None:
    d = FileDriver(tmp_path, fmt)
    await d.create_volume("a", 1)
    assert info(tmp_path / "a")["virtual-size"] == GiB and info(tmp_path / "a")["format"] == fmt
    await d.extend_volume("a", 2)
    await d.extend_volume("a", 1)  # never shrinks
    assert info(tmp_path / "a")["virtual-size"] == 2 * GiB
    await d.create_snapshot("s", "a")
    await d.create_volume_from_snapshot("b", "s", 3)
    await d.create_cloned_volume("c", "a", 2)
    assert info(tmp_path / "b")["virtual-size"] == 3 * GiB
    assert info(tmp_path / "c")["virtual-size"] == 2 * GiB
    await d.delete_volume("a")
    await d.delete_volume("a")  # a missing volume is not an error
    await d.delete_snapshot("s")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b", "c"]


async def test_an_image_is_copied_with_its_data(tmp_path: Path) -> None:
    image = tmp_path / "image.raw"
    image.write_bytes(b"marker" + bytes(4090))
    d = FileDriver(tmp_path / "v", "raw")
    await d.create_volume_from_image("v1", str(image), 1)
    with open(tmp_path / "v" / "v1", "rb") as fh:
        assert fh.read(6) == b"marker"
    assert info(tmp_path / "v" / "v1")["virtual-size"] == GiB


async def test_a_failure_leaves_nothing_behind(tmp_path: Path) -> None:
    big = tmp_path / "big.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(big), "2G"], check=True)
    d = FileDriver(tmp_path / "v", "raw")
    with pytest.raises(BackendError, match="does not fit"):
        await d.create_volume_from_image("v1", str(big), 1)
    with pytest.raises(BackendError, match="qemu-img"):
        await d.create_cloned_volume("v2", "no-such-volume", 1)
    assert not (tmp_path / "v").exists() or list((tmp_path / "v").iterdir()) == []


def test_connection_info_is_the_local_file(tmp_path: Path) -> None:
    info_ = FileDriver(tmp_path, "qcow2").initialize_connection("v", {"host": "h"}, "ro")
    assert info_ == {"driver_volume_type": "local", "data": {
        "device_path": str(tmp_path / "v"), "format": "qcow2", "access_mode": "ro"}}


@pytest.mark.parametrize("backend, fmt, error", [
    ("file", "raw", None), ("file", "qcow2", None),
    ("lvm", "raw", "volume_backend must be one of"), ("file", "vmdk", "volume_format")])
def test_load_driver(tmp_path: Path, backend: str, fmt: str, error: str | None) -> None:
    settings = Settings(state_dir=tmp_path, volume_backend=backend, volume_format=fmt)
    if error:
        with pytest.raises(ValueError, match=error):
            load_driver(settings)
    else:
        assert isinstance(load_driver(settings), FileDriver)
