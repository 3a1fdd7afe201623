"""Metadata definitions: namespaces and what they hold (Glance's ``/v2/metadefs``).

A namespace is ``public`` (every reader sees it) or ``private`` (its owner's
project and admins only; anyone else is told 404). Writes are admin-only, by
route rule (Glance's ``metadef_admin``). A namespace holds items of four
kinds, each a row of ``metadef_items`` named within its namespace and kind:
objects, properties, tags and resource type associations. A protected
namespace can be deleted, and its items removed, only once it is unprotected
(403 before).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Sequence

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.image import exception as exc
from cirrus.image.metadefs import schemas
from cirrus.image.models import metadef_items, metadef_namespaces, metadef_resource_types

Row = dict[str, Any]


class Kind(str, enum.Enum):
    """What a namespace holds (``metadef_items.kind``)."""

    OBJECT = "object"
    PROPERTY = "property"
    TAG = "tag"
    RESOURCE_TYPE = "resource_type"  # an association with a resource type


SORT_KEYS = ("created_at", "updated_at", "namespace", "display_name")
_NAMESPACE_COLUMNS = ("display_name", "description", "visibility", "protected", "owner")
# The lists a namespace body may carry, as items of each kind.
NESTED = {"objects": Kind.OBJECT, "properties": Kind.PROPERTY, "tags": Kind.TAG,
          "resource_type_associations": Kind.RESOURCE_TYPE}


@dataclass(frozen=True)
class NamespaceQuery:
    """``GET /v2/metadefs/namespaces`` parameters."""

    visibility: str | None = None
    resource_types: tuple[str, ...] = ()
    limit: int = 25
    marker: str | None = None
    sort_key: str = "created_at"
    sort_dir: str = "desc"


@dataclass
class NamespaceDetail:
    """A namespace and its items by kind."""

    row: Row
    items: dict[Kind, list[Row]] = field(default_factory=dict)


def _visible(ctx: RequestContext, row: Row) -> bool:
    return ctx.is_admin or row["visibility"] == "public" or row["owner"] == ctx.project_id


def split_item(kind: Kind, entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An item's name and the rest of its body (``name`` is its key)."""
    rest = {k: v for k, v in entry.items() if k not in ("name", "created_at", "updated_at")}
    return str(entry["name"]), rest


def nested_items(body: dict[str, Any]) -> list[tuple[Kind, str, dict[str, Any]]]:
    """The items a namespace create body carries (properties are a map)."""
    out = []
    for key, kind in NESTED.items():
        value: Any = body.get(key) or ({} if kind == Kind.PROPERTY else [])
        entries = [{"name": k, **v} for k, v in value.items()] if kind == Kind.PROPERTY \
            else list(value)
        for entry in entries:
            if "name" not in entry:
                raise exc.InvalidImage(reason=f"Invalid value for '{key}': each needs a name.")
            out.append((kind, *split_item(kind, entry)))
    return out


