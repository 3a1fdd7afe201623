"""Bus messages sent and received by RPC method, and broker reconnects.

:class:`MeteredTransport` wraps whichever transport a process uses, so the
transports themselves only have to say when they reconnect.
"""
from __future__ import annotations

from typing import Any, Coroutine

from prometheus_client import CollectorRegistry

from cirrus.metrics.loop import Counter, CounterChild
from cirrus.rpc.transport import Handler, Message, Transport


class BusMetrics:
    """``cirrus_bus_messages_sent_total{method, kind}``,
    ``cirrus_bus_messages_received_total{method}`` and ``cirrus_bus_reconnects_total``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.sent = Counter("cirrus_bus_messages_sent", "RPC messages this process sent, by "
                            "method and kind (call, cast, fanout).", ("method", "kind"),
                            registry=registry)
        self.received = Counter("cirrus_bus_messages_received", "RPC messages this process's "
                                "services were handed, by method.", ("method",),
                                registry=registry)
        self.reconnects = Counter("cirrus_bus_reconnects", "Times the connection to the "
                                  "broker came back after it was lost.", registry=registry)
        # RPC method names come from the services' RPC_API sets: bounded.
        self._sent: dict[tuple[str, str], CounterChild] = {}
        self._received: dict[str, CounterChild] = {}

    def count_sent(self, message: Message, kind: str) -> None:
        key = (str(message.get("method", "")), kind)
        child = self._sent.get(key)
        if child is None:
            child = self._sent[key] = self.sent.labels(*key)
        child.inc()

    def count_received(self, message: Message) -> None:
        method = str(message.get("method", ""))
        child = self._received.get(method)
        if child is None:
            child = self._received[method] = self.received.labels(method)
        child.inc()


class MeteredTransport(Transport):
    """``inner``, counting into ``metrics`` what passes through it. Anything else
    (``wait_lost``, a transport's own attributes) is ``inner``'s."""

    def __init__(self, inner: Transport, metrics: BusMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        hooks = getattr(inner, "reconnect_hooks", None)
        if hooks is not None:
            hooks.append(metrics.reconnects.labels().inc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        count = self.metrics.count_received

        def counted(message: Message) -> Coroutine[Any, Any, Any]:
            count(message)
            return handler(message)
        await self.inner.listen(topic, server, counted)

    # Not coroutines themselves: each hands back the inner transport's, so a
    # message costs a count and no extra coroutine.
    def cast(self, topic: str, server: str | None,
             message: Message) -> Coroutine[Any, Any, None]:
        self.metrics.count_sent(message, "cast")
        return self.inner.cast(topic, server, message)

    def call(self, topic: str, server: str | None, message: Message,
             timeout: float) -> Coroutine[Any, Any, Any]:
        self.metrics.count_sent(message, "call")
        return self.inner.call(topic, server, message, timeout)

    def fanout(self, topic: str,
               message: Message) -> Coroutine[Any, Any, None]:
        self.metrics.count_sent(message, "fanout")
        return self.inner.fanout(topic, message)
