"""Request bodies of the block storage API, checked before any work
(Cinder's ``api/schemas``): each function takes the parsed JSON and returns
the checked values, or raises a 400 naming the field."""
from __future__ import annotations

import re
import uuid
from typing import Any

from cirrus.api.compute.parameters import bad, boolean, integer, text

from cirrus.volume.cinder import Connector
from cirrus.volume.exception import VolumeNotFound
from cirrus.volume.service import CreateRequest

MAX_SIZE = 0x7FFFFFFF
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{12}$")


def wrapped(body: Any, key: str) -> dict[str, Any]:
    """``body[key]``, which must be an object."""
    if not isinstance(body, dict) or key not in body:
        raise bad(key, f"'{key}' is a required property")
    inner = body[key]
    if not isinstance(inner, dict):
        raise bad(key, "must be an object")
    return inner


def _no_extra(obj: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise bad(where, f"Additional properties are not allowed ({', '.join(map(repr, extra[:5]))} "
                         "unexpected)")


def uuid_text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not _UUID.match(value):
        raise bad(field, f"{str(value)[:60]!r} is not a 'uuid'")
    return str(uuid.UUID(value))


def nullable_text(value: Any, field: str, max_len: int = 255) -> str | None:
    return None if value is None else text(value, field, max_len=max_len)


def metadata(value: Any, field: str = "metadata") -> dict[str, str]:
    """Cinder's metadata: keys of 1–255 characters, values of at most 255."""
    if not isinstance(value, dict):
        raise bad(field, "must be an object")
    for key, item in value.items():
        text(key, f"{field} key", min_len=1, max_len=255)
        text(item, f"{field}/{key[:60]}", max_len=255)
    return dict(value)


def size(value: Any, field: str = "size") -> int:
    return integer(value, field, minimum=1, maximum=MAX_SIZE)


VOLUME_CREATE = {"name", "description", "display_name", "display_description", "size",
                 "volume_type", "availability_zone", "snapshot_id", "source_volid", "imageRef",
                 "image_id", "metadata", "multiattach", "consistencygroup_id", "group_id",
                 "backup_id", "scheduler_hints"}


def volume_create(body: Any) -> CreateRequest:
    v = wrapped(body, "volume")
    _no_extra(v, VOLUME_CREATE, "volume")
    image = v.get("imageRef", v.get("image_id"))
    return CreateRequest(
        size=None if v.get("size") is None else size(v["size"]),
        name=nullable_text(v.get("name", v.get("display_name")), "name"),
        description=nullable_text(v.get("description", v.get("display_description")),
                                  "description"),
        volume_type=nullable_text(v.get("volume_type"), "volume_type"),
        availability_zone=nullable_text(v.get("availability_zone"), "availability_zone"),
        snapshot_id=None if v.get("snapshot_id") is None else uuid_text(v["snapshot_id"], "snapshot_id"),
        source_volid=None if v.get("source_volid") is None else uuid_text(v["source_volid"],
                                                                          "source_volid"),
        image_id=None if image is None else text(image, "imageRef", min_len=1),
        metadata=metadata(v["metadata"]) if v.get("metadata") is not None else None,
        multiattach=boolean(v.get("multiattach", False), "multiattach"))


def volume_update(body: Any) -> dict[str, Any]:
    v = wrapped(body, "volume")
    _no_extra(v, {"name", "description", "display_name", "display_description", "metadata"},
              "volume")
    if not v:
        raise bad("volume", "should be non-empty")
    out: dict[str, Any] = {}
    for key, alias in (("name", "display_name"), ("description", "display_description")):
        if key in v or alias in v:
            out[key] = nullable_text(v.get(key, v.get(alias)), key)
    if "metadata" in v:
        out["metadata"] = metadata(v["metadata"])
    return out


def snapshot_create(body: Any) -> dict[str, Any]:
    s = wrapped(body, "snapshot")
    _no_extra(s, {"name", "description", "display_name", "display_description", "volume_id",
                  "force", "metadata"}, "snapshot")
    if "volume_id" not in s:
        raise bad("volume_id", "'volume_id' is a required property")
    if s["volume_id"] is None:  # Cinder looks it up: 404
        raise VolumeNotFound(volume_id=None)
    return {"volume_id": uuid_text(s["volume_id"], "volume_id"),
            "name": nullable_text(s.get("name", s.get("display_name")), "name"),
            "description": nullable_text(s.get("description", s.get("display_description")),
                                         "description"),
            "force": boolean(s.get("force", False), "force"),
            "metadata": metadata(s["metadata"]) if s.get("metadata") is not None else {}}


def snapshot_update(body: Any) -> dict[str, Any]:
    s = wrapped(body, "snapshot")
    _no_extra(s, {"name", "description", "display_name", "display_description"}, "snapshot")
    if not s:
        raise bad("snapshot", "should be non-empty")
    out: dict[str, Any] = {}
    for key, alias in (("name", "display_name"), ("description", "display_description")):
        if key in s or alias in s:
            out[key] = nullable_text(s.get(key, s.get(alias)), key)
    return out


def metadata_body(body: Any, key: str = "metadata") -> dict[str, str]:
    if not isinstance(body, dict) or key not in body:
        raise bad(key, f"'{key}' is a required property")
    return metadata(body[key], key)


def meta_item(body: Any, key: str) -> dict[str, str]:
    """``PUT …/metadata/{key}``: ``{"meta": {key: value}}`` with the path's key."""
    meta = metadata_body(body, "meta")
    if len(meta) != 1:
        raise bad("meta", "Request body contains too many items")
    if key not in meta:
        raise bad("meta", "Request body and URI mismatch")
    return meta


def volume_type_create(body: Any) -> dict[str, Any]:
    t = wrapped(body, "volume_type")
    _no_extra(t, {"name", "description", "os-volume-type-access:is_public", "extra_specs"},
              "volume_type")
    if "name" not in t:
        raise bad("name", "'name' is a required property")
    name = text(t["name"], "name", min_len=1, max_len=255)
    if not name.strip():
        raise bad("name", "must not be blank")
    return {"name": name, "description": nullable_text(t.get("description"), "description"),
            "is_public": boolean(t.get("os-volume-type-access:is_public", True),
                                 "os-volume-type-access:is_public"),
            "extra_specs": extra_specs(t.get("extra_specs", {}))}


def volume_type_update(body: Any) -> dict[str, Any]:
    t = wrapped(body, "volume_type")
    _no_extra(t, {"name", "description", "is_public"}, "volume_type")
    if not t:
        raise bad("volume_type", "should be non-empty")
    out: dict[str, Any] = {}
    if "name" in t:
        name = text(t["name"], "name", min_len=1, max_len=255)
        if not name.strip():
            raise bad("name", "must not be blank")
        out["name"] = name
    if "description" in t:
        out["description"] = nullable_text(t["description"], "description")
    if "is_public" in t:
        out["is_public"] = boolean(t["is_public"], "is_public")
    return out


def extra_specs(value: Any, field: str = "extra_specs") -> dict[str, str]:
    if not isinstance(value, dict):
        raise bad(field, "must be an object")
    out = {}
    for key, item in value.items():
        text(key, f"{field} key", min_len=1, max_len=255)
        if isinstance(item, bool):
            item = str(item)
        out[key] = text(item, f"{field}/{key[:60]}", max_len=255)
    return out


def quota_update(body: Any, known: set[str]) -> dict[str, int]:
    q = wrapped(body, "quota_set")
    q = {k: v for k, v in q.items() if k not in ("tenant_id", "id")}
    unknown = sorted(set(q) - known)
    if unknown:
        raise bad("quota_set", f"Bad key(s) in quota set: {', '.join(unknown[:5])}")
    return {k: integer(v, k, minimum=-1) for k, v in q.items()}


def connector(value: Any, field: str = "connector") -> Connector:
    if not isinstance(value, dict):
        raise bad(field, "must be an object")
    out: Connector = {}
    for key in ("host", "ip", "initiator", "platform", "os_type"):
        if key in value and value[key] is not None:
            out[key] = text(value[key], f"{field}/{key}", max_len=255)
    if "multipath" in value:
        out["multipath"] = boolean(value["multipath"], f"{field}/multipath")
    return out


def mode(value: Any, field: str = "mode") -> str:
    if value not in ("rw", "ro"):
        raise bad(field, f"{str(value)[:20]!r} is not one of ['rw', 'ro']")
    return str(value)


STATUSES = ("available", "error", "creating", "deleting", "in-use", "attaching", "detaching",
            "error_deleting", "maintenance", "reserved", "error_extending", "extending")


def status(value: Any, field: str = "status", allowed: tuple[str, ...] = STATUSES) -> str:
    if value not in allowed:
        raise bad(field, f"{str(value)[:40]!r} is not one of {list(allowed)}")
    return str(value)
