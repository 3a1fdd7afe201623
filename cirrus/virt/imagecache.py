"""The per-host image cache: base images in ``<instances_path>/_base``.

:class:`ImageCache` hands out a base, downloading it on first use; one lock
per image (an asyncio lock for this process's builds, a file lock for other
processes sharing the directory) makes concurrent boots of one image download
it once. :class:`ImageCacheManager` is Nova's ``virt/imagecache.py``: a
periodic pass that marks the bases guests use (their modification time is
set to now, so a base's age is the time since it was last used) and removes
the others once they are ``remove_unused_original_minimum_age_seconds`` old,
when ``remove_unused_base_images`` is on. Leftover temporary files of
downloads that died with their process go too.
"""
from __future__ import annotations

import asyncio
import contextlib
import enum
import fcntl
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Callable, Collection

from cirrus.compute import exception as cexc
from cirrus.compute.image_service import ImageMeta, ImageService
from cirrus.utils import KeyedLocks
from cirrus.virt.images import PARTIAL_SUFFIX, Check, fetch_to_raw

LOG = logging.getLogger(__name__)
LOCK_DIR = ".locks"
# A temporary file nobody has written to for this long belongs to a dead download.
PARTIAL_MAX_AGE = 3600.0
FILE_LOCK_POLL = (0.01, 0.5)  # first and longest wait between tries of a held file lock
# Bases are named by image id (Glance's are UUIDs).
IMAGE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)

Clock = Callable[[], float]


class ImageCache:
    """Base images on this host, each downloaded once."""

    def __init__(self, base_dir: Path, images: ImageService, check: Check | None = None,
                 clock: Clock = time.time) -> None:
        self.base_dir = base_dir
        self.images = images
        self.check = check
        self.clock = clock
        self._locks = KeyedLocks()

    def path(self, image_id: str) -> Path:
        return self.base_dir / image_id

    @contextlib.asynccontextmanager
    async def lock(self, image_id: str) -> AsyncIterator[None]:
        """This image's lock, across the tasks of this process and the
        processes sharing ``base_dir``."""
        async with self._locks(image_id):
            lock_dir = self.base_dir / LOCK_DIR
            await asyncio.to_thread(lock_dir.mkdir, parents=True, exist_ok=True)
            # Lock files are never removed: a path unlinked while held would let
            # two processes lock two different files of one name.
            fd = await asyncio.to_thread(os.open, lock_dir / image_id, os.O_RDWR | os.O_CREAT)
            try:
                await _flock(fd)
                yield
            finally:
                os.close(fd)  # releases the flock

    @contextlib.asynccontextmanager
    async def base(self, meta: ImageMeta) -> AsyncIterator[Path]:
        """``async with cache.base(meta) as path``: the image's base, downloaded
        if this host has none; no cache pass removes it until the block ends
        (make the overlay inside it). Raises what ``fetch_to_raw`` raises."""
        if not IMAGE_ID.fullmatch(meta["id"]):  # it becomes a file name
            raise cexc.ImageUnacceptable(image_id=meta["id"][:64], reason="not an image id")
        target = self.path(meta["id"])
        async with self.lock(meta["id"]):
            if not await asyncio.to_thread(target.exists):
                LOG.info("downloading image %s to %s", meta["id"], target)
                await fetch_to_raw(self.images, meta, target, self.check)
            await asyncio.to_thread(_touch, target, self.clock())  # its last use: now
            yield target


async def _flock(fd: int) -> None:
    """An exclusive flock on ``fd``, tried without blocking: a thread parked in
    ``flock`` could not be cancelled, so this waits on the loop instead."""
    wait, longest = FILE_LOCK_POLL
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            await asyncio.sleep(wait)
            wait = min(wait * 2, longest)


def _touch(path: Path, now: float) -> None:
    os.utime(path, (now, now))


class Verdict(enum.Enum):
    IN_USE = "in use"          # a guest uses it: its age starts again
    TOO_YOUNG = "too young"    # unused, but not for long enough
    KEPT = "kept"              # unused, and removal is off
    REMOVE = "remove"


@dataclass(frozen=True)
class CacheRules:
    """Nova's ``[image_cache]`` options."""

    remove_unused_base_images: bool = True
    remove_unused_original_minimum_age_seconds: float = 86400.0

    def verdict(self, in_use: bool, age: float) -> Verdict:
        """What happens to a base file ``age`` seconds after its last use."""
        if in_use:
            return Verdict.IN_USE
        if not self.remove_unused_base_images:
            return Verdict.KEPT
        if age < self.remove_unused_original_minimum_age_seconds:
            return Verdict.TOO_YOUNG
        return Verdict.REMOVE


@dataclass
class CachePass:
    """What one pass did, by image id (for the log and for tests)."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    removed_partials: list[str] = field(default_factory=list)

    @property
    def removed(self) -> list[str]:
        return sorted(i for i, v in self.verdicts.items() if v is Verdict.REMOVE)


class ImageCacheManager:
    """Ages out the bases of ``cache`` that no guest on this storage uses."""

    def __init__(self, cache: ImageCache, rules: CacheRules) -> None:
        self.cache = cache
        self.rules = rules

    async def update(self, in_use: Collection[str]) -> CachePass:
        """One pass over the cache; ``in_use``: the image ids guests use."""
        done = CachePass()
        for name in await asyncio.to_thread(_files, self.cache.base_dir):
            if name.endswith(PARTIAL_SUFFIX):
                if await self._remove_dead_partial(self.cache.base_dir / name):
                    done.removed_partials.append(name)
            elif IMAGE_ID.fullmatch(name):  # any other file is not ours to remove
                done.verdicts[name] = await self._handle_base(name, name in in_use)
        if done.removed:
            LOG.info("image cache: removed unused bases %s", ", ".join(done.removed))
        return done

    async def _handle_base(self, image_id: str, in_use: bool) -> Verdict:
        """Under the image's lock, so a boot never loses a base it is using,
        and the age is read after any download or use in flight."""
        path = self.cache.path(image_id)
        async with self.cache.lock(image_id):
            try:
                age = self.cache.clock() - (await asyncio.to_thread(path.stat)).st_mtime
            except FileNotFoundError:
                return Verdict.REMOVE  # another host sharing the storage removed it
            verdict = self.rules.verdict(in_use, age)
            if verdict is Verdict.IN_USE:
                await asyncio.to_thread(_touch, path, self.cache.clock())
            elif verdict is Verdict.REMOVE:
                await asyncio.to_thread(path.unlink, True)
            return verdict

    async def _remove_dead_partial(self, path: Path) -> bool:
        try:
            age = self.cache.clock() - (await asyncio.to_thread(path.stat)).st_mtime
        except FileNotFoundError:
            return False  # its download finished or failed meanwhile
        if age < PARTIAL_MAX_AGE:
            return False
        await asyncio.to_thread(path.unlink, True)
        return True


def _files(base_dir: Path) -> list[str]:
    """The names of the files in ``base_dir``; none if it is missing."""
    try:
        with os.scandir(base_dir) as it:
            return sorted(e.name for e in it if e.is_file(follow_symlinks=False))
    except FileNotFoundError:
        return []
