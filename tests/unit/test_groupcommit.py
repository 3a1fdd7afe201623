"""Group commit on SQLite: units share a transaction but stay atomic each."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from cirrus.db.engine import Database

ITEMS = sa.Table("items", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("name", sa.String(20), nullable=False, unique=True))


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'g.db'}")
    ITEMS.metadata.create_all(database.engine)
    yield database
    database.close()


def _insert(conn: sa.Connection, name: str, then_fail: bool = False) -> str:
    conn.execute(ITEMS.insert().values(name=name))
    if then_fail:
        raise ValueError(f"{name} failed after its insert")
    return name


def _names(conn: sa.Connection) -> set[str]:
    return set(conn.execute(sa.select(ITEMS.c.name)).scalars())


async def test_a_failing_unit_rolls_back_alone_and_the_rest_commit(db: Database) -> None:
    names = [f"n{i}" for i in range(200)]
    calls = [db.run(_insert, n, then_fail=(i % 7 == 3)) for i, n in enumerate(names)]
    calls.append(db.run(_insert, "n0"))  # a unique-key clash with a unit of the same batch
    results = await asyncio.gather(*calls, return_exceptions=True)
    failed = {n for i, n in enumerate(names) if i % 7 == 3}
    for name, result in zip(names, results):
        if name in failed:
            assert isinstance(result, ValueError)
        else:
            assert result == name
    assert isinstance(results[-1], sa.exc.IntegrityError)
    assert await db.read(_names) == set(names) - failed


async def test_a_result_is_committed_when_its_caller_sees_it(db: Database) -> None:
    async def write_then_read(name: str) -> bool:
        await db.run(_insert, name)
        return name in await db.read(_names)  # another connection, another thread
    assert all(await asyncio.gather(*[write_then_read(f"r{i}") for i in range(50)]))


def _insert_or_note(conn: sa.Connection, name: str, fail_after: bool) -> str:
    """Like IPAM: a clash inside the unit's own savepoint is caught and worked round."""
    try:
        with conn.begin_nested():
            conn.execute(ITEMS.insert().values(name=name))
    except sa.exc.IntegrityError:
        name = f"{name}-again"
        conn.execute(ITEMS.insert().values(name=name))
    if fail_after:
        with conn.begin_nested():
            raise ValueError("fails inside its own savepoint")
    return name


async def test_units_savepoints_nest_inside_the_batch_savepoint(db: Database) -> None:
    await db.run(_insert, "x")
    calls = [db.run(_insert_or_note, "x", False), db.run(_insert_or_note, "y", True),
             db.run(_insert_or_note, "z", False)]
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert results[0] == "x-again" and isinstance(results[1], ValueError) and results[2] == "z"
    assert await db.read(_names) == {"x", "x-again", "z"}


async def test_a_cancelled_caller_unwinds_only_after_its_unit_committed(
        db: Database, tmp_path: Path) -> None:
    holder = await _lock_held_elsewhere(tmp_path / "g.db", 0.3)
    task = asyncio.ensure_future(db.run(_insert, "late"))
    await asyncio.sleep(0.05)  # queued: another connection holds the write lock
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # By the time the cancellation reached the caller, the unit had committed.
    assert "late" in await db.read(_names)
    holder.join()


def _name_or_fail(conn: sa.Connection, i: int) -> int:
    if i % 5 == 0:
        raise KeyError(i)
    return conn.execute(sa.select(sa.literal(i))).scalar_one()


async def test_reads_in_batches_each_get_their_own_outcome(db: Database) -> None:
    results = await asyncio.gather(*[db.read(_name_or_fail, i) for i in range(300)],
                                   return_exceptions=True)
    for i, result in enumerate(results):
        if i % 5 == 0:
            assert isinstance(result, KeyError) and result.args == (i,)
        else:
            assert result == i


