"""RPC on top of a transport: method dispatch, contexts, typed remote errors."""
from __future__ import annotations

import importlib
import logging
from typing import Any

from cirrus import log
from cirrus.context import RequestContext
from cirrus.exception import CirrusException
from cirrus.rpc.codec import encode
from cirrus.rpc.transport import Message, RemoteError, Transport

LOG = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 60.0


def _serialize_failure(exc: BaseException) -> dict[str, Any]:
    return {"module": type(exc).__module__, "type": type(exc).__name__,
            "message": str(exc), "kwargs": _safe(getattr(exc, "kwargs", {}))}


def _safe(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The kwargs that survive JSON (the rest stay on the remote side)."""
    out = {}
    for key, value in kwargs.items():
        try:
            encode(value)
        except (TypeError, ValueError):
            continue
        out[key] = value
    return out


def _deserialize_failure(failure: dict[str, Any]) -> Exception:
    module = failure.get("module", "")
    # Only cirrus's own typed errors are re-raised as themselves.
    if module.startswith("cirrus."):
        try:
            cls = getattr(importlib.import_module(module), failure["type"])
        except (ImportError, AttributeError):
            cls = None
        if isinstance(cls, type) and issubclass(cls, CirrusException):
            exc = cls(failure["message"], **failure.get("kwargs", {}))
            return exc
    return RemoteError(failure.get("type", "Exception"), failure.get("message", ""))


class RPCClient:
    """Sends ``method(ctxt, **kwargs)`` to a topic, optionally one server."""

    def __init__(self, transport: Transport, topic: str, server: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.transport = transport
        self.topic = topic
        self.server = server
        self.timeout = timeout

    def prepare(self, server: str | None = None, timeout: float | None = None) -> "RPCClient":
        return RPCClient(self.transport, self.topic, server or self.server,
                         timeout if timeout is not None else self.timeout)

    @staticmethod
    def _message(ctxt: RequestContext, method: str, kwargs: dict[str, Any]) -> Message:
        return {"method": method, "context": ctxt.to_dict(), "args": kwargs}

    async def cast(self, ctxt: RequestContext, method: str, **kwargs: Any) -> None:
        await self.transport.cast(self.topic, self.server, self._message(ctxt, method, kwargs))

    async def call(self, ctxt: RequestContext, method: str, **kwargs: Any) -> Any:
        reply = await self.transport.call(self.topic, self.server,
                                          self._message(ctxt, method, kwargs), self.timeout)
        if "failure" in reply:
            raise _deserialize_failure(reply["failure"])
        return reply.get("result")

    async def fanout(self, ctxt: RequestContext, method: str, **kwargs: Any) -> None:
        await self.transport.fanout(self.topic, self._message(ctxt, method, kwargs))


class RPCDispatcher:
    """Turns messages into calls on an endpoint's async methods.

    Only the names in the endpoint's ``RPC_API`` set can be called remotely.
    """

    def __init__(self, endpoint: Any) -> None:
        self.endpoint = endpoint
        self.allowed: frozenset[str] = frozenset(getattr(endpoint, "RPC_API", ()))

    async def __call__(self, message: Message) -> dict[str, Any]:
        method = message.get("method", "")
        fn = getattr(self.endpoint, method, None) if method in self.allowed else None
        if fn is None:
            return {"failure": {"module": "", "type": "UnsupportedMethod",
                                "message": f"no method {method!r}", "kwargs": {}}}
        ctxt = RequestContext.from_dict(message.get("context") or {})
        args = message.get("args") or {}
        # This message's work (and the tasks it starts) logs as its request.
        logged = log.current.set(log.LogContext(ctxt.request_id, ctxt.global_request_id,
                                                ctxt.project_id, _instance_of(args)))
        try:
            return {"result": await fn(ctxt, **args)}
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            if not isinstance(exc, CirrusException):
                LOG.exception("rpc %s.%s failed", type(self.endpoint).__name__, method)
            return {"failure": _serialize_failure(exc)}
        finally:
            log.current.reset(logged)


def _instance_of(args: dict[str, Any]) -> str | None:
    """The instance a message is about: its ``instance_uuid``, or the one of
    ``instance_uuids`` (a build of one server, nearly every build)."""
    uuid = args.get("instance_uuid")
    if uuid is None:
        uuids = args.get("instance_uuids")
        uuid = uuids[0] if isinstance(uuids, list) and len(uuids) == 1 else None
    return uuid if isinstance(uuid, str) else None
