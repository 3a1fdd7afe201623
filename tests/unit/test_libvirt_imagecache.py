"""The libvirt driver's side of the image cache: which bases its guests use
(their instances' images, and every qcow2 on the storage backed by one),
read from qcow2 headers; bases downloaded through the image service."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from cirrus.compute import exception as cexc
from cirrus.config import Settings
from cirrus.virt.libvirt import imagebackend
from cirrus.virt.libvirt.driver import LibvirtDriver
from tests.unit.fake_images import IMAGE, OTHER, FakeImages

THIRD = "11111111-2222-3333-4444-555555555555"


def qcow2(path: Path, backing: str | None) -> Path:
    """A qcow2 header (version 3) naming ``backing``, as qemu-img writes it."""
    name = (backing or "").encode()
    offset = 0x200 if name else 0
    header = struct.pack(">4sIQI", b"QFI\xfb", 3, offset, len(name))
    path.write_bytes(header.ljust(0x200, b"\0") + name)
    return path


@pytest.mark.parametrize("content, expected", [
    ("qcow2:/i/_base/abc", "/i/_base/abc"),
    ("qcow2:", None),                       # no backing file
    ("raw", None),                          # not a qcow2 at all
    ("short", None),                        # shorter than a header
])
def test_backing_file_from_the_header(tmp_path: Path, content: str, expected: str | None) -> None:
    path = tmp_path / "disk"
    if content.startswith("qcow2:"):
        qcow2(path, content[6:] or None)
    elif content == "raw":
        path.write_bytes(b"\0" * 1024)
    else:
        path.write_bytes(b"QFI")
    assert imagebackend.qcow2_backing_file(path) == expected


@pytest.mark.skipif(shutil.which("qemu-img") is None, reason="qemu-img is not installed")
def test_the_header_reader_agrees_with_qemu_img(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.write_bytes(b"\0" * 65536)
    overlay = tmp_path / "overlay"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(base), "-F", "raw",
                    str(overlay)], check=True)
    assert imagebackend.qcow2_backing_file(overlay) == str(base)


def test_bases_in_use_are_those_the_disks_on_the_storage_name(tmp_path: Path) -> None:
    base_dir = tmp_path / "_base"
    base_dir.mkdir()
    for uuid, disk, backing in (("vm1", "disk", base_dir / IMAGE),
                                ("vm2", "disk.rescue", base_dir / OTHER),
                                ("vm3", "disk", tmp_path / "elsewhere" / THIRD)):
        (tmp_path / uuid).mkdir()
        qcow2(tmp_path / uuid / disk, str(backing))
    (tmp_path / "vm1" / "console.log").write_text("not a disk")
    qcow2(base_dir / THIRD, None)  # a base is not an instance's disk
    assert imagebackend.bases_in_use(tmp_path, base_dir) == {IMAGE, OTHER}


async def test_the_driver_keeps_what_its_guests_use(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path, compute_driver="libvirt",
                        remove_unused_original_minimum_age_seconds=0)
    driver = LibvirtDriver(settings, "h1")
    driver.virtapi = SimpleNamespace(image_service=FakeImages())
    base_dir = Path(settings.instances_path) / "_base"
    base_dir.mkdir(parents=True)
    for image in (IMAGE, OTHER, THIRD):
        (base_dir / image).write_bytes(b"data")
        os.utime(base_dir / image, (0, 0))
    (Path(settings.instances_path) / "vm1").mkdir()
    qcow2(Path(settings.instances_path) / "vm1" / "disk", str(base_dir / IMAGE))

    await driver.manage_image_cache(None, [{"uuid": "vm2", "image_ref": OTHER},
                                           {"uuid": "vm3", "image_ref": None}])
    assert sorted(p.name for p in base_dir.iterdir() if p.is_file()) == sorted([IMAGE, OTHER])


async def test_a_booted_image_must_be_active(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path, compute_driver="libvirt")
    driver = LibvirtDriver(settings, "h1")
    images = FakeImages()
    images.add(IMAGE, b"data")
    driver.virtapi = SimpleNamespace(image_service=images)

    async def queued(image_id: str) -> dict[str, object]:
        return {"id": image_id, "status": "queued"}
    images.show = queued  # type: ignore[method-assign,assignment]
    with pytest.raises(cexc.ImageNotActive):
        async with driver._base(None, IMAGE):
            pass
    assert images.downloads == 0


async def test_the_driver_downloads_into_its_own_instances_path(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "state", compute_driver="libvirt",
                        instances_path=str(tmp_path / "elsewhere"))
    driver = LibvirtDriver(settings, "h1")
    images = FakeImages()
    images.add(IMAGE, b"raw disk bytes")
    driver.virtapi = SimpleNamespace(image_service=images)
    async with driver._base(None, IMAGE) as (meta, base):
        assert base == tmp_path / "elsewhere" / "_base" / IMAGE
        assert base.read_bytes() == b"raw disk bytes" and meta["status"] == "active"
    assert not (tmp_path / "state" / "images").exists()
