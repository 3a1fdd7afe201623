"""The catalog cache's rules (``cirrus/compute/catalog_cache.py``): a record is
kept only under the generation known before it was read, and served only to
a request at that generation."""
from __future__ import annotations

import pytest

from cirrus.compute import catalog_cache
from cirrus.compute.catalog_cache import MISSING, CatalogCache


class Generation:
    """The reader's catalog generation, as a test sets it."""

    def __init__(self, value: int | None) -> None:
        self.value = value

    def __call__(self) -> int | None:
        return self.value


# (generation known before the read, generation when it is kept, when asked,
#  whether the record is served)
@pytest.mark.parametrize("read_at, moved_to, asked_at, served", [
    (1, None, 1, True),     # nothing moved
    (1, 2, 2, False),       # moved while reading: not kept
    (1, None, 2, False),    # moved after: dropped
    (None, None, None, False),  # no generation read yet: nothing kept
])
def test_a_record_is_served_only_at_the_generation_it_was_read_under(
        read_at: int | None, moved_to: int | None, asked_at: int | None, served: bool) -> None:
    generation = Generation(read_at)
    cache = CatalogCache(generation)
    before = cache.generation()
    if moved_to is not None:
        generation.value = moved_to
        cache.generation()  # another request saw the move
    cache.put(before, "flavor", "1", {"flavorid": "1"})
    generation.value = asked_at
    now = cache.generation()
    assert (cache.get(now, "flavor", "1") is not MISSING) is served


def test_a_missing_record_is_kept_as_none() -> None:
    cache = CatalogCache(Generation(3))
    at = cache.generation()
    cache.put(at, "image", "x", None)
    assert cache.get(at, "image", "x") is None
    assert cache.get(at, "image", "y") is MISSING


def test_the_copy_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_cache, "MAX_ENTRIES", 2)
    cache = CatalogCache(Generation(1))
    at = cache.generation()
    for key in "abc":
        cache.put(at, "image", key, {"id": key})
    assert cache.get(at, "image", "c") == {"id": "c"}
    assert cache.get(at, "image", "a") is MISSING


def test_an_api_without_a_reader_keeps_nothing() -> None:
    cache = CatalogCache(catalog_cache.uncached)
    at = cache.generation()
    cache.put(at, "flavor", "1", {"flavorid": "1"})
    assert cache.get(at, "flavor", "1") is MISSING
