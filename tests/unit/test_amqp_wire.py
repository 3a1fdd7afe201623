"""AMQP 0-9-1 framing (cirrus.rpc.amqp.wire): every method cirrus sends or
receives, encoded and decoded, checked against pamqp's encoding (an independent
implementation of the same spec); the hot-path twins against the generic
codec; frames however the socket cuts or joins them."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from cirrus.rpc.amqp import wire

pamqp = pytest.importorskip("pamqp")
from pamqp import commands as c  # noqa: E402
from pamqp import frame as pf  # noqa: E402
from pamqp import header as ph  # noqa: E402

SERVER_PROPS: dict[str, Any] = {
    "product": "RabbitMQ", "capabilities": {"publisher_confirms": True, "basic.nack": True}}

# (method, its fields as cirrus writes them, the same as pamqp builds it)
METHODS: list[tuple[str, dict[str, Any], Callable[[], Any]]] = [
    ("connection.start", {"version_major": 0, "version_minor": 9,
                          "server_properties": SERVER_PROPS, "mechanisms": b"AMQPLAIN PLAIN",
                          "locales": b"en_US"},
     lambda: c.Connection.Start(server_properties=SERVER_PROPS, mechanisms="AMQPLAIN PLAIN")),
    ("connection.start_ok", {"client_properties": {"product": "cirrus"}, "mechanism": "PLAIN",
                             "response": b"\0u\0p", "locale": "en_US"},
     lambda: c.Connection.StartOk(client_properties={"product": "cirrus"},
                                  response="\0u\0p")),
    ("connection.tune", {"channel_max": 2047, "frame_max": 131072, "heartbeat": 60},
     lambda: c.Connection.Tune(2047, 131072, 60)),
    ("connection.tune_ok", {"channel_max": 16, "frame_max": 131072, "heartbeat": 30},
     lambda: c.Connection.TuneOk(16, 131072, 30)),
    ("connection.open", {"virtual_host": "cirrus", "capabilities": "", "insist": False},
     lambda: c.Connection.Open("cirrus")),
    ("connection.open_ok", {"known_hosts": ""}, lambda: c.Connection.OpenOk()),
    ("connection.close", {"reply_code": 320, "reply_text": "CONNECTION_FORCED", "class_id": 0,
                          "method_id": 0},
     lambda: c.Connection.Close(320, "CONNECTION_FORCED", 0, 0)),
    ("connection.close_ok", {}, lambda: c.Connection.CloseOk()),
    ("connection.blocked", {"reason": "low on memory"},
     lambda: c.Connection.Blocked("low on memory")),
    ("connection.unblocked", {}, lambda: c.Connection.Unblocked()),
    ("channel.open", {"out_of_band": "0"}, lambda: c.Channel.Open()),
    ("channel.open_ok", {"channel_id": b"0"}, lambda: c.Channel.OpenOk()),
    ("channel.flow", {"active": True}, lambda: c.Channel.Flow(True)),
    ("channel.flow_ok", {"active": False}, lambda: c.Channel.FlowOk(False)),
    ("channel.close", {"reply_code": 406, "reply_text": "PRECONDITION_FAILED - unknown tag",
                       "class_id": 60, "method_id": 80},
     lambda: c.Channel.Close(406, "PRECONDITION_FAILED - unknown tag", 60, 80)),
    ("channel.close_ok", {}, lambda: c.Channel.CloseOk()),
    ("exchange.declare", {"ticket": 0, "exchange": "compute_fanout", "type": "fanout",
                          "passive": False, "durable": True, "auto_delete": False,
                          "internal": False, "nowait": False, "arguments": {}},
     lambda: c.Exchange.Declare(exchange="compute_fanout", exchange_type="fanout",
                                durable=True)),
    ("exchange.declare_ok", {}, lambda: c.Exchange.DeclareOk()),
    ("queue.declare", {"ticket": 0, "queue": "reply.ab", "passive": False, "durable": False,
                       "exclusive": True, "auto_delete": True, "nowait": False,
                       "arguments": {"x-queue-type": "classic"}},
     lambda: c.Queue.Declare(queue="reply.ab", exclusive=True, auto_delete=True,
                             arguments={"x-queue-type": "classic"})),
    ("queue.declare_ok", {"queue": "conductor", "message_count": 3, "consumer_count": 2},
     lambda: c.Queue.DeclareOk("conductor", 3, 2)),
    ("queue.bind", {"ticket": 0, "queue": "compute.h1", "exchange": "cirrus",
                    "routing_key": "compute.h1", "nowait": False, "arguments": {}},
     lambda: c.Queue.Bind(queue="compute.h1", exchange="cirrus", routing_key="compute.h1")),
    ("queue.bind_ok", {}, lambda: c.Queue.BindOk()),
    ("basic.qos", {"prefetch_size": 0, "prefetch_count": 64, "global": False},
     lambda: c.Basic.Qos(prefetch_count=64)),
    ("basic.qos_ok", {}, lambda: c.Basic.QosOk()),
    ("basic.consume", {"ticket": 0, "queue": "conductor", "consumer_tag": "ctag1.1",
                       "no_local": False, "no_ack": True, "exclusive": False, "nowait": False,
                       "arguments": {}},
     lambda: c.Basic.Consume(queue="conductor", consumer_tag="ctag1.1", no_ack=True)),
    ("basic.consume_ok", {"consumer_tag": "ctag1.1"}, lambda: c.Basic.ConsumeOk("ctag1.1")),
    ("basic.cancel", {"consumer_tag": "ctag1.1", "nowait": True},
     lambda: c.Basic.Cancel("ctag1.1", nowait=True)),
    ("basic.cancel_ok", {"consumer_tag": "ctag1.1"}, lambda: c.Basic.CancelOk("ctag1.1")),
    ("basic.publish", {"ticket": 0, "exchange": "cirrus", "routing_key": "conductor",
                       "mandatory": False, "immediate": False},
     lambda: c.Basic.Publish(exchange="cirrus", routing_key="conductor")),
    ("basic.return", {"reply_code": 312, "reply_text": "NO_ROUTE", "exchange": "cirrus",
                      "routing_key": "nowhere"},
     lambda: c.Basic.Return(312, "NO_ROUTE", "cirrus", "nowhere")),
    ("basic.deliver", {"consumer_tag": "ctag1.2", "delivery_tag": 2 ** 40 + 7,
                       "redelivered": True, "exchange": "cirrus", "routing_key": "compute.h1"},
     lambda: c.Basic.Deliver("ctag1.2", 2 ** 40 + 7, True, "cirrus", "compute.h1")),
    ("basic.ack", {"delivery_tag": 12, "multiple": True}, lambda: c.Basic.Ack(12, True)),
    ("basic.reject", {"delivery_tag": 5, "requeue": False}, lambda: c.Basic.Reject(5, False)),
    ("basic.nack", {"delivery_tag": 9, "multiple": False, "requeue": True},
     lambda: c.Basic.Nack(9, False, True)),
    ("confirm.select", {"nowait": False}, lambda: c.Confirm.Select()),
    ("confirm.select_ok", {}, lambda: c.Confirm.SelectOk()),
]


@pytest.mark.parametrize("name, args, theirs", METHODS, ids=[m[0] for m in METHODS])
def test_each_method_encodes_as_the_spec_says_and_decodes_back(
        name: str, args: dict[str, Any], theirs: Callable[[], Any]) -> None:
    ours, reference = wire.method_frame(3, name, **args), pf.marshal(theirs(), 3)
    if not any(isinstance(v, dict) and v for v in args.values()):
        assert ours == reference  # field tables: pamqp picks other (smaller) value tags
    for frame in (ours, reference):
        kind, channel, payload = wire.FrameReader().feed(frame)[0]
        assert (kind, channel) == (wire.FRAME_METHOD, 3)
        assert wire.decode_method(payload) == (name, args)


def test_every_method_cirrus_uses_is_in_the_table() -> None:
    assert {m[0] for m in METHODS} == set(wire.BY_NAME)


@pytest.mark.parametrize("args, error", [
    ({"queue": "q" * 256}, ValueError),  # a shortstr holds 255 octets
    ({"queue": "q", "colour": "red"}, TypeError),  # no such field
    ({"queue": "q", "arguments": {"x": object()}}, TypeError),  # no field type for it
])
def test_what_cannot_be_encoded_is_refused(args: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        wire.encode_method("queue.declare", **args)


@pytest.mark.parametrize("payload", [
    b"\x00\x0a",  # ids cut short
    b"\x00\x63\x00\x01",  # a method cirrus does not know
    b"\x00\x32\x00\x0b\x09conduc",  # queue.declare_ok's name cut short
], ids=["short-ids", "unknown", "truncated-field"])
def test_malformed_methods_are_frame_errors(payload: bytes) -> None:
    with pytest.raises(wire.FrameError):
        wire.decode_method(payload)


TABLE = {"s": "é", "t": True, "f": False, "i": -5, "big": 2 ** 40, "d": 1.5, "none": None,
         "bytes": b"\x00\x01", "nested": {"a": [1, "x", {"b": None}]}}


def test_field_tables_round_trip_every_value_type_cirrus_writes() -> None:
    payload = wire.encode_method("queue.declare", queue="q", arguments=TABLE)
    assert wire.decode_method(payload)[1]["arguments"] == TABLE


def test_field_tables_read_the_tags_rabbitmq_writes() -> None:
    """pamqp writes small ints with the smallest tag ('b', 's', …) and
    timestamps and decimals: all of them read."""
    import datetime
    import decimal

    when = datetime.datetime(2026, 11, 26, tzinfo=datetime.timezone.utc)
    table: dict[str, Any] = {"b": 1, "s": 300, "l": 2 ** 40, "dec": decimal.Decimal("1.25"), "ts": when,
             "arr": [1, 2]}
    payload = pf.marshal(c.Queue.Declare(queue="q", arguments=table), 0)[7:-1]
    got = wire.decode_method(payload)[1]["arguments"]
    assert got == {"b": 1, "s": 300, "l": 2 ** 40, "dec": 1.25, "ts": int(when.timestamp()),
                   "arr": [1, 2]}


# -- content ---------------------------------------------------------------------------
PROPERTIES = [
    wire.Properties(),
    wire.Properties(content_type="application/json", delivery_mode=2),
    wire.Properties(content_type="application/json", correlation_id="17",
                    reply_to="reply.abc", expiration="60000"),
    wire.Properties(content_type="application/json", headers={"x-retry": 1, "who": "me"},
                    delivery_mode=1, correlation_id="c"),
]


@pytest.mark.parametrize("props", PROPERTIES)
def test_properties_match_pamqp_and_round_trip(props: wire.Properties) -> None:
    theirs = c.Basic.Properties(content_type=props.content_type, headers=props.headers,
                                delivery_mode=props.delivery_mode,
                                correlation_id=props.correlation_id, reply_to=props.reply_to,
                                expiration=props.expiration)
    ours, reference = (wire.content_header(1, 42, props.encode()),
                       pf.marshal(ph.ContentHeader(0, 42, theirs), 1))
    if not props.headers:
        assert ours == reference  # headers: pamqp picks other (smaller) value tags
    for frame in (ours, reference):
        assert wire.decode_content_header(wire.FrameReader().feed(frame)[0][2]) == (42, props)


def test_properties_cirrus_does_not_keep_are_read_past() -> None:
    import datetime

    theirs = c.Basic.Properties(content_type="a", content_encoding="gzip", priority=3,
                                correlation_id="c", message_id="m",
                                timestamp=datetime.datetime(2026, 1, 1), message_type="t",
                                user_id="u", app_id="app", reply_to="r")
    frame = pf.marshal(ph.ContentHeader(0, 7, theirs), 1)
    size, props = wire.decode_content_header(frame[7:-1])
    assert (size, props) == (7, wire.Properties(content_type="a", correlation_id="c",
                                                reply_to="r"))


@pytest.mark.parametrize("size", [0, 1, 4088, 4089, 10_000])
def test_a_publish_is_one_write_split_into_frame_max_bodies(size: int) -> None:
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    props = PROPERTIES[1].encode()
    ours = wire.publish_frames(1, "cirrus", "conductor", props, body, frame_max=4096)
    frames = list(wire.FrameReader().feed(ours))
    assert frames[0] == (wire.FRAME_METHOD, 1, wire.encode_method(
        "basic.publish", exchange="cirrus", routing_key="conductor"))
    assert wire.decode_content_header(frames[1][2]) == (size, PROPERTIES[1])
    assert all(kind == wire.FRAME_BODY and len(p) <= 4088 for kind, _, p in frames[2:])
    assert b"".join(p for _, _, p in frames[2:]) == body
    assert len(frames) == 2 + -(-size // 4088)


def test_the_hot_path_twins_agree_with_the_generic_codec() -> None:
    assert wire.ack_frame(2, 2 ** 33 + 1) == wire.method_frame(2, "basic.ack",
                                                               delivery_tag=2 ** 33 + 1)
    name, args = METHODS[[m[0] for m in METHODS].index("basic.deliver")][:2]
    payload = wire.encode_method(name, **args)
    assert wire.decode_deliver(payload)._asdict() == args
    ack = wire.encode_method("basic.ack", delivery_tag=12, multiple=True)
    assert wire.decode_ack(ack) == (12, True)
    with pytest.raises(wire.FrameError):
        wire.decode_deliver(payload[:-3])


# -- a stream of frames ------------------------------------------------------------------
STREAM = b"".join([
    wire.method_frame(1, "basic.deliver", consumer_tag="t", delivery_tag=1,
                      exchange="cirrus", routing_key="k"),
    wire.content_header(1, 3, PROPERTIES[1].encode()),
    wire.frame(wire.FRAME_BODY, 1, b"abc"),
    wire.HEARTBEAT_FRAME,
    wire.ack_frame(1, 4),
])


def _frames(chunks: list[bytes]) -> list[tuple[int, int, bytes]]:
    reader = wire.FrameReader()
    return [f for chunk in chunks for f in reader.feed(chunk)]


def test_coalesced_frames_are_split() -> None:
    frames = _frames([STREAM])
    assert [(k, ch) for k, ch, _ in frames] == [(1, 1), (2, 1), (3, 1), (8, 0), (1, 1)]
    assert frames[2][2] == b"abc"


@pytest.mark.parametrize("step", [1, 2, 7, 8, 13])
def test_frames_cut_anywhere_come_out_whole(step: int) -> None:
    chunks = [STREAM[i:i + step] for i in range(0, len(STREAM), step)]
    assert _frames(chunks) == _frames([STREAM])


def test_a_frame_without_its_end_octet_is_a_frame_error() -> None:
    bad = bytearray(wire.ack_frame(1, 4))
    bad[-1] = 0
    with pytest.raises(wire.FrameError):
        _frames([bytes(bad)])
