"""Request-scoped logging: every line of a request's work names the request.

As oslo.log does with oslo.context, each log record gets the request id, the
global request id (the caller's ``X-OpenStack-Request-ID``, carried across
the services), the project and the instance. They live in a context variable
set once per API request (``cirrus.api.asgi.ApiApp``) and once per RPC message handled
(``RPCDispatcher``); asyncio copies it into the tasks a request starts (a
build runs in its own task and still logs as the request). A
:class:`ContextFilter` on the handlers copies it onto each record, and
``log_format = json`` writes the records as JSON lines (:class:`JSONFormatter`).
"""
from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

# oslo.middleware's request id: a global id given by a caller must look like one.
# (Matched whole: ``$`` would let a trailing line end through.)
REQUEST_ID = re.compile(r"req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}")
FIELDS = ("request_id", "global_request_id", "project_id", "instance_uuid")


@dataclass(frozen=True)
class LogContext:
    """What every log line of a request's work says about the request."""

    request_id: str | None = None
    global_request_id: str | None = None
    project_id: str | None = None
    instance_uuid: str | None = None


_EMPTY = LogContext()
current: contextvars.ContextVar[LogContext] = contextvars.ContextVar("log_context",
                                                                     default=_EMPTY)


def valid_request_id(value: str | None) -> str | None:
    """``value`` if it is a request id as oslo.middleware accepts one, else None."""
    return value if value is not None and REQUEST_ID.fullmatch(value) else None


def global_id() -> str | None:
    """The id a call to another service sends as ``X-OpenStack-Request-ID``:
    the global request id, else this request's own (as Nova sends its
    context's ``global_id``)."""
    log_ctx = current.get()
    return log_ctx.global_request_id or log_ctx.request_id


class ContextFilter(logging.Filter):
    """Puts the request's fields on every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        log_ctx = current.get()
        record.request_id = log_ctx.request_id
        record.global_request_id = log_ctx.global_request_id
        record.project_id = log_ctx.project_id
        record.instance_uuid = log_ctx.instance_uuid
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the request's
    fields (those set) and the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        return json.dumps(out, default=str)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
FORMATS = ("text", "json")


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of ``log_format`` (``text``, the default, or ``json``)."""
    if log_format == "json":
        return JSONFormatter()
    return logging.Formatter(TEXT_FORMAT)
