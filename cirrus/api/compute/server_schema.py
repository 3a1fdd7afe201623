"""Validation of the ``POST /servers`` body into a :class:`CreateRequest`.

Mirrors Nova's JSON schema: unknown keys, wrong types, bad UUIDs and IPs,
oversized values are 400 with a message naming the field.
"""
from __future__ import annotations

import base64
import binascii
import ipaddress
import secrets
import string
import uuid as uuidlib
from typing import Any

from cirrus.compute.records import CreateRequest
from cirrus.exception import ValidationError

Version = tuple[int, int]

SERVER_KEYS = {"name", "imageRef", "flavorRef", "networks", "min_count", "max_count",
               "return_reservation_id", "availability_zone", "key_name", "user_data", "metadata",
               "personality", "config_drive", "security_groups", "adminPass",
               "block_device_mapping_v2", "block_device_mapping", "accessIPv4", "accessIPv6",
               "OS-DCF:diskConfig", "description", "tags", "hostname", "trusted_image_certificates",
               "host", "hypervisor_hostname"}
BDM_KEYS = {"source_type", "destination_type", "uuid", "boot_index", "device_name",
            "volume_size", "delete_on_termination", "guest_format", "disk_bus", "device_type",
            "tag", "volume_type", "no_device"}


def bad(field: str, reason: str) -> ValidationError:
    return ValidationError(field=field, reason=reason)


def _str(value: Any, field: str, *, min_len: int = 0, max_len: int = 255) -> str:
    if not isinstance(value, str):
        raise bad(field, f"{value!r} is not of type 'string'")
    if not min_len <= len(value) <= max_len:
        raise bad(field, f"length must be between {min_len} and {max_len}")
    return value


def _uuid(value: Any, field: str) -> str:
    try:
        return str(uuidlib.UUID(_str(value, field, min_len=1)))
    except ValueError:
        raise bad(field, f"{value!r} is not a 'uuid'") from None


def _ref(value: Any, field: str) -> str:
    """An id or a URL ending in one (imageRef/flavorRef)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    text = _str(value, field, min_len=1)
    return text.rstrip("/").rsplit("/", 1)[-1]


def _count(value: Any, field: str) -> int:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise bad(field, f"{value!r} must be an integer >= 1")
    return value


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
    if not isinstance(value, dict):
        raise bad("metadata", "must be an object")
    for key, item in value.items():
        _str(key, "metadata", min_len=1, max_len=255)
        _str(item, f"metadata/{key}", max_len=255)
    return dict(value)


def _networks(value: Any, version: Version) -> list[dict[str, Any]] | None:
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
        net = _uuid(item["uuid"], f"{field}/uuid") if item.get("uuid") else None
        port = _uuid(item["port"], f"{field}/port") if item.get("port") else None
        fixed = item.get("fixed_ip")
        if fixed is not None:
            try:
                fixed = str(ipaddress.ip_address(_str(fixed, f"{field}/fixed_ip")))
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


def _bdms(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise bad("block_device_mapping_v2", "must be a list")
    out = []
    for i, item in enumerate(value):
        field = f"block_device_mapping_v2/{i}"
        if not isinstance(item, dict) or set(item) - BDM_KEYS:
            raise bad(field, "unknown keys in block device mapping")
        source, dest = item.get("source_type"), item.get("destination_type", "local")
        if source != "image" or dest != "local":
            raise bad(field, f"only image → local block devices are supported "
                             f"(got {source} → {dest}); volumes are not available in cirrus")
        boot_index = item.get("boot_index")
        if isinstance(boot_index, str) and boot_index.lstrip("-").isdigit():
            boot_index = int(boot_index)
        out.append({"source_type": source, "destination_type": dest,
                    "uuid": _uuid(item.get("uuid"), f"{field}/uuid"), "boot_index": boot_index})
    return out


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
    unknown = set(server) - SERVER_KEYS
    if unknown:
        raise bad("server", f"Additional properties are not allowed "
                            f"({', '.join(sorted(map(str, unknown)))} were unexpected)")
    if "name" not in server:
        raise bad("name", "'name' is a required property")
    if "flavorRef" not in server:
        raise bad("flavorRef", "'flavorRef' is a required property")
    if "personality" in server and version >= (2, 57):
        raise bad("personality", "personality is not supported from microversion 2.57")
    if "networks" not in server and version >= (2, 37):
        raise bad("networks", "'networks' is a required property")
    bdms = _bdms(server["block_device_mapping_v2"]) if "block_device_mapping_v2" in server else []
    image = server.get("imageRef")
    image_ref = _ref(image, "imageRef") if image not in (None, "") else None
    if image_ref is None and not any(b["boot_index"] == 0 for b in bdms):
        raise bad("imageRef", "an image is required unless booting from a block device")
    if image_ref is not None and not any(b["boot_index"] == 0 for b in bdms):
        try:
            uuidlib.UUID(image_ref)
        except ValueError:
            raise bad("imageRef", f"{image!r} is not a valid image reference") from None
    az = server.get("availability_zone")
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
        tags=_tags(server.get("tags", [])),
        hostname=_str(server["hostname"], "hostname", min_len=1) if server.get("hostname") else None,
    )
    return req, _bool(server.get("return_reservation_id", False), "return_reservation_id")


def _security_groups(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("security_groups", "must be a list")
    names = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or "name" not in item:
            raise bad(f"security_groups/{i}", "must be an object with a name")
        names.append(_str(item["name"], f"security_groups/{i}/name", min_len=1))
    return list(dict.fromkeys(names))


def _ip(value: Any, field: str, version: int) -> str | None:
    if value in (None, ""):
        return None
    try:
        addr = ipaddress.ip_address(_str(value, field))
    except ValueError:
        raise bad(field, f"{value!r} is not an IP address") from None
    if addr.version != version:
        raise bad(field, f"{value!r} is not an IPv{version} address")
    return str(addr)


def _tags(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > 50:
        raise bad("tags", "must be a list of at most 50 tags")
    for tag in value:
        text = _str(tag, "tags", min_len=1, max_len=60)
        if "," in text or "/" in text:
            raise bad("tags", f"{tag!r}: tags may not contain ',' or '/'")
    return list(value)
