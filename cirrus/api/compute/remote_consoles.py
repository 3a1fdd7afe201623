"""Remote consoles: ``POST /servers/{id}/remote-consoles`` (2.6+), the legacy
``os-getSerialConsole`` action (2.1–2.5) and ``GET /os-console-auth-tokens``.

cirrus offers the serial console only; asking for another type is Nova's
400 "Unavailable console type"."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, json_body, reply
from cirrus.console import tokens
from cirrus.context import RequestContext
from cirrus.exception import ConsoleTypeUnavailable, Invalid, NotFound, ValidationError

# protocol → the types Nova's schema accepts for it (mks from 2.8).
PROTOCOLS = {"vnc": {"novnc", "xvpvnc"}, "spice": {"spice-html5"}, "serial": {"serial"},
             "rdp": {"rdp-html5"}, "mks": {"webmks"}}


class ConsoleTokenNotFound(NotFound):
    msg_fmt = "The token '%(token)s' is invalid or has expired"


class UnsupportedTokenType(Invalid):
    msg_fmt = "The requested console type is not supported at this API version"


def parse_remote_console(body: Any, version: tuple[int, int]) -> tuple[str, str]:
    """(protocol, type) of a ``remote_console`` body, as Nova's schema checks it."""
    if not isinstance(body, dict) or set(body) != {"remote_console"}:
        raise ValidationError(field="remote_console", reason="the body must hold only it")
    console = body["remote_console"]
    if not isinstance(console, dict) or set(console) != {"protocol", "type"}:
        raise ValidationError(field="remote_console",
                              reason="must be an object with 'protocol' and 'type'")
    protocol, kind = console["protocol"], console["type"]
    protocols = set(PROTOCOLS) - ({"mks"} if version < (2, 8) else set())
    if not isinstance(protocol, str) or protocol not in protocols:
        raise ValidationError(field="remote_console/protocol",
                              reason=f"must be one of {', '.join(sorted(protocols))}")
    kinds = set().union(*PROTOCOLS.values())
    if not isinstance(kind, str) or kind not in kinds:
        raise ValidationError(field="remote_console/type",
                              reason=f"must be one of {', '.join(sorted(kinds))}")
    if kind not in PROTOCOLS[protocol]:
        raise ConsoleTypeUnavailable(console_type=kind)
    return protocol, kind


async def create(request: Request) -> Response:
    version = api_version(request)
    if version < (2, 6):
        raise NotFound()
    ctx = context(request)
    protocol, kind = parse_remote_console(await json_body(request), version)
    if protocol != "serial":
        raise ConsoleTypeUnavailable(console_type=kind)
    url = await request.app.state.compute_api.get_serial_console(
        ctx, request.path_params["server_id"])
    return reply({"remote_console": {"protocol": protocol, "type": kind, "url": url}})


async def get_serial_console(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    """The ``os-getSerialConsole`` action (before 2.6)."""
    if not isinstance(arg, dict) or set(arg) != {"type"}:
        raise ValidationError(field="os-getSerialConsole", reason="must be an object with 'type'")
    if arg["type"] != "serial":
        raise ConsoleTypeUnavailable(console_type=str(arg["type"])[:32])
    return reply({"console": {"type": "serial", "url": await api.get_serial_console(ctx, uuid)}})


async def show_token(request: Request) -> Response:
    token = request.path_params["console_token"]
    info = await request.app.state.db.read(tokens.validate, token)
    if info is None:
        raise ConsoleTokenNotFound(token=token[:64])
    # Before 2.31 only RDP tokens could be looked up (Nova); cirrus has none.
    if api_version(request) < (2, 31):
        raise UnsupportedTokenType()
    return reply({"console": {"instance_uuid": info.instance_uuid, "host": info.host,
                              "port": info.port, "internal_access_path": None}})


ROUTES = [
    Route("/v2.1/servers/{server_id}/remote-consoles", create, methods=["POST"]),
    Route("/v2.1/os-console-auth-tokens/{console_token}", show_token, methods=["GET"]),
]
