"""AMQP 0-9-1 on the wire: frames, the methods cirrus uses, content headers.

Written from the AMQP 0-9-1 specification (amqp0-9-1.xml and its errata as
RabbitMQ publishes them). A frame is ``type:octet channel:short size:long``,
``size`` octets of payload and the end octet 0xCE. A method's payload is its
class and method ids and its fields in order, consecutive ``bit`` fields
packed into octets from the least significant bit. A message is a
``basic.publish``/``basic.deliver`` method frame, a content header frame (the
body's size and the properties present) and body frames of at most
``frame_max - 8`` octets.

Every method cirrus sends or receives is in :data:`METHODS`; the generic
codec below reads and writes any of them. The three a message costs on the
hot path — ``basic.publish`` out, ``basic.deliver`` in, ``basic.ack`` both ways
— have a hand-unrolled twin, held to the generic one by tests/unit/test_amqp_wire.py.
"""
from __future__ import annotations

import struct
from typing import Any, Callable, NamedTuple

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_METHOD, FRAME_HEADER, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
FRAME_END = 0xCE
FRAME_MIN_SIZE = 4096  # every peer must accept frames this large (before tune)
HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"

_HEAD = struct.Struct(">BHI")  # type, channel, payload size
_IDS = struct.Struct(">HH")
_U8, _U16, _U32, _U64 = (struct.Struct(f">{c}") for c in "BHIQ")
_I8, _I16, _I32, _I64 = (struct.Struct(f">{c}") for c in "bhiq")
_F32, _F64 = struct.Struct(">f"), struct.Struct(">d")
_CONTENT_HEAD = struct.Struct(">HHQ")  # class, weight, body size (property flags follow)

Arguments = dict[str, Any]  # a method's fields by name: the spec's types, decoded


class FrameError(ValueError):
    """Bytes that are not an AMQP frame (a framing error: the connection is closed)."""


class Method(NamedTuple):
    """A method's name in the spec and its fields, in order, with their types."""

    name: str
    fields: tuple[tuple[str, str], ...]


def _spec(name: str, *fields: str) -> Method:
    return Method(name, tuple((f.split(":")[0], f.split(":")[1]) for f in fields))


