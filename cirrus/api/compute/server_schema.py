"""Validation of the ``POST /servers`` body into a :class:`CreateRequest`.

Mirrors Nova's JSON schema per microversion (``schemas/servers.py``
``create`` … ``create_v290``): unknown keys (and keys of a later
microversion), wrong types, bad UUIDs and IPs, oversized values and text that
is not valid Unicode are 400 with a message naming the field. Plain checks
rather than a JSON-schema engine: this runs on every boot.
"""
from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import re
import secrets
import string
import uuid as uuidlib
from typing import Any

from cirrus.api.compute.bdm_schema import parse_bdm_v2, parse_legacy
from cirrus.api.compute.parameters import bad, integer, metadata, text
from cirrus.compute.block_device import BdmRequest
from cirrus.compute.records import CreateRequest

Version = tuple[int, int]

# The keys of the 2.1 schema, then those each later microversion adds (or
# removes: personality at 2.57).
SERVER_KEYS = frozenset({
    "name", "imageRef", "flavorRef", "networks", "min_count", "max_count",
    "return_reservation_id", "availability_zone", "key_name", "user_data", "metadata",
    "personality", "config_drive", "security_groups", "adminPass", "block_device_mapping_v2",
    "block_device_mapping", "accessIPv4", "accessIPv6", "OS-DCF:diskConfig"})
ADDED_KEYS: tuple[tuple[Version, str], ...] = (
    ((2, 19), "description"), ((2, 52), "tags"), ((2, 63), "trusted_image_certificates"),
    ((2, 74), "host"), ((2, 74), "hypervisor_hostname"), ((2, 90), "hostname"))
DISK_CONFIGS = ("AUTO", "MANUAL")
# Nova's parameter_types.hostname (2.90) and fqdn (host, hypervisor_hostname at 2.74).
HOSTNAME = re.compile(r"[a-zA-Z0-9]+[a-zA-Z0-9-]*[a-zA-Z0-9]+")
FQDN = re.compile(r"[a-zA-Z0-9-._]+")
MAX_TAGS = 50
MAX_TAG_LENGTH = 60


@functools.lru_cache(maxsize=128)
def server_keys(version: Version) -> frozenset[str]:
    """The keys a ``server`` body may hold at ``version``."""
    keys = set(SERVER_KEYS) | {key for since, key in ADDED_KEYS if version >= since}
    if version >= (2, 57):
        keys.discard("personality")
    return frozenset(keys)


_str = text


def _uuid(value: Any, field: str) -> str:
    try:
        return str(uuidlib.UUID(_str(value, field, min_len=1)))
    except ValueError:
        raise bad(field, f"{value!r} is not a 'uuid'") from None


