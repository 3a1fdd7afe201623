"""Identity tables: domains, projects, users, roles, assignments, revocation events."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata, timestamps

domains = sa.Table(
    "domains", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("description", sa.Text, nullable=True),
    *timestamps(),
)

projects = sa.Table(
    "projects", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("domain_id", sa.String(64), sa.ForeignKey("domains.id"), nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("description", sa.Text, nullable=True),
    *timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

users = sa.Table(
    "users", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("domain_id", sa.String(64), sa.ForeignKey("domains.id"), nullable=False),
    sa.Column("password_hash", sa.String(255), nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("default_project_id", sa.String(64), nullable=True),
    sa.Column("email", sa.String(255), nullable=True),
    *timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

roles = sa.Table(
    "roles", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *timestamps(),
)

# A role for a user on a project or on a domain (exactly one of the two).
role_assignments = sa.Table(
    "role_assignments", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(64), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    sa.Column("role_id", sa.String(64), sa.ForeignKey("roles.id", ondelete="CASCADE"), nullable=False),
    sa.Column("project_id", sa.String(64), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
    sa.Column("domain_id", sa.String(64), sa.ForeignKey("domains.id", ondelete="CASCADE"), nullable=True),
    sa.UniqueConstraint("user_id", "role_id", "project_id", "domain_id"),
)

# Keystone's revocation events: a token issued before an event that matches it
# (every field the event sets equals the token's) is refused. See
# cirrus/identity/revocation.py. ``role`` is a role's name: tokens carry names.
revocation_events = sa.Table(
    "revocation_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # The revocation generation this event made (revocation_generation below).
    sa.Column("generation", sa.BigInteger, nullable=False, index=True),
    sa.Column("user_id", sa.String(64), nullable=True),
    sa.Column("project_id", sa.String(64), nullable=True),
    sa.Column("domain_id", sa.String(64), nullable=True),
    sa.Column("role", sa.String(255), nullable=True),
    sa.Column("audit_id", sa.String(64), nullable=True),
    sa.Column("audit_chain_id", sa.String(64), nullable=True),
    # When it was recorded (tokens carry a generation, not a time, to match:
    # see revocation.py); pruned once every token issued before it expired.
    sa.Column("issued_before", sa.DateTime, nullable=False, index=True),
)

# One row: the number of revocations ever recorded. Every API process reads it
# on each token validation and reloads the events when it has moved.
revocation_generation = sa.Table(
    "revocation_generation", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("generation", sa.BigInteger, nullable=False),
)

# Key material for Fernet tokens, so tokens survive a restart.
token_keys = sa.Table(
    "token_keys", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(64), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
