"""Versioned-notification stand-in: ``compute.instance.create.start`` etc.

Notifications are logged and kept in a bounded in-memory list that tests
and operators can read; a bus topic can be added without touching callers.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Any

from cirrus.context import RequestContext

LOG = logging.getLogger("cirrus.notifications")


class Notifier:
    """Emits ``<publisher>.<event_type>`` notifications."""

    def __init__(self, publisher: str, keep: int = 1000) -> None:
        self.publisher = publisher
        self.sent: deque[dict[str, Any]] = deque(maxlen=keep)

    def info(self, ctx: RequestContext, event_type: str, payload: dict[str, Any]) -> None:
        self._emit("INFO", ctx, event_type, payload)

    def error(self, ctx: RequestContext, event_type: str, payload: dict[str, Any]) -> None:
        self._emit("ERROR", ctx, event_type, payload)

    def _emit(self, priority: str, ctx: RequestContext, event_type: str,
              payload: dict[str, Any]) -> None:
        self.sent.append({"priority": priority, "event_type": event_type,
                          "publisher_id": self.publisher, "request_id": ctx.request_id,
                          "payload": payload})
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("%s %s %s", priority, event_type, payload)
