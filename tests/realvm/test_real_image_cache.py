"""A real guest boots from images its compute host downloaded from the image
service's HTTP API into its own ``_base`` cache (not the service's store),
verified against the image's recorded hash; a removed base is fetched
again by the next boot."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.realvm.conftest import MARKER, RealCloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]
NAME = "rv-cache"


def _images(cloud: RealCloud) -> list[dict[str, str]]:
    """The tiny guest's root disk, kernel and ramdisk image records."""
    root = cloud.openstack("image", "show", "cirrus-tiny", "-f", "json")
    props = root.get("properties") or {}
    ids = [props.get("kernel_id"), props.get("ramdisk_id")]
    return [root] + [cloud.openstack("image", "show", i, "-f", "json") for i in ids if i]


def _digest(path: Path, image: dict[str, str]) -> tuple[str, str]:
    """(what the image service recorded, what ``path`` holds), by the
    strongest hash the CLI shows (``os_hash_value``, else the md5 ``checksum``)."""
    if image.get("os_hash_value"):
        algorithm, recorded = image.get("os_hash_algo") or "sha512", image["os_hash_value"]
    else:
        algorithm, recorded = "md5", image["checksum"]
    digest = hashlib.new(algorithm)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return recorded, digest.hexdigest()


def _downloads(cloud: RealCloud, image_id: str) -> int:
    """How often a compute host logged downloading ``image_id``."""
    logs = "".join(p.read_text(errors="replace") for p in (cloud.state_dir / "logs").glob("*.log"))
    return len(re.findall(f"downloading image {image_id} ", logs))


def _boot_and_wait(cloud: RealCloud) -> dict[str, str]:
    server = cloud.openstack("server", "create", "--flavor", "rv.tiny", "--image", "cirrus-tiny",
                             "--network", "rv-net", "--wait", NAME, "-f", "json", timeout=300)
    assert server["status"] == "ACTIVE", server.get("fault")
    cloud.wait_console(NAME, re.escape(MARKER))
    return server


def test_guests_boot_from_bases_downloaded_over_the_image_api(real_cloud: RealCloud) -> None:
    base_dir = real_cloud.state_dir / "instances" / "_base"
    store = real_cloud.state_dir / "images"
    assert not base_dir.resolve().is_relative_to(store.resolve())
    if real_cloud.openstack("server", "list", "-f", "json"):
        pytest.skip("other guests use the bases this test removes")
    images = _images(real_cloud)
    for image in images:  # earlier tests' bases: this boot must fetch its own
        (base_dir / image["id"]).unlink(missing_ok=True)
    before = {i["id"]: _downloads(real_cloud, i["id"]) for i in images}

    _boot_and_wait(real_cloud)
    for image in images:
        base = base_dir / image["id"]
        recorded, held = _digest(base, image)
        assert held == recorded, image["name"]
        assert base.stat().st_ino != (store / image["id"]).stat().st_ino  # a copy, not a link
        assert _downloads(real_cloud, image["id"]) == before[image["id"]] + 1

    real_cloud.openstack("server", "delete", "--wait", NAME, timeout=180)
    root = images[0]["id"]
    (base_dir / root).unlink()  # as the image cache manager removes an unused base
    _boot_and_wait(real_cloud)
    recorded, held = _digest(base_dir / root, images[0])
    assert held == recorded
    assert _downloads(real_cloud, root) == before[root] + 2
    # The kernel and ramdisk were still cached: not fetched again.
    assert all(_downloads(real_cloud, i["id"]) == before[i["id"]] + 1 for i in images[1:])
    real_cloud.openstack("server", "delete", "--wait", NAME, timeout=180)
