"""``POST /servers/{id}/action``: a closed set of actions, each parsed then dispatched."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute import remote_consoles
from cirrus.api.compute.admin_actions import ADMIN_ACTIONS
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.image_actions import IMAGE_ACTIONS, RequestHandler
from cirrus.api.compute.move_actions import MOVE_ACTIONS
from cirrus.api.compute.parameters import MAX_INT, integer
from cirrus.api.compute.state_actions import STATE_ACTIONS, VERSIONED_ACTIONS
from cirrus.api.wsgi import context, json_body, reply
from cirrus import policy
from cirrus.context import RequestContext
from cirrus.policies.compute import SERVER_ACTIONS
from cirrus.exception import ValidationError

Handler = Callable[[Any, RequestContext, str, Any], Awaitable[Response]]


async def _start(api: Any, ctx: RequestContext, uuid: str, _arg: Any) -> Response:
    await api.start(ctx, uuid)
    return Response(status_code=202)


async def _stop(api: Any, ctx: RequestContext, uuid: str, _arg: Any) -> Response:
    await api.stop(ctx, uuid)
    return Response(status_code=202)


async def _reboot(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    if not isinstance(arg, dict) or set(arg) != {"type"}:
        raise ValidationError(field="reboot", reason="must be an object with 'type' only")
    kind = arg["type"]
    if kind not in ("HARD", "Hard", "hard", "SOFT", "Soft", "soft"):
        raise ValidationError(field="reboot/type", reason="must be SOFT or HARD")
    await api.reboot(ctx, uuid, kind.upper())
    return Response(status_code=202)


async def _console(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    if not isinstance(arg, dict) or set(arg) - {"length"}:
        raise ValidationError(field="os-getConsoleOutput",
                              reason="must be an object with at most 'length'")
    length = arg.get("length")
    if length is not None:
        # Nova's schema sets no maximum; lines past 2^31 are as good as all.
        length = integer(length, "os-getConsoleOutput/length", minimum=-1, maximum=MAX_INT)
    output = await api.get_console_output(ctx, uuid, None if length in (None, -1) else length)
    return reply({"output": output})


# The closed set of actions cirrus accepts (Firecracker-style).
ACTIONS: dict[str, Handler] = {
    "os-start": _start,
    "os-stop": _stop,
    "reboot": _reboot,
    "os-getConsoleOutput": _console,
    "os-getSerialConsole": remote_consoles.get_serial_console,
}
ACTIONS.update(STATE_ACTIONS)  # issue #19: lock, pause, suspend, rescue, …
ACTIONS.update(ADMIN_ACTIONS)  # os-resetState, injectNetworkInfo


# Actions whose body and reply depend on the request itself (its microversion,
# its URL): their handlers get the request.
REQUEST_ACTIONS: dict[str, RequestHandler] = {**IMAGE_ACTIONS}
ALL_ACTIONS = frozenset(ACTIONS) | frozenset(REQUEST_ACTIONS) | frozenset(MOVE_ACTIONS)


async def action(request: Request) -> Response:
    ctx = context(request)
    body = await json_body(request)
    if not isinstance(body, dict) or len(body) != 1:
        raise ValidationError(field="action", reason="the body must hold exactly one action")
    (name, arg), = body.items()
    if name not in ALL_ACTIONS:
        raise ValidationError(field="action", reason=f"there is no such action: {name}")
    policy.enforce_route(ctx, SERVER_ACTIONS[name])
    api, uuid = request.app.state.compute_api, request.path_params["server_id"]
    if name in REQUEST_ACTIONS:
        return await REQUEST_ACTIONS[name](request, ctx, uuid, arg)
    # Their bodies depend on the microversion.
    versioned = VERSIONED_ACTIONS.get(name) or MOVE_ACTIONS.get(name)
    if versioned is not None:
        return await versioned(api, ctx, uuid, arg, api_version(request))
    return await ACTIONS[name](api, ctx, uuid, arg)


ROUTES = [Route("/v2.1/servers/{server_id}/action", action, methods=["POST"])]
