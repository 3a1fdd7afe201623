"""The per-host image cache (``cirrus.virt.imagecache``) on a temporary
directory with a fake clock: one download per image however many boots ask
at once (in one process or two), and the image cache manager's rules."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from cirrus.compute import exception as cexc
from cirrus.virt.imagecache import (LOCK_DIR, PARTIAL_MAX_AGE, CacheRules, ImageCache,
                                    ImageCacheManager, Verdict)
from tests.unit.fake_images import IMAGE, OTHER, FakeImages

DATA = b"base image data " * 64
DAY = 86400.0


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_cache(tmp_path: Path, images: FakeImages, clock: Clock) -> ImageCache:
    return ImageCache(tmp_path / "_base", images, clock=clock)


def put_base(cache: ImageCache, image_id: str, mtime: float) -> Path:
    path = cache.path(image_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(DATA)
    os.utime(path, (mtime, mtime))
    return path


# -- the rules -----------------------------------------------------------------------
RULE_CASES = [
    # (remove_unused_base_images, minimum age, in use, age) → verdict
    (True, DAY, True, 10 * DAY, Verdict.IN_USE),
    (True, DAY, False, DAY - 1, Verdict.TOO_YOUNG),
    (True, DAY, False, DAY, Verdict.REMOVE),
    (True, DAY, False, 10 * DAY, Verdict.REMOVE),
    (True, 0, False, 0, Verdict.REMOVE),
    (False, DAY, False, 10 * DAY, Verdict.KEPT),
    (False, DAY, True, 10 * DAY, Verdict.IN_USE),
]


@pytest.mark.parametrize("remove, min_age, in_use, age, verdict", RULE_CASES)
def test_verdict(remove: bool, min_age: float, in_use: bool, age: float,
                 verdict: Verdict) -> None:
    assert CacheRules(remove, min_age).verdict(in_use, age) is verdict


def test_nova_defaults() -> None:
    rules = CacheRules()
    assert (rules.remove_unused_base_images,
            rules.remove_unused_original_minimum_age_seconds) == (True, DAY)


# -- the manager's pass ----------------------------------------------------------------
async def test_a_pass_marks_keeps_and_removes(tmp_path: Path) -> None:
    clock = Clock()
    cache = make_cache(tmp_path, FakeImages(), clock)
    used = put_base(cache, IMAGE, clock.now - 10 * DAY)
    old = put_base(cache, OTHER, clock.now - 2 * DAY)
    young_id = "11111111-2222-3333-4444-555555555555"
    young = put_base(cache, young_id, clock.now - 60)
    stranger = put_base(cache, "not-an-image-id", clock.now - 100 * DAY)

    done = await ImageCacheManager(cache, CacheRules()).update({IMAGE})

    assert done.verdicts == {IMAGE: Verdict.IN_USE, OTHER: Verdict.REMOVE,
                             young_id: Verdict.TOO_YOUNG}
    assert done.removed == [OTHER]
    assert not old.exists() and young.exists() and stranger.exists()
    assert used.stat().st_mtime == clock.now  # its age starts again


async def test_an_unused_base_goes_a_minimum_age_after_its_last_use(tmp_path: Path) -> None:
    clock = Clock()
    cache = make_cache(tmp_path, FakeImages(), clock)
    path = put_base(cache, IMAGE, clock.now - 10 * DAY)
    manager = ImageCacheManager(cache, CacheRules(True, DAY))
    await manager.update({IMAGE})  # last seen in use now
    clock.now += DAY - 1
    assert (await manager.update(set())).verdicts == {IMAGE: Verdict.TOO_YOUNG}
    clock.now += 1
    assert (await manager.update(set())).removed == [IMAGE]
    assert not path.exists()


async def test_removal_off_keeps_every_base(tmp_path: Path) -> None:
    clock = Clock()
    cache = make_cache(tmp_path, FakeImages(), clock)
    path = put_base(cache, IMAGE, clock.now - 100 * DAY)
    done = await ImageCacheManager(cache, CacheRules(False, 0)).update(set())
    assert done.verdicts == {IMAGE: Verdict.KEPT} and path.exists()


async def test_dead_partial_downloads_are_removed_live_ones_kept(tmp_path: Path) -> None:
    clock = Clock()
    cache = make_cache(tmp_path, FakeImages(), clock)
    cache.base_dir.mkdir()
    dead, live = cache.base_dir / f".{IMAGE}.aaaa.part", cache.base_dir / f".{OTHER}.bbbb.part"
    for path, age in ((dead, PARTIAL_MAX_AGE), (live, PARTIAL_MAX_AGE - 1)):
        path.write_bytes(b"half")
        os.utime(path, (clock.now - age, clock.now - age))
    done = await ImageCacheManager(cache, CacheRules()).update(set())
    assert done.removed_partials == [dead.name] and done.verdicts == {}
    assert not dead.exists() and live.exists()


async def test_a_pass_over_a_missing_cache_does_nothing(tmp_path: Path) -> None:
    cache = make_cache(tmp_path, FakeImages(), Clock())
    done = await ImageCacheManager(cache, CacheRules()).update(set())
    assert done.verdicts == {} and not cache.base_dir.exists()


async def test_a_base_a_boot_holds_is_not_removed_under_it(tmp_path: Path) -> None:
    """The pass waits for the image's lock: even with no minimum age, the base
    stays while a boot makes its overlay, and goes after."""
    clock = Clock()
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    cache = make_cache(tmp_path, images, clock)
    path = put_base(cache, IMAGE, clock.now - 10 * DAY)
    manager = ImageCacheManager(cache, CacheRules(True, 0))
    async with cache.base(meta) as base:
        sweep = asyncio.create_task(manager.update(set()))
        for _ in range(20):  # let the pass run as far as it can
            await asyncio.sleep(0.005)
        assert base.exists() and not sweep.done()
    assert (await sweep).removed == [IMAGE]
    assert not path.exists() and images.downloads == 0


# -- downloads -------------------------------------------------------------------------
async def test_the_first_use_downloads_later_ones_reuse(tmp_path: Path) -> None:
    clock = Clock()
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    cache = make_cache(tmp_path, images, clock)
    async with cache.base(meta) as base:
        assert base.read_bytes() == DATA
    clock.now += 5
    async with cache.base(meta) as again:
        assert again == base
    assert images.downloads == 1
    assert base.stat().st_mtime == clock.now  # used now


async def test_concurrent_boots_of_one_image_download_it_once(tmp_path: Path) -> None:
    images = FakeImages(gate=asyncio.Event())
    meta = images.add(IMAGE, DATA)
    cache = make_cache(tmp_path, images, Clock())

    async def boot() -> bytes:
        async with cache.base(meta) as base:
            return base.read_bytes()
    boots = [asyncio.create_task(boot()) for _ in range(5)]
    while images.downloads == 0:
        await asyncio.sleep(0.001)
    assert images.gate is not None
    images.gate.set()
    assert await asyncio.gather(*boots) == [DATA] * 5
    assert images.downloads == 1


async def test_two_processes_sharing_the_directory_download_once(tmp_path: Path) -> None:
    """Two caches (as two compute processes: their own asyncio locks) on one
    directory: the file lock makes the second wait and then reuse the base."""
    images = FakeImages(gate=asyncio.Event())
    meta = images.add(IMAGE, DATA)
    first, second = (make_cache(tmp_path, images, Clock()) for _ in range(2))

    async def boot(cache: ImageCache) -> bytes:
        async with cache.base(meta) as base:
            return base.read_bytes()
    one = asyncio.create_task(boot(first))
    while images.downloads == 0:
        await asyncio.sleep(0.001)
    two = asyncio.create_task(boot(second))
    await asyncio.sleep(0.05)  # the second is parked on the file lock, not downloading
    assert images.downloads == 1 and not two.done()
    assert images.gate is not None
    images.gate.set()
    assert await asyncio.gather(one, two) == [DATA, DATA]
    assert images.downloads == 1
    assert (tmp_path / "_base" / LOCK_DIR / IMAGE).exists()  # lock files stay


async def test_a_corrupt_download_fails_every_waiter_and_leaves_no_base(tmp_path: Path) -> None:
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    images.data[IMAGE] = b"X" + DATA[1:]
    cache = make_cache(tmp_path, images, Clock())

    async def boot() -> None:
        async with cache.base(meta):
            pass
    results = await asyncio.gather(boot(), boot(), return_exceptions=True)
    assert [type(r) for r in results] == [cexc.ImageChecksumMismatch] * 2
    assert images.downloads == 2  # each tried; neither left a base for the other
    assert sorted(p.name for p in cache.base_dir.iterdir()) == [LOCK_DIR]


async def test_after_removal_the_next_boot_downloads_again(tmp_path: Path) -> None:
    clock = Clock()
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    cache = make_cache(tmp_path, images, clock)
    async with cache.base(meta):
        pass
    clock.now += 2 * DAY
    assert (await ImageCacheManager(cache, CacheRules()).update(set())).removed == [IMAGE]
    async with cache.base(meta) as base:
        assert base.read_bytes() == DATA
    assert images.downloads == 2


@pytest.mark.parametrize("image_id", ["../../etc/passwd", "", "x" * 36])
async def test_only_an_image_id_names_a_base(tmp_path: Path, image_id: str) -> None:
    images = FakeImages()
    meta = images.add(IMAGE, DATA)
    meta["id"] = image_id
    with pytest.raises(cexc.ImageUnacceptable, match="not an image id"):
        async with make_cache(tmp_path, images, Clock()).base(meta):
            pass
    assert images.downloads == 0 and not (tmp_path / "_base").exists()
