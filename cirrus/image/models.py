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
