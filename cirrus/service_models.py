"""The services table: one row per running service, with its heartbeat."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata, timestamps

services = sa.Table(
    "services", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("binary", sa.String(64), nullable=False),
    sa.Column("topic", sa.String(64), nullable=False),
    sa.Column("availability_zone", sa.String(255), nullable=False, default="nova"),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("disabled_reason", sa.String(255), nullable=True),
    sa.Column("forced_down", sa.Boolean, nullable=False, default=False),
    sa.Column("last_seen_up", sa.DateTime, nullable=True),
    sa.Column("report_count", sa.Integer, nullable=False, default=0),
    *timestamps(),
    sa.UniqueConstraint("host", "binary"),
)
