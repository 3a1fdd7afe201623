"""Fetching an image to a host (``cirrus.virt.images``): what is verified, and
that a download that fails in any way leaves nothing behind."""
from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from cirrus.compute import exception as cexc
from cirrus.compute.image_service import ImageMeta
from cirrus.virt.images import PARTIAL_SUFFIX, Verifier, active_image, fetch_to_raw
from tests.unit.fake_images import IMAGE, FakeImages, meta_of

DATA = b"the bytes of a small disk image" * 10
SHA256 = hashlib.sha256(DATA).hexdigest()
MD5 = hashlib.md5(DATA).hexdigest()

# (record fields over the true ones, what the downloaded DATA gets: None = accepted,
# else the error's type and a fragment of its message)
VERIFY_CASES = [
    ({}, None),
    ({"os_hash_algo": "sha256", "os_hash_value": SHA256}, None),
    ({"os_hash_algo": "sha256", "os_hash_value": SHA256.upper()}, None),
    ({"os_hash_value": "0" * 128}, (cexc.ImageChecksumMismatch, "the sha512 of the downloaded")),
    ({"os_hash_algo": None, "os_hash_value": None}, None),  # md5 checksum only, right
    ({"os_hash_algo": None, "os_hash_value": None, "checksum": "f" * 32},
     (cexc.ImageChecksumMismatch, "the md5 of the downloaded data")),
    ({"os_hash_algo": "sha512", "os_hash_value": None, "checksum": MD5}, None),
    ({"size": len(DATA) + 1}, (cexc.ImageChecksumMismatch, f"got {len(DATA)} bytes, expected {len(DATA) + 1}")),
    ({"size": None}, None),
    ({"os_hash_algo": None, "os_hash_value": None, "checksum": None}, None),  # nothing to check
    ({"os_hash_algo": "crc-nonsense"}, (cexc.ImageUnacceptable, "unknown hash algorithm")),
]


@pytest.mark.parametrize("fields, refused", VERIFY_CASES)
def test_verification_against_the_record(fields: dict[str, object],
                                         refused: tuple[type[Exception], str] | None) -> None:
    meta = meta_of(IMAGE, DATA, **fields)

    def verify() -> None:
        verifier = Verifier.of(meta)
        if verifier is not None:
            verifier.update(DATA[:7])
            verifier.update(DATA[7:])
            verifier.verify(IMAGE)
    if refused is None:
        verify()
    else:
        with pytest.raises(refused[0], match=refused[1]):
            verify()


def test_no_hash_and_no_checksum_means_no_verifier() -> None:
    meta = meta_of(IMAGE, DATA, os_hash_algo=None, os_hash_value=None, checksum=None)
    assert Verifier.of(meta) is None


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_a_download_is_streamed_verified_and_renamed(tmp_path: Path) -> None:
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    await fetch_to_raw(images, meta, tmp_path / IMAGE)
    assert (tmp_path / IMAGE).read_bytes() == DATA
    assert leftovers(tmp_path) == [IMAGE]


@pytest.mark.parametrize("fault, error, message", [
    ({"break_after": 3}, cexc.ImageDownloadFailed, "connection reset"),
    ({"corrupt": True}, cexc.ImageChecksumMismatch, "is corrupt"),
    ({"missing": True}, cexc.ImageNotFound, "Can not find requested image"),
])
async def test_a_failed_download_leaves_nothing(tmp_path: Path, fault: dict[str, object],
                                               error: type[Exception], message: str) -> None:
    images = FakeImages(break_after=fault.get("break_after"))  # type: ignore[arg-type]
    meta = images.add(IMAGE, DATA)
    if fault.get("corrupt"):
        images.data[IMAGE] = DATA[:-1] + b"!"
    if fault.get("missing"):
        del images.data[IMAGE]
    with pytest.raises(error, match=message):
        await fetch_to_raw(images, meta, tmp_path / IMAGE)
    assert leftovers(tmp_path) == []


async def test_a_refused_check_leaves_nothing(tmp_path: Path) -> None:
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    seen: list[bytes] = []

    async def check(checked: ImageMeta, path: Path) -> None:
        seen.append(path.read_bytes())  # the whole, verified data, not yet in place
        assert not (tmp_path / IMAGE).exists()
        raise cexc.ImageUnacceptable(image_id=checked["id"], reason="not a valid qcow2 image")
    with pytest.raises(cexc.ImageUnacceptable, match="not a valid qcow2"):
        await fetch_to_raw(images, meta, tmp_path / IMAGE, check)
    assert seen == [DATA]
    assert leftovers(tmp_path) == []


async def test_a_cancelled_download_leaves_nothing(tmp_path: Path) -> None:
    images = FakeImages(gate=asyncio.Event())
    meta = images.add(IMAGE, DATA)
    task = asyncio.create_task(fetch_to_raw(images, meta, tmp_path / IMAGE))
    while not any(p.name.endswith(PARTIAL_SUFFIX) for p in tmp_path.iterdir()):
        await asyncio.sleep(0)  # until the first chunk is on disk
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leftovers(tmp_path) == []


async def test_a_file_the_host_cannot_write_is_a_failed_download(tmp_path: Path) -> None:
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    with pytest.raises(cexc.ImageDownloadFailed, match=IMAGE):
        await fetch_to_raw(images, meta, tmp_path / "no-such-dir" / IMAGE)


class Failing(FakeImages):
    """Its ``show`` answers with ``error``."""

    error: Exception | None = None

    async def show(self, image_id: str) -> ImageMeta:
        assert self.error is not None
        raise self.error


@pytest.mark.parametrize("error, mapped", [
    (cexc.ImageNotFound(), cexc.ImageNotFound),
    (cexc.GlanceConnectionFailed(server="glance", reason="503"), cexc.ImageDownloadFailed),
    (OSError("no route to host"), cexc.ImageDownloadFailed),
])
async def test_a_records_errors_are_mapped_to_computes(error: Exception,
                                                        mapped: type[Exception]) -> None:
    images = Failing()
    images.error = error
    with pytest.raises(mapped):
        await active_image(images, IMAGE)


async def test_only_an_active_image_is_booted() -> None:
    images = FakeImages()
    images.add(IMAGE, DATA)
    assert (await active_image(images, IMAGE))["id"] == IMAGE

    async def queued(image_id: str) -> ImageMeta:
        return ImageMeta(id=image_id, status="queued")
    images.show = queued  # type: ignore[method-assign]
    with pytest.raises(cexc.ImageNotActive):
        await active_image(images, IMAGE)
