"""The image service: records, visibility, members, data (Glance v2 semantics).

Also what compute uses: :meth:`ImageAPI.get` (the record, with ``properties``)
and :meth:`ImageAPI.image_path` (the data file, for drivers).
"""
from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import sqlalchemy as sa

from cirrus import policy
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.db.prepared import Prepared
from cirrus.db.rows import PreparedRead
from cirrus.image import exception as exc
from cirrus.image.models import image_members, images
from cirrus.image.store import ImageStore

DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
VISIBILITIES = ("public", "private", "shared", "community")
CORE = ("id", "name", "status", "visibility", "protected", "checksum", "os_hash_algo",
        "os_hash_value", "size", "virtual_size", "min_disk", "min_ram", "disk_format",
        "container_format", "owner", "created_at", "updated_at", "tags")
READ_ONLY = ("id", "status", "checksum", "os_hash_algo", "os_hash_value", "size", "virtual_size",
             "owner", "created_at", "updated_at", "file", "schema", "self", "direct_url",
             "locations")
WRITABLE_CORE = ("name", "visibility", "protected", "min_disk", "min_ram", "disk_format",
                 "container_format", "tags")


def _visible(ctx: RequestContext, image: dict[str, Any], is_member: Callable[[], bool]) -> bool:
    """Glance's rule; ``is_member`` (is the caller's project a member?) is asked
    only for a shared image of another project."""
    if ctx.is_admin or image["visibility"] in ("public", "community"):
        return True
    if image["owner"] == ctx.project_id:
        return True
    return image["visibility"] == "shared" and is_member()


# Every boot reads its image: statements built once.
_IMAGE = PreparedRead(sa.select(images).where(images.c.id == sa.bindparam("image_id"),
                                              images.c.deleted.is_(False)))
_MEMBER = Prepared(sa.select(image_members.c.member_id).where(
    image_members.c.image_id == sa.bindparam("image_id"),
    image_members.c.member_id == sa.bindparam("member_id")))


def _validate_core(values: dict[str, Any]) -> None:
    checks = {
        "name": lambda v: v is None or (isinstance(v, str) and len(v) <= 255),
        "visibility": lambda v: v in VISIBILITIES,
        "protected": lambda v: isinstance(v, bool),
        "min_disk": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        "min_ram": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        "disk_format": lambda v: v is None or v in DISK_FORMATS,
        "container_format": lambda v: v is None or v in CONTAINER_FORMATS,
        "tags": lambda v: isinstance(v, list) and all(isinstance(t, str) and len(t) <= 255 for t in v),
    }
    for key, ok in checks.items():
        if key in values and not ok(values[key]):
            raise exc.InvalidImage(reason=f"Invalid value {values[key]!r} for '{key}'")


