"""Attribute validators of the v2.0 API, after neutron-lib's ``api/validators``.

Each takes a decoded JSON value and returns None when it is valid, else the
reason it is not (the caller turns it into a 400). They check form only:
whether an address fits its subnet is the resource's rule (``subnet_rules``,
``ports``). Reasons never echo a value raw: see :func:`shown`.
"""
from __future__ import annotations

import ipaddress
import math
import re
import uuid
from typing import Any, Callable

from cirrus.text import encodable

Reason = str | None
Validator = Callable[[Any], Reason]

NAME_MAX = 255  # names, descriptions, device ids and owners, as Neutron's columns
MAX_DEPTH = 16  # nesting of free-form values (binding:profile)
MAX_FIXED_IPS = 5  # neutron's max_fixed_ips_per_port
MAX_DNS_NAMESERVERS = 5  # neutron's max_dns_nameservers
MAX_HOST_ROUTES = 20  # neutron's max_subnet_host_routes
MAX_ADDRESS_PAIRS = 10  # neutron's max_allowed_address_pair
MAX_POOLS = 1024
VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical",
              "virtio-forwarder", "smart-nic", "vdpa", "accelerator-direct",
              "accelerator-direct-physical", "remote-managed")
IPV6_MODES = ("dhcpv6-stateful", "dhcpv6-stateless", "slaac")

_MAC = re.compile(r"[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(?:\1[0-9a-fA-F]{2}){4}")
_MAC_DOTTED = re.compile(r"[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}")
_DNS_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_INVALID_MACS = ("00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff")


def shown(value: Any, limit: int = 64) -> str:
    """``value`` for an error message: short, and always encodable as UTF-8
    (a lone surrogate in a message would break the error response itself)."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# -- scalars -----------------------------------------------------------------------
def storable(value: Any, depth: int = 0) -> Reason:
    """Whether ``value`` can be stored and listed again: strings encodable as
    UTF-8 and free of NUL (PostgreSQL refuses it in text), finite numbers,
    string keys, bounded nesting."""
    if isinstance(value, str):
        if "\x00" in value:
            return "strings may not contain NUL characters"
        if not encodable(value):
            return "strings must be valid Unicode (no lone surrogates)"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "numbers must be finite"
    if isinstance(value, (list, dict)):
        if depth >= MAX_DEPTH:
            return "value nested too deeply"
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        for key, item in items:
            if key is not None and not isinstance(key, str):
                return "keys must be strings"
            reason = (storable(key, depth) if key is not None else None) or storable(item, depth + 1)
            if reason:
                return reason
    return None


def string(max_len: int = NAME_MAX) -> Validator:
    def check(value: Any) -> Reason:
        if not isinstance(value, str):
            return f"'{shown(value)}' is not a valid string"
        if len(value) > max_len:
            return f"'{shown(value)}' exceeds maximum length of {max_len}"
        return storable(value)
    return check


def boolean(value: Any) -> Reason:
    return None if isinstance(value, bool) else f"'{shown(value)}' is not a valid boolean value"


def integer(low: int, high: int) -> Validator:
    def check(value: Any) -> Reason:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"'{shown(value)}' is not an integer"
        if not low <= value <= high:
            return f"'{shown(value)}' is not in range {low} through {high}"
        return None
    return check


def one_of(*values: Any) -> Validator:
    def check(value: Any) -> Reason:
        if not any(value == allowed and type(value) is type(allowed) for allowed in values):
            return f"'{shown(value)}' is not in {list(values)}"
        return None
    return check


def optional(validator: Validator) -> Validator:
    return lambda value: None if value is None else validator(value)


def uuid_like(value: Any) -> Reason:
    if isinstance(value, str) and len(value) <= 36 and not storable(value):
        try:
            uuid.UUID(value)
            return None
        except ValueError:
            pass
    return f"'{shown(value)}' is not a valid UUID"


def free_dict(value: Any) -> Reason:
    """A dict of anything storable (``binding:profile``)."""
    if not isinstance(value, dict):
        return f"'{shown(value)}' is not a dictionary"
    return storable(value)


# -- addresses ----------------------------------------------------------------------
def parse_ip(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``value`` spells in its plain form, else None (no scope ids,
    no whitespace, no other spellings ``ipaddress`` might take)."""
    if not isinstance(value, str) or not 2 <= len(value) <= 45 or storable(value) \
            or "%" in value or value.strip() != value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def ip_address(value: Any) -> Reason:
    return None if parse_ip(value) is not None else f"'{shown(value)}' is not a valid IP address"


