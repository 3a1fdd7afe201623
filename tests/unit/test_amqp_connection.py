"""The AMQP connection (cirrus.rpc.amqp.connection) against a scripted broker:
the handshake and what it negotiates, confirms, deliveries in pieces, flow
control, heartbeats, and every way a connection ends. No socket: frames go in
through ``data_received`` and come out of a fake transport."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cirrus.rpc.amqp import wire
from cirrus.rpc.amqp.connection import (Channel, Connection, ConnectionClosed, Delivery, Nacked,
                                        Params)


class FakeSocket(asyncio.Transport):
    """What the connection writes, kept; closing tells the protocol as asyncio would."""

    def __init__(self, protocol: Connection) -> None:
        super().__init__()
        self.protocol = protocol
        self.written = bytearray()
        self.writes = 0
        self.closing = False

    def write(self, data: Any) -> None:
        self.written += data
        self.writes += 1

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.abort()

    def abort(self) -> None:
        if not self.closing:
            self.closing = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def methods(self) -> list[tuple[int, str, wire.Arguments]]:
        """The method frames written so far, decoded (and forgotten)."""
        data = bytes(self.written)
        self.written.clear()
        if data.startswith(wire.PROTOCOL_HEADER):
            data = data[len(wire.PROTOCOL_HEADER):]
        return [(ch, *wire.decode_method(p)) for kind, ch, p in wire.FrameReader().feed(data)
                if kind == wire.FRAME_METHOD]


async def _turn() -> None:
    """Let the loop run what the connection scheduled (its coalesced write)."""
    for _ in range(3):
        await asyncio.sleep(0)


def _feed(conn: Connection, *frames: bytes) -> None:
    conn.data_received(b"".join(frames))


def _method(channel: int, name: str, **args: Any) -> bytes:
    return wire.method_frame(channel, name, **args)


START = _method(0, "connection.start", version_major=0, version_minor=9,
                server_properties={"product": "RabbitMQ", "capabilities": {"basic.nack": True}},
                mechanisms=b"AMQPLAIN PLAIN", locales=b"en_US")


class Broker:
    """A connection, its fake socket and what ``on_lost`` was told."""

    def __init__(self, params: Params) -> None:
        self.lost: list[Exception] = []
        self.conn = Connection(params, lambda _conn, exc: self.lost.append(exc))
        self.socket = FakeSocket(self.conn)
        self.conn.connection_made(self.socket)

    async def handshake(self, heartbeat: int = 60, frame_max: int = 131072) -> list[Any]:
        _feed(self.conn, START)
        await _turn()
        sent = self.socket.methods()
        _feed(self.conn, _method(0, "connection.tune", channel_max=2047, frame_max=frame_max,
                                 heartbeat=heartbeat))
        await _turn()
        sent += self.socket.methods()
        _feed(self.conn, _method(0, "connection.open_ok"))
        await asyncio.wait_for(self.conn.opened, 1)
        return sent

    async def channel(self, number: int = 1) -> Channel:
        opening = asyncio.ensure_future(self.conn.channel(number))
        await _turn()
        assert self.socket.methods() == [(number, "channel.open", {"out_of_band": ""})]
        _feed(self.conn, _method(number, "channel.open_ok"))
        return await asyncio.wait_for(opening, 1)


@pytest.fixture
async def broker() -> Broker:
    broker = Broker(Params(user="cirrus", password="s3cret", vhost="cirrus", heartbeat=30))
    await broker.handshake()
    return broker


async def test_the_handshake_logs_in_with_plain_and_opens_the_vhost() -> None:
    broker = Broker(Params(user="cirrus", password="s3cret", vhost="cirrus", heartbeat=30))
    assert bytes(broker.socket.written) == wire.PROTOCOL_HEADER
    sent = await broker.handshake()
    assert [name for _, name, _ in sent] == ["connection.start_ok", "connection.tune_ok",
                                             "connection.open"]
    start_ok = sent[0][2]
    assert (start_ok["mechanism"], start_ok["response"]) == ("PLAIN", b"\0cirrus\0s3cret")
    assert start_ok["client_properties"]["capabilities"]["publisher_confirms"] is True
    assert sent[2][2]["virtual_host"] == "cirrus"


@pytest.mark.parametrize("server, ours, agreed", [
    ((60, 131072), 30, (30, 131072)),  # the lower heartbeat
    ((10, 131072), 60, (10, 131072)),
    ((0, 131072), 30, (0, 131072)),  # 0 on either side: none
    ((60, 131072), 0, (0, 131072)),
    ((60, 4096), 60, (60, 4096)),  # the broker's smaller frames
    ((60, 0), 60, (60, 131072)),  # 0: no limit from the broker, ours then
    ((60, 1 << 20), 60, (60, 131072)),
])
async def test_tune_agrees_heartbeat_and_frame_size(server: tuple[int, int], ours: int,
                                                    agreed: tuple[int, int]) -> None:
    broker = Broker(Params(heartbeat=ours))
    sent = await broker.handshake(heartbeat=server[0], frame_max=server[1])
    tune_ok = sent[1][2]
    assert (tune_ok["heartbeat"], tune_ok["frame_max"]) == agreed
    assert (broker.conn.heartbeat, broker.conn.frame_max) == agreed


async def test_a_broker_without_plain_is_refused() -> None:
    broker = Broker(Params())
    _feed(broker.conn, _method(0, "connection.start", mechanisms=b"EXTERNAL", locales=b"en_US"))
    with pytest.raises(ConnectionClosed, match="PLAIN"):
        await asyncio.wait_for(broker.conn.opened, 1)


async def test_refused_login_fails_the_open_with_the_brokers_reason() -> None:
    broker = Broker(Params())
    _feed(broker.conn, START)
    _feed(broker.conn, _method(0, "connection.close", reply_code=403,
                               reply_text="ACCESS_REFUSED - Login was refused"))
    with pytest.raises(ConnectionClosed, match="403 ACCESS_REFUSED"):
        await asyncio.wait_for(broker.conn.opened, 1)


async def test_writes_of_one_loop_iteration_leave_in_one_write(broker: Broker) -> None:
    channel = await broker.channel()
    before = broker.socket.writes
    for tag in range(1, 51):
        channel.ack(tag)
    channel.publish("cirrus", "conductor", b"\x00\x00", b"{}")
    await _turn()
    assert broker.socket.writes == before + 1
    assert [args["delivery_tag"] for _, name, args in broker.socket.methods()
            if name == "basic.ack"] == list(range(1, 51))


async def test_confirms_resolve_their_publishes_singly_multiply_or_nacked(broker: Broker) -> None:
    channel = await broker.channel()
    confirming = asyncio.ensure_future(channel.confirm_select())
    await _turn()
    _feed(broker.conn, _method(1, "confirm.select_ok"))
    await confirming
    futures = [channel.publish("cirrus", "k", b"\x00\x00", b"{}") for _ in range(4)]
    _feed(broker.conn, _method(1, "basic.ack", delivery_tag=2, multiple=True),
          _method(1, "basic.nack", delivery_tag=3, requeue=False))
    assert [f.done() for f in futures if f] == [True, True, True, False]
    assert futures[0] and futures[0].result() is None
    assert futures[2] and isinstance(futures[2].exception(), Nacked)
    broker.socket.abort()  # the last one's confirm is lost with the connection
    await _turn()
    assert futures[3] and isinstance(futures[3].exception(), ConnectionClosed)


async def test_a_delivery_in_pieces_reaches_its_consumer_whole(broker: Broker) -> None:
    channel = await broker.channel()
    got: list[Delivery] = []
    consuming = asyncio.ensure_future(channel.consume("conductor", got.append))
    await _turn()
    (_, _, args), = broker.socket.methods()
    _feed(broker.conn, _method(1, "basic.consume_ok", consumer_tag=args["consumer_tag"]))
    await consuming
    props = wire.Properties(content_type="application/json", reply_to="r", correlation_id="7")
    stream = b"".join([
        _method(1, "basic.deliver", consumer_tag=args["consumer_tag"], delivery_tag=1,
                exchange="cirrus", routing_key="conductor"),
        wire.content_header(1, 6, props.encode()),
        wire.frame(wire.FRAME_BODY, 1, b'{"a":'), wire.frame(wire.FRAME_BODY, 1, b"1}"),
        _method(1, "basic.deliver", consumer_tag=args["consumer_tag"], delivery_tag=2,
                redelivered=True, exchange="cirrus", routing_key="conductor"),
        wire.content_header(1, 0, props.encode()),
    ])
    for i in range(len(stream)):  # a byte at a time
        broker.conn.data_received(stream[i:i + 1])
    assert [(d.delivery_tag, d.redelivered, d.body, d.properties) for d in got] == [
        (1, False, b'{"a":1}', props), (2, True, b"", props)]
    assert got[0].channel is channel


async def test_blocked_and_unblocked_gate_publishers(broker: Broker) -> None:
    _feed(broker.conn, _method(0, "connection.blocked", reason="low on memory"))
    assert not broker.conn.unblocked.is_set()
    _feed(broker.conn, _method(0, "connection.unblocked"))
    assert broker.conn.unblocked.is_set()


async def test_a_channel_closed_by_the_broker_ends_the_connection(broker: Broker) -> None:
    channel = await broker.channel()
    declaring = asyncio.ensure_future(channel.queue_declare("q", durable=True))
    await _turn()
    _feed(broker.conn, _method(1, "channel.close", reply_code=406,
                               reply_text="PRECONDITION_FAILED - inequivalent arg 'durable'",
                               class_id=50, method_id=10))
    with pytest.raises(ConnectionClosed, match="406 PRECONDITION_FAILED"):
        await declaring
    await _turn()
    assert broker.socket.closing and len(broker.lost) == 1
    with pytest.raises(ConnectionClosed):  # nothing more is written
        channel.ack(1)


async def test_the_brokers_close_is_answered_and_reported_once(broker: Broker) -> None:
    _feed(broker.conn, _method(0, "connection.close", reply_code=320,
                               reply_text="CONNECTION_FORCED - broker shutdown"))
    assert [name for _, name, _ in broker.socket.methods()] == ["connection.close_ok"]
    await _turn()  # and then the socket's own connection_lost
    assert len(broker.lost) == 1 and "320 CONNECTION_FORCED" in str(broker.lost[0])


async def test_our_close_waits_for_close_ok(broker: Broker) -> None:
    closing = asyncio.ensure_future(broker.conn.close())
    await _turn()
    assert [name for _, name, _ in broker.socket.methods()] == ["connection.close"]
    _feed(broker.conn, _method(0, "connection.close_ok"))
    await asyncio.wait_for(closing, 1)
    assert broker.socket.closing and broker.conn.is_closed


async def test_heartbeats_are_sent_when_idle_and_silence_ends_the_connection(
        broker: Broker) -> None:
    conn, now = broker.conn, broker.conn.loop.time()
    conn._sent = conn._received = now - conn.heartbeat / 2 - 1
    conn._heartbeat()
    assert bytes(broker.socket.written).endswith(wire.HEARTBEAT_FRAME)
    conn._received = now - 2 * conn.heartbeat - 1
    conn._heartbeat()
    await _turn()
    assert conn.is_closed and "missed heartbeats" in str(broker.lost[0])


async def test_a_malformed_frame_ends_the_connection(broker: Broker) -> None:
    broker.conn.data_received(b"\x01\x00\x00\x00\x00\x00\x04\x00\x0a\x00\x0a\x00")  # bad end
    await _turn()
    assert broker.conn.is_closed and "malformed" in str(broker.lost[0])


@pytest.mark.parametrize("url, params", [
    ("amqp://cirrus:cirrus@127.0.0.1:5672/cirrus",
     Params("127.0.0.1", 5672, "cirrus", "cirrus", "cirrus", 60)),
    ("amqp://mq.example", Params("mq.example", 5672, "guest", "guest", "/", 60)),
    ("amqp://u:p%40ss@h:5673/%2F?heartbeat=10", Params("h", 5673, "u", "p@ss", "/", 10)),
    ("amqp://u:p@h/", Params("h", 5672, "u", "p", "/", 60)),
])
def test_urls_give_their_connection_parameters(url: str, params: Params) -> None:
    assert Params.from_url(url) == params


def test_other_schemes_are_refused() -> None:
    with pytest.raises(ValueError):
        Params.from_url("amqps://h/")
