"""The bus on both transports: cast, call, server routing, fan-out, timeouts, typed
errors; and, on AMQP, what a lost connection must not break."""
from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest

from cirrus.context import RequestContext
from cirrus.exception import NotFound
from cirrus.rpc import (ConnectionLost, MessagingTimeout, RemoteError, RPCClient, RPCDispatcher,
                        get_transport)


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


@pytest.fixture(params=["inprocess://", "local", AMQP_URL], ids=["inprocess", "local", "amqp"])
async def bus(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """The same semantics on every transport (AMQP needs scripts/setup-rabbitmq.sh).

    On the local bus, ``a`` listens on the hub and ``b`` on a peer, and the
    test sends through the peer: to ``b`` the message goes peer → hub → peer."""
    if request.param == "local":
        async for pair in _local_pair(tmp_path):
            yield pair
        return
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


async def _local_pair(tmp_path: Any) -> Any:
    url = f"local://{tmp_path}/bus.sock"
    hub, peer = get_transport(url, hub=True), get_transport(url)
    await hub.start()
    await peer.start()
    topic = f"t{uuid.uuid4().hex[:8]}"
    a, b = Endpoint("a"), Endpoint("b")
    await hub.listen(topic, "a", RPCDispatcher(a))
    await peer.listen(topic, "b", RPCDispatcher(b))
    await asyncio.sleep(0.05)  # the listen frame reaches the hub
    yield _Bus(peer, topic), a, b
    await peer.stop()
    await hub.stop()


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


# -- AMQP only: what a lost connection must not break ---------------------------------
class Gate:
    """An endpoint whose first ``hold`` blocks until released; it records every
    delivery, so a redelivery shows up as a second entry."""

    RPC_API = frozenset({"hold", "record", "slow"})

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.held_done = False  # the first, blocking ``hold`` ran to its end

    async def hold(self, ctx: RequestContext, value: Any) -> None:
        self.seen.append(value)
        if len(self.seen) == 1:
            self.entered.set()
            await self.release.wait()
            self.held_done = True

    async def record(self, ctx: RequestContext, value: Any) -> None:
        self.seen.append(value)

    async def slow(self, ctx: RequestContext) -> None:
        await asyncio.sleep(5)


@pytest.fixture
async def amqp() -> Any:
    """Two transports (a caller and a server process) on one fresh topic."""
    transports = [get_transport(AMQP_URL), get_transport(AMQP_URL)]
    try:
        for transport in transports:
            await asyncio.wait_for(transport.start(), 10)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no RabbitMQ at {AMQP_URL}: {exc}")
    topic = f"t{uuid.uuid4().hex[:8]}"
    gate = Gate()
    await transports[1].listen(topic, "s", RPCDispatcher(gate))
    yield transports[0], transports[1], topic, gate
    for transport in transports:
        await transport.stop()
    gate.release.set()


async def _drop(transport: Any) -> None:
    """Cut the connection under the transport, as a broker restart would: the
    socket goes, and the client learns it from the socket."""
    transport._conn.transport.abort()


async def _until(predicate: Any, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_amqp_cast_waits_for_the_reconnect(amqp: Any) -> None:
    """A cast published while the connection is down is not lost."""
    caller, _, topic, gate = amqp
    await _drop(caller)
    await RPCClient(caller, topic).prepare(server="s").cast(RequestContext(), "record", value=1)
    await _until(lambda: gate.seen == [1])


async def test_amqp_call_waits_for_the_reconnect_and_gets_its_reply(amqp: Any) -> None:
    """A call published after a reconnect names the new connection's reply queue
    (each connection has its own), so its reply finds it."""
    caller, _, topic, gate = amqp
    await _drop(caller)
    await asyncio.sleep(0)  # the loop runs connection_lost: the caller knows it is down
    assert not caller._ready.is_set()
    client = RPCClient(caller, topic, timeout=20).prepare(server="s")
    assert await client.call(RequestContext(), "record", value=1) is None
    assert gate.seen == [1]


async def test_amqp_a_call_is_sent_at_most_once(amqp: Any) -> None:
    """Calls are not confirmed: one written to a connection that dies before
    its reply fails with ConnectionLost, and is not published again on the
    next connection (a call's effect, a claim say, happens at most once)."""
    caller, _, topic, gate = amqp
    client = RPCClient(caller, topic, timeout=20).prepare(server="s")
    await _drop(caller)  # the caller learns it in the next loop iteration
    with pytest.raises(ConnectionLost):
        await client.call(RequestContext(), "record", value="lost")
    assert await client.call(RequestContext(), "record", value="after") is None
    await asyncio.sleep(0.3)  # a republished first call would have arrived by now
    assert gate.seen == ["after"]


async def test_amqp_call_fails_fast_when_the_connection_drops(amqp: Any) -> None:
    """A call in flight when the connection goes says so at once — no reply can
    come any more — instead of waiting out its timeout."""
    caller, _, topic, _ = amqp
    client = RPCClient(caller, topic, timeout=30).prepare(server="s")
    call = asyncio.ensure_future(client.call(RequestContext(), "slow"))
    await asyncio.sleep(0.3)
    started = asyncio.get_running_loop().time()
    await _drop(caller)
    with pytest.raises(ConnectionLost):
        await call
    assert asyncio.get_running_loop().time() - started < 5
    # and the transport works again once reconnected
    await client.cast(RequestContext(), "record", value="after")


async def test_amqp_unacked_cast_is_redelivered_and_the_stale_ack_is_dropped(amqp: Any) -> None:
    """A server that loses its connection mid-handler gets the cast again; when
    the first handler finishes, its ack (for a dead channel) is skipped rather
    than sent on the new channel, where it would close that channel."""
    caller, server, topic, gate = amqp
    client = RPCClient(caller, topic).prepare(server="s")
    await client.cast(RequestContext(), "hold", value="x")
    await asyncio.wait_for(gate.entered.wait(), 10)
    await _drop(server)
    await _until(lambda: gate.seen == ["x", "x"])  # the redelivery, while the first still runs
    gate.release.set()
    await client.cast(RequestContext(), "record", value="next")
    await _until(lambda: gate.seen[-1:] == ["next"])
    await asyncio.sleep(0.5)
    assert gate.seen == ["x", "x", "next"]  # nothing delivered a third time


async def test_amqp_a_server_answers_calls_again_after_its_connection_drops(amqp: Any) -> None:
    """Replies leave on a channel of their own (no confirms): it comes back with
    the connection, as the consuming channel does."""
    caller, server, topic, gate = amqp
    client = RPCClient(caller, topic, timeout=20).prepare(server="s")
    await _drop(server)
    # Sent while the server may still be reconnecting: the queue keeps it.
    assert await client.call(RequestContext(), "record", value="v") is None
    assert gate.seen == ["v"]


async def test_amqp_a_handler_outlives_its_connection(amqp: Any) -> None:
    """A lost connection must not cut short the handler of a delivery in flight
    (aio-pika's client cancelled its per-delivery tasks with the channel): work between
    two steps — a host recorded, its build not yet cast — would be left half
    done, and the redelivery would see it as done. Only the ack is dropped."""
    caller, server, topic, gate = amqp
    await RPCClient(caller, topic).prepare(server="s").cast(RequestContext(), "hold", value="x")
    await asyncio.wait_for(gate.entered.wait(), 10)
    await _drop(server)
    await asyncio.sleep(0.2)  # the channel's close has run by now
    gate.release.set()
    await _until(lambda: gate.held_done)


async def test_amqp_stop_cancels_the_handlers_still_running(amqp: Any) -> None:
    """Handlers run in the transport's own tasks: stop cancels them rather
    than leaving them running."""
    caller, server, topic, gate = amqp
    await RPCClient(caller, topic).prepare(server="s").cast(RequestContext(), "hold", value="x")
    await asyncio.wait_for(gate.entered.wait(), 10)
    assert len(server._tasks) == 1
    await asyncio.wait_for(server.stop(), 10)
    assert len(server._tasks) == 0 and gate.seen == ["x"]


async def test_amqp_stop_ends_the_reconnecting_and_the_publishes_waiting_for_it(
        amqp: Any) -> None:
    """With the broker out of reach, a cast waits for the reconnect; stop() ends
    both at once (the cast with MessagingTimeout), not at the cast's deadline."""
    import dataclasses
    import socket

    caller, _, topic, _ = amqp
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        caller.params = dataclasses.replace(caller.params, port=unused.getsockname()[1])
    await _drop(caller)
    cast = asyncio.ensure_future(
        RPCClient(caller, topic).prepare(server="s").cast(RequestContext(), "record", value=1))
    await asyncio.sleep(0.5)  # a few failed attempts
    assert not cast.done()
    await asyncio.wait_for(caller.stop(), 5)
    with pytest.raises(MessagingTimeout):
        await asyncio.wait_for(cast, 5)
    assert caller._reconnecting.done()


async def test_amqp_a_delivery_arriving_while_stopping_is_left_unacked(amqp: Any) -> None:
    """Once stop() has cancelled the handlers, a prefetched delivery that still
    arrives starts none (it would outlive the transport): the broker hands it
    out again when the connection closes."""
    from cirrus.rpc.amqp import wire
    from cirrus.rpc.amqp.connection import Delivery

    _, server, topic, _ = amqp
    on_delivery = next(cb for q, cb in server._consumers if q.base == f"{topic}.s")
    server._stopping = True
    on_delivery(Delivery(server._channel, 1, False, "cirrus", f"{topic}.s", wire.Properties(),
                         b'{"method": "record"}'))
    assert len(server._tasks) == 0


def test_the_wire_format_carries_what_json_carries_and_refuses_what_it_refuses() -> None:
    import datetime
    import json

    from cirrus.rpc.codec import decode, encode

    message = {"method": "m", "args": {"n": 2 ** 70, "keys": {1: "one"}, "text": "é\u2028",
                                       "nested": [None, True, 1.5, {"a": []}]}}
    assert decode(encode(message)) == json.loads(json.dumps(message))
    assert decode(json.dumps({"x": float("nan")}))["x"] != 0  # json's NaN still reads
    with pytest.raises(TypeError):
        encode({"when": datetime.datetime(2026, 1, 1)})
    with pytest.raises(TypeError):
        encode({"set": {1, 2}})
    with pytest.raises(ValueError):
        decode(b"{not json")


# -- in-process only: what the transport's shortcuts must keep ------------------------
class Keeper:
    """Keeps what it is sent and what it replies, to mutate them afterwards."""

    RPC_API = frozenset({"keep", "give", "hang"})

    def __init__(self) -> None:
        self.kept: list[Any] = []
        self.given: dict[str, Any] = {"nested": {"hosts": []}}
        self.kept_event = asyncio.Event()

    async def keep(self, ctx: RequestContext, spec: dict[str, Any]) -> None:
        self.kept.append(spec)
        self.kept_event.set()

    async def give(self, ctx: RequestContext, spec: dict[str, Any]) -> dict[str, Any]:
        self.kept.append(spec)
        return self.given

    async def hang(self, ctx: RequestContext) -> None:
        await asyncio.Event().wait()


@pytest.fixture
async def local() -> Any:
    transport = get_transport("inprocess://")
    await transport.start()
    keeper = Keeper()
    await transport.listen("k", "h", RPCDispatcher(keeper))
    yield RPCClient(transport, "k").prepare(server="h"), keeper
    await transport.stop()


async def test_inprocess_receiver_never_shares_objects_with_the_sender(local: Any) -> None:
    """Sender and receiver each own their copy, as across a broker: a cast's
    and a call's arguments, and a call's reply; tuples arrive as lists."""
    client, keeper = local
    spec = {"retry": {"hosts": [("h1", "n1")]}, "uuids": ["a"]}
    await client.cast(RequestContext(), "keep", spec=spec)
    await asyncio.wait_for(keeper.kept_event.wait(), 5)
    reply = await client.call(RequestContext(), "give", spec=spec)
    for received in keeper.kept:
        assert received == {"retry": {"hosts": [["h1", "n1"]]}, "uuids": ["a"]}
        received["retry"]["hosts"].append("mine")
        received["uuids"].clear()
    assert spec == {"retry": {"hosts": [("h1", "n1")]}, "uuids": ["a"]}
    assert keeper.kept[0] is not keeper.kept[1]
    reply["nested"]["hosts"].append("x")
    assert keeper.given == {"nested": {"hosts": []}}


async def test_inprocess_call_deadline_and_outer_cancel(local: Any) -> None:
    """The deadline stops a hung handler with MessagingTimeout and leaves the
    caller's task without a cancel request; cancelling the caller cancels the
    call (not a MessagingTimeout)."""
    client, _ = local
    with pytest.raises(MessagingTimeout, match="timed out"):
        await client.prepare(timeout=0.05).call(RequestContext(), "hang")
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]

    caller = asyncio.ensure_future(client.prepare(timeout=30).call(RequestContext(), "hang"))
    await asyncio.sleep(0.01)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller


# -- local bus only: the hub, its peers, and either going away --------------------------
@pytest.fixture
async def hub_and_peer(tmp_path: Any) -> Any:
    url = f"local://{tmp_path}/bus.sock"
    hub, peer = get_transport(url, hub=True), get_transport(url)
    await hub.start()
    await peer.start()
    yield hub, peer
    await peer.stop()
    await hub.stop()


async def test_local_peer_waits_for_a_hub_that_is_still_starting(tmp_path: Any) -> None:
    url = f"local://{tmp_path}/bus.sock"
    peer, hub = get_transport(url), get_transport(url, hub=True)
    connecting = asyncio.ensure_future(peer.start())
    await asyncio.sleep(0.3)
    assert not connecting.done()
    await hub.start()
    await asyncio.wait_for(connecting, 5)
    gate = Gate()
    await hub.listen("t", "s", RPCDispatcher(gate))
    await RPCClient(peer, "t").prepare(server="s").cast(RequestContext(), "record", value=1)
    await _until(lambda: gate.seen == [1], 5)
    await peer.stop()
    await hub.stop()


async def test_local_many_casts_all_arrive_in_order(hub_and_peer: Any) -> None:
    """Frames sent in one loop iteration leave in one write and are split again."""
    hub, peer = hub_and_peer
    gate = Gate()
    await hub.listen("t", "s", RPCDispatcher(gate))
    client = RPCClient(peer, "t").prepare(server="s")
    for i in range(2000):
        await client.cast(RequestContext(), "record", value={"i": i, "pad": "x" * (i % 300)})
    await _until(lambda: len(gate.seen) == 2000, 10)
    assert [v["i"] for v in gate.seen] == list(range(2000))


async def test_local_call_fails_at_once_when_the_hub_goes(hub_and_peer: Any) -> None:
    hub, peer = hub_and_peer
    gate = Gate()
    await hub.listen("t", "s", RPCDispatcher(gate))
    call = asyncio.ensure_future(RPCClient(peer, "t", timeout=30).prepare(server="s").call(
        RequestContext(), "slow"))
    await asyncio.sleep(0.2)
    await hub.stop()
    with pytest.raises(ConnectionLost):
        await asyncio.wait_for(call, 5)
    await asyncio.wait_for(peer.wait_lost(), 5)
    with pytest.raises(ConnectionLost):  # and says so, instead of writing into nothing
        await RPCClient(peer, "t").cast(RequestContext(), "record", value=1)


async def test_local_a_peer_that_goes_takes_its_listeners(hub_and_peer: Any,
                                                          tmp_path: Any) -> None:
    """A call to a peer that left fails (no hang); a call waiting on it when it
    left fails at once; a cast to it is dropped."""
    hub, peer = hub_and_peer
    gate = Gate()
    await peer.listen("t", "gone", RPCDispatcher(gate))
    await asyncio.sleep(0.05)
    client = RPCClient(hub, "t", timeout=30).prepare(server="gone")
    waiting = asyncio.ensure_future(client.call(RequestContext(), "slow"))
    await asyncio.sleep(0.2)
    await peer.stop()
    with pytest.raises(ConnectionLost):
        await asyncio.wait_for(waiting, 5)
    with pytest.raises(MessagingTimeout, match="no consumer"):
        await client.call(RequestContext(), "record", value=1)
    await client.cast(RequestContext(), "record", value=2)  # dropped, not raised


async def test_local_a_malformed_frame_closes_only_that_connection(hub_and_peer: Any,
                                                                   tmp_path: Any) -> None:
    hub, peer = hub_and_peer
    reader, writer = await asyncio.open_unix_connection(str(tmp_path / "bus.sock"))
    writer.write(b"\x00\x00\x00\x05{not}")
    assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the hub
    gate = Gate()
    await hub.listen("t", "s", RPCDispatcher(gate))
    await RPCClient(peer, "t").prepare(server="s").cast(RequestContext(), "record", value=1)
    await _until(lambda: gate.seen == [1], 5)


async def test_local_hub_removes_its_socket_when_it_stops(tmp_path: Any) -> None:
    hub = get_transport(f"local://{tmp_path}/bus.sock", hub=True)
    await hub.start()
    assert (tmp_path / "bus.sock").is_socket()
    await hub.stop()
    assert not (tmp_path / "bus.sock").exists()


def test_the_bus_socket_path_fits_a_unix_socket_address(tmp_path: Any) -> None:
    """sun_path holds 108 bytes: a deep state dir gets its socket elsewhere."""
    from cirrus.cli.workers import bus_path
    from cirrus.config import Settings

    assert bus_path(Settings(state_dir=tmp_path)) == str(tmp_path.resolve() / "bus.sock")
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    path = bus_path(Settings(state_dir=deep))
    assert len(path.encode()) <= 100 and path.endswith("/bus.sock")
    assert not path.startswith(str(tmp_path))
