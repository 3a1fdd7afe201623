"""WAL checkpoints beside the writer (SQLite).

SQLite checkpoints on the committing connection: the commit that takes the WAL
past ``wal_autocheckpoint`` pages (1000) copies the WAL into the database file
and syncs both before it returns. Done by the writer, that copy ran between two
group commits, and every unit queued meanwhile waited for it
(docs/performance.md: it was half of the writer's time in COMMIT); the writer
is now the event loop's thread (``groupcommit``), where it would stall every
request of the process. Here a thread
of its own checkpoints in PASSIVE mode (it never takes the write lock: writers
and readers go on beside it) after every ``every`` commits of the writer, and
the writer's connection checkpoints itself only past a far higher bound
(``WRITER_CHECKPOINT_PAGES``). Every other connection (start-up, scripts)
keeps SQLite's default.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

LOG = logging.getLogger(__name__)

# Commits between checkpoints. A group commit under boot load writes ~80 pages,
# so ~8 commits is a little under SQLite's own 1000 pages; idle commits are
# small, and a checkpoint of a few pages is cheap.
CHECKPOINT_COMMITS = 8
# The writer's own checkpoint, kept as a bound: a PASSIVE checkpoint copies the
# WAL into the database, but SQLite starts the WAL over only when a write
# begins with all of it copied, which a checkpoint on another thread can miss
# under a steady stream of commits. Past this many pages (~40 MB) the writer
# checkpoints on commit as SQLite would (most of it copied already).
WRITER_CHECKPOINT_PAGES = 10000


class Checkpointer:
    """A thread that runs ``PRAGMA wal_checkpoint(PASSIVE)`` when :meth:`nudge`
    has been called ``every`` times; started on the first checkpoint."""

    def __init__(self, connect: Callable[[], Any], every: int = CHECKPOINT_COMMITS) -> None:
        self._connect = connect  # a DBAPI connection for the thread (closed at its end)
        self._every = every
        self._commits = 0
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.checkpoints = 0  # how many ran (tests, diagnostics)

    def nudge(self) -> None:
        """One commit more (called by the group commit after each COMMIT)."""
        self._commits += 1
        if self._commits < self._every:
            return
        self._commits = 0
        with self._lock:
            if self._stop:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="db-ckpt", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        conn = self._connect()
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    cursor = conn.cursor()
                    cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
                    cursor.fetchall()
                    cursor.close()
                    self.checkpoints += 1
                except Exception:  # noqa: BLE001 - the next nudge tries again
                    LOG.exception("WAL checkpoint failed")
        finally:
            conn.close()

    def shutdown(self) -> None:
        """Stop the thread (after a checkpoint in progress ends)."""
        with self._lock:
            self._stop = True
            thread = self._thread
        if thread is not None:
            self._wake.set()
            thread.join()