# (class id, method id) → the method; only those cirrus uses (RabbitMQ's
# ``connection.blocked``/``unblocked`` and ``basic.nack`` included).
METHODS: dict[tuple[int, int], Method] = {
    (10, 10): _spec("connection.start", "version_major:octet", "version_minor:octet",
                    "server_properties:table", "mechanisms:longstr", "locales:longstr"),
    (10, 11): _spec("connection.start_ok", "client_properties:table", "mechanism:shortstr",
                    "response:longstr", "locale:shortstr"),
    (10, 30): _spec("connection.tune", "channel_max:short", "frame_max:long", "heartbeat:short"),
    (10, 31): _spec("connection.tune_ok", "channel_max:short", "frame_max:long",
                    "heartbeat:short"),
    (10, 40): _spec("connection.open", "virtual_host:shortstr", "capabilities:shortstr",
                    "insist:bit"),
    (10, 41): _spec("connection.open_ok", "known_hosts:shortstr"),
    (10, 50): _spec("connection.close", "reply_code:short", "reply_text:shortstr",
                    "class_id:short", "method_id:short"),
    (10, 51): _spec("connection.close_ok"),
    (10, 60): _spec("connection.blocked", "reason:shortstr"),
    (10, 61): _spec("connection.unblocked"),
    (20, 10): _spec("channel.open", "out_of_band:shortstr"),
    (20, 11): _spec("channel.open_ok", "channel_id:longstr"),
    (20, 20): _spec("channel.flow", "active:bit"),
    (20, 21): _spec("channel.flow_ok", "active:bit"),
    (20, 40): _spec("channel.close", "reply_code:short", "reply_text:shortstr",
                    "class_id:short", "method_id:short"),
    (20, 41): _spec("channel.close_ok"),
    (40, 10): _spec("exchange.declare", "ticket:short", "exchange:shortstr", "type:shortstr",
                    "passive:bit", "durable:bit", "auto_delete:bit", "internal:bit",
                    "nowait:bit", "arguments:table"),
    (40, 11): _spec("exchange.declare_ok"),
    (50, 10): _spec("queue.declare", "ticket:short", "queue:shortstr", "passive:bit",
                    "durable:bit", "exclusive:bit", "auto_delete:bit", "nowait:bit",
                    "arguments:table"),
    (50, 11): _spec("queue.declare_ok", "queue:shortstr", "message_count:long",
                    "consumer_count:long"),
    (50, 20): _spec("queue.bind", "ticket:short", "queue:shortstr", "exchange:shortstr",
                    "routing_key:shortstr", "nowait:bit", "arguments:table"),
    (50, 21): _spec("queue.bind_ok"),
    (60, 10): _spec("basic.qos", "prefetch_size:long", "prefetch_count:short", "global:bit"),
    (60, 11): _spec("basic.qos_ok"),
    (60, 20): _spec("basic.consume", "ticket:short", "queue:shortstr", "consumer_tag:shortstr",
                    "no_local:bit", "no_ack:bit", "exclusive:bit", "nowait:bit",
                    "arguments:table"),
    (60, 21): _spec("basic.consume_ok", "consumer_tag:shortstr"),
    (60, 30): _spec("basic.cancel", "consumer_tag:shortstr", "nowait:bit"),
    (60, 31): _spec("basic.cancel_ok", "consumer_tag:shortstr"),
    (60, 40): _spec("basic.publish", "ticket:short", "exchange:shortstr",
                    "routing_key:shortstr", "mandatory:bit", "immediate:bit"),
    (60, 50): _spec("basic.return", "reply_code:short", "reply_text:shortstr",
                    "exchange:shortstr", "routing_key:shortstr"),
    (60, 60): _spec("basic.deliver", "consumer_tag:shortstr", "delivery_tag:longlong",
                    "redelivered:bit", "exchange:shortstr", "routing_key:shortstr"),
    (60, 80): _spec("basic.ack", "delivery_tag:longlong", "multiple:bit"),
    (60, 90): _spec("basic.reject", "delivery_tag:longlong", "requeue:bit"),
    (60, 120): _spec("basic.nack", "delivery_tag:longlong", "multiple:bit", "requeue:bit"),
    (85, 10): _spec("confirm.select", "nowait:bit"),
    (85, 11): _spec("confirm.select_ok"),
}
BY_NAME: dict[str, tuple[int, int]] = {m.name: ids for ids, m in METHODS.items()}


# -- field types ---------------------------------------------------------------------
def _put_shortstr(out: bytearray, value: str | bytes) -> None:
    raw = value.encode() if isinstance(value, str) else value
    if len(raw) > 255:
        raise ValueError(f"shortstr longer than 255 octets: {raw[:40]!r}…")
    out.append(len(raw))
    out += raw


def _put_longstr(out: bytearray, value: str | bytes) -> None:
    raw = value.encode() if isinstance(value, str) else value
    out += _U32.pack(len(raw))
    out += raw


def _put_table(out: bytearray, table: dict[str, Any]) -> None:
    inner = bytearray()
    for key, value in table.items():
        _put_shortstr(inner, key)
        _put_value(inner, value)
    out += _U32.pack(len(inner))
    out += inner


def _put_value(out: bytearray, value: Any) -> None:
    """A field value with its type tag (RabbitMQ's tags, as its clients write them)."""
    if isinstance(value, bool):
        out += b"t" + _U8.pack(value)
    elif isinstance(value, int):
        if -2 ** 31 <= value < 2 ** 31:
            out += b"I" + _I32.pack(value)
        else:
            out += b"l" + _I64.pack(value)
    elif isinstance(value, float):
        out += b"d" + _F64.pack(value)
    elif isinstance(value, str):
        out += b"S"
        _put_longstr(out, value)
    elif isinstance(value, (bytes, bytearray)):
        out += b"x"
        _put_longstr(out, bytes(value))
    elif isinstance(value, dict):
        out += b"F"
        _put_table(out, value)
    elif isinstance(value, (list, tuple)):
        inner = bytearray()
        for item in value:
            _put_value(inner, item)
        out += b"A" + _U32.pack(len(inner)) + inner
    elif value is None:
        out += b"V"
    else:
        raise TypeError(f"no AMQP field type for {type(value).__name__}")


