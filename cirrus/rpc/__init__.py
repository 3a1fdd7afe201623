"""The bus: ``get_transport(url)`` and the RPC client/dispatcher."""
from __future__ import annotations

from cirrus.rpc.client import RPCClient, RPCDispatcher
from cirrus.rpc.transport import ConnectionLost, MessagingTimeout, RemoteError, Transport

TRANSPORTS = ("inprocess", "amqp")


def get_transport(url: str) -> Transport:
    """A transport for ``url`` (``inprocess://`` or ``amqp://…``)."""
    scheme = url.split("://", 1)[0]
    if scheme == "inprocess":
        from cirrus.rpc.inprocess import InProcessTransport

        return InProcessTransport()
    if scheme == "amqp":
        from cirrus.rpc.amqp import AMQPTransport  # type: ignore[import-not-found]

        return AMQPTransport(url)
    raise ValueError(f"unknown transport_url scheme {scheme!r}; expected one of {TRANSPORTS}")


__all__ = ["RPCClient", "RPCDispatcher", "Transport", "MessagingTimeout", "ConnectionLost",
           "RemoteError", "get_transport"]
