"""The AMQP transport (RabbitMQ): cirrus's own AMQP 0-9-1 client (``wire``,
``connection``, ``transport``), and aio-pika's as a fallback
(``amqp+aiopika://`` URLs, :mod:`cirrus.rpc.amqp.aiopika`)."""
from __future__ import annotations

from cirrus.rpc.amqp.transport import AMQPTransport

__all__ = ["AMQPTransport"]