class MetadefAPI:
    """Namespaces, their items and the resource types, with Glance's rules."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- namespaces --------------------------------------------------------------
    @staticmethod
    def lookup(conn: sa.Connection, ctx: RequestContext, namespace: str) -> Row:
        """The namespace in the caller's transaction; 404 unless visible."""
        row = fetch_one(conn, sa.select(metadef_namespaces).where(
            metadef_namespaces.c.namespace == namespace))
        if row is None or not _visible(ctx, row):
            raise exc.MetadefNotFound(what="Namespace", name=namespace[:80])
        return row

    async def namespaces(self, ctx: RequestContext, query: NamespaceQuery) -> list[NamespaceDetail]:
        """The namespaces the caller may see, with their resource type associations."""
        def select(conn: sa.Connection) -> list[NamespaceDetail]:
            rows = [r for r in fetch_all(conn, sa.select(metadef_namespaces)) if _visible(ctx, r)]
            links = fetch_all(conn, sa.select(metadef_items).where(
                metadef_items.c.kind == Kind.RESOURCE_TYPE.value))
            return [NamespaceDetail(r, {Kind.RESOURCE_TYPE: [
                a for a in links if a["namespace"] == r["namespace"]]}) for r in rows]
        found = [d for d in await self.db.read(select) if self._wanted(d, query)]
        found.sort(key=lambda d: (d.row[query.sort_key] is None, d.row[query.sort_key] or ""),
                   reverse=query.sort_dir == "desc")
        if query.marker is not None:
            names = [d.row["namespace"] for d in found]
            if query.marker not in names:
                raise exc.MetadefNotFound(what="Namespace", name=query.marker[:80])
            found = found[names.index(query.marker) + 1:]
        return found[:query.limit]

    @staticmethod
    def _wanted(detail: NamespaceDetail, query: NamespaceQuery) -> bool:
        if query.visibility and detail.row["visibility"] != query.visibility:
            return False
        types = {a["name"] for a in detail.items[Kind.RESOURCE_TYPE]}
        return not query.resource_types or bool(types & set(query.resource_types))

    async def namespace(self, ctx: RequestContext, namespace: str) -> NamespaceDetail:
        """One namespace with every item it holds."""
        def select(conn: sa.Connection) -> NamespaceDetail:
            row = self.lookup(conn, ctx, namespace)
            items = fetch_all(conn, sa.select(metadef_items).where(
                metadef_items.c.namespace == namespace).order_by(metadef_items.c.name))
            return NamespaceDetail(row, {k: [i for i in items if i["kind"] == k.value]
                                         for k in Kind})
        return await self.db.read(select)

    async def create_namespace(self, ctx: RequestContext, body: Any) -> NamespaceDetail:
        """A new namespace (409 if the name is taken), with the items its body lists."""
        body = schemas.body(schemas.NAMESPACE_DOC, body)
        name = body["namespace"]
        items = nested_items(body)
        values = {"namespace": name, "visibility": "private", "protected": False,
                  "owner": ctx.project_id or "", "created_at": utcnow(),
                  **{k: body[k] for k in _NAMESPACE_COLUMNS if k in body}}

        def insert(conn: sa.Connection) -> None:
            if fetch_one(conn, sa.select(metadef_namespaces.c.namespace).where(
                    metadef_namespaces.c.namespace == name)):
                raise exc.ImageConflict(reason=f"Namespace {name} already exists")
            conn.execute(metadef_namespaces.insert().values(**values))
            for kind, item, rest in items:
                self._insert_item(conn, name, kind, item, rest)
        await self.db.run(insert)
        return await self.namespace(ctx, name)

    async def update_namespace(self, ctx: RequestContext, namespace: str, body: Any) -> Row:
        """Replace a namespace's attributes; a new ``namespace`` renames it
        (its items follow), 409 if that name is taken."""
        body = schemas.body(schemas.NAMESPACE_DOC, body)
        new_name = body["namespace"]
        values = {k: body[k] for k in _NAMESPACE_COLUMNS if k in body}

        def update(conn: sa.Connection) -> Row:
            row = self.lookup(conn, ctx, namespace)
            if new_name != namespace:
                self._rename(conn, row, new_name)
            conn.execute(metadef_namespaces.update().where(
                metadef_namespaces.c.namespace == new_name).values(updated_at=utcnow(), **values))
            return self.lookup(conn, ctx, new_name)
        return await self.db.run(update)

    @staticmethod
    def _rename(conn: sa.Connection, row: Row, new_name: str) -> None:
        # The name is the key its items hang off: a new row, the items moved, the old row gone.
        if fetch_one(conn, sa.select(metadef_namespaces.c.namespace).where(
                metadef_namespaces.c.namespace == new_name)):
            raise exc.ImageConflict(reason=f"Namespace {new_name} already exists")
        conn.execute(metadef_namespaces.insert().values(**{**row, "namespace": new_name}))
        conn.execute(metadef_items.update().where(
            metadef_items.c.namespace == row["namespace"]).values(namespace=new_name))
        conn.execute(metadef_namespaces.delete().where(
            metadef_namespaces.c.namespace == row["namespace"]))

    async def delete_namespace(self, ctx: RequestContext, namespace: str) -> None:
        def delete(conn: sa.Connection) -> None:
            self._unprotected(conn, ctx, namespace, "namespace", namespace)
            conn.execute(metadef_items.delete().where(metadef_items.c.namespace == namespace))
            conn.execute(metadef_namespaces.delete().where(
                metadef_namespaces.c.namespace == namespace))
        await self.db.run(delete)

    def _unprotected(self, conn: sa.Connection, ctx: RequestContext, namespace: str,
                     what: str, name: str) -> Row:
        row = self.lookup(conn, ctx, namespace)
        if row["protected"]:
            raise exc.ImageForbidden(reason=f"Metadata definition {what} {name} is protected "
                                            "and cannot be deleted.")
        return row

    # -- items -------------------------------------------------------------------
    @staticmethod
    def _insert_item(conn: sa.Connection, namespace: str, kind: Kind, name: str,
                     rest: dict[str, Any]) -> Row:
        key = _key(namespace, kind, name)
        if fetch_one(conn, sa.select(metadef_items.c.name).where(*key)):
            raise exc.ImageConflict(reason=f"A metadata definition {kind.value} with name={name} "
                                           f"already exists in namespace={namespace}.")
        if kind == Kind.RESOURCE_TYPE:
            _ensure_resource_type(conn, name)
        conn.execute(metadef_items.insert().values(namespace=namespace, kind=kind.value,
                                                   name=name, body=rest, created_at=utcnow()))
        return fetch_one(conn, sa.select(metadef_items).where(*key)) or {}

    async def items(self, ctx: RequestContext, namespace: str, kind: Kind) -> list[Row]:
        return (await self.namespace(ctx, namespace)).items[kind]

    async def item(self, ctx: RequestContext, namespace: str, kind: Kind, name: str) -> Row:
        for row in await self.items(ctx, namespace, kind):
            if row["name"] == name:
                return row
        raise exc.MetadefNotFound(what=f"Metadata definition {kind.value}", name=name[:80])

    async def add_item(self, ctx: RequestContext, namespace: str, kind: Kind, name: str,
                       rest: dict[str, Any]) -> Row:
        def add(conn: sa.Connection) -> Row:
            self.lookup(conn, ctx, namespace)
            return self._insert_item(conn, namespace, kind, name, rest)
        return await self.db.run(add)

    async def replace_item(self, ctx: RequestContext, namespace: str, kind: Kind, name: str,
                           new_name: str, rest: dict[str, Any]) -> Row:
        """An item's new body (and name: 409 if another item has it)."""
        def replace(conn: sa.Connection) -> Row:
            self.lookup(conn, ctx, namespace)
            old = fetch_one(conn, sa.select(metadef_items).where(*_key(namespace, kind, name)))
            if old is None:
                raise exc.MetadefNotFound(what=f"Metadata definition {kind.value}", name=name[:80])
            if new_name != name and fetch_one(conn, sa.select(metadef_items.c.name).where(
                    *_key(namespace, kind, new_name))):
                raise exc.ImageConflict(reason=f"A metadata definition {kind.value} with "
                                               f"name={new_name} already exists in "
                                               f"namespace={namespace}.")
            conn.execute(metadef_items.update().where(*_key(namespace, kind, name)).values(
                name=new_name, body=rest, updated_at=utcnow()))
            return fetch_one(conn, sa.select(metadef_items).where(
                *_key(namespace, kind, new_name))) or {}
        return await self.db.run(replace)

    async def delete_items(self, ctx: RequestContext, namespace: str, kind: Kind,
                           name: str | None = None) -> None:
        """One item (404 if absent), or all of a kind when ``name`` is None."""
        def delete(conn: sa.Connection) -> None:
            self._unprotected(conn, ctx, namespace, kind.value, name or namespace)
            where = _key(namespace, kind, name) if name is not None else \
                _key(namespace, kind)
            if not conn.execute(metadef_items.delete().where(*where)).rowcount and name:
                raise exc.MetadefNotFound(what=f"Metadata definition {kind.value}",
                                          name=name[:80])
        await self.db.run(delete)

    async def set_tags(self, ctx: RequestContext, namespace: str, names: Sequence[str],
                       append: bool) -> list[Row]:
        """``POST …/tags``: the namespace's tags replaced by ``names`` (or, with
        ``X-Openstack-Append``, added to them); 409 for a duplicate."""
        if len(set(names)) != len(names):
            raise exc.ImageConflict(reason="Duplicate tag names in the request.")

        def put(conn: sa.Connection) -> list[Row]:
            self.lookup(conn, ctx, namespace)
            if not append:
                conn.execute(metadef_items.delete().where(*_key(namespace, Kind.TAG)))
            return [self._insert_item(conn, namespace, Kind.TAG, n, {}) for n in names]
        return await self.db.run(put)

    # -- resource types ----------------------------------------------------------
    async def resource_types(self) -> list[Row]:
        return await self.db.read(lambda conn: fetch_all(conn, sa.select(
            metadef_resource_types).order_by(metadef_resource_types.c.name)))


def _key(namespace: str, kind: Kind, name: str | None = None) -> list[Any]:
    where = [metadef_items.c.namespace == namespace, metadef_items.c.kind == kind.value]
    return where + ([metadef_items.c.name == name] if name is not None else [])


def _ensure_resource_type(conn: sa.Connection, name: str) -> None:
    """An association names a resource type; an unknown one is added (Glance)."""
    if not fetch_one(conn, sa.select(metadef_resource_types.c.name).where(
            metadef_resource_types.c.name == name)):
        conn.execute(metadef_resource_types.insert().values(name=name, protected=False,
                                                            created_at=utcnow()))
