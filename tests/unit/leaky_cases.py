"""Tests that leak asyncio tasks, run by test_leaked_tasks.py in a child pytest.

Not collected by the suite itself (the name does not start with ``test_``)."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from cirrus.utils import spawn


async def test_leaks_a_task() -> None:
    spawn(asyncio.Event().wait(), "leaky-test-body")


@pytest.fixture
async def service_that_forgets() -> AsyncIterator[None]:
    spawn(asyncio.Event().wait(), "leaky-fixture-teardown")
    yield


async def test_fixture_leaks_a_task(service_that_forgets: None) -> None:
    pass


@pytest.fixture
async def service_that_stops() -> AsyncIterator[None]:
    task = spawn(asyncio.Event().wait(), "stopped-by-teardown")
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_stopped_task_is_no_leak(service_that_stops: None) -> None:
    pass


async def test_finished_task_is_no_leak() -> None:
    await spawn(asyncio.sleep(0), "finished", awaited=True)


def test_sync_test_is_left_alone() -> None:
    pass
