"""The in-process bus: cast, call, server routing, fan-out, timeouts, typed errors."""
from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest

from cirrus.context import RequestContext
from cirrus.exception import NotFound
from cirrus.rpc import MessagingTimeout, RemoteError, RPCClient, RPCDispatcher, get_transport


class Endpoint:
    RPC_API = frozenset({"echo", "boom", "fail", "slow", "record"})

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[Any] = []

    async def echo(self, ctx: RequestContext, value: Any) -> Any:
        return {"from": self.name, "value": value, "project": ctx.project_id}

    async def boom(self, ctx: RequestContext) -> None:
        raise NotFound("it is gone")

    async def fail(self, ctx: RequestContext) -> None:
        raise ValueError("plain error")

    async def slow(self, ctx: RequestContext) -> None:
        await asyncio.sleep(5)

    async def record(self, ctx: RequestContext, value: Any) -> None:
        self.seen.append(value)

    async def secret(self, ctx: RequestContext) -> str:  # not in RPC_API
        return "no"


AMQP_URL = os.environ.get("CIRRUS_TEST_TRANSPORT_URL", "amqp://cirrus:cirrus@127.0.0.1:5672/cirrus")


@pytest.fixture(params=["inprocess://", AMQP_URL], ids=["inprocess", "amqp"])
async def bus(request: pytest.FixtureRequest) -> Any:
    """The same semantics on both transports (AMQP needs scripts/setup-rabbitmq.sh)."""
    transport = get_transport(request.param)
    try:
        await asyncio.wait_for(transport.start(), 10)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no RabbitMQ at {request.param}: {exc}")
    topic = f"t{uuid.uuid4().hex[:8]}"
    a, b = Endpoint("a"), Endpoint("b")
    await transport.listen(topic, "a", RPCDispatcher(a))
    await transport.listen(topic, "b", RPCDispatcher(b))
    yield _Bus(transport, topic), a, b
    await transport.stop()


class _Bus:
    """A transport bound to this test's topic."""

    def __init__(self, transport: Any, topic: str) -> None:
        self.transport, self.topic = transport, topic


async def test_call_to_a_named_server(bus: Any) -> None:
    transport, _, _ = bus
    client = RPCClient(transport.transport, transport.topic).prepare(server="b")
    ctx = RequestContext(project_id="p")
    assert await client.call(ctx, "echo", value=[1, "x"]) == {"from": "b", "value": [1, "x"],
                                                              "project": "p"}


async def test_cast_and_fanout(bus: Any) -> None:
    transport, a, b = bus
    client = RPCClient(transport.transport, transport.topic)
    await client.prepare(server="a").cast(RequestContext(), "record", value=1)
    await client.fanout(RequestContext(), "record", value=2)
    for _ in range(200):
        if a.seen == [1, 2] and b.seen == [2]:
            break
        await asyncio.sleep(0.01)
    assert sorted(a.seen) == [1, 2] and b.seen == [2]


async def test_typed_errors_cross_the_bus(bus: Any) -> None:
    transport, _, _ = bus
    client = RPCClient(transport.transport, transport.topic).prepare(server="a")
    with pytest.raises(NotFound, match="it is gone"):
        await client.call(RequestContext(), "boom")
    with pytest.raises(RemoteError, match="ValueError"):
        await client.call(RequestContext(), "fail")
    with pytest.raises(RemoteError, match="UnsupportedMethod"):
        await client.call(RequestContext(), "secret")


async def test_call_timeout_is_a_clear_error(bus: Any) -> None:
    transport, _, _ = bus
    client = RPCClient(transport.transport, transport.topic, timeout=0.2).prepare(server="a")
    with pytest.raises(MessagingTimeout, match="timed out"):
        await client.call(RequestContext(), "slow")


async def test_messages_must_be_json_safe(bus: Any) -> None:
    transport, _, _ = bus
    with pytest.raises(TypeError):
        await RPCClient(transport.transport, transport.topic).prepare(server="a").call(
            RequestContext(), "echo", value=object())
