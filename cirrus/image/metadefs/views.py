"""Metadefs as Glance shows them (absent attributes are left out, as Glance's
WSME models leave out what is unset)."""
from __future__ import annotations

from typing import Any

from cirrus.db.base import isotime
from cirrus.image.metadefs.api import Kind, NamespaceDetail, Row

NAMESPACES = "/v2/metadefs/namespaces"


def _times(row: Row) -> dict[str, Any]:
    return {"created_at": isotime(row["created_at"]),
            "updated_at": isotime(row["updated_at"] or row["created_at"])}


def _present(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def association_view(row: Row) -> dict[str, Any]:
    return _present({"name": row["name"], **row["body"], **_times(row)})


def property_view(row: Row) -> dict[str, Any]:
    return {"name": row["name"], **row["body"]}


def object_view(row: Row) -> dict[str, Any]:
    return {"name": row["name"], **row["body"], **_times(row),
            "schema": "/v2/schemas/metadefs/object",
            "self": f"{NAMESPACES}/{row['namespace']}/objects/{row['name']}"}


def tag_view(row: Row) -> dict[str, Any]:
    return {"name": row["name"], **_times(row)}


def properties_map(rows: list[Row]) -> dict[str, Any]:
    """Glance lists properties as a map from name to definition."""
    return {r["name"]: r["body"] for r in rows}


def namespace_view(detail: NamespaceDetail) -> dict[str, Any]:
    row = detail.row
    out = _present({k: row[k] for k in ("namespace", "display_name", "description",
                                        "visibility", "protected", "owner")})
    out.update(_times(row), schema="/v2/schemas/metadefs/namespace",
               self=f"{NAMESPACES}/{row['namespace']}")
    items = detail.items
    if items.get(Kind.RESOURCE_TYPE):
        out["resource_type_associations"] = [association_view(r)
                                             for r in items[Kind.RESOURCE_TYPE]]
    if items.get(Kind.PROPERTY):
        out["properties"] = properties_map(items[Kind.PROPERTY])
    if items.get(Kind.OBJECT):
        out["objects"] = [object_view(r) for r in items[Kind.OBJECT]]
    if items.get(Kind.TAG):
        out["tags"] = [{"name": r["name"]} for r in items[Kind.TAG]]
    return out


def resource_type_view(row: Row) -> dict[str, Any]:
    return {"name": row["name"], **_times(row)}