def test_units_from_two_event_loops_settle_on_their_own_loop(db: Database) -> None:
    async def burst(tag: str) -> list[str]:
        return list(await asyncio.gather(*[db.run(_insert, f"{tag}{i}") for i in range(50)]))

    results: dict[str, list[str]] = {}
    threads = [threading.Thread(target=lambda t=t: results.__setitem__(t, asyncio.run(burst(t))))
               for t in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {t: [f"{t}{i}" for i in range(50)] for t in ("a", "b")}


async def test_units_after_close_fail_at_once_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    """A task still running when the cloud stops (a build mid-flight) must not
    hang its own cancellation on a unit nobody will run."""
    from cirrus.db.handoff import DatabaseClosed

    database = Database(f"sqlite:///{tmp_path / 'closed.db'}")
    ITEMS.metadata.create_all(database.engine)
    await database.run(_insert, "before")
    database.close()
    with pytest.raises(DatabaseClosed):
        await asyncio.wait_for(database.run(_insert, "after"), 5)
    with pytest.raises(DatabaseClosed):
        await asyncio.wait_for(database.read(_names), 5)


def _hold_write_lock(path: Path, seconds: float, held: threading.Event,
                     release: threading.Event) -> None:
    """Another process's writer, as SQLite sees it: a connection of its own
    holding the write lock for ``seconds`` or until ``release`` is set."""
    import sqlite3

    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO items (name) VALUES ('other')")
    held.set()
    release.wait(seconds)
    other.execute("COMMIT")
    other.close()


async def _lock_held_elsewhere(path: Path, seconds: float,
                               release: threading.Event | None = None) -> threading.Thread:
    """A thread holding the write lock for ``seconds`` from now, or until
    ``release`` is set (join it)."""
    held = threading.Event()
    holder = threading.Thread(target=_hold_write_lock,
                              args=(path, seconds, held, release or threading.Event()))
    holder.start()
    await asyncio.get_running_loop().run_in_executor(None, held.wait)
    return holder


async def test_the_writer_waits_for_another_connections_lock_then_takes_the_queue(
        db: Database, tmp_path: Path) -> None:
    holder = await _lock_held_elsewhere(tmp_path / "g.db", 0.3)
    names = [f"w{i}" for i in range(20)]
    results = await asyncio.gather(*[db.run(_insert, n) for n in names])
    holder.join()
    assert results == names
    assert await db.read(_names) == set(names) | {"other"}


async def test_the_loop_runs_on_while_another_connection_holds_the_lock(
        db: Database, tmp_path: Path) -> None:
    # The writes run on the loop's thread: waiting for the lock there would
    # stall every request of the process. The loop polls for it instead.
    # The lock is held until the loop has turned 20 times with the write
    # queued: a writer waiting on the loop's thread would stall it for good.
    release = threading.Event()
    holder = await _lock_held_elsewhere(tmp_path / "g.db", 60.0, release)
    write = asyncio.ensure_future(db.run(_insert, "queued"))
    for _ in range(20):
        await asyncio.sleep(0.001)
        assert not write.done()
    release.set()
    assert await write == "queued"
    holder.join()


async def test_a_lock_held_past_the_limit_fails_the_unit_and_the_writer_goes_on(
        db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cirrus.db import groupcommit

    monkeypatch.setattr(groupcommit, "LOCK_WAIT_LIMIT", 0.2)
    holder = await _lock_held_elsewhere(tmp_path / "g.db", 1.0)
    import sqlite3

    # BEGIN goes straight to sqlite3 (engine.py): its own error, unwrapped.
    with pytest.raises((sa.exc.OperationalError, sqlite3.OperationalError), match="locked"):
        await db.run(_insert, "late")
    holder.join()
    assert await db.run(_insert, "after") == "after"
    assert await db.read(_names) == {"other", "after"}


BLOBS = sa.Table("blobs", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("data", sa.LargeBinary, nullable=False))


def _insert_blob(conn: sa.Connection) -> None:
    conn.execute(BLOBS.insert().values(data=b"x" * 8000))


async def test_the_writers_own_checkpoint_bounds_the_wal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The bound that keeps a WAL finite when the checkpointer thread never finds
    # a moment to let it start over. With no other connection the writer's own
    # checkpoint copies all of it, and the next commit starts the WAL over: its
    # file never holds much more than the bound (~500 frames and one commit).
    # The thread is kept from running, so no timing decides the outcome.
    from cirrus.db import checkpoint

    monkeypatch.setattr(checkpoint, "WRITER_CHECKPOINT_PAGES", 500)
    path = tmp_path / "wal.db"
    database = Database(f"sqlite:///{path}")
    assert database._checkpointer is not None
    database._checkpointer._every = 10 ** 9  # never nudged into running
    BLOBS.metadata.create_all(database.engine)
    try:
        for _ in range(1500):  # one commit each, 3 pages: 4,500 frames
            await database.run(_insert_blob)
        wal = Path(f"{path}-wal")
        assert wal.stat().st_size < 520 * 4200, wal.stat().st_size
        assert database._checkpointer.checkpoints == 0
        assert path.stat().st_size > 1000 * 8000  # the rows reached the database file
    finally:
        database.close()


async def test_the_checkpointer_copies_the_wal_beside_the_writer(tmp_path: Path) -> None:
    # Under the default (high) writer bound, the rows reach the database file
    # through the checkpointer thread alone.
    path = tmp_path / "wal.db"
    database = Database(f"sqlite:///{path}")
    BLOBS.metadata.create_all(database.engine)
    try:
        for _ in range(1500):
            await database.run(_insert_blob)
        for _ in range(1000):  # it runs on a thread: wait for it, however slow the machine
            if path.stat().st_size > 1000 * 8000:
                break
            await asyncio.sleep(0.01)
            await database.run(_insert_blob)  # a commit nudges it again
        assert database._checkpointer is not None and database._checkpointer.checkpoints > 0
        assert path.stat().st_size > 1000 * 8000
        assert await database.read(lambda c: c.execute(
            sa.select(sa.func.count()).select_from(BLOBS)).scalar()) >= 1500
    finally:
        database.close()
