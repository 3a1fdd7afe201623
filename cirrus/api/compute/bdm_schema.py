"""The block device mappings of ``POST /servers``: Nova's
``block_device_mapping_v2`` item schema (``schemas/servers.py``, with ``tag``
at 2.42 and ``volume_type`` at 2.67) and the legacy ``block_device_mapping``
(v1, converted as Nova's ``from_legacy_mapping`` does). Shape only: the
rules between mappings are :mod:`cirrus.compute.block_device`'s."""
from __future__ import annotations

import re
from typing import Any

from cirrus.api.compute.parameters import bad, integer, text
from cirrus.compute.block_device import DESTINATION_TYPES, ROOT_DEVICE_NAME, SOURCE_TYPES, \
    BdmRequest

Version = tuple[int, int]
V2_KEYS = frozenset({"source_type", "destination_type", "uuid", "image_id", "boot_index",
                     "device_name", "volume_size", "delete_on_termination", "guest_format",
                     "disk_bus", "device_type", "no_device", "connection_info",
                     "virtual_name", "volume_id", "snapshot_id"})
LEGACY_KEYS = frozenset({"virtual_name", "volume_id", "snapshot_id", "volume_size",
                         "device_name", "delete_on_termination", "no_device",
                         "connection_info"})
UUID_LIKE = re.compile(r"[a-zA-Z0-9._-]*")  # Nova's pattern for a mapping's uuid
DEVICE_NAME = re.compile(r"[^\s]+")  # Nova's device_name: no whitespace
BOOT_INDEX = re.compile(r"-?[0-9]+")
MAX_INT = 0x7FFFFFFF


def boolean(value: Any, field: str) -> bool:
    """Nova's ``parameter_types.boolean``: JSON booleans and their spellings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no",
                                                    "on", "off", "y", "n", "t", "f"):
        return value.lower() in ("true", "1", "yes", "on", "y", "t")
    raise bad(field, f"{value!r} is not of type 'boolean'")


def _size(value: Any, field: str) -> int:
    """Nova's ``volume_size``: a positive integer, or a string of digits."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return integer(value, field, minimum=1, maximum=MAX_INT)


def _boot_index(value: Any, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        if not BOOT_INDEX.fullmatch(value):
            raise bad(field, f"{value!r} is not a valid boot index")
        value = int(value)
    return integer(value, field, minimum=-MAX_INT - 1, maximum=MAX_INT)


def _device_name(value: Any, field: str) -> str | None:
    if value is None:
        return None
    name = text(value, field, min_len=1, max_len=255)
    if not DEVICE_NAME.fullmatch(name):
        raise bad(field, f"{name!r} does not match '^[^\\s]+$'")
    return name if name.startswith("/dev/") else f"/dev/{name}"


def _optional_text(item: dict[str, Any], key: str, field: str) -> str | None:
    value = item.get(key)
    return None if value is None else text(value, f"{field}/{key}", max_len=255)


def parse_bdm_v2(value: Any, version: Version) -> list[BdmRequest]:
    """``block_device_mapping_v2`` → mappings (400 naming the field)."""
    if not isinstance(value, list):
        raise bad("block_device_mapping_v2", "must be a list")
    keys = V2_KEYS | ({"tag"} if version >= (2, 42) or version == (2, 32) else set()) \
        | ({"volume_type"} if version >= (2, 67) else set())
    return [_v2_item(item, f"block_device_mapping_v2/{i}", keys)
            for i, item in enumerate(value)]


def _v2_item(item: Any, field: str, keys: frozenset[str]) -> BdmRequest:
    if not isinstance(item, dict):
        raise bad(field, "must be an object")
    unknown = set(item) - keys
    if unknown:
        raise bad(field, f"Additional properties are not allowed "
                         f"({', '.join(sorted(map(str, unknown)))[:200]} were unexpected)")
    source = item.get("source_type")
    if source not in SOURCE_TYPES:
        raise bad(f"{field}/source_type", f"{source!r} is not one of {list(SOURCE_TYPES)}")
    dest = item.get("destination_type", "local" if source in ("image", "blank") else "volume")
    if dest not in DESTINATION_TYPES:
        raise bad(f"{field}/destination_type", f"{dest!r} is not one of "
                                               f"{list(DESTINATION_TYPES)}")
    uuid = item.get("uuid")
    if source != "blank":
        uuid = text(uuid, f"{field}/uuid", min_len=1, max_len=255)
        if not UUID_LIKE.fullmatch(uuid):
            raise bad(f"{field}/uuid", f"{uuid!r} is not a valid id")
    elif uuid is not None:
        raise bad(f"{field}/uuid", "a blank device has no source uuid")
    bdm: BdmRequest = {
        "source_type": source, "destination_type": dest, "uuid": uuid,
        "boot_index": _boot_index(item.get("boot_index"), f"{field}/boot_index"),
        "device_name": _device_name(item.get("device_name"), f"{field}/device_name"),
        "guest_format": _optional_text(item, "guest_format", field),
        "disk_bus": _optional_text(item, "disk_bus", field),
        "device_type": _optional_text(item, "device_type", field),
        "volume_type": _optional_text(item, "volume_type", field),
    }
    if item.get("volume_size") is not None:
        bdm["volume_size"] = _size(item["volume_size"], f"{field}/volume_size")
    if "delete_on_termination" in item:
        bdm["delete_on_termination"] = boolean(item["delete_on_termination"],
                                             f"{field}/delete_on_termination")
    if item.get("tag") is not None:
        bdm["tag"] = tag(item["tag"], f"{field}/tag")
    return bdm


def tag(value: Any, field: str) -> str:
    """Nova's ``parameter_types.tag`` (as ``server_schema.tag``, which imports this module)."""
    checked = text(value, field, min_len=1, max_len=60)
    if "," in checked or "/" in checked:
        raise bad(field, f"{checked!r}: tags may not contain ',' or '/'")
    return checked


def parse_legacy(value: Any, image_href: str | None) -> list[BdmRequest]:
    """``block_device_mapping`` (v1) → v2 mappings: a volume or a snapshot
    becomes a volume; the one at the root device name is the boot volume
    when no image is given (Nova's ``from_legacy_mapping``)."""
    if not isinstance(value, list):
        raise bad("block_device_mapping", "must be a list")
    out: list[BdmRequest] = []
    for i, item in enumerate(value):
        field = f"block_device_mapping/{i}"
        if not isinstance(item, dict) or set(item) - LEGACY_KEYS:
            raise bad(field, f"must be an object with only {', '.join(sorted(LEGACY_KEYS))}")
        name = _device_name(item.get("device_name"), f"{field}/device_name")
        if item.get("no_device"):
            continue
        source = "volume" if item.get("volume_id") else \
            "snapshot" if item.get("snapshot_id") else None
        if source is None:
            raise bad(field, "volume_id or snapshot_id is required")
        uuid = text(item[f"{source}_id"], f"{field}/{source}_id", min_len=1, max_len=255)
        is_root = image_href is None and name in (ROOT_DEVICE_NAME, None) and \
            not any(b.get("boot_index") == 0 for b in out)
        bdm: BdmRequest = {"source_type": source, "destination_type": "volume", "uuid": uuid,
                           "boot_index": 0 if is_root else None, "device_name": name,
                           "delete_on_termination": boolean(
                               item.get("delete_on_termination", False),
                               f"{field}/delete_on_termination")}
        if item.get("volume_size") is not None:
            bdm["volume_size"] = _size(item["volume_size"], f"{field}/volume_size")
        out.append(bdm)
    return out
