"""The wire format of RPC messages: JSON, encoded by orjson.

Both transports use it, so a message that crosses the in-process bus crosses
RabbitMQ the same way (DESIGN §2). orjson is ~5× faster than ``json`` for these
small nested dicts, and every boot sends several. It is held to ``json``'s
rules: datetimes and dataclasses are refused as ``json`` refuses them (no
silent ISO strings), and what orjson cannot do but ``json`` can (integers
beyond 64 bits) goes through ``json``. One difference stays: orjson writes NaN
and ±Infinity as ``null`` where ``json`` writes ``NaN``. No message carries
them, and catching them would mean parsing every message with a ``null`` again
(``cirrus.db.rows.json_dumps`` does, for stored columns).
"""
from __future__ import annotations

import json
from typing import Any

try:  # a dependency; keep working without it
    import orjson
except ImportError:  # pragma: no cover
    orjson = None  # type: ignore[assignment]

_OPTIONS = (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
            | orjson.OPT_PASSTHROUGH_DATACLASS) if orjson is not None else 0


def encode(message: Any) -> bytes:
    """``message`` as JSON bytes; TypeError for what JSON cannot carry."""
    if orjson is not None:
        try:
            return orjson.dumps(message, option=_OPTIONS)
        except TypeError:
            pass  # json's own answer: it may encode it (huge ints) or raise
    return json.dumps(message).encode()


def decode(body: bytes | bytearray | str) -> Any:
    """The message in ``body``; ValueError if it is not JSON."""
    if orjson is not None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # NaN, Infinity: json reads them
    return json.loads(body)
