"""Image service tables."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata, timestamps

images = sa.Table(
    "images", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=True),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("visibility", sa.String(16), nullable=False, default="shared"),
    sa.Column("protected", sa.Boolean, nullable=False, default=False),
    sa.Column("checksum", sa.String(32), nullable=True),
    sa.Column("os_hash_algo", sa.String(64), nullable=True),
    sa.Column("os_hash_value", sa.String(128), nullable=True),
    sa.Column("size", sa.BigInteger, nullable=True),
    sa.Column("virtual_size", sa.BigInteger, nullable=True),
    sa.Column("min_disk", sa.Integer, nullable=False, default=0),
    sa.Column("min_ram", sa.Integer, nullable=False, default=0),
    sa.Column("disk_format", sa.String(32), nullable=True),
    sa.Column("container_format", sa.String(32), nullable=True),
    sa.Column("owner", sa.String(64), nullable=True, index=True),
    sa.Column("properties", sa.JSON, nullable=False, default=dict),
    sa.Column("tags", sa.JSON, nullable=False, default=list),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
)

image_members = sa.Table(
    "image_members", metadata,
    sa.Column("image_id", sa.String(36), sa.ForeignKey("images.id"), primary_key=True),
    sa.Column("member_id", sa.String(64), primary_key=True),
    sa.Column("status", sa.String(16), nullable=False, default="pending"),
    *timestamps(),
)

# Glance's tasks: one per import (``POST /v2/images/{id}/import``) or per
# ``POST /v2/tasks``; ``input``/``result`` are the task's JSON as Glance shows it.
image_tasks = sa.Table(
    "image_tasks", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("type", sa.String(30), nullable=False),
    sa.Column("status", sa.String(30), nullable=False),
    sa.Column("owner", sa.String(64), nullable=True, index=True),
    sa.Column("image_id", sa.String(36), nullable=True, index=True),
    sa.Column("request_id", sa.String(64), nullable=True),
    sa.Column("user_id", sa.String(64), nullable=True),
    sa.Column("input", sa.JSON, nullable=False, default=dict),
    sa.Column("result", sa.JSON, nullable=True),
    sa.Column("message", sa.Text, nullable=False, default=""),
    sa.Column("expires_at", sa.DateTime, nullable=True),
    *timestamps(),
)

# Metadata definitions (Glance's ``/v2/metadefs``): namespaces, the resource
# types they apply to, and what a namespace holds (objects, properties, tags,
# resource type associations), each kept as the JSON the API shows.
metadef_namespaces = sa.Table(
    "metadef_namespaces", metadata,
    sa.Column("namespace", sa.String(80), primary_key=True),
    sa.Column("display_name", sa.String(80), nullable=True),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("visibility", sa.String(32), nullable=False, default="private"),
    sa.Column("protected", sa.Boolean, nullable=False, default=False),
    sa.Column("owner", sa.String(255), nullable=False),
    *timestamps(),
)

metadef_resource_types = sa.Table(
    "metadef_resource_types", metadata,
    sa.Column("name", sa.String(80), primary_key=True),
    sa.Column("protected", sa.Boolean, nullable=False, default=False),
    *timestamps(),
)

metadef_items = sa.Table(
    "metadef_items", metadata,
    sa.Column("namespace", sa.String(80), sa.ForeignKey("metadef_namespaces.namespace",
                                                        ondelete="CASCADE"), primary_key=True),
    # object, property, tag or resource_type (an association)
    sa.Column("kind", sa.String(16), primary_key=True),
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("body", sa.JSON, nullable=False, default=dict),
    *timestamps(),
)
