"""The console auth tokens table (Nova's ``console_auth_tokens``)."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata

console_auth_tokens = sa.Table(
    "console_auth_tokens", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # Only the token's hash is kept: a database reader cannot open a console.
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("console_type", sa.String(32), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("port", sa.Integer, nullable=False),
    # The network namespace the port listens in on that host ("": the host's own).
    sa.Column("netns", sa.String(255), nullable=False, server_default=""),
    sa.Column("instance_uuid", sa.String(36), nullable=False, index=True),
    sa.Column("access_url_base", sa.String(255), nullable=False),
    sa.Column("expires", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=True),
)
