"""Request bodies of the v2.0 API: allowed attributes, their validators and columns.

Unknown attributes, read-only ones on update and invalid values are 400
(Neutron's "Unrecognized attribute(s)", "Cannot update read-only attribute"
and "Invalid input for <attribute>. Reason: …" errors), on create and on
update alike. Whether values agree with each other and with what is stored
(an address inside its subnet, pools clear of the gateway) is checked where
the resource is written (``subnet_rules``, ``ports``).
"""
from __future__ import annotations

from typing import Any

from cirrus.network import exception as exc
from cirrus.network import validators as v
from cirrus.network.l3 import schema as l3_schema
from cirrus.network.tags import tags_reason

_NAME = v.string()
_PROJECT = v.string(64)  # the width of every project_id column


def _protocol(value: Any) -> v.Reason:
    """A rule's protocol: a name or number, checked against the known ones later."""
    if isinstance(value, int) and not isinstance(value, bool):
        return v.integer(0, 255)(value)
    return v.string(32)(value)


def _port(value: Any) -> v.Reason:
    """A rule's port (or ICMP type/code): Neutron's message for a bad one."""
    if v.integer(0, 65535)(value):
        return f"Invalid value for port {v.shown(value)}"
    return None


# resource → {attribute: (column, validator, create_only)}; column "" is accepted and ignored.
ATTRS: dict[str, dict[str, tuple[str, v.Validator, bool]]] = {
    "network": {
        "name": ("name", _NAME, False), "description": ("description", _NAME, False),
        "shared": ("shared", v.boolean, False),
        "router:external": ("router_external", v.boolean, False),
        "port_security_enabled": ("port_security_enabled", v.boolean, False),
        "mtu": ("mtu", v.integer(68, 9216), False),
        "admin_state_up": ("admin_state_up", v.boolean, False),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "availability_zone_hints": ("", v.list_of(_NAME), True),
        # Passed on under their own names: the service checks them (segments.py).
        "provider:network_type": ("provider:network_type", v.optional(_NAME), True),
        "provider:physical_network": ("provider:physical_network", v.optional(_NAME), True),
        "provider:segmentation_id": ("provider:segmentation_id",
                                     v.optional(v.integer(0, 2 ** 32 - 1)), True),
        "dns_domain": ("dns_domain", v.dns_name, False), "is_default": ("", v.boolean, False),
        "tags": ("tags", tags_reason, True),
    },
    "subnet": {
        "network_id": ("network_id", v.uuid_like, True), "cidr": ("cidr", v.cidr, True),
        "ip_version": ("ip_version", v.one_of(4, 6), True), "name": ("name", _NAME, False),
        "description": ("description", _NAME, False),
        "gateway_ip": ("gateway_ip", v.optional(v.ip_address), False),
        "enable_dhcp": ("enable_dhcp", v.boolean, False),
        "dns_nameservers": ("dns_nameservers", v.nameservers, False),
        "host_routes": ("host_routes", v.host_routes, False),
        "allocation_pools": ("allocation_pools", v.ip_pools, False),
        "ipv6_address_mode": ("ipv6_address_mode", v.optional(v.one_of(*v.IPV6_MODES)), True),
        "ipv6_ra_mode": ("ipv6_ra_mode", v.optional(v.one_of(*v.IPV6_MODES)), True),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "subnetpool_id": ("subnetpool_id", v.optional(v.uuid_like), True),
        "prefixlen": ("prefixlen", v.integer(0, 128), True),
        "service_types": ("", v.list_of(_NAME), False),
        "use_default_subnetpool": ("use_default_subnetpool", v.boolean, True),
        "dns_publish_fixed_ip": ("", v.boolean, False),
        "tags": ("tags", tags_reason, True),
    },
    "port": {
        "network_id": ("network_id", v.uuid_like, True), "name": ("name", _NAME, False),
        "description": ("description", _NAME, False),
        "mac_address": ("mac_address", v.mac_address, False),
        "fixed_ips": ("fixed_ips", v.fixed_ips, False),
        "device_id": ("device_id", _NAME, False), "device_owner": ("device_owner", _NAME, False),
        "admin_state_up": ("admin_state_up", v.boolean, False),
        "binding:host_id": ("binding_host_id", _NAME, False),
        "binding:vnic_type": ("binding_vnic_type", v.one_of(*v.VNIC_TYPES), False),
        "binding:profile": ("binding_profile", v.free_dict, False),
        "security_groups": ("security_groups", v.list_of(_NAME), False),
        "extra_dhcp_opts": ("extra_dhcp_opts", v.dhcp_options, False),
        "allowed_address_pairs": ("allowed_address_pairs", v.address_pairs, False),
        "dns_name": ("dns_name", v.dns_name, False),
        "port_security_enabled": ("port_security_enabled", v.boolean, False),
        "dns_domain": ("dns_domain", v.dns_name, False), "tags": ("tags", tags_reason, True),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "propagate_uplink_status": ("", v.boolean, False),
        "qos_policy_id": ("", v.optional(v.uuid_like), False),
    },
    "security_group": {
        "name": ("name", _NAME, False), "description": ("description", _NAME, False),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "stateful": ("", v.boolean, True), "tags": ("tags", tags_reason, True),
    },
    "security_group_rule": {
        "security_group_id": ("security_group_id", v.uuid_like, True),
        "direction": ("direction", v.one_of("ingress", "egress"), True),
        "ethertype": ("ethertype", v.one_of("IPv4", "IPv6"), True),
        "protocol": ("protocol", v.optional(_protocol), True),
        "port_range_min": ("port_range_min", v.optional(_port), True),
        "port_range_max": ("port_range_max", v.optional(_port), True),
        "remote_ip_prefix": ("remote_ip_prefix", v.optional(v.ip_or_cidr), True),
        # Not a uuid: a group that does not exist (404, as Neutron), when the rule is made.
        "remote_group_id": ("remote_group_id", v.optional(v.string(36)), True),
        "description": ("description", _NAME, True),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "remote_address_group_id": ("", v.optional(v.uuid_like), True),
    },
    "subnetpool": {
        "name": ("name", _NAME, False), "description": ("description", _NAME, False),
        "prefixes": ("prefixes", v.list_of(v.cidr, 1000), False),
        "default_prefixlen": ("default_prefixlen", v.integer(0, 128), False),
        "min_prefixlen": ("min_prefixlen", v.integer(0, 128), False),
        "max_prefixlen": ("max_prefixlen", v.integer(0, 128), False),
        "shared": ("shared", v.boolean, True), "is_default": ("is_default", v.boolean, False),
        "default_quota": ("default_quota", v.optional(v.integer(0, 2 ** 31 - 1)), False),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "tags": ("tags", tags_reason, True),
    },
    # The agents API changes only these two (Neutron's agent extension).
    "agent": {
        "admin_state_up": ("admin_state_up", v.boolean, False),
        "description": ("description", _NAME, False),
    },
}