class _Reader:
    """Reads the spec's types from ``data`` from ``pos`` on."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def fixed(self, fmt: struct.Struct) -> Any:
        try:
            (value,) = fmt.unpack_from(self.data, self.pos)
        except struct.error as exc:
            raise FrameError(f"truncated field at {self.pos}") from exc
        self.pos += fmt.size
        return value

    def raw(self, size: int) -> bytes:
        end = self.pos + size
        if end > len(self.data):
            raise FrameError(f"truncated field at {self.pos}")
        value = bytes(self.data[self.pos:end])
        self.pos = end
        return value

    def shortstr(self) -> str:
        return self.raw(self.fixed(_U8)).decode("utf-8", "replace")

    def longstr(self) -> bytes:
        return self.raw(self.fixed(_U32))

    def table(self) -> dict[str, Any]:
        size = self.fixed(_U32)
        end = self.pos + size
        table = {}
        while self.pos < end:
            key = self.shortstr()
            table[key] = self.value()
        return table

    def value(self) -> Any:
        tag = self.raw(1)
        if tag == b"S":
            return self.longstr().decode("utf-8", "replace")
        if tag == b"F":
            return self.table()
        if tag == b"A":
            size = self.fixed(_U32)
            end = self.pos + size
            items = []
            while self.pos < end:
                items.append(self.value())
            return items
        if tag == b"D":  # decimal: scale octet, long value
            scale, value = self.fixed(_U8), self.fixed(_I32)
            return value / 10 ** scale
        if tag == b"V":
            return None
        if tag == b"x":
            return self.longstr()
        fmt = _VALUE_TAGS.get(tag)
        if fmt is None:
            raise FrameError(f"unknown field value type {tag!r}")
        value = self.fixed(fmt)
        return bool(value) if tag == b"t" else value


# RabbitMQ's tags (its errata: 's' is a signed short, 'u' an unsigned one).
_VALUE_TAGS = {b"t": _U8, b"b": _I8, b"B": _U8, b"s": _I16, b"u": _U16, b"I": _I32,
               b"i": _U32, b"l": _I64, b"L": _U64, b"f": _F32, b"d": _F64, b"T": _U64}
_PUT: dict[str, Callable[[bytearray, Any], None]] = {
    "octet": lambda out, v: out.extend(_U8.pack(v)),
    "short": lambda out, v: out.extend(_U16.pack(v)),
    "long": lambda out, v: out.extend(_U32.pack(v)),
    "longlong": lambda out, v: out.extend(_U64.pack(v)),
    "shortstr": _put_shortstr, "longstr": _put_longstr, "table": _put_table,
}
_GET: dict[str, Callable[[_Reader], Any]] = {
    "octet": lambda r: r.fixed(_U8), "short": lambda r: r.fixed(_U16),
    "long": lambda r: r.fixed(_U32), "longlong": lambda r: r.fixed(_U64),
    "shortstr": _Reader.shortstr, "longstr": _Reader.longstr, "table": _Reader.table,
}
_DEFAULTS = {"octet": 0, "short": 0, "long": 0, "longlong": 0, "shortstr": "", "longstr": b"",
             "table": {}}


# -- methods and frames --------------------------------------------------------------
def frame(kind: int, channel: int, payload: bytes | bytearray) -> bytes:
    """One frame: header, ``payload``, end octet."""
    return b"".join((_HEAD.pack(kind, channel, len(payload)), payload, b"\xce"))


def encode_method(name: str, **args: Any) -> bytes:
    """The payload of method ``name`` (``"queue.declare"``); absent fields are
    zero, empty or false."""
    ids = BY_NAME[name]
    out = bytearray(_IDS.pack(*ids))
    bits = 0
    nbits = 0
    for field, kind in METHODS[ids].fields:
        if kind == "bit":
            if nbits == 8:
                out.append(bits)
                bits = nbits = 0
            bits |= bool(args.pop(field, False)) << nbits
            nbits += 1
            continue
        if nbits:
            out.append(bits)
            bits = nbits = 0
        _PUT[kind](out, args.pop(field, _DEFAULTS[kind]))
    if nbits:
        out.append(bits)
    if args:
        raise TypeError(f"{name} has no fields {sorted(args)}")
    return bytes(out)


def method_frame(channel: int, name: str, **args: Any) -> bytes:
    return frame(FRAME_METHOD, channel, encode_method(name, **args))


def decode_method(payload: bytes | memoryview) -> tuple[str, Arguments]:
    """A method frame's payload as its name and fields; FrameError if malformed or
    not a method cirrus knows."""
    reader = _Reader(payload)
    ids = (reader.fixed(_U16), reader.fixed(_U16))
    method = METHODS.get(ids)
    if method is None:
        raise FrameError(f"unknown method {ids}")
    args: Arguments = {}
    bits = nbits = 0
    for field, kind in method.fields:
        if kind == "bit":
            if nbits == 0:
                bits, nbits = reader.fixed(_U8), 8
            args[field] = bool(bits & 1)
            bits >>= 1
            nbits -= 1
            continue
        nbits = 0
        args[field] = _GET[kind](reader)
    return method.name, args


# -- content: properties, header, body -----------------------------------------------
class Properties(NamedTuple):
    """A message's basic properties (those cirrus reads or writes; the others
    are read past). A named tuple: one is made per message received."""

    content_type: str | None = None
    delivery_mode: int | None = None
    correlation_id: str | None = None
    reply_to: str | None = None
    expiration: str | None = None
    headers: dict[str, Any] | None = None

    def encode(self) -> bytes:
        """The property flags and list, as a content header carries them."""
        flags = 0
        out = bytearray()
        for name, kind, flag in _PROPERTIES:
            value = getattr(self, name, None)
            if value is None:
                continue
            flags |= flag
            _PUT[kind](out, value)
        return _U16.pack(flags) + bytes(out)


# Every basic property in the spec's order, its type and flag bit (bit 15 first).
_PROPERTIES = tuple((name, kind, 1 << (15 - i)) for i, (name, kind) in enumerate((
    ("content_type", "shortstr"), ("content_encoding", "shortstr"), ("headers", "table"),
    ("delivery_mode", "octet"), ("priority", "octet"), ("correlation_id", "shortstr"),
    ("reply_to", "shortstr"), ("expiration", "shortstr"), ("message_id", "shortstr"),
    ("timestamp", "longlong"), ("type", "shortstr"), ("user_id", "shortstr"),
    ("app_id", "shortstr"), ("cluster_id", "shortstr"))))
_KEPT = frozenset(Properties._fields)


def decode_properties(data: bytes | memoryview, pos: int = 0) -> Properties:
    """The properties at ``pos`` of a content header (flags first)."""
    reader = _Reader(data, pos)
    flags = reader.fixed(_U16)
    if flags & 1:
        raise FrameError("continued property flags are not used by AMQP 0-9-1's basic class")
    kept: dict[str, Any] = {}
    for name, kind, flag in _PROPERTIES:
        if flags & flag:
            value = _GET[kind](reader)
            if name in _KEPT:
                kept[name] = value
    return Properties(**kept)


def content_header(channel: int, body_size: int, properties: bytes) -> bytes:
    """The header frame of a basic message of ``body_size`` octets; ``properties``
    is :meth:`Properties.encode`'s output (built once for a kind of message)."""
    return frame(FRAME_HEADER, channel, _CONTENT_HEAD.pack(60, 0, body_size) + properties)