class ImageAPI:
    """Image records and data, with Glance's visibility rules."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.store = ImageStore(settings.state_dir / "images")

    def image_path(self, image_id: str) -> Path:
        """Where the data of ``image_id`` lives (for drivers on this host)."""
        return self.store.path(image_id)

    # -- read ------------------------------------------------------------------
    @staticmethod
    def lookup(conn: sa.Connection, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        """:meth:`get` in the caller's transaction."""
        row = _IMAGE.first(conn, image_id=image_id)
        if row is None or not _visible(ctx, row, lambda: _MEMBER.execute(
                conn, image_id=image_id, member_id=ctx.project_id).fetchone() is not None):
            raise exc.ImageNotFound(image_id=image_id)
        return row

    async def get(self, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        """The image record; ImageNotFound (404) if missing or not visible."""
        return await self.db.read(self.lookup, ctx, image_id)

    async def _owned(self, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        row = await self.get(ctx, image_id)
        if not (ctx.is_admin or row["owner"] == ctx.project_id):
            raise exc.ImageForbidden(reason="You are not permitted to modify this image.")
        return row

    async def list(self, ctx: RequestContext, filters: dict[str, Any], limit: int,
                   marker: str | None, sort: list[tuple[str, str]]) -> list[dict[str, Any]]:
        def query(conn: sa.Connection) -> list[dict[str, Any]]:
            q = sa.select(images).where(images.c.deleted.is_(False))
            for key in ("name", "status", "visibility", "owner", "disk_format", "container_format"):
                if filters.get(key) is not None:
                    q = q.where(images.c[key] == filters[key])
            rows = fetch_all(conn, q)
            member_rows = fetch_all(conn, sa.select(image_members).where(
                image_members.c.member_id == ctx.project_id))
            accepted = {r["image_id"]: r["status"] for r in member_rows}
            return [r for r in rows if self._listed(ctx, r, accepted, filters)]
        rows = await self.db.read(query)
        if filters.get("tag"):
            rows = [r for r in rows if set(filters["tag"]) <= set(r["tags"] or [])]
        for key, direction in reversed(sort):
            rows.sort(key=lambda r: (r[key] is None, r[key] if r[key] is not None else ""),
                      reverse=direction == "desc")
        if marker:
            ids = [r["id"] for r in rows]
            if marker not in ids:
                raise exc.InvalidImage(reason=f"marker {marker} not found")
            rows = rows[ids.index(marker) + 1:]
        return rows[:limit]

    @staticmethod
    def _listed(ctx: RequestContext, row: dict[str, Any], membership: dict[str, str],
                filters: dict[str, Any]) -> bool:
        vis = row["visibility"]
        if filters.get("visibility") is None and vis == "community" and row["owner"] != ctx.project_id:
            return False  # community images are listed only when asked for
        if vis in ("public", "community") or row["owner"] == ctx.project_id:
            return True
        if vis == "shared" and row["id"] in membership:
            wanted = filters.get("member_status", "accepted")
            return wanted == "all" or membership[row["id"]] == wanted
        return ctx.is_admin

    # -- write -----------------------------------------------------------------
    async def create(self, ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
        policy.enforce(ctx, "image:create")
        for key in READ_ONLY:
            if key in body and key != "id":
                raise exc.ImageForbidden(reason=f"Attribute '{key}' is read-only.")
        core = {k: body[k] for k in WRITABLE_CORE if k in body}
        _validate_core(core)
        if core.get("visibility") == "public":
            policy.enforce(ctx, "image:publicize")
        image_id = body.get("id") or str(uuidlib.uuid4())
        try:
            image_id = str(uuidlib.UUID(str(image_id)))
        except ValueError:
            raise exc.InvalidImage(reason=f"Invalid id {image_id!r}") from None
        props = {k: v for k, v in body.items() if k not in CORE}
        for key, value in props.items():
            if not isinstance(key, str) or len(key) > 255 or not isinstance(value, (str, int, float, bool, type(None))):
                raise exc.InvalidImage(reason=f"Invalid property {key!r}")
        row = {"id": image_id, "name": core.get("name"), "status": "queued",
               "visibility": core.get("visibility", "shared"), "protected": core.get("protected", False),
               "min_disk": core.get("min_disk", 0), "min_ram": core.get("min_ram", 0),
               "disk_format": core.get("disk_format"), "container_format": core.get("container_format"),
               "owner": ctx.project_id, "properties": props, "tags": list(dict.fromkeys(core.get("tags", []))),
               "created_at": utcnow(), "deleted": False}

        def insert(conn: sa.Connection) -> None:
            if conn.execute(sa.select(images.c.id).where(images.c.id == image_id)).first():
                raise exc.ImageConflict(reason=f"Image with identifier {image_id} already exists!")
            conn.execute(images.insert().values(**row))
        await self.db.run(insert)
        return await self.get(ctx, image_id)

    async def update(self, ctx: RequestContext, image_id: str, changes: dict[str, Any],
                     removals: list[str]) -> dict[str, Any]:
        """Apply core attribute changes, property sets and property removals."""
        row = await self._owned(ctx, image_id)
        core = {k: v for k, v in changes.items() if k in WRITABLE_CORE}
        _validate_core(core)
        if core.get("visibility") == "public" and row["visibility"] != "public":
            policy.enforce(ctx, "image:publicize")
        props = dict(row["properties"] or {})
        for key, value in changes.items():
            if key in READ_ONLY:
                raise exc.ImageForbidden(reason=f"Attribute '{key}' is read-only.")
            if key not in WRITABLE_CORE:
                props[key] = value
        for key in removals:
            if key in READ_ONLY or key in WRITABLE_CORE:
                raise exc.ImageForbidden(reason=f"Attribute '{key}' can't be removed.")
            if key not in props:
                raise exc.ImageConflict(reason=f"Property {key} does not exist.")
            props.pop(key)
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id).values(properties=props, updated_at=utcnow(), **core)))
        return await self.get(ctx, image_id)

    async def delete(self, ctx: RequestContext, image_id: str) -> None:
        row = await self._owned(ctx, image_id)
        if row["protected"]:
            raise exc.ImageForbidden(reason=f"Image {image_id} is protected and cannot be deleted.")
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id).values(deleted=True, status="deleted", updated_at=utcnow())))
        self.store.delete(image_id)

    async def upload(self, ctx: RequestContext, image_id: str, chunks: AsyncIterator[bytes]) -> None:
        row = await self._owned(ctx, image_id)
        if row["status"] != "queued":
            raise exc.ImageConflict(reason=f"Image status transition from {row['status']} to "
                                           f"saving is not allowed")

        def mark(conn: sa.Connection, expected: str, values: dict[str, Any]) -> bool:
            return conn.execute(images.update().where(images.c.id == image_id,
                                                      images.c.status == expected).values(
                updated_at=utcnow(), **values)).rowcount == 1
        if not await self.db.run(mark, "queued", {"status": "saving"}):
            raise exc.ImageConflict(reason="Image is already being uploaded.")
        try:
            size, md5, sha512 = await self.store.write(image_id, chunks, self.settings.max_image_bytes)
        except BaseException:
            await self.db.run(mark, "saving", {"status": "queued"})
            raise
        await self.db.run(mark, "saving", {"status": "active", "size": size, "virtual_size": size,
                                           "checksum": md5, "os_hash_algo": "sha512",
                                           "os_hash_value": sha512})

    async def download(self, ctx: RequestContext, image_id: str) -> tuple[dict[str, Any], AsyncIterator[bytes] | None]:
        row = await self.get(ctx, image_id)
        if row["status"] != "active" or not self.store.path(image_id).exists():
            return row, None
        return row, self.store.read(image_id)

    # -- tags and members -------------------------------------------------------
    async def set_tag(self, ctx: RequestContext, image_id: str, tag: str, add: bool) -> None:
        row = await self._owned(ctx, image_id)
        tags = list(row["tags"] or [])
        if add and tag not in tags:
            tags.append(tag)
        elif not add:
            if tag not in tags:
                raise exc.ImageNotFound(image_id=f"{image_id} tag {tag}")
            tags.remove(tag)
        _validate_core({"tags": tags})
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id).values(tags=tags, updated_at=utcnow())))

    async def members(self, ctx: RequestContext, image_id: str) -> list[dict[str, Any]]:
        await self.get(ctx, image_id)
        return await self.db.read(lambda conn: fetch_all(conn, sa.select(image_members).where(
            image_members.c.image_id == image_id)))

    async def add_member(self, ctx: RequestContext, image_id: str, member: str) -> dict[str, Any]:
        row = await self._owned(ctx, image_id)
        if row["visibility"] != "shared":
            raise exc.ImageForbidden(reason="Only shared images have members.")

        def add(conn: sa.Connection) -> dict[str, Any]:
            if conn.execute(sa.select(image_members).where(
                    image_members.c.image_id == image_id, image_members.c.member_id == member)).first():
                raise exc.ImageConflict(reason=f"Member {member} already exists.")
            conn.execute(image_members.insert().values(image_id=image_id, member_id=member,
                                                       status="pending", created_at=utcnow()))
            return fetch_one(conn, sa.select(image_members).where(
                image_members.c.image_id == image_id, image_members.c.member_id == member)) or {}
        return await self.db.run(add)

    async def set_member_status(self, ctx: RequestContext, image_id: str, member: str,
                                status: str) -> dict[str, Any]:
        await self.get(ctx, image_id)
        if not (ctx.is_admin or ctx.project_id == member):
            raise exc.ImageForbidden(reason="Only the member may change its status.")
        if status not in ("pending", "accepted", "rejected"):
            raise exc.InvalidImage(reason=f"Invalid status {status!r}")

        def update(conn: sa.Connection) -> dict[str, Any]:
            count = conn.execute(image_members.update().where(
                image_members.c.image_id == image_id, image_members.c.member_id == member).values(
                status=status, updated_at=utcnow())).rowcount
            if not count:
                raise exc.MemberNotFound(member=member, image_id=image_id)
            return fetch_one(conn, sa.select(image_members).where(
                image_members.c.image_id == image_id, image_members.c.member_id == member)) or {}
        return await self.db.run(update)

    async def remove_member(self, ctx: RequestContext, image_id: str, member: str) -> None:
        await self._owned(ctx, image_id)

        def remove(conn: sa.Connection) -> None:
            if not conn.execute(image_members.delete().where(
                    image_members.c.image_id == image_id, image_members.c.member_id == member)).rowcount:
                raise exc.MemberNotFound(member=member, image_id=image_id)
        await self.db.run(remove)


def make_image_api(settings: Settings, db: Database, transport: Any = None) -> ImageAPI:
    return ImageAPI(settings, db)
