"""The AMQP transport (RabbitMQ), on cirrus's own AMQP 0-9-1 client: ``wire``
(frames and methods), ``connection`` (one connection and its channels),
``transport`` (the bus: reconnects, declarations, calls, casts, fan-outs)."""
from __future__ import annotations

from cirrus.rpc.amqp.transport import AMQPTransport

__all__ = ["AMQPTransport"]