def decode_content_header(payload: bytes | memoryview) -> tuple[int, Properties]:
    """A header frame's payload as the body's size and the properties."""
    if len(payload) < 14:
        raise FrameError("truncated content header")
    class_id, _weight, size = _CONTENT_HEAD.unpack_from(payload)
    if class_id != 60:
        raise FrameError(f"content header of class {class_id}, not basic")
    return size, decode_properties(payload, 12)


# -- the hot path, unrolled ------------------------------------------------------------
_PUBLISH_IDS = _IDS.pack(60, 40) + b"\x00\x00"  # and ticket 0
_ACK = struct.Struct(">BHIHHQBB")  # a whole basic.ack frame


def publish_frames(channel: int, exchange: str, routing_key: str, properties: bytes,
                   body: bytes, frame_max: int) -> bytes:
    """``basic.publish`` (mandatory and immediate off), its header and body
    frames, as one bytes object to write."""
    ex, key = exchange.encode(), routing_key.encode()
    if len(ex) > 255 or len(key) > 255:
        raise ValueError(f"exchange or routing key longer than 255 octets: {routing_key[:40]}…")
    method = b"".join((_PUBLISH_IDS, bytes((len(ex),)), ex, bytes((len(key),)), key, b"\x00"))
    parts = [frame(FRAME_METHOD, channel, method), content_header(channel, len(body), properties)]
    step = frame_max - 8
    for start in range(0, len(body), step):
        chunk = body[start:start + step]
        parts.append(b"".join((_HEAD.pack(FRAME_BODY, channel, len(chunk)), chunk, b"\xce")))
    return b"".join(parts)


