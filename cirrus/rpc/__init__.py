"""The bus: ``get_transport(url)`` and the RPC client/dispatcher."""
from __future__ import annotations

from cirrus.rpc.client import RPCClient, RPCDispatcher
from cirrus.rpc.transport import ConnectionLost, MessagingTimeout, RemoteError, Transport

TRANSPORTS = ("inprocess", "local", "amqp")


def get_transport(url: str, hub: bool = False) -> Transport:
    """A transport for ``url``: ``inprocess://``, ``local:///path/of/socket``
    (the processes of one ``cirrus up``; ``hub`` for the one that serves the
    socket) or ``amqp://…`` (RabbitMQ)."""
    scheme = url.split("://", 1)[0]
    if scheme == "local":
        from cirrus.rpc.local import LocalTransport

        path = url.split("://", 1)[1]
        if not path.startswith("/"):
            raise ValueError(f"local transport needs an absolute socket path: {url!r}")
        return LocalTransport(path, hub=hub)
    if scheme == "inprocess":
        from cirrus.rpc.inprocess import InProcessTransport

        return InProcessTransport()
    if scheme == "amqp":
        from cirrus.rpc.amqp import AMQPTransport

        return AMQPTransport(url)
    raise ValueError(f"unknown transport_url scheme {scheme!r}; expected one of {TRANSPORTS}")


__all__ = ["RPCClient", "RPCDispatcher", "Transport", "MessagingTimeout", "ConnectionLost",
           "RemoteError", "get_transport"]
