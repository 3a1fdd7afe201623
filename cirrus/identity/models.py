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
    # The project it was made under (its domain's projects: NULL).
    sa.Column("parent_id", sa.String(64), nullable=True),
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
    # Attributes Keystone keeps without knowing them (description, …): JSON.
    sa.Column("extra", sa.Text, nullable=True),
    *timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

roles = sa.Table(
    "roles", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *timestamps(),
    # A domain-specific role (Keystone's): assignable but never in a token.
    sa.Column("domain_id", sa.String(64), nullable=True),
    sa.Column("description", sa.Text, nullable=True),
)

# A role for a user on a project, on a domain, or on the system ("all"):
# exactly one of the three.
role_assignments = sa.Table(
    "role_assignments", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(64), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    sa.Column("role_id", sa.String(64), sa.ForeignKey("roles.id", ondelete="CASCADE"), nullable=False),
    sa.Column("project_id", sa.String(64), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
    sa.Column("domain_id", sa.String(64), sa.ForeignKey("domains.id", ondelete="CASCADE"), nullable=True),
    sa.UniqueConstraint("user_id", "role_id", "project_id", "domain_id"),
    sa.Column("system", sa.String(16), nullable=True),
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
# on each token validation and reloads the events when it has moved. With it,
# in the same read, the catalog's generation: bumped by triggers on every
# change of a flavor, its access, an image or its members (migration 0042),
# the key of each API process's flavor and image lookups.
revocation_generation = sa.Table(
    "revocation_generation", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("generation", sa.BigInteger, nullable=False),
    sa.Column("catalog_generation", sa.BigInteger, nullable=False, server_default="0"),
)

# Key material for Fernet tokens, so tokens survive a restart.
token_keys = sa.Table(
    "token_keys", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(64), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)

groups = sa.Table(
    "groups", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("domain_id", sa.String(64), sa.ForeignKey("domains.id"), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    *timestamps(),
    sa.UniqueConstraint("domain_id", "name"),
)

user_group_membership = sa.Table(
    "user_group_membership", metadata,
    sa.Column("user_id", sa.String(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("group_id", sa.String(64), sa.ForeignKey("groups.id", ondelete="CASCADE"),
              primary_key=True),
)

# A role for a group's members on a project, a domain or the system, as
# role_assignments is for one user.
group_role_assignments = sa.Table(
    "group_role_assignments", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("group_id", sa.String(64), sa.ForeignKey("groups.id", ondelete="CASCADE"), nullable=False),
    sa.Column("role_id", sa.String(64), sa.ForeignKey("roles.id", ondelete="CASCADE"), nullable=False),
    sa.Column("project_id", sa.String(64), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
    sa.Column("domain_id", sa.String(64), sa.ForeignKey("domains.id", ondelete="CASCADE"), nullable=True),
    sa.Column("system", sa.String(16), nullable=True),
)

# Keystone's role inference rules: holding the prior role implies the other.
implied_roles = sa.Table(
    "implied_roles", metadata,
    sa.Column("prior_role_id", sa.String(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("implied_role_id", sa.String(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
)

project_tags = sa.Table(
    "project_tags", metadata,
    sa.Column("project_id", sa.String(64), sa.ForeignKey("projects.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("name", sa.String(255), primary_key=True),
)

regions = sa.Table(
    "regions", metadata,
    sa.Column("id", sa.String(255), primary_key=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("parent_region_id", sa.String(255), nullable=True),
    *timestamps(),
)

# Catalog entries an operator added; the cloud's own services are built in
# (IdentityService.catalog) and listed beside these.
catalog_services = sa.Table(
    "catalog_services", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("type", sa.String(255), nullable=False),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    *timestamps(),
)

catalog_endpoints = sa.Table(
    "catalog_endpoints", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    # A built-in service's or a catalog_services row's: no foreign key.
    sa.Column("service_id", sa.String(64), nullable=False, index=True),
    sa.Column("interface", sa.String(8), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("region_id", sa.String(255), nullable=True),
    sa.Column("enabled", sa.Boolean, nullable=False, default=True),
    *timestamps(),
)

# Keystone's credentials: a blob (an EC2 key pair, a TOTP secret…) kept for a
# user, encrypted at rest with the credential key (identity/credentials.py).
credentials = sa.Table(
    "credentials", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("user_id", sa.String(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("project_id", sa.String(64), nullable=True),
    sa.Column("type", sa.String(255), nullable=False),
    sa.Column("encrypted_blob", sa.Text, nullable=False),
    *timestamps(),
)

# A user's delegation of their roles on one project to an application, by a
# secret only its hash of is kept.
application_credentials = sa.Table(
    "application_credentials", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(64), sa.ForeignKey("users.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("project_id", sa.String(64), sa.ForeignKey("projects.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("secret_hash", sa.String(255), nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=True),
    sa.Column("unrestricted", sa.Boolean, nullable=False, default=False),
    *timestamps(),
    sa.UniqueConstraint("user_id", "name"),
)

application_credential_roles = sa.Table(
    "application_credential_roles", metadata,
    sa.Column("application_credential_id", sa.String(64),
              sa.ForeignKey("application_credentials.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role_id", sa.String(64), sa.ForeignKey("roles.id", ondelete="CASCADE"),
              primary_key=True),
)

# Keystone's policy blobs: stored and served, interpreted by nothing.
identity_policies = sa.Table(
    "identity_policies", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("type", sa.String(255), nullable=False),
    sa.Column("blob", sa.Text, nullable=False),
    *timestamps(),
)
