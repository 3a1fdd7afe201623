"""The server actions that move a server: ``resize``, ``confirmResize``,
``revertResize``, ``migrate``, ``os-migrateLive``, ``evacuate`` — each body
checked against Nova's schema of the request's microversion (400 naming the
field) before anything else."""
from __future__ import annotations

import re
from typing import Any, Awaitable, Callable

from starlette.responses import Response

from cirrus import policy
from cirrus.api.compute.parameters import bad, text
from cirrus.api.compute.server_schema import generate_password
from cirrus.api.wsgi import reply
from cirrus.context import RequestContext
from cirrus.policies.compute import MOVE_OPTION_RULES

Version = tuple[int, int]
VersionedHandler = Callable[[Any, RequestContext, str, Any, Version], Awaitable[Response]]
_TRUE = frozenset({"true", "1", "on", "yes"})
_FALSE = frozenset({"false", "0", "off", "no"})
_FQDN = re.compile(r"[a-zA-Z0-9\-._]*")


def boolean(value: Any, field: str, *, auto: bool = False) -> bool | None:
    """Nova's ``parameter_types.boolean`` (plus ``"auto"`` → None if allowed)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _spellings(auto):
        low = value.lower()
        return None if low == "auto" else low in _TRUE
    raise bad(field, f"{value!r} is not one of the boolean values"
              + (" or 'auto'" if auto else ""))


def _spellings(auto: bool) -> set[str]:
    words = {w for base in _TRUE | _FALSE for w in (base, base.upper(), base.capitalize())}
    return words | {"auto"} if auto else words


def host_name(value: Any, field: str, *, nullable: bool = True) -> str | None:
    """Nova's ``fqdn`` (1–255 of letters, digits, ``-._``), or null if allowed."""
    if value is None and nullable:
        return None
    name = text(value, field, min_len=1, max_len=255)
    if not _FQDN.fullmatch(name):
        raise bad(field, f"{name!r} is not a host name")
    return name


def _object(arg: Any, field: str, allowed: set[str],
            required: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    if not isinstance(arg, dict):
        raise bad(field, "must be an object")
    extra = set(arg) - allowed
    if extra:
        raise bad(field, f"additional properties are not allowed ({', '.join(sorted(extra))})")
    missing = required - set(arg)
    if missing:
        raise bad(field, f"{sorted(missing)[0]!r} is a required property")
    return arg


async def _resize(api: Any, ctx: RequestContext, uuid: str, arg: Any, v: Version) -> Response:
    body = _object(arg, "resize", {"flavorRef", "OS-DCF:diskConfig"}, {"flavorRef"})
    ref = body["flavorRef"]
    if isinstance(ref, bool) or not isinstance(ref, (str, int)) or str(ref) == "":
        raise bad("resize/flavorRef", "must be a non-empty string or an integer")
    if "OS-DCF:diskConfig" in body and body["OS-DCF:diskConfig"] not in ("AUTO", "MANUAL"):
        raise bad("resize/OS-DCF:diskConfig", "must be AUTO or MANUAL")
    disk = body["OS-DCF:diskConfig"] == "AUTO" if "OS-DCF:diskConfig" in body else None
    await api.moves.resize(ctx, uuid, str(ref), auto_disk_config=disk)
    return Response(status_code=202)


async def _confirm(api: Any, ctx: RequestContext, uuid: str, arg: Any, v: Version) -> Response:
    await api.moves.confirm_resize(ctx, uuid)
    return Response(status_code=204)


async def _revert(api: Any, ctx: RequestContext, uuid: str, arg: Any, v: Version) -> Response:
    await api.moves.revert_resize(ctx, uuid)
    return Response(status_code=202)


async def _migrate(api: Any, ctx: RequestContext, uuid: str, arg: Any, v: Version) -> Response:
    host = None
    if v >= (2, 56):
        if arg is not None:
            host = host_name(_object(arg, "migrate", {"host"}).get("host"), "migrate/host")
    if host is not None:
        policy.enforce_route(ctx, MOVE_OPTION_RULES["migrate:host"])
    await api.moves.migrate(ctx, uuid, host)
    return Response(status_code=202)


async def _migrate_live(api: Any, ctx: RequestContext, uuid: str, arg: Any,
                        v: Version) -> Response:
    f = "os-migrateLive"
    allowed = {"block_migration", "host"} | ({"disk_over_commit"} if v < (2, 25) else set()) \
        | ({"force"} if (2, 30) <= v < (2, 68) else set())
    required = {"block_migration", "host"} | ({"disk_over_commit"} if v < (2, 25) else set())
    body = _object(arg, f, allowed, required)
    block = boolean(body["block_migration"], f"{f}/block_migration", auto=v >= (2, 25))
    if "disk_over_commit" in body:
        boolean(body["disk_over_commit"], f"{f}/disk_over_commit")
    host = host_name(body["host"], f"{f}/host")
    force = bool(boolean(body.get("force", False), f"{f}/force"))
    if force and not host:
        raise bad(f"{f}/force", "Can't force to a non-provided destination")
    await api.moves.live_migrate(ctx, uuid, host, block, force)
    return Response(status_code=202)


async def _evacuate(api: Any, ctx: RequestContext, uuid: str, arg: Any, v: Version) -> Response:
    allowed = {"host", "adminPass"} | ({"onSharedStorage"} if v < (2, 14) else set()) \
        | ({"force"} if (2, 29) <= v < (2, 68) else set())
    body = _object(arg, "evacuate", allowed, {"onSharedStorage"} if v < (2, 14) else set())
    host = host_name(body.get("host"), "evacuate/host", nullable=False) \
        if "host" in body else None
    if "onSharedStorage" in body:
        shared = boolean(body["onSharedStorage"], "evacuate/onSharedStorage")
        if shared and body.get("adminPass"):
            raise bad("evacuate/adminPass", "admin password can't be changed on existing disk")
    password = body.get("adminPass")
    if password is not None and not isinstance(password, str):
        raise bad("evacuate/adminPass", "is not of type 'string'")
    force = bool(boolean(body.get("force", False), "evacuate/force"))
    if force and not host:
        raise bad("evacuate/force", "Forcing an evacuation requires a host")
    password = password or generate_password()
    await api.moves.evacuate(ctx, uuid, host, password, force)
    if v < (2, 14):
        return reply({"adminPass": password})
    return Response(status_code=200)


MOVE_ACTIONS: dict[str, VersionedHandler] = {
    "resize": _resize,
    "confirmResize": _confirm,
    "revertResize": _revert,
    "migrate": _migrate,
    "os-migrateLive": _migrate_live,
    "evacuate": _evacuate,
}
