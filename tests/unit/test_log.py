"""Request-scoped logs (cirrus/log.py): the JSON lines, the request ids a
caller may give, and the context travelling with an RPC message."""
from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any, Iterator

import pytest

from cirrus import log
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.rpc import RPCClient, RPCDispatcher, get_transport

GLOBAL = "req-0123abcd-0123-4567-89ab-0123456789ab"
INSTANCE = "6a1c3f1e-4b5c-4d6e-8f70-8192a3b4c5d6"


class Lines(logging.Handler):
    """The JSON lines a handler set up as ``setup_logging`` does writes."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[dict[str, Any]] = []
        self.setFormatter(log.formatter("json"))
        self.addFilter(log.ContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    logger = logging.getLogger("cirrus.test_log")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)


LOG = logging.getLogger("cirrus.test_log")


@pytest.mark.parametrize("value, valid", [
    (GLOBAL, True),
    ("req-0123ABCD-0123-4567-89ab-0123456789ab", False),  # upper case: oslo refuses it
    ("0123abcd-0123-4567-89ab-0123456789ab", False),  # no prefix
    ("req-0123abcd-0123-4567-89ab-0123456789ab0", False),  # too long
    ("req-", False), ("", False), (None, False),
    ("req-0123abcd-0123-4567-89ab-0123456789ab\n", False),  # no smuggled line end
])
def test_only_a_request_id_is_taken_as_the_global_id(value: str | None, valid: bool) -> None:
    assert log.valid_request_id(value) == (value if valid else None)


@pytest.mark.parametrize("bound, expected", [
    (log.LogContext(), {}),
    (log.LogContext("req-1", None, "p1", None), {"request_id": "req-1", "project_id": "p1"}),
    (log.LogContext("req-1", GLOBAL, "p1", INSTANCE),
     {"request_id": "req-1", "global_request_id": GLOBAL, "project_id": "p1",
      "instance_uuid": INSTANCE}),
])
def test_a_json_line_carries_the_requests_fields(lines: Lines, bound: log.LogContext,
                                                 expected: dict[str, str]) -> None:
    token = log.current.set(bound)
    try:
        LOG.info("building %s", "vm1")
    finally:
        log.current.reset(token)
    (line,) = lines.lines
    assert {k: line[k] for k in log.FIELDS if k in line} == expected
    assert line["message"] == "building vm1"
    assert (line["level"], line["logger"]) == ("INFO", "cirrus.test_log")
    assert line["time"].endswith("Z") and "T" in line["time"]


def test_an_exception_is_one_line_with_its_traceback(lines: Lines) -> None:
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        LOG.exception("failed")
    (line,) = lines.lines
    assert "Traceback" in line["exception"] and "ValueError" in line["exception"]
    assert "\n" not in json.dumps(line)


def test_the_text_format_stays_the_default() -> None:
    assert Settings().log_format == "text"
    assert not isinstance(log.formatter("text"), log.JSONFormatter)
    with pytest.raises(ValueError, match="log_format"):
        Settings(log_format="xml")


def test_the_global_id_sent_on_is_the_callers_else_the_requests() -> None:
    for bound, sent in [(log.LogContext("req-1", GLOBAL), GLOBAL),
                        (log.LogContext("req-1"), "req-1"), (log.LogContext(), None)]:
        token = log.current.set(bound)
        try:
            assert log.global_id() == sent
        finally:
            log.current.reset(token)


def test_the_context_crosses_the_bus_as_a_dict() -> None:
    ctx = RequestContext(project_id="p1", global_request_id=GLOBAL)
    back = RequestContext.from_dict(ctx.to_dict())
    assert (back.global_request_id, back.request_id) == (GLOBAL, ctx.request_id)
    assert ctx.elevated().global_request_id == GLOBAL
    assert RequestContext.from_dict({}).global_request_id is None


class Compute:
    """An endpoint whose work logs, in the handler and in a task it starts."""

    RPC_API = frozenset({"build_and_run_instance"})

    def __init__(self) -> None:
        self.done = asyncio.Event()

    async def build_and_run_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        LOG.info("handling")
        asyncio.get_running_loop().create_task(self._build())

    async def _build(self) -> None:
        LOG.info("building in the background")
        self.done.set()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout")
async def test_a_compute_logs_the_global_id_of_the_api_request(lines: Lines) -> None:
    transport = get_transport("inprocess://")
    compute = Compute()
    await transport.listen("compute", "h1", RPCDispatcher(compute))
    ctx = RequestContext(project_id="p1", global_request_id=GLOBAL)
    try:
        await RPCClient(transport, "compute", "h1").cast(ctx, "build_and_run_instance",
                                                         instance_uuid=INSTANCE)
        async with asyncio.timeout(10):
            await compute.done.wait()
    finally:
        await transport.stop()
    assert [line["message"] for line in lines.lines] == ["handling", "building in the background"]
    for line in lines.lines:
        assert (line["request_id"], line["global_request_id"]) == (ctx.request_id, GLOBAL)
        assert (line["project_id"], line["instance_uuid"]) == ("p1", INSTANCE)
    assert log.current.get() == log.LogContext()  # the sender's own context is untouched
