"""Compute tables: flavors, instances and everything hanging off them,
compute nodes and the resource allocations the scheduler claims on them."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata, timestamps

JSON = sa.JSON

flavors = sa.Table(
    "flavors", metadata,
    sa.Column("flavorid", sa.String(255), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False, default=0),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False, default=0),
    sa.Column("swap", sa.Integer, nullable=False, default=0),
    sa.Column("rxtx_factor", sa.Float, nullable=False, default=1.0),
    sa.Column("is_public", sa.Boolean, nullable=False, default=True),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("extra_specs", JSON, nullable=False, default=dict),
    *timestamps(),
)

instances = sa.Table(
    "instances", metadata,
    # Nova's integer id (names like instance-0000002a) and the public uuid.
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    # Looked up by project through the composite indexes below (migration 0007).
    sa.Column("project_id", sa.String(64), nullable=False),
    sa.Column("user_id", sa.String(64), nullable=False),
    sa.Column("display_name", sa.String(255), nullable=False),
    sa.Column("display_description", sa.Text, nullable=True),
    sa.Column("hostname", sa.String(255), nullable=False),
    sa.Column("image_ref", sa.String(255), nullable=True),
    sa.Column("flavor", JSON, nullable=False),  # snapshot of the flavor at boot
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False, default=0),
    sa.Column("vm_state", sa.String(32), nullable=False),
    sa.Column("task_state", sa.String(32), nullable=True),
    sa.Column("power_state", sa.Integer, nullable=False, default=0),
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("node", sa.String(255), nullable=True),
    sa.Column("launched_on", sa.String(255), nullable=True),
    sa.Column("availability_zone", sa.String(255), nullable=True),
    sa.Column("key_name", sa.String(255), nullable=True),
    sa.Column("key_data", sa.Text, nullable=True),
    sa.Column("user_data", sa.Text, nullable=True),
    sa.Column("config_drive", sa.Boolean, nullable=False, default=False),
    sa.Column("metadata", JSON, nullable=False, default=dict),
    sa.Column("system_metadata", JSON, nullable=False, default=dict),
    sa.Column("security_groups", JSON, nullable=False, default=list),
    sa.Column("requested_networks", JSON, nullable=True),
    sa.Column("access_ip_v4", sa.String(64), nullable=True),
    sa.Column("access_ip_v6", sa.String(64), nullable=True),
    # OS-DCF:diskConfig AUTO (migration 0034): the guest's root partition
    # grows with its disk.
    sa.Column("auto_disk_config", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("reservation_id", sa.String(255), nullable=False),
    sa.Column("launch_index", sa.Integer, nullable=False, default=0),
    sa.Column("locked", sa.Boolean, nullable=False, default=False),
    # Who holds the lock ("owner" or "admin") and why (2.73): migration 0010.
    sa.Column("locked_by", sa.String(5), nullable=True),
    sa.Column("locked_reason", sa.String(255), nullable=True),
    sa.Column("progress", sa.Integer, nullable=False, default=0),
    sa.Column("scheduled_at", sa.DateTime, nullable=True),
    sa.Column("launched_at", sa.DateTime, nullable=True),
    sa.Column("terminated_at", sa.DateTime, nullable=True),
    *timestamps(),
    sa.Column("deleted_at", sa.DateTime, nullable=True),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    # Listings: a project's (or every project's) live servers, newest first,
    # read in index order up to the page (migrations 0002, 0038).
    sa.Index("ix_instances_project_id_deleted_created_at", "project_id", "deleted", "created_at"),
    # No index a guarded save (``instance.save``) can use may stop short of its
    # row: ``deleted`` does not lead, and the state and host indexes end in
    # ``uuid``. Otherwise PostgreSQL, with statistics that say "no live row",
    # may pick one and read every live instance per save (migration 0038).
    sa.Index("ix_instances_created_at_deleted", "created_at", "deleted"),
    # Build admission counts the instances waiting to build while creates wait
    # (migration 0004); on PostgreSQL the index holds only those, in the order
    # they were inserted (``id``), and a save finds its own by ``uuid`` in the
    # index (0038).
    sa.Index("ix_instances_vm_state_task_state_deleted_id_uuid",
             "vm_state", "task_state", "deleted", "id", "uuid",
             postgresql_where=sa.text("vm_state = 'building' AND task_state = 'scheduling' "
                                      "AND deleted IS false")),
    # A host's instances (its periodic tasks, the hypervisor's servers).
    sa.Index("ix_instances_host_uuid", "host", "uuid"),
)

# Polls for changes (``GET /servers?changes-since=…``): a project's instances
# by their last change, a range of this index instead of every row of the
# project (9 ms → 0.02 ms a poll at 9,000 servers; migration 0005).
sa.Index("ix_instances_project_id_changed", instances.c.project_id,
         sa.func.coalesce(instances.c.updated_at, instances.c.created_at))

# A server's tags (2.26), Nova's ``tags`` table: one row per tag, so that the
# listing filters (tags, tags-any, not-tags, not-tags-any) are index lookups
# in the database rather than a read of every server (migration 0013). Rows
# go with the instance's when it is deleted (cirrus/compute/instance.py).
tags = sa.Table(
    "tags", metadata,
    sa.Column("resource_id", sa.String(36), primary_key=True),
    sa.Column("tag", sa.String(60), primary_key=True),
    sa.Index("ix_tags_tag", "tag", "resource_id"),  # covering: a tag's servers
)

instance_info_caches = sa.Table(
    "instance_info_caches", metadata,
    sa.Column("instance_uuid", sa.String(36), sa.ForeignKey("instances.uuid"), primary_key=True),
    sa.Column("network_info", JSON, nullable=False, default=list),
    *timestamps(),
)

instance_faults = sa.Table(
    "instance_faults", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(36), sa.ForeignKey("instances.uuid"), nullable=False, index=True),
    sa.Column("code", sa.Integer, nullable=False),
    sa.Column("message", sa.String(255), nullable=False),
    sa.Column("details", sa.Text, nullable=True),
    sa.Column("host", sa.String(255), nullable=True),
    *timestamps(),
)

instance_actions = sa.Table(
    "instance_actions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(36), sa.ForeignKey("instances.uuid"), nullable=False, index=True),
    sa.Column("action", sa.String(255), nullable=False),
    sa.Column("request_id", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(64), nullable=True),
    sa.Column("project_id", sa.String(64), nullable=True),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("message", sa.String(255), nullable=True),
    *timestamps(),
)

instance_actions_events = sa.Table(
    "instance_actions_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("action_id", sa.Integer, sa.ForeignKey("instance_actions.id"), nullable=False, index=True),
    sa.Column("event", sa.String(255), nullable=False),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("result", sa.String(255), nullable=True),
    sa.Column("traceback", sa.Text, nullable=True),
    sa.Column("host", sa.String(255), nullable=True),
    sa.Column("details", sa.Text, nullable=True),
    # A build event's boot timeline: its steps, listed by the API as events
    # of their own (cirrus/compute/timeline.py).
    sa.Column("steps", sa.Text, nullable=True),
    *timestamps(),
)

block_device_mappings = sa.Table(
    "block_device_mappings", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(36), sa.ForeignKey("instances.uuid"), nullable=False, index=True),
    sa.Column("source_type", sa.String(32), nullable=False),
    sa.Column("destination_type", sa.String(32), nullable=False),
    sa.Column("image_id", sa.String(36), nullable=True),
    sa.Column("boot_index", sa.Integer, nullable=True),
    sa.Column("device_name", sa.String(255), nullable=True),
    sa.Column("volume_size", sa.Integer, nullable=True),
    sa.Column("delete_on_termination", sa.Boolean, nullable=False, default=True),
    sa.Column("guest_format", sa.String(32), nullable=True),
    sa.Column("disk_bus", sa.String(32), nullable=True),
    # volumes (migration 0026)
    sa.Column("uuid", sa.String(36), nullable=True),
    sa.Column("volume_id", sa.String(36), nullable=True, index=True),
    sa.Column("snapshot_id", sa.String(36), nullable=True),
    sa.Column("attachment_id", sa.String(36), nullable=True),
    sa.Column("connection_info", JSON, nullable=True),
    sa.Column("device_type", sa.String(32), nullable=True),
    sa.Column("volume_type", sa.String(255), nullable=True),
    sa.Column("tag", sa.String(60), nullable=True),
    *timestamps(),
)

key_pairs = sa.Table(
    "key_pairs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(64), nullable=False),
    sa.Column("fingerprint", sa.String(255), nullable=False),
    sa.Column("public_key", sa.Text, nullable=False),
    sa.Column("type", sa.String(16), nullable=False, default="ssh"),
    *timestamps(),
    sa.UniqueConstraint("user_id", "name"),
)

instance_groups = sa.Table(
    "instance_groups", metadata,
    sa.Column("uuid", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("policy", sa.String(64), nullable=False),
    sa.Column("rules", JSON, nullable=False, default=dict),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("user_id", sa.String(64), nullable=False),
    *timestamps(),
)

instance_group_members = sa.Table(
    "instance_group_members", metadata,
    sa.Column("group_uuid", sa.String(36), sa.ForeignKey("instance_groups.uuid", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("instance_uuid", sa.String(36), primary_key=True),
)

# One row per hypervisor node. The *_used columns are the claimed totals; a
# claim is one guarded UPDATE, so concurrent boots can never overcommit.
compute_nodes = sa.Table(
    "compute_nodes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("host", sa.String(255), nullable=False, index=True),
    sa.Column("hypervisor_hostname", sa.String(255), nullable=False, unique=True),
    sa.Column("hypervisor_type", sa.String(64), nullable=False, default="fake"),
    sa.Column("hypervisor_version", sa.Integer, nullable=False, default=1),
    sa.Column("cpu_arch", sa.String(32), nullable=False, default="x86_64"),
    sa.Column("host_ip", sa.String(64), nullable=True),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("local_gb", sa.Integer, nullable=False),
    sa.Column("vcpus_used", sa.Integer, nullable=False, default=0),
    sa.Column("memory_mb_used", sa.Integer, nullable=False, default=0),
    sa.Column("local_gb_used", sa.Integer, nullable=False, default=0),
    sa.Column("reserved_memory_mb", sa.Integer, nullable=False, default=0),
    sa.Column("cpu_allocation_ratio", sa.Float, nullable=False, default=16.0),
    sa.Column("ram_allocation_ratio", sa.Float, nullable=False, default=1.5),
    sa.Column("disk_allocation_ratio", sa.Float, nullable=False, default=1.0),
    sa.Column("running_vms", sa.Integer, nullable=False, default=0),
    *timestamps(),
)

# What each instance holds on a node; deleting the row (and subtracting it)
# releases the claim exactly once.
allocations = sa.Table(
    "allocations", metadata,
    sa.Column("consumer_uuid", sa.String(36), primary_key=True),
    sa.Column("node_id", sa.Integer, sa.ForeignKey("compute_nodes.id"), nullable=False, index=True),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("disk_gb", sa.Integer, nullable=False),
    *timestamps(),
)

# A project's live (not deleted) instances, cores and RAM: what its quota
# counts. Kept by triggers on ``instances`` (migration 0006; on PostgreSQL
# fired at COMMIT, 0032), so nothing leaks; a project without a row uses none.
project_usages = sa.Table(
    "project_usages", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("instances", sa.Integer, nullable=False, server_default="0"),
    sa.Column("cores", sa.Integer, nullable=False, server_default="0"),
    sa.Column("ram", sa.Integer, nullable=False, server_default="0"),
)

quota_limits = sa.Table(
    "quota_limits", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("resource", sa.String(64), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *timestamps(),
)

# Quota classes (Nova's quota_classes): named sets of limits; "default" holds
# the defaults of every project without its own limit (migration 0018).
quota_classes = sa.Table(
    "quota_classes", metadata,
    sa.Column("class_name", sa.String(255), primary_key=True),
    sa.Column("resource", sa.String(255), primary_key=True),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *timestamps(),
)

# Host aggregates (Nova's API-database tables): named groups of compute hosts
# with metadata; the ``availability_zone`` key makes one a zone (migration 0014).
aggregates = sa.Table(
    "aggregates", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *timestamps(),
)

aggregate_hosts = sa.Table(
    "aggregate_hosts", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), nullable=False),
    sa.Column("host", sa.String(255), nullable=False, index=True),
    *timestamps(),
    sa.UniqueConstraint("aggregate_id", "host"),
)

aggregate_metadata = sa.Table(
    "aggregate_metadata", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("aggregate_id", sa.Integer, sa.ForeignKey("aggregates.id"), nullable=False),
    sa.Column("key", sa.String(255), nullable=False),
    sa.Column("value", sa.String(255), nullable=False),
    *timestamps(),
    sa.UniqueConstraint("aggregate_id", "key"),
)

# The projects a private flavor is open to (Nova's flavor_projects).
flavor_projects = sa.Table(
    "flavor_projects", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("flavorid", sa.String(255), sa.ForeignKey("flavors.flavorid"), nullable=False),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *timestamps(),
    sa.UniqueConstraint("flavorid", "project_id"),
)

# A move of an instance between hosts (Nova's ``migrations``): resize, cold
# and live migration, evacuation. The flavors are kept for a revert
# (Nova keeps them in instance_extra; here beside the move they belong to).
migrations = sa.Table(
    "migrations", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("instance_uuid", sa.String(36), nullable=False, index=True),
    sa.Column("source_compute", sa.String(255), nullable=True),
    sa.Column("dest_compute", sa.String(255), nullable=True),
    sa.Column("source_node", sa.String(255), nullable=True),
    sa.Column("dest_node", sa.String(255), nullable=True),
    sa.Column("dest_host", sa.String(255), nullable=True),
    sa.Column("old_instance_type_id", sa.Integer, nullable=True),
    sa.Column("new_instance_type_id", sa.Integer, nullable=True),
    sa.Column("old_flavor", JSON, nullable=True),
    sa.Column("new_flavor", JSON, nullable=True),
    sa.Column("migration_type", sa.String(32), nullable=False),
    sa.Column("status", sa.String(255), nullable=False),
    sa.Column("user_id", sa.String(64), nullable=True),
    sa.Column("project_id", sa.String(64), nullable=True),
    *timestamps(),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    # os-migrations pages by (created_at, id) and filters changes by updated_at.
    sa.Index("ix_migrations_created_at_id", "created_at", "id"),
    sa.Index("ix_migrations_updated_at", "updated_at"),
)