ATTRS.update(l3_schema.ATTRS)  # routers and floating IPs

# A subnet's cidr may come from a subnet pool instead (subnetpools.py).
REQUIRED = {"subnet": ("network_id",), "subnetpool": ("name", "prefixes"), "port": ("network_id",),
            "security_group_rule": ("security_group_id", "direction"), **l3_schema.REQUIRED}


def parse(resource: str, body: Any, creating: bool) -> dict[str, Any]:
    """``{resource: {...}}`` → column values; 400 on anything unexpected."""
    if not isinstance(body, dict) or not isinstance(body.get(resource), dict):
        raise exc.BadRequest(reason=f"Resource body required: '{resource}' must be an object")
    data = body[resource]
    spec = ATTRS[resource]
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in spec:
            raise exc.BadRequest(reason=f"Unrecognized attribute(s) '{v.shown(key)}'")
        column, validator, create_only = spec[key]
        if create_only and not creating:
            raise exc.BadRequest(reason=f"Cannot update read-only attribute {key}")
        reason = validator(value)
        if reason:
            raise exc.BadRequest(reason=f"Invalid input for {key}. Reason: {reason}.")
        if column:
            out[column] = value
    if "project_id" in data and "tenant_id" in data and data["project_id"] != data["tenant_id"]:
        raise exc.BadRequest(reason="'project_id' and 'tenant_id' do not match")
    if creating:
        for key in REQUIRED.get(resource, ()):
            if key not in data:
                raise exc.BadRequest(reason=f"Failed to parse request. Required attribute '{key}' "
                                            f"not specified")
    if "mac_address" in out:
        out["mac_address"] = v.normal_mac(out["mac_address"])
    return out


COLLECTIONS = {"network": "networks", "subnet": "subnets", "port": "ports"}
MAX_BULK = 500  # resources in one bulk create


def parse_many(resource: str, body: Any) -> tuple[list[dict[str, Any]], bool]:
    """A create body → the values of each resource to create, and whether it
    was a bulk create (``{"networks": [{...}, ...]}``, Neutron's native bulk)."""
    collection = COLLECTIONS[resource]
    if not isinstance(body, dict) or collection not in body:
        return [parse(resource, body, True)], False
    items = body[collection]
    if len(body) != 1:
        extra = ", ".join(sorted(str(k) for k in body if k != collection))
        raise exc.BadRequest(reason=f"Unrecognized attribute(s) '{v.shown(extra)}'")
    if not isinstance(items, list) or not items:
        raise exc.BadRequest(reason=f"Resources required: '{collection}' must be a non-empty list")
    if len(items) > MAX_BULK:
        raise exc.BadRequest(reason=f"At most {MAX_BULK} {collection} may be created at once")
    return [parse(resource, {resource: item}, True) for item in items], True
