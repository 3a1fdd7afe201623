"""Network service tables. Uniqueness of addresses and MACs per network is a
database constraint, so concurrent allocations can never hand out a duplicate."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.db.base import metadata, timestamps

networks = sa.Table(
    "networks", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, default=""),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("shared", sa.Boolean, nullable=False, default=False),
    sa.Column("router_external", sa.Boolean, nullable=False, default=False),
    sa.Column("port_security_enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("mtu", sa.Integer, nullable=False, default=1500),
    sa.Column("status", sa.String(16), nullable=False, default="ACTIVE"),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("auto_allocated", sa.Boolean, nullable=False, default=False),
    *timestamps(),
    sa.Column("dns_domain", sa.String(255), nullable=False, server_default=""),  # migration 0023
    # The segment (``segments.py``, migration 0022): one network per segment.
    sa.Column("network_type", sa.String(16), nullable=False, server_default="local"),
    sa.Column("physical_network", sa.String(64), nullable=False, server_default=""),
    sa.Column("segmentation_id", sa.Integer, nullable=True),
    sa.Index("ix_networks_segment", "network_type", "physical_network", "segmentation_id",
             unique=True),
)

# The hosts running the linuxbridge backend (Neutron's agents and
# ml2_vxlan_endpoints): each registers its tunnel address and whether it may
# serve DHCP, and refreshes ``updated_at`` while it runs.
network_agents = sa.Table(
    "network_agents", metadata,
    sa.Column("host", sa.String(255), primary_key=True),
    sa.Column("tunneling_ip", sa.String(64), nullable=False, default=""),
    sa.Column("dhcp", sa.Boolean, nullable=False, default=True),
    sa.Column("updated_at", sa.DateTime, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=True),  # the first report (migration 0034)
)

# What the agents API set on an agent (``agents.py``; an agent is a host and
# a type, its id derived from both); no row: up, undescribed, never deleted.
network_agent_states = sa.Table(
    "network_agent_states", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("agent_type", sa.String(64), nullable=False),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    # Deleted by an admin: hidden until the host reports again after it.
    sa.Column("deleted_at", sa.DateTime, nullable=True),
)

# Subnet allocation pools (``subnetpools.py``, migration 0034).
subnetpools = sa.Table(
    "subnetpools", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("name", sa.String(255), nullable=False, default=""),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("default_prefixlen", sa.Integer, nullable=False),
    sa.Column("min_prefixlen", sa.Integer, nullable=False),
    sa.Column("max_prefixlen", sa.Integer, nullable=False),
    sa.Column("shared", sa.Boolean, nullable=False, default=False),
    sa.Column("is_default", sa.Boolean, nullable=False, default=False),
    sa.Column("default_quota", sa.Integer, nullable=True),
    sa.Column("revision_number", sa.Integer, nullable=False, default=0),
    *timestamps(),
)

subnetpool_prefixes = sa.Table(
    "subnetpool_prefixes", metadata,
    sa.Column("subnetpool_id", sa.String(36), sa.ForeignKey("subnetpools.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("cidr", sa.String(64), primary_key=True),
)

subnets = sa.Table(
    "subnets", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("network_id", sa.String(36), sa.ForeignKey("networks.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("project_id", sa.String(64), nullable=False),
    sa.Column("name", sa.String(255), nullable=False, default=""),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("cidr", sa.String(64), nullable=False),
    sa.Column("gateway_ip", sa.String(64), nullable=True),
    sa.Column("enable_dhcp", sa.Boolean, nullable=False, default=True),
    sa.Column("dns_nameservers", sa.JSON, nullable=False, default=list),
    sa.Column("host_routes", sa.JSON, nullable=False, default=list),
    sa.Column("allocation_pools", sa.JSON, nullable=False, default=list),
    sa.Column("ipv6_address_mode", sa.String(32), nullable=True),
    sa.Column("ipv6_ra_mode", sa.String(32), nullable=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    *timestamps(),
    # The addresses allocated on the subnet (the IPAM's first guess), kept by
    # triggers on ``ip_allocations`` (migration 0006; PostgreSQL: at COMMIT, 0032).
    sa.Column("allocated", sa.Integer, nullable=False, server_default="0"),
    # The pool the subnet's prefix came from (migration 0034).
    sa.Column("subnetpool_id", sa.String(36), nullable=True, index=True),
)

ports = sa.Table(
    "ports", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False, default=0, index=True),  # creation order
    # Looked up by network through the (network_id, mac_address) key (migration 0007).
    sa.Column("network_id", sa.String(36), sa.ForeignKey("networks.id"), nullable=False),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("name", sa.String(255), nullable=False, default=""),
    sa.Column("mac_address", sa.String(32), nullable=False),
    sa.Column("device_id", sa.String(255), nullable=False, default="", index=True),
    sa.Column("device_owner", sa.String(255), nullable=False, default=""),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("status", sa.String(16), nullable=False, default="DOWN"),
    sa.Column("binding_host_id", sa.String(255), nullable=False, default=""),
    sa.Column("binding_vif_type", sa.String(64), nullable=False, default="unbound"),
    sa.Column("binding_vnic_type", sa.String(64), nullable=False, default="normal"),
    sa.Column("binding_profile", sa.JSON, nullable=False, default=dict),
    sa.Column("binding_vif_details", sa.JSON, nullable=False, default=dict),
    sa.Column("security_groups", sa.JSON, nullable=False, default=list),
    sa.Column("extra_dhcp_opts", sa.JSON, nullable=False, default=list),
    sa.Column("allowed_address_pairs", sa.JSON, nullable=False, default=list),
    sa.Column("dns_name", sa.String(255), nullable=False, default=""),
    sa.Column("port_security_enabled", sa.Boolean, nullable=False, default=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    *timestamps(),
    sa.UniqueConstraint("network_id", "mac_address"),
    sa.Column("dns_domain", sa.String(255), nullable=False, server_default=""),  # migration 0023
)

# A project's ports, for its port quota: kept by triggers on ``ports``
# (migration 0008; on PostgreSQL fired at COMMIT, 0032); no row is none.
port_usages = sa.Table(
    "port_usages", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("ports", sa.Integer, nullable=False, server_default="0"),
)

ip_allocations = sa.Table(
    "ip_allocations", metadata,
    sa.Column("network_id", sa.String(36), primary_key=True),
    sa.Column("ip_address", sa.String(64), primary_key=True),
    sa.Column("subnet_id", sa.String(36), sa.ForeignKey("subnets.id", ondelete="CASCADE"),
              nullable=False, index=True),
    sa.Column("port_id", sa.String(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False, index=True),
)

security_groups = sa.Table(
    "security_groups", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("stateful", sa.Boolean, nullable=False, default=True),
    *timestamps(),
)

security_group_rules = sa.Table(
    "security_group_rules", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("security_group_id", sa.String(36),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("project_id", sa.String(64), nullable=False),
    sa.Column("direction", sa.String(16), nullable=False),
    sa.Column("ethertype", sa.String(8), nullable=False, default="IPv4"),
    sa.Column("protocol", sa.String(32), nullable=True),
    sa.Column("port_range_min", sa.Integer, nullable=True),
    sa.Column("port_range_max", sa.Integer, nullable=True),
    sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
    sa.Column("remote_group_id", sa.String(36), nullable=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    *timestamps(),
)

# One default security group and one auto-allocated network per project,
# enforced by primary keys so concurrent first uses cannot create two.
default_security_groups = sa.Table(
    "default_security_groups", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("security_group_id", sa.String(36),
              sa.ForeignKey("security_groups.id", ondelete="CASCADE"), nullable=False),
)

auto_allocated_networks = sa.Table(
    "auto_allocated_networks", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("network_id", sa.String(36), sa.ForeignKey("networks.id", ondelete="CASCADE"),
              nullable=False),
)

# Tags of networks, subnets, ports and security groups (``standard-attr-tag``,
# migration 0023): their ids are uuids, so the id names the resource.
network_tags = sa.Table(
    "network_tags", metadata,
    sa.Column("resource_id", sa.String(36), primary_key=True),
    sa.Column("tag", sa.String(255), primary_key=True),
    sa.Column("resource_type", sa.String(32), nullable=False),
    sa.Index("ix_network_tags_tag", "tag", "resource_id"),
)

# A project's network quota limits set through the API; no row: the default.
network_quotas = sa.Table(
    "network_quotas", metadata,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("resource", sa.String(32), primary_key=True),
    sa.Column("limit", sa.Integer, nullable=False),
)

# L3 (migration 0024). A router's interfaces and its gateway are ports, as in
# Neutron: ``device_owner`` ``network:router_interface`` /
# ``network:router_gateway`` and ``device_id`` the router's id.
routers = sa.Table(
    "routers", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, default=""),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("status", sa.String(16), nullable=False, default="ACTIVE"),
    # The external gateway: its port on a ``router:external`` network.
    sa.Column("gw_port_id", sa.String(36), sa.ForeignKey("ports.id", ondelete="SET NULL"),
              nullable=True),
    sa.Column("enable_snat", sa.Boolean, nullable=False, default=True),
    # The host whose L3 agent runs the router's namespace (Neutron's
    # RouterL3AgentBinding); empty until the router has a port to serve.
    sa.Column("host", sa.String(255), nullable=False, default="", index=True),
    *timestamps(),
)

# Static routes (``extraroute``): Neutron's ``routerroutes``.
router_routes = sa.Table(
    "router_routes", metadata,
    sa.Column("router_id", sa.String(36), sa.ForeignKey("routers.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("destination", sa.String(64), primary_key=True),
    sa.Column("nexthop", sa.String(64), primary_key=True),
)

floatingips = sa.Table(
    "floatingips", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("project_id", sa.String(64), nullable=False, index=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("floating_ip_address", sa.String(64), nullable=False),
    sa.Column("floating_network_id", sa.String(36), sa.ForeignKey("networks.id"), nullable=False),
    # The port on the external network holding the address
    # (``network:floatingip``); deleting the floating IP deletes it.
    sa.Column("floating_port_id", sa.String(36), sa.ForeignKey("ports.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("fixed_port_id", sa.String(36), sa.ForeignKey("ports.id", ondelete="SET NULL"),
              nullable=True, index=True),
    sa.Column("fixed_ip_address", sa.String(64), nullable=True),
    sa.Column("router_id", sa.String(36), sa.ForeignKey("routers.id"), nullable=True,
              index=True),
    sa.Column("status", sa.String(16), nullable=False, default="DOWN"),
    *timestamps(),
    sa.UniqueConstraint("floating_network_id", "floating_ip_address"),
    # One floating IP per fixed address of a port, as Neutron enforces.
    sa.UniqueConstraint("fixed_port_id", "fixed_ip_address"),
)
