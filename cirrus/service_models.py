"""The services table (one row per running service, with its heartbeat), and
the record of the defaults a fresh cloud was given."""
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

# The defaults a fresh cloud was given (cirrus/first_run.py), one row each, so
# each is made once: a restart, or the user deleting one, does not bring it back.
first_run_defaults = sa.Table(
    "first_run_defaults", metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("resource_id", sa.String(64), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=True),
)
