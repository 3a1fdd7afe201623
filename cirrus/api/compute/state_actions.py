"""The guest-state server actions (issue #19): lock/unlock, pause/unpause,
suspend/resume, rescue/unrescue, add/removeSecurityGroup, changePassword,
restore and forceDelete — each body checked against Nova's schema for the
request's microversion, then one call to the compute API.

:data:`STATE_ACTIONS` is merged into ``server_actions.ACTIONS``; the actions
whose body depends on the microversion are in :data:`VERSIONED_ACTIONS` too,
which the dispatcher prefers."""
from __future__ import annotations

import uuid as uuidlib
from typing import Any, Awaitable, Callable

from starlette.responses import Response

from cirrus.api.compute.parameters import bad, text
from cirrus.api.compute.server_schema import generate_password
from cirrus.api.wsgi import reply
from cirrus.context import RequestContext

Version = tuple[int, int]
Handler = Callable[[Any, RequestContext, str, Any], Awaitable[Response]]
VersionedHandler = Callable[[Any, RequestContext, str, Any, Version], Awaitable[Response]]
MAX_PASSWORD = 65535  # Nova sets none; a body is capped anyway


def _accepted() -> Response:
    return Response(status_code=202)


def _object(arg: Any, field: str, allowed: set[str],
            required: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """``arg`` as an object of ``allowed`` keys with the ``required`` ones."""
    if not isinstance(arg, dict):
        raise bad(field, "must be an object")
    if set(arg) - allowed:
        raise bad(field, f"additional properties are not allowed: {sorted(set(arg) - allowed)}")
    missing = required - set(arg)
    if missing:
        raise bad(field, f"{sorted(missing)[0]!r} is a required property")
    return arg


def _uuid(value: Any, field: str) -> str:
    try:
        return str(uuidlib.UUID(text(value, field, min_len=1)))
    except ValueError:
        raise bad(field, f"{value!r} is not a 'uuid'") from None


# -- lock ----------------------------------------------------------------------------
async def _lock_at(api: Any, ctx: RequestContext, uuid: str, arg: Any,
                   version: Version) -> Response:
    reason = None
    if version >= (2, 73) and arg is not None:
        body = _object(arg, "lock", {"locked_reason"})
        if "locked_reason" in body:
            reason = text(body["locked_reason"], "lock/locked_reason", min_len=1, max_len=255)
    await api.lock(ctx, uuid, reason)
    return _accepted()


async def _lock(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    return await _lock_at(api, ctx, uuid, arg, (2, 1))


async def _unlock(api: Any, ctx: RequestContext, uuid: str, _arg: Any) -> Response:
    await api.unlock(ctx, uuid)
    return _accepted()


# -- actions whose body is anything (Nova's schema: ``{}``) ------------------------------
def _plain(method: str) -> Handler:
    """The handler of an action that takes no arguments: ``api.<method>``, 202."""
    async def handler(api: Any, ctx: RequestContext, uuid: str, _arg: Any) -> Response:
        await getattr(api, method)(ctx, uuid)
        return _accepted()
    handler.__name__ = f"_{method}"
    return handler


# -- rescue --------------------------------------------------------------------------
async def _rescue(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    body = {} if arg is None else _object(arg, "rescue", {"adminPass", "rescue_image_ref"})
    password = (text(body["adminPass"], "rescue/adminPass", max_len=MAX_PASSWORD)
                if "adminPass" in body else generate_password())
    image_ref = (_uuid(body["rescue_image_ref"], "rescue/rescue_image_ref")
                 if "rescue_image_ref" in body else None)
    await api.rescue(ctx, uuid, password, image_ref)
    # Nova answers 200 (not 202), the password unless instance passwords are off.
    return reply({"adminPass": password} if api.settings.enable_instance_password else {})


# -- security groups, password ---------------------------------------------------------
def _group_name(arg: Any, action: str) -> str:
    body = _object(arg, action, {"name"}, {"name"})
    name = text(body["name"], f"{action}/name", min_len=1, max_len=MAX_PASSWORD)
    if not name.strip():
        raise bad(f"{action}/name", "Security group name cannot be empty")
    return name


async def _add_security_group(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    await api.add_security_group(ctx, uuid, _group_name(arg, "addSecurityGroup"))
    return _accepted()


async def _remove_security_group(api: Any, ctx: RequestContext, uuid: str,
                                 arg: Any) -> Response:
    await api.remove_security_group(ctx, uuid, _group_name(arg, "removeSecurityGroup"))
    return _accepted()


async def _change_password(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    body = _object(arg, "changePassword", {"adminPass"}, {"adminPass"})
    password = text(body["adminPass"], "changePassword/adminPass", max_len=MAX_PASSWORD)
    await api.set_admin_password(ctx, uuid, password)
    return _accepted()


STATE_ACTIONS: dict[str, Handler] = {
    "lock": _lock,
    "unlock": _unlock,
    "pause": _plain("pause"),
    "unpause": _plain("unpause"),
    "suspend": _plain("suspend"),
    "resume": _plain("resume"),
    "rescue": _rescue,
    "unrescue": _plain("unrescue"),
    "addSecurityGroup": _add_security_group,
    "removeSecurityGroup": _remove_security_group,
    "changePassword": _change_password,
    "restore": _plain("restore"),
    "forceDelete": _plain("force_delete"),
}
VERSIONED_ACTIONS: dict[str, VersionedHandler] = {"lock": _lock_at}