def _ref(value: Any, field: str) -> str:
    """An id or a URL ending in one (imageRef/flavorRef)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    ref = _str(value, field, min_len=1)
    return ref.rstrip("/").rsplit("/", 1)[-1]


def _count(value: Any, field: str) -> int:
    # No upper bound in Nova's schema: the quota and max_instances_per_request
    # bound it, before anything is built (cirrus/compute/api.py).
    return integer(value, field, minimum=1, maximum=1 << 62)


def _bool(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no", "on", "off", ""):
        return value.lower() in ("true", "1", "yes", "on")
    raise bad(field, f"{value!r} is not of type 'boolean'")


def _name(value: Any) -> str:
    name = _str(value, "name", min_len=1).strip()
    if not name:
        raise bad("name", "name must not be empty or only spaces")
    return name


def _metadata(value: Any) -> dict[str, str]:
    return metadata(value)


def _networks(value: Any, version: Version) -> list[dict[str, Any]]:
    if value in ("auto", "none"):
        return [{"network_id": value, "port_id": None, "fixed_ip": None}]
    if isinstance(value, str):
        raise bad("networks", f"{value!r} is not one of ['auto', 'none'] or a list")
    if not isinstance(value, list):
        raise bad("networks", "must be a list, 'auto' or 'none'")
    out = []
    for i, item in enumerate(value):
        field = f"networks/{i}"
        if not isinstance(item, dict) or set(item) - {"uuid", "port", "fixed_ip", "tag"}:
            raise bad(field, "must be an object with uuid, port, fixed_ip or tag")
        if "tag" in item:
            if version < (2, 32) or (2, 32) < version < (2, 42):
                raise bad(field, "tag is not allowed before microversion 2.42")
            tag(item["tag"], f"{field}/tag")
        net = _uuid(item["uuid"], f"{field}/uuid") if item.get("uuid") else None
        port = _uuid(item["port"], f"{field}/port") if item.get("port") else None
        fixed = item.get("fixed_ip")
        if fixed is not None:
            try:
                fixed = str(_address(_str(fixed, f"{field}/fixed_ip", max_len=45)))
            except ValueError:
                raise bad(f"{field}/fixed_ip", f"{fixed!r} is not an IP address") from None
        if not net and not port:
            raise bad(field, "uuid or port is required")
        out.append({"network_id": net, "port_id": port, "fixed_ip": fixed})
    return out


def _personality(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise bad("personality", "must be a list")
    files = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) - {"path", "contents"}:
            raise bad(f"personality/{i}", "must be an object with path and contents")
        path = _str(item.get("path"), f"personality/{i}/path", min_len=1)
        contents = _str(item.get("contents", ""), f"personality/{i}/contents", max_len=10 << 20)
        try:
            base64.b64decode(contents, validate=True)
        except (binascii.Error, ValueError):
            raise bad(f"personality/{i}/contents", "is not valid base64") from None
        files.append((path, contents))
    return files


def _bdms(server: dict[str, Any], image_href: str | None, version: Version) -> list[BdmRequest]:
    """The v2 mappings, or the legacy (v1) ones converted; not both (Nova)."""
    if "block_device_mapping_v2" in server and "block_device_mapping" in server:
        raise bad("block_device_mapping", "Using different block_device_mapping syntaxes "
                                          "is not allowed")
    if "block_device_mapping" in server:
        return parse_legacy(server["block_device_mapping"], image_href)
    if "block_device_mapping_v2" in server:
        return parse_bdm_v2(server["block_device_mapping_v2"], version)
    return []


def _hints(body: dict[str, Any]) -> dict[str, Any]:
    hints = body.get("os:scheduler_hints", body.get("OS-SCH-HNT:scheduler_hints", {}))
    if not isinstance(hints, dict):
        raise bad("os:scheduler_hints", "must be an object")
    out: dict[str, Any] = {}
    if "group" in hints:
        out["group"] = _uuid(hints["group"], "os:scheduler_hints/group")
    for key in ("same_host", "different_host"):
        if key in hints:
            items = hints[key] if isinstance(hints[key], list) else [hints[key]]
            out[key] = [_uuid(v, f"os:scheduler_hints/{key}") for v in items]
    for key, value in hints.items():
        out.setdefault(key, value)
    return out


PASSWORD_ALPHABET = string.ascii_letters + string.digits


def generate_password(length: int = 12) -> str:
    """``length`` characters drawn uniformly and independently from letters and
    digits: the base-62 digits of one uniform random number below 62**length
    (one call to the system's random source instead of one per character)."""
    base = len(PASSWORD_ALPHABET)
    number = secrets.randbelow(base ** length)
    chars = []
    for _ in range(length):
        number, digit = divmod(number, base)
        chars.append(PASSWORD_ALPHABET[digit])
    return "".join(chars)


def parse_create(body: Any, version: Version) -> tuple[CreateRequest, bool]:
    """``POST /servers`` body → (CreateRequest, return_reservation_id)."""
    if not isinstance(body, dict) or not isinstance(body.get("server"), dict):
        raise bad("server", "'server' is a required property and must be an object")
    server = body["server"]
    if "personality" in server and version >= (2, 57):
        raise bad("personality", "personality is not supported from microversion 2.57")
    unknown = server.keys() - server_keys(version)
    if unknown:
        raise bad("server", f"Additional properties are not allowed "
                            f"({', '.join(sorted(map(str, unknown)))[:200]} were unexpected)")
    if "name" not in server:
        raise bad("name", "'name' is a required property")
    if "flavorRef" not in server:
        raise bad("flavorRef", "'flavorRef' is a required property")
    if "networks" not in server and version >= (2, 37):
        raise bad("networks", "'networks' is a required property")
    image = server.get("imageRef")
    image_ref = _ref(image, "imageRef") if image not in (None, "") else None
    bdms = _bdms(server, image_ref, version)
    if image_ref is None and not any(b["boot_index"] == 0 for b in bdms):
        raise bad("imageRef", "an image is required unless booting from a block device")
    if image_ref is not None and not any(b["boot_index"] == 0 for b in bdms):
        try:
            uuidlib.UUID(image_ref)
        except ValueError:
            raise bad("imageRef", f"{image!r} is not a valid image reference") from None
    az = server.get("availability_zone")
    _check_unused_keys(server)
    req = CreateRequest(
        name=_name(server["name"]),
        flavor_id=_ref(server["flavorRef"], "flavorRef"),
        image_href=image_ref,
        min_count=_count(server.get("min_count", 1), "min_count"),
        max_count=_count(server.get("max_count", server.get("min_count", 1)), "max_count"),
        description=_str(server["description"], "description") if server.get("description") is not None else None,
        availability_zone=_str(az, "availability_zone", min_len=1) if az else None,
        key_name=_str(server["key_name"], "key_name", min_len=1) if server.get("key_name") else None,
        user_data=_str(server["user_data"], "user_data", max_len=1 << 20) if server.get("user_data") else None,
        metadata=_metadata(server.get("metadata", {})),
        injected_files=_personality(server.get("personality", [])),
        config_drive=_bool(server.get("config_drive", False), "config_drive"),
        security_groups=_security_groups(server.get("security_groups")),
        admin_password=_str(server["adminPass"], "adminPass") if server.get("adminPass") else generate_password(),
        requested_networks=_networks(server["networks"], version) if "networks" in server else None,
        block_device_mapping=bdms,
        scheduler_hints=_hints(body),
        access_ip_v4=_ip(server.get("accessIPv4"), "accessIPv4", 4),
        access_ip_v6=_ip(server.get("accessIPv6"), "accessIPv6", 6),
        tags=tags(server.get("tags", [])),
        auto_disk_config=_disk_config(server),
        hostname=_pattern(server["hostname"], "hostname", HOSTNAME, 2, 63)
        if "hostname" in server else None,
        requested_host=_pattern(server["host"], "host", FQDN, 1, 255)
        if "host" in server else None,
        requested_node=_pattern(server["hypervisor_hostname"], "hypervisor_hostname", FQDN, 1, 255)
        if "hypervisor_hostname" in server else None,
    )
    return req, _bool(server.get("return_reservation_id", False), "return_reservation_id")


def _disk_config(server: dict[str, Any], field: str = "OS-DCF:diskConfig") -> bool | None:
    """``OS-DCF:diskConfig``: True for AUTO, False for MANUAL, None if not given."""
    if "OS-DCF:diskConfig" not in server:
        return None
    if server["OS-DCF:diskConfig"] not in DISK_CONFIGS:
        raise bad(field, f"must be one of {list(DISK_CONFIGS)}")
    return bool(server["OS-DCF:diskConfig"] == "AUTO")


def _check_unused_keys(server: dict[str, Any]) -> None:
    """Keys checked but not kept: legacy block devices, trusted certificates
    (cirrus has no use for them)."""
    certs = server.get("trusted_image_certificates")
    if certs is not None:
        if not isinstance(certs, list) or not 1 <= len(certs) <= 50:
            raise bad("trusted_image_certificates", "must be a list of 1 to 50 ids")
        for cert in certs:
            _str(cert, "trusted_image_certificates", min_len=1)


def _pattern(value: Any, field: str, pattern: re.Pattern[str], min_len: int, max_len: int) -> str:
    """A string of ``min_len``..``max_len`` characters all matching ``pattern``."""
    value = _str(value, field, min_len=min_len, max_len=max_len)
    if not pattern.fullmatch(value):
        raise bad(field, f"{value!r} does not match '{pattern.pattern}'")
    return value


def _security_groups(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("security_groups", "must be a list")
    names = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) != {"name"}:
            raise bad(f"security_groups/{i}", "must be an object with a name (only)")
        names.append(_str(item["name"], f"security_groups/{i}/name", min_len=1))
    return list(dict.fromkeys(names))


def _ip(value: Any, field: str, version: int) -> str | None:
    if value in (None, ""):
        return None
    try:
        addr = _address(_str(value, field, max_len=45))
    except ValueError:
        raise bad(field, f"{value!r} is not an IP address") from None
    if addr.version != version:
        raise bad(field, f"{value!r} is not an IPv{version} address")
    return str(addr)


def _address(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An IP address without a zone (``fe80::1%eth0`` names a host's link,
    never a server's address); ValueError if it is not one."""
    if "%" in value:
        raise ValueError(value)
    return ipaddress.ip_address(value)


def tags(value: Any, field: str = "tags") -> list[str]:
    """Nova's list of at most 50 tags (``tags`` at boot, ``PUT /tags``)."""
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise bad(field, f"must be a list of at most {MAX_TAGS} tags")
    return [tag(item, f"{field}/{i}") for i, item in enumerate(value)]


def tag(value: Any, field: str) -> str:
    """Nova's ``parameter_types.tag``: 1–60 characters, no ',' or '/'."""
    checked = _str(value, field, min_len=1, max_len=MAX_TAG_LENGTH)
    if "," in checked or "/" in checked:
        raise bad(field, f"{checked!r}: tags may not contain ',' or '/'")
    return checked


def parse_update(body: Any, version: Version) -> dict[str, Any]:
    """``PUT /servers/{id}`` body (Nova's ``update`` … ``update_v290``) →
    the instance columns to change."""
    if not isinstance(body, dict) or not isinstance(body.get("server"), dict):
        raise bad("server", "'server' is a required property and must be an object")
    if set(body) != {"server"}:
        raise bad("body", "Additional properties are not allowed")
    server = body["server"]
    allowed = {"name", "OS-DCF:diskConfig", "accessIPv4", "accessIPv6"}
    allowed |= {"description"} if version >= (2, 19) else set()
    allowed |= {"hostname"} if version >= (2, 90) else set()
    unknown = server.keys() - allowed
    if unknown:
        raise bad("server", f"Additional properties are not allowed "
                            f"({', '.join(sorted(map(str, unknown)))[:200]} were unexpected)")
    _check_unused_keys(server)
    updates: dict[str, Any] = {}
    if "name" in server:
        name = _str(server["name"], "name", min_len=1)
        if name != name.strip():  # Nova's 'name' format: no surrounding whitespace
            raise bad("name", "printable characters. Can not start or end with whitespace.")
        updates["display_name"] = name
    if "description" in server:  # None removes it
        description = server["description"]
        updates["display_description"] = None if description is None else \
            _str(description, "description")
    for key, column, ip_version in (("accessIPv4", "access_ip_v4", 4),
                                    ("accessIPv6", "access_ip_v6", 6)):
        if key in server:
            updates[column] = _ip(_str(server[key], key, max_len=45), key, ip_version)
    if "hostname" in server:
        updates["hostname"] = _pattern(server["hostname"], "hostname", HOSTNAME, 2, 63)
    disk = _disk_config(server)
    if disk is not None:
        updates["auto_disk_config"] = disk
    return updates
