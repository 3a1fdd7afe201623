"""Nova's admin actions: ``os-resetState`` and ``injectNetworkInfo``."""
from __future__ import annotations

from typing import Any

from starlette.responses import Response

from cirrus.context import RequestContext
from cirrus.exception import ValidationError

RESETTABLE = ("active", "error")


async def reset_state(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    """Force the server's vm_state to ``active`` or ``error``, its task cleared."""
    if not isinstance(arg, dict) or set(arg) != {"state"} or arg["state"] not in RESETTABLE:
        raise ValidationError(field="os-resetState/state",
                              reason=f"must be one of {', '.join(RESETTABLE)}")
    await api.reset_state(ctx, uuid, arg["state"])
    return Response(status_code=202)


async def inject_network_info(api: Any, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    """Accepted and done (``API.inject_network_info``). Nova reads no body
    (clients send null or {})."""
    if arg not in (None, {}):
        raise ValidationError(field="injectNetworkInfo", reason="takes no arguments")
    await api.inject_network_info(ctx, uuid)
    return Response(status_code=202)


ADMIN_ACTIONS = {"os-resetState": reset_state, "injectNetworkInfo": inject_network_info}
