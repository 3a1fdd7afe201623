"""Block storage tables (Cinder's ``volumes``, ``snapshots``,
``volume_attachment``, ``volume_types``, ``quotas``, ``messages``).

Metadata, image metadata and admin metadata are JSON columns on their
volume (Cinder keeps each in a key/value table; nothing here queries inside
them except the listing filter, which filters in Python).
"""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata, timestamps

volume_types = sa.Table(
    "volume_types", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("is_public", sa.Boolean, nullable=False, default=True),
    sa.Column("extra_specs", sa.JSON, nullable=False, default=dict),
    sa.Column("qos_specs_id", sa.String(36), nullable=True),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

# Cinder's encryption specs of a type (one row per encrypted type; the API only).
volume_type_encryption = sa.Table(
    "volume_type_encryption", metadata,
    sa.Column("volume_type_id", sa.String(36), primary_key=True),
    sa.Column("encryption_id", sa.String(36), nullable=False),
    sa.Column("provider", sa.String(255), nullable=False),
    sa.Column("cipher", sa.String(255), nullable=True),
    sa.Column("key_size", sa.Integer, nullable=True),
    sa.Column("control_location", sa.String(255), nullable=False),
    *timestamps(),
)

# Cinder's group types (3.11): recorded for clients; cirrus makes no groups.
group_types = sa.Table(
    "volume_group_types", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("is_public", sa.Boolean, nullable=False, default=True),
    sa.Column("group_specs", sa.JSON, nullable=False, default=dict),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

qos_specs = sa.Table(
    "volume_qos_specs", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("consumer", sa.String(16), nullable=False),
    sa.Column("specs", sa.JSON, nullable=False, default=dict),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

volume_type_projects = sa.Table(
    "volume_type_projects", metadata,
    sa.Column("volume_type_id", sa.String(36), sa.ForeignKey("volume_types.id"),
              primary_key=True),
    sa.Column("project_id", sa.String(64), primary_key=True),
)

volumes = sa.Table(
    "volumes", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("user_id", sa.String(64), nullable=False),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("status", sa.String(32), nullable=False, index=True),
    sa.Column("attach_status", sa.String(32), nullable=False, default="detached"),
    sa.Column("availability_zone", sa.String(255), nullable=False),
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("bootable", sa.Boolean, nullable=False, default=False),
    sa.Column("multiattach", sa.Boolean, nullable=False, default=False),
    sa.Column("volume_type_id", sa.String(36), nullable=True),
    sa.Column("snapshot_id", sa.String(36), nullable=True),
    sa.Column("source_volid", sa.String(36), nullable=True),
    sa.Column("image_id", sa.String(36), nullable=True),
    sa.Column("format", sa.String(16), nullable=False, default="raw"),
    sa.Column("metadata", sa.JSON, nullable=False, default=dict),
    sa.Column("image_metadata", sa.JSON, nullable=False, default=dict),
    sa.Column("admin_metadata", sa.JSON, nullable=False, default=dict),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    sa.Column("deleted_at", sa.DateTime, nullable=True),
)

snapshots = sa.Table(
    "snapshots", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("volume_id", sa.String(36), nullable=False, index=True),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("user_id", sa.String(64), nullable=False),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("description", sa.String(255), nullable=True),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("progress", sa.String(16), nullable=False, default="0%"),
    sa.Column("metadata", sa.JSON, nullable=False, default=dict),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

volume_attachment = sa.Table(
    "volume_attachment", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("volume_id", sa.String(36), nullable=False, index=True),
    sa.Column("instance_uuid", sa.String(36), nullable=True, index=True),
    sa.Column("attached_host", sa.String(255), nullable=True),
    sa.Column("mountpoint", sa.String(255), nullable=True),
    sa.Column("attach_status", sa.String(32), nullable=False),
    sa.Column("attach_mode", sa.String(8), nullable=False, default="rw"),
    sa.Column("connector", sa.JSON, nullable=True),
    sa.Column("connection_info", sa.JSON, nullable=True),
    sa.Column("attach_time", sa.DateTime, nullable=True),
    sa.Column("detach_time", sa.DateTime, nullable=True),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

volume_quotas = sa.Table(
    "volume_quotas", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("resource", sa.String(64), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),
)

transfers = sa.Table(
    "volume_transfers", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("volume_id", sa.String(36), nullable=False, index=True),
    sa.Column("source_project_id", sa.String(64), nullable=False, index=True),
    sa.Column("destination_project_id", sa.String(64), nullable=True),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("salt", sa.String(32), nullable=False),
    sa.Column("crypt_hash", sa.String(64), nullable=False),
    sa.Column("no_snapshots", sa.Boolean, nullable=False, default=False),
    sa.Column("accepted", sa.Boolean, nullable=False, default=False),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

# Cinder's quota classes: only "default" is used, whose limits override the
# settings' defaults for every project without limits of its own.
volume_quota_classes = sa.Table(
    "volume_quota_classes", metadata,
    sa.Column("class_name", sa.String(255), primary_key=True),
    sa.Column("resource", sa.String(255), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),
)

volume_messages = sa.Table(
    "volume_messages", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("resource_type", sa.String(32), nullable=False),
    sa.Column("resource_uuid", sa.String(36), nullable=True),
    sa.Column("event_id", sa.String(32), nullable=False),
    sa.Column("message_level", sa.String(16), nullable=False),
    sa.Column("user_message", sa.String(1024), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
)