def ack_frame(channel: int, delivery_tag: int, multiple: bool = False) -> bytes:
    return _ACK.pack(FRAME_METHOD, channel, 13, 60, 80, delivery_tag, multiple, FRAME_END)


class Deliver(NamedTuple):
    consumer_tag: str
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str


def decode_deliver(payload: bytes | memoryview) -> Deliver:
    """``basic.deliver``'s fields from its method payload (ids included)."""
    data = bytes(payload)
    try:
        end = 5 + data[4]
        tag = data[5:end].decode()
        (delivery_tag,) = _U64.unpack_from(data, end)
        redelivered = bool(data[end + 8] & 1)
        pos = end + 9
        ex_end = pos + 1 + data[pos]
        exchange = data[pos + 1:ex_end].decode()
        key_end = ex_end + 1 + data[ex_end]
        routing_key = data[ex_end + 1:key_end].decode()
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise FrameError("malformed basic.deliver") from exc
    if key_end > len(data):
        raise FrameError("truncated basic.deliver")
    return Deliver(tag, delivery_tag, redelivered, exchange, routing_key)


def decode_ack(payload: bytes | memoryview) -> tuple[int, bool]:
    """``basic.ack``'s (or ``basic.nack``'s) delivery tag and ``multiple``."""
    if len(payload) < 13:
        raise FrameError("truncated basic.ack")
    (tag,) = _U64.unpack_from(payload, 4)
    return tag, bool(payload[12] & 1)


# -- reading a stream ------------------------------------------------------------------
class FrameReader:
    """Splits the bytes a connection receives into frames, however the reads cut them."""

    def __init__(self) -> None:
        self._partial = b""  # the start of a frame whose end is still to come

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        """Each whole frame in what was received so far, as (type, channel, payload);
        a partial frame stays for the next read. FrameError for a bad end octet."""
        if self._partial:
            data = self._partial + data
        frames = []
        start, size_of = 0, len(data)
        while size_of - start >= 8:
            kind, channel, size = _HEAD.unpack_from(data, start)
            end = start + 7 + size
            if end >= size_of:
                break
            if data[end] != FRAME_END:
                raise FrameError(f"frame end octet {data[end]:#x}, not 0xce")
            frames.append((kind, channel, data[start + 7:end]))
            start = end + 1
        self._partial = data[start:] if start < size_of else b""
        return frames
