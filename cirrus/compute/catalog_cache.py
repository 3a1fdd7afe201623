"""The create's flavors and images, kept by each API process while the catalog
does not change.

Every create looked its flavor and its image up (two statements, and on
PostgreSQL a read transaction on a DB thread). They change only through
statements that bump the catalog's generation in the same transaction
(triggers, migration 0042), and every authenticated request has read that
generation before the create starts, in the token check's one statement
(:attr:`cirrus.identity.generation.GenerationReader.catalog`). So:

* the copy belongs to one generation; a request that knows a different one
  drops it and reads again, so what any process committed before the request
  arrived is seen (a deleted, private or deactivated flavor or image refused
  at once by every process);
* a record read is kept only under the generation known *before* the read
  began (:meth:`CatalogCache.generation` first, then the read, then
  :meth:`CatalogCache.put`): if the catalog moved in between, the copy has
  moved on and the record is not kept.

The records are kept as read: a private flavor with the projects it is open
to, an image whatever its visibility (who may see it is decided per request,
:mod:`cirrus.image.api`). Records are shared between requests and must not be
changed by their users.
"""
from __future__ import annotations

from typing import Any, Callable, Final

MAX_ENTRIES = 1024  # a cloud's flavors and the images it boots, with room
Row = dict[str, Any]


class _Missing:
    """Not kept (distinct from a kept None: no such record)."""


MISSING: Final = _Missing()


class CatalogCache:
    """Flavor and image records, valid for one catalog generation.

    ``generation``: the catalog generation this process last read (None until
    it has read one; then nothing is kept)."""

    def __init__(self, generation: Callable[[], int | None]) -> None:
        self._generation = generation
        # One tuple, replaced whole: a DB thread's put sees the generation and
        # the entries of the same moment, never a new generation's entries
        # with an old one's records.
        self._state: tuple[int | None, dict[tuple[str, str], Any]] = (None, {})

    def generation(self) -> int | None:
        """The generation this request works at (read before any lookup);
        records of an older one are dropped."""
        current = self._generation()
        if current is not None and current != self._state[0]:
            self._state = (current, {})
        return current

    def get(self, generation: int | None, kind: str, key: str) -> Any:
        """The record kept for ``(kind, key)`` at ``generation``, or :data:`MISSING`."""
        kept_at, entries = self._state
        if generation is None or generation != kept_at:
            return MISSING
        return entries.get((kind, key), MISSING)

    def put(self, generation: int | None, kind: str, key: str, value: Any) -> None:
        """Keep ``value`` (read after ``generation`` was known) if the copy is
        still at that generation. Any thread."""
        kept_at, entries = self._state
        if generation is None or generation != kept_at:
            return
        if len(entries) >= MAX_ENTRIES:
            entries.clear()
        entries[(kind, key)] = value


def uncached() -> None:
    """The generation of an API built without a reader (tests, tools): None,
    nothing kept."""
    return None
