"""Request helpers every handler uses: body parsing, context, JSON replies."""
from __future__ import annotations

from typing import Any

import orjson

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Send

from cirrus import exception
from cirrus.context import RequestContext



def context(request: Request) -> RequestContext:
    """The caller's context, set by the auth middleware."""
    ctx = getattr(request.state, "context", None)
    if ctx is None:
        raise exception.NotAuthenticated()
    return ctx


# Deeper bodies are refused before any handler walks them: OpenStack's deepest
# (a server's block_device_mapping_v2, an image's JSON patch) are ~5 levels.
MAX_DEPTH = 32


def is_json_type(content_type: str | None) -> bool:
    """Whether a request's Content-Type announces JSON. A missing header is taken
    as JSON, as Nova and Neutron do; ``+json`` types and Glance's JSON-patch
    types (``application/openstack-images-v2.1-json-patch``) are JSON too."""
    if content_type is None:
        return True
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith(("+json", "-json-patch"))


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """400 if ``value`` nests lists/objects deeper than ``limit`` (iteratively:
    a hostile body must not exhaust the stack of whoever walks it later)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    raise exception.Invalid(f"Malformed request body: nested deeper than {limit} levels.")
                stack.append((child, depth + 1))


def _has_nul(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_json(raw: bytes) -> Any:
    """Strict JSON: 400 for malformed text, invalid UTF-8, lone surrogates
    (``"\\ud800"``), ``NaN``/``Infinity``, nesting past :data:`MAX_DEPTH` and
    NUL characters (PostgreSQL's text refuses them) — nothing a later write or
    read could fail on is let in."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise exception.Invalid(f"Malformed request body: {exc}") from None
    if isinstance(value, (dict, list)):
        check_depth(value)
    # NUL can only arrive escaped; most bodies are spared the walk.
    if b"\\u0000" in raw and _has_nul(value):
        raise exception.Invalid("Malformed request body: NUL characters are not allowed.")
    return value


async def json_body(request: Request, max_bytes: int | None = None) -> Any:
    """The parsed JSON body: 415 unless it is announced as JSON, 413 if larger
    than ``max_bytes``, 400 if empty or not strict JSON (:func:`parse_json`)."""
    if not is_json_type(request.headers.get("content-type")):
        raise exception.UnsupportedMediaType(
            content_type=request.headers["content-type"][:128])
    limit = max_bytes or request.app.state.settings.max_body_bytes
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise exception.BodyTooLarge()
    raw = bytearray()
    async for chunk in request.stream():
        raw.extend(chunk)
        if len(raw) > limit:
            raise exception.BodyTooLarge()
    if not raw:
        raise exception.Invalid("Malformed request body: the body is empty.")
    return parse_json(bytes(raw))


def reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


class _FastJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        try:  # a C encoder ~6× faster than json.dumps on a listing of a thousand servers
            return orjson.dumps(content)
        except TypeError:
            pass  # what orjson refuses (non-str keys, huge integers): json's answer
        return super().render(content)


def fast_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """:func:`reply` for large bodies without floats (the server views): the same
    bytes as JSONResponse (compact, UTF-8 unescaped), encoded by orjson. Floats
    are the one difference: the two write exponents differently (1e+16, 1e16)."""
    return _FastJSONResponse(body, status_code=status, headers=headers)


def no_content(headers: dict[str, str] | None = None) -> Response:
    return Response(status_code=204, headers=headers)


def query_int(request: Request, name: str, default: int | None = None,
              minimum: int = 0) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise exception.ValidationError(field=name, reason=f"'{raw}' is not an integer") from None
    if value < minimum:
        raise exception.ValidationError(field=name, reason=f"must be >= {minimum}")
    return value


def sending_headers(send: Send, headers: list[tuple[bytes, bytes]]) -> Send:
    """An ASGI ``send`` that adds ``headers`` to the response start."""
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = list(message.get("headers", [])) + headers
        await send(message)
    return wrapped
