"""Handing a DB thread's results back to the event loop, in batches.

``asyncio.wrap_future`` over a ``concurrent.futures.Future`` costs, per unit of
work, a Condition, a chain of Python callbacks and one ``call_soon_threadsafe``
(a write to the loop's self-pipe and a wake-up of the loop thread). Under boot
load that is ~40–70 µs of CPU per unit under the GIL. Here a DB thread collects
the outcomes of everything it has finished and hands them over with a single
``call_soon_threadsafe``: one wake-up for a whole group commit.

The hand-over itself goes through each loop's :class:`Inbox`, not
``call_soon_threadsafe``: uvloop's writes its wake-up while holding the GIL, and
on a busy machine the woken loop thread often preempts the writer right there,
so the GIL sits with a thread that cannot run (12.6 % of a compute process's
GIL samples under boot load, docs/performance.md "Round seven: the hand-back").
The inbox's ``os.eventfd_write`` releases the GIL for the syscall, and outcomes
that arrive while the loop has not drained the last ones need no wake-up at all.
"""
from __future__ import annotations

import asyncio
import collections
import os
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, TypeVar

T = TypeVar("T")

Outcome = tuple["asyncio.Future[Any]", bool, Any]  # (future, ok, result or exception)
# Where an outcome goes: (caller's loop, future, ok, result or exception).
Delivery = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", bool, Any]


class DatabaseClosed(RuntimeError):
    """A unit of work reached the database after it was closed (a task still
    running at shutdown): it fails at once instead of waiting for ever."""

    def __init__(self) -> None:
        super().__init__("the database is closed")


@dataclass(slots=True)
class Unit(Generic[T]):
    """A unit of work queued for a DB thread or a loop's group commit, and where
    its outcome goes."""

    fn: Callable[..., T]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    loop: asyncio.AbstractEventLoop  # the caller's, where ``future`` is settled
    future: asyncio.Future[T]


class Inbox:
    """Outcomes handed to one loop by DB threads: a deque, and an eventfd the
    loop reads (registered with ``add_reader`` on the loop's own thread). A
    thread appends, then writes the eventfd only if no wake-up is pending; the
    loop reads the eventfd, then clears ``pending``, then drains: an outcome
    appended before the drain is settled by it, and one appended after finds
    ``pending`` clear and writes a wake-up the read has not taken (the GIL
    orders the flag and the deque)."""

    __slots__ = ("_fd", "_items", "_pending", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._items: collections.deque[Outcome] = collections.deque()
        self._pending = False
        loop.add_reader(self._fd, self._drain)
        # The loop holds the reader, the reader this inbox: the descriptor
        # lives as long as the loop object, and a delivery in flight holds the
        # loop, so no thread writes to a descriptor closed (or reused) here.
        weakref.finalize(loop, os.close, self._fd)

    def post(self, items: list[Outcome]) -> None:
        """Hand ``items`` to the loop (from any thread)."""
        self._items.extend(items)
        if not self._pending:
            self._pending = True
            os.eventfd_write(self._fd, 1)  # the GIL is released for the write

    def _drain(self) -> None:
        # The wake-up consumed before ``pending`` is cleared: a thread that
        # then sees it clear writes a wake-up this drain cannot swallow.
        try:
            os.eventfd_read(self._fd)
        except BlockingIOError:  # a write seen by an earlier drain
            pass
        self._pending = False
        items = self._items
        taken = [items.popleft() for _ in range(len(items))]
        settle(taken)


_INBOXES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Inbox]" = \
    weakref.WeakKeyDictionary()


def inbox_for(loop: asyncio.AbstractEventLoop) -> Inbox:
    """The inbox of ``loop``, the running one (made on first use, on its own
    thread: ``add_reader`` is not thread-safe)."""
    inbox = _INBOXES.get(loop)
    if inbox is None:
        inbox = _INBOXES[loop] = Inbox(loop)
    return inbox


def new_unit(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any],
             closed: bool) -> Unit[T]:
    """A unit for the running loop; failed already (DatabaseClosed) if its
    database is ``closed`` — the caller queues it only if it is not done."""
    loop = asyncio.get_running_loop()
    if loop not in _INBOXES:
        inbox_for(loop)
    unit = Unit(fn, args, kwargs, loop, loop.create_future())
    if closed:
        unit.future.set_exception(DatabaseClosed())
    return unit


def fail_left(items: Iterable[Any]) -> None:
    """Fail with DatabaseClosed every unit left in a stopped pool's queue
    (its stop markers skipped): what slipped in behind the stop."""
    deliver([(item.loop, item.future, False, DatabaseClosed())
             for item in items if isinstance(item, Unit)])


def settle(outcomes: Iterable[Outcome]) -> None:
    """Settle futures of the running loop (from that loop's thread)."""
    for future, ok, value in outcomes:
        if future.done():  # cancelled by a caller that gave up without a shield
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def deliver(outcomes: Iterable[Delivery]) -> None:
    """Settle each future on its own loop, one hand-over per loop (called on a
    DB thread). A loop that has closed meanwhile has nobody left to tell."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for loop, future, ok, value in outcomes:
        by_loop.setdefault(loop, []).append((future, ok, value))
    for loop, items in by_loop.items():
        inbox = _INBOXES.get(loop)
        if inbox is not None:
            inbox.post(items)  # a closed loop never reads it: its callers are gone
            continue
        try:
            loop.call_soon_threadsafe(settle, items)
        except RuntimeError:  # the loop is closed: its callers are gone
            pass


async def settled(future: asyncio.Future[T]) -> T:
    """Await a unit's future; if the caller is cancelled, wait for the unit to
    end first (its transaction may still commit), so clean-up never races it."""
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait({future})
        raise