def parse_cidr(value: Any, strict: bool = False) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network ``value`` spells as ``address/prefix`` (host bits allowed
    unless ``strict``), else None."""
    if not isinstance(value, str) or value.count("/") != 1:
        return None
    address, prefix = value.split("/")
    if parse_ip(address) is None or not (prefix.isascii() and prefix.isdigit()) or len(prefix) > 3:
        return None
    try:
        return ipaddress.ip_network(value, strict=strict)
    except ValueError:
        return None


def cidr(value: Any) -> Reason:
    return None if parse_cidr(value) is not None else f"'{shown(value)}' is not a valid IP subnet"


def ip_or_cidr(value: Any) -> Reason:
    """An address, or a CIDR (host bits allowed)."""
    if parse_ip(value) is not None or parse_cidr(value) is not None:
        return None
    return f"'{shown(value)}' is neither a valid IP address, nor is it a valid IP subnet"


def route_cidr(value: Any) -> Reason:
    """A destination: a CIDR without host bits, not loopback."""
    net = parse_cidr(value, strict=True)
    if net is None:
        return f"'{shown(value)}' is not a valid CIDR"
    if net.is_loopback:
        return f"'{shown(value)}' is not a routable CIDR"
    return None


def normal_mac(value: Any) -> str | None:
    """``value`` as a lower-case colon-separated MAC, or None if it is not one."""
    if not isinstance(value, str) or len(value) > 17:
        return None
    if _MAC.fullmatch(value):
        digits = value.replace("-", "").replace(":", "")
    elif _MAC_DOTTED.fullmatch(value):
        digits = value.replace(".", "")
    else:
        return None
    digits = digits.lower()
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def mac_address(value: Any) -> Reason:
    """A unicast MAC other than all zeros (a multicast one cannot be a
    port's: hypervisors refuse it)."""
    mac = normal_mac(value)
    if mac is None or mac in _INVALID_MACS:
        return f"'{shown(value)}' is not a valid MAC address"
    if int(mac[:2], 16) & 1:
        return f"'{shown(value)}' is a multicast MAC address"
    return None


def dns_name(value: Any) -> Reason:
    """Empty, or a host name / FQDN (labels of letters, digits and hyphens)."""
    reason = string(NAME_MAX)(value)
    if reason or value == "":
        return reason
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    if not all(_DNS_LABEL.fullmatch(label) for label in labels) or labels[-1].isdigit():
        return f"'{shown(value)}' is not a valid DNS name"
    return None


# -- lists of structures --------------------------------------------------------------
def _keys(item: Any, required: set[str], allowed: set[str]) -> Reason:
    if not isinstance(item, dict):
        return f"'{shown(item)}' is not a dictionary"
    missing, extra = required - set(item), set(item) - allowed
    if missing:
        return f"Validation of dictionary's keys failed. Expected keys: {sorted(required)}"
    if extra:
        return f"Unrecognized attribute(s) '{shown(', '.join(sorted(map(str, extra))))}'"
    return None


def _list(value: Any, limit: int, what: str) -> Reason:
    if not isinstance(value, list):
        return f"Invalid data format for {what}: '{shown(value)}'"
    if len(value) > limit:
        return f"The number of {what} entries exceeds the limit {limit}"
    return None


def fixed_ips(value: Any) -> Reason:
    reason = _list(value, MAX_FIXED_IPS, "fixed IP")
    if reason:
        return reason
    seen: set[str] = set()
    for item in value:
        reason = _keys(item, set(), {"subnet_id", "ip_address"})
        if reason or not item:
            return reason or "Invalid data format for fixed IP: '{}'"
        if "ip_address" in item:
            reason = ip_address(item["ip_address"])
            if reason:
                return reason
            if item["ip_address"] in seen:
                return f"Duplicate IP address '{shown(item['ip_address'])}'"
            seen.add(item["ip_address"])
        if "subnet_id" in item and uuid_like(item["subnet_id"]):
            return uuid_like(item["subnet_id"])
    return None


def ip_pools(value: Any) -> Reason:
    reason = _list(value, MAX_POOLS, "allocation pool")
    if reason:
        return reason
    for pool in value:
        reason = _keys(pool, {"start", "end"}, {"start", "end"}) or ip_address(pool["start"]) \
            or ip_address(pool["end"])
        if reason:
            return reason
    return None


def nameservers(value: Any) -> Reason:
    reason = _list(value, MAX_DNS_NAMESERVERS, "nameserver")
    if reason:
        return reason
    for i, host in enumerate(value):
        reason = ip_address(host)
        if reason:
            return f"'{shown(host)}' is not a valid nameserver. {reason}"
        if host in value[:i]:
            return f"Duplicate nameserver '{shown(host)}'"
    return None


def host_routes(value: Any) -> Reason:
    reason = _list(value, MAX_HOST_ROUTES, "host route")
    if reason:
        return reason
    for i, route in enumerate(value):
        reason = _keys(route, {"destination", "nexthop"}, {"destination", "nexthop"}) \
            or route_cidr(route["destination"]) or ip_address(route["nexthop"])
        if reason:
            return reason
        if route in value[:i]:
            return f"Duplicate hostroute '{shown(route)}'"
    return None


def address_pairs(value: Any) -> Reason:
    reason = _list(value, MAX_ADDRESS_PAIRS, "allowed address pair")
    if reason:
        return reason
    seen: set[tuple[Any, Any]] = set()
    for pair in value:
        reason = _keys(pair, {"ip_address"}, {"ip_address", "mac_address"})
        if reason:
            return reason
        address = pair["ip_address"]
        net = parse_cidr(address) if isinstance(address, str) and "/" in address else None
        ip = parse_ip(address) if net is None else None
        if net is None and ip is None:
            return f"'{shown(address)}' is not a valid IP address or subnet"
        if (net or ip).is_multicast:  # type: ignore[union-attr]
            return f"'{shown(address)}' is a multicast address"
        if "mac_address" in pair and mac_address(pair["mac_address"]):
            return mac_address(pair["mac_address"])
        key = (pair.get("mac_address"), address)
        if key in seen:
            return f"Request contains duplicate address pair: '{shown(address)}'"
        seen.add(key)
    return None


def dhcp_options(value: Any) -> Reason:
    """``extra_dhcp_opts``: ``opt_name`` (1–64 characters), ``opt_value``
    (up to 255, or null), an optional ``ip_version`` of 4 or 6."""
    reason = _list(value, 64, "extra DHCP option")
    if reason:
        return reason
    for opt in value:
        reason = _keys(opt, {"opt_name"}, {"opt_name", "opt_value", "ip_version"}) \
            or string(64)(opt["opt_name"]) or optional(string())(opt.get("opt_value")) \
            or optional(one_of(4, 6))(opt.get("ip_version"))
        if reason:
            return reason
        if not opt["opt_name"]:
            return "opt_name may not be empty"
        # They become lines of dnsmasq's options file: no line breaks (nor
        # other control characters), no comma in a name.
        text = opt["opt_name"] + (opt.get("opt_value") or "")
        if any(ord(c) < 0x20 or c == "\x7f" for c in text) or "," in opt["opt_name"]:
            return f"'{shown(opt['opt_name'])}' has a character DHCP options cannot carry"
    return None


def list_of(validator: Validator, limit: int = 64) -> Validator:
    def check(value: Any) -> Reason:
        reason = _list(value, limit, "list")
        if reason:
            return reason
        for item in value:
            reason = validator(item)
            if reason:
                return reason
        return None
    return check
