"""Request bodies of the L3 API (``routers``, ``floatingips``, interface
actions), in the form ``cirrus.network.schema`` checks: attribute → (column,
validator, create_only). Only form is checked here; whether a network is
external or a nexthop reachable is the router's rule (``routers.py``)."""
from __future__ import annotations

from typing import Any

from cirrus.network import exception as exc
from cirrus.network import validators as v

_NAME = v.string()
_PROJECT = v.string(64)
MAX_ROUTES = 30  # neutron's max_routes


def gateway_info(value: Any) -> v.Reason:
    """``external_gateway_info``: None or ``{network_id, external_fixed_ips?,
    enable_snat?}`` (neutron-lib's ``type:dict_or_nodata``)."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        return f"'{v.shown(value)}' is not a dictionary"
    extra = set(value) - {"network_id", "external_fixed_ips", "enable_snat"}
    if extra:
        return f"Unrecognized attribute(s) '{v.shown(', '.join(sorted(map(str, extra))))}'"
    if "network_id" not in value:
        return "Validation of dictionary's keys failed. Expected keys: ['network_id']"
    return (v.uuid_like(value["network_id"])
            or (v.fixed_ips(value["external_fixed_ips"]) if "external_fixed_ips" in value
                else None)
            or (v.boolean(value["enable_snat"]) if "enable_snat" in value else None))


def routes(value: Any) -> v.Reason:
    """``routes`` (extraroute): ``[{destination, nexthop}]`` without repeats
    (None: none, as Neutron converts it)."""
    if value is None:
        return None
    if isinstance(value, list) and len(value) > MAX_ROUTES:
        return f"The number of routes entries exceeds the limit {MAX_ROUTES}"
    reason = v.list_of(lambda r: v.host_routes([r]), MAX_ROUTES)(value)
    if reason:
        return reason
    pairs = [(r["destination"], r["nexthop"]) for r in value]
    if len(set(pairs)) != len(pairs):
        return "Duplicate routes in list"
    return None


ATTRS: dict[str, dict[str, tuple[str, v.Validator, bool]]] = {
    "router": {
        "name": ("name", _NAME, False), "description": ("description", _NAME, False),
        "admin_state_up": ("admin_state_up", v.boolean, False),
        "external_gateway_info": ("external_gateway_info", gateway_info, False),
        "routes": ("routes", routes, False),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        # Accepted as Neutron's defaults only: cirrus has neither DVR nor HA routers.
        "distributed": ("", v.one_of(False), False), "ha": ("", v.one_of(False), False),
        "availability_zone_hints": ("", v.list_of(_NAME), True),
    },
    "floatingip": {
        "floating_network_id": ("floating_network_id", v.uuid_like, True),
        "floating_ip_address": ("floating_ip_address", v.optional(v.ip_address), True),
        "subnet_id": ("subnet_id", v.optional(v.uuid_like), True),
        "port_id": ("port_id", v.optional(v.uuid_like), False),
        "fixed_ip_address": ("fixed_ip_address", v.optional(v.ip_address), False),
        "description": ("description", _NAME, False),
        "tenant_id": ("project_id", _PROJECT, True), "project_id": ("project_id", _PROJECT, True),
        "dns_name": ("", v.dns_name, True), "dns_domain": ("", v.dns_name, True),
        "qos_policy_id": ("", v.optional(v.uuid_like), False),
    },
}
REQUIRED = {"floatingip": ("floating_network_id",)}


def parse_interface(body: Any, removing: bool) -> dict[str, str]:
    """An ``add_router_interface``/``remove_router_interface`` body: one of
    ``subnet_id`` and ``port_id`` (both only to remove: the port must then be
    on the subnet), with Neutron's messages when not."""
    if not isinstance(body, dict):
        raise exc.BadRequest(reason="Bad router request: Either subnet_id or port_id must be "
                                    "specified")
    extra = set(body) - {"subnet_id", "port_id"}
    if extra:
        raise exc.BadRequest(reason=f"Unrecognized attribute(s) "
                                    f"'{v.shown(', '.join(sorted(map(str, extra))))}'")
    if "subnet_id" in body and "port_id" in body and not removing:
        raise exc.BadRequest(reason="Bad router request: Cannot specify both subnet-id and "
                                    "port-id")
    if not body:
        raise exc.BadRequest(reason="Bad router request: Either subnet_id or port_id must be "
                                    "specified")
    for key, value in body.items():
        reason = v.uuid_like(value)
        if reason:
            raise exc.BadRequest(reason=f"Invalid input for {key}. Reason: {reason}.")
    return dict(body)


def parse_routes_change(body: Any) -> list[dict[str, str]]:
    """An ``add_extraroutes``/``remove_extraroutes`` body: ``{"router": {"routes": [...]}}``."""
    router = body.get("router") if isinstance(body, dict) else None
    if not isinstance(router, dict) or set(router) != {"routes"} or len(body) != 1:
        raise exc.BadRequest(reason="Resource body required: 'router' must be an object "
                                    "holding only 'routes'")
    reason = routes(router["routes"])
    if reason or router["routes"] is None:
        raise exc.BadRequest(reason=f"Invalid input for routes. Reason: {reason or 'None'}.")
    return list(router["routes"])
