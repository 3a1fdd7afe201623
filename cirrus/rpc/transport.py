"""The bus seam: a transport moves JSON-safe messages to topic/server queues.

Two implementations sit behind it: the in-process transport (asyncio, default)
and AMQP (RabbitMQ). Callers only use :class:`cirrus.rpc.client.RPCClient`.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Coroutine

Message = dict[str, Any]
# Handlers are coroutine functions: a cast or fanout runs one as its own task.
Handler = Callable[[Message], Coroutine[Any, Any, Any]]


class MessagingTimeout(TimeoutError):
    """A ``call`` got no reply within its timeout."""


class ConnectionLost(MessagingTimeout):
    """The connection to the broker dropped while a ``call`` awaited its reply.

    Its outcome is unknown. A handler that sees this knows that the delivery it
    is working on was lost with the same connection and will come again (it is
    acknowledged only when the handler returns), so it may leave the work to
    that redelivery instead of recording a failure.
    """


class RemoteError(Exception):
    """A ``call`` handler raised something that is not a cirrus exception."""

    def __init__(self, exc_type: str, message: str) -> None:
        self.exc_type = exc_type
        self.message = message
        super().__init__(f"Remote error: {exc_type} {message}")


class Transport(abc.ABC):
    """Moves messages; knows nothing of methods or contexts.

    A transport that never hands a handler the same message twice says so with
    a class attribute ``at_most_once = True`` (the in-process and local buses;
    not on the ABC, so a wrapper such as ``MeteredTransport`` passes on its
    inner transport's). Without it, handlers assume a message may come again,
    as a broker's redelivery does.
    """

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def stop(self) -> None: ...

    @abc.abstractmethod
    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        """Consume ``topic`` (shared round-robin), ``topic.server`` and fan-out."""

    @abc.abstractmethod
    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        """Deliver to one consumer of ``topic`` (or of ``topic.server``); no reply."""

    @abc.abstractmethod
    async def call(self, topic: str, server: str | None, message: Message,
                   timeout: float) -> Any:
        """Deliver to one consumer and return its reply.

        Raises :class:`MessagingTimeout` if no reply arrives in ``timeout`` s.
        The reply is ``{"result": …}`` or ``{"failure": {...}}``.
        """

    @abc.abstractmethod
    async def fanout(self, topic: str, message: Message) -> None:
        """Deliver to every consumer of ``topic``."""
