"""Request bodies of the v2.0 API: allowed attributes, their types and columns.

Unknown attributes and wrong types are 400 (Neutron's "Unrecognized attribute"
and "Invalid input for …" errors).
"""
from __future__ import annotations

import uuid
from typing import Any, Callable

from cirrus.network import exception as exc

Check = Callable[[Any], bool]


def _is_str(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= 255


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_uuid(v: Any) -> bool:
    try:
        uuid.UUID(str(v))
        return isinstance(v, str)
    except ValueError:
        return False


def _list_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(i) for i in v)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _opt(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _port_range(v: Any) -> bool:
    return v is None or (_is_int(v) and 0 <= v <= 65535)


def _fixed_ip(v: Any) -> bool:
    return isinstance(v, dict) and set(v) <= {"subnet_id", "ip_address"} and bool(v)


# resource → {attribute: (column, check, create_only)}
ATTRS: dict[str, dict[str, tuple[str, Check, bool]]] = {
    "network": {
        "name": ("name", _is_str, False), "description": ("description", _is_str, False),
        "shared": ("shared", _is_bool, False), "router:external": ("router_external", _is_bool, False),
        "port_security_enabled": ("port_security_enabled", _is_bool, False),
        "mtu": ("mtu", lambda v: _is_int(v) and 68 <= v <= 9216, False),
        "admin_state_up": ("admin_state_up", _is_bool, False),
        "tenant_id": ("project_id", _is_str, True), "project_id": ("project_id", _is_str, True),
        "availability_zone_hints": ("", _list_of(_is_str), True),
        "provider:network_type": ("", _opt(_is_str), True),
        "provider:physical_network": ("", _opt(_is_str), True),
        "provider:segmentation_id": ("", _opt(_is_int), True),
        "dns_domain": ("", _is_str, False), "is_default": ("", _is_bool, False),
    },
    "subnet": {
        "network_id": ("network_id", _is_uuid, True), "cidr": ("cidr", _is_str, True),
        "ip_version": ("ip_version", lambda v: v in (4, 6), True), "name": ("name", _is_str, False),
        "description": ("description", _is_str, False),
        "gateway_ip": ("gateway_ip", _opt(_is_str), False),
        "enable_dhcp": ("enable_dhcp", _is_bool, False),
        "dns_nameservers": ("dns_nameservers", _list_of(_is_str), False),
        "host_routes": ("host_routes", _list_of(_is_dict), False),
        "allocation_pools": ("allocation_pools", _list_of(_is_dict), False),
        "ipv6_address_mode": ("ipv6_address_mode", _opt(_is_str), True),
        "ipv6_ra_mode": ("ipv6_ra_mode", _opt(_is_str), True),
        "tenant_id": ("project_id", _is_str, True), "project_id": ("project_id", _is_str, True),
        "subnetpool_id": ("", _opt(_is_str), True), "prefixlen": ("", _is_int, True),
        "service_types": ("", _list_of(_is_str), False),
        "use_default_subnetpool": ("", _is_bool, True), "dns_publish_fixed_ip": ("", _is_bool, False),
    },
    "port": {
        "network_id": ("network_id", _is_uuid, True), "name": ("name", _is_str, False),
        "description": ("description", _is_str, False),
        "mac_address": ("mac_address", _is_str, False),
        "fixed_ips": ("fixed_ips", _list_of(_fixed_ip), False),
        "device_id": ("device_id", _is_str, False), "device_owner": ("device_owner", _is_str, False),
        "admin_state_up": ("admin_state_up", _is_bool, False),
        "binding:host_id": ("binding_host_id", _is_str, False),
        "binding:vnic_type": ("binding_vnic_type", _is_str, False),
        "binding:profile": ("binding_profile", _is_dict, False),
        "security_groups": ("security_groups", _list_of(_is_str), False),
        "extra_dhcp_opts": ("extra_dhcp_opts", _list_of(_is_dict), False),
        "allowed_address_pairs": ("allowed_address_pairs", _list_of(_is_dict), False),
        "dns_name": ("dns_name", _is_str, False),
        "port_security_enabled": ("port_security_enabled", _is_bool, False),
        "tenant_id": ("project_id", _is_str, True), "project_id": ("project_id", _is_str, True),
        "propagate_uplink_status": ("", _is_bool, False), "qos_policy_id": ("", _opt(_is_str), False),
    },
    "security_group": {
        "name": ("name", _is_str, False), "description": ("description", _is_str, False),
        "tenant_id": ("project_id", _is_str, True), "project_id": ("project_id", _is_str, True),
        "stateful": ("", _is_bool, True),
    },
    "security_group_rule": {
        "security_group_id": ("security_group_id", _is_uuid, True),
        "direction": ("direction", lambda v: v in ("ingress", "egress"), True),
        "ethertype": ("ethertype", lambda v: v in ("IPv4", "IPv6"), True),
        "protocol": ("protocol", lambda v: v is None or isinstance(v, (str, int)), True),
        "port_range_min": ("port_range_min", _port_range, True),
        "port_range_max": ("port_range_max", _port_range, True),
        "remote_ip_prefix": ("remote_ip_prefix", _opt(_is_str), True),
        "remote_group_id": ("remote_group_id", _opt(_is_uuid), True),
        "description": ("description", _is_str, True),
        "tenant_id": ("project_id", _is_str, True), "project_id": ("project_id", _is_str, True),
        "remote_address_group_id": ("", _opt(_is_str), True),
    },
}

REQUIRED = {"subnet": ("network_id", "cidr"), "port": ("network_id",),
            "security_group_rule": ("security_group_id", "direction")}


def parse(resource: str, body: Any, creating: bool) -> dict[str, Any]:
    """``{resource: {...}}`` → column values; 400 on anything unexpected."""
    if not isinstance(body, dict) or not isinstance(body.get(resource), dict):
        raise exc.BadRequest(reason=f"Resource body required: '{resource}' must be an object")
    data = body[resource]
    spec = ATTRS[resource]
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in spec:
            raise exc.BadRequest(reason=f"Unrecognized attribute(s) '{key}'")
        column, check, create_only = spec[key]
        if create_only and not creating:
            raise exc.BadRequest(reason=f"Cannot update read-only attribute {key}")
        if not check(value):
            raise exc.InvalidInput(reason=f"'{value}' is not a valid value for {key}")
        if column:
            out[column] = value
    if creating:
        for key in REQUIRED.get(resource, ()):
            if key not in data:
                raise exc.BadRequest(reason=f"Failed to parse request. Required attribute '{key}' "
                                            f"not specified")
    return out
