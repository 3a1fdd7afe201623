"""Handing a DB thread's results back to the event loop, in batches.

``asyncio.wrap_future`` over a ``concurrent.futures.Future`` costs, per unit of
work, a Condition, a chain of Python callbacks and one ``call_soon_threadsafe``
(a write to the loop's self-pipe and a wake-up of the loop thread). Under boot
load that is ~40–70 µs of CPU per unit under the GIL. Here a DB thread collects
the outcomes of everything it has finished and hands them over with a single
``call_soon_threadsafe``: one wake-up for a whole group commit.
"""
from __future__ import annotations

import asyncio
import queue
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


def new_unit(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any],
             closed: bool) -> Unit[T]:
    """A unit for the running loop; failed already (DatabaseClosed) if its
    database is ``closed`` — the caller queues it only if it is not done."""
    loop = asyncio.get_running_loop()
    unit = Unit(fn, args, kwargs, loop, loop.create_future())
    if closed:
        unit.future.set_exception(DatabaseClosed())
    return unit


def fail_left(units: "queue.SimpleQueue[Any]") -> None:
    """Fail with DatabaseClosed every unit left in a stopped thread's queue
    (its stop markers skipped): what slipped in behind the stop."""
    late: list[Delivery] = []
    while not units.empty():
        item = units.get_nowait()
        if isinstance(item, Unit):
            late.append((item.loop, item.future, False, DatabaseClosed()))
    deliver(late)


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
