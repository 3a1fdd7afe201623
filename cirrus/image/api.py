"""The image service: records, visibility, members, data (Glance v2 semantics).

Also what compute uses: :meth:`ImageAPI.get` (the record, with ``properties``)
and :meth:`ImageAPI.image_path` (the data file, for drivers).

Policy is enforced here, whoever calls (Glance's secure-RBAC defaults): reading
needs a reader role and an image the caller may see; every write needs a
member role in the owner's project (or admin); downloading needs a member role;
publishing (``visibility: public``) and giving an image to another project are
admin-only. An image the caller cannot see is 404, one it sees but may not
change is 403. Values are checked by :mod:`cirrus.image.schema` before they are
stored.
"""
from __future__ import annotations

import uuid as uuidlib
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Sequence

import sqlalchemy as sa

from cirrus import policy
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.db.prepared import Prepared
from cirrus.db.rows import PreparedRead
from cirrus.exception import Forbidden
from cirrus.image import exception as exc
from cirrus.image import patch, schema
from cirrus.image.models import image_members, images
from cirrus.image.query import ListQuery
from cirrus.image.states import ImageStatus
from cirrus.image.store import ImageStore


Rows = list[dict[str, Any]]  # (``ImageAPI.list`` hides the builtin inside the class)


def visibility(ctx: RequestContext, image: dict[str, Any]) -> bool | None:
    """Glance's rule, as far as the record decides it: whether the caller sees
    ``image``, or None for a shared image of another project (its members decide)."""
    if ctx.is_admin or image["visibility"] in ("public", "community"):
        return True
    if image["owner"] is not None and image["owner"] == ctx.project_id:
        return True
    return None if image["visibility"] == "shared" else False


def _visible(ctx: RequestContext, image: dict[str, Any], is_member: Callable[[], bool]) -> bool:
    """Glance's rule; ``is_member`` (is the caller's project a member?) is asked
    only for a shared image of another project."""
    seen = visibility(ctx, image)
    return is_member() if seen is None else seen


def _may_modify(ctx: RequestContext, owner: str | None) -> bool:
    """A member (or admin) of project ``owner``; nobody but admins for no owner."""
    if ctx.is_admin:
        return True
    return owner is not None and policy.check(ctx, "image:modify", {"project_id": owner})


def _sized(image: dict[str, Any], query: ListQuery) -> bool:
    """Whether ``image`` is within the listing's size bounds (unsized images are not)."""
    if query.size_min is None and query.size_max is None:
        return True
    size = image["size"]
    return size is not None and (query.size_min is None or size >= query.size_min) and (
        query.size_max is None or size <= query.size_max)


def _sees_member(ctx: RequestContext, image: dict[str, Any], member_id: str) -> bool:
    """Glance shows an image's members to its owner (and admins); a member
    project sees only its own membership."""
    return ctx.is_admin or image["owner"] == ctx.project_id or member_id == ctx.project_id


# Every boot reads its image: statements built once.
_IMAGE = PreparedRead(sa.select(images).where(images.c.id == sa.bindparam("image_id"),
                                              images.c.deleted.is_(False)))
_MEMBER = Prepared(sa.select(image_members.c.member_id).where(
    image_members.c.image_id == sa.bindparam("image_id"),
    image_members.c.member_id == sa.bindparam("member_id")))


def _member_row(conn: sa.Connection, image_id: str, member: str) -> dict[str, Any] | None:
    return fetch_one(conn, sa.select(image_members).where(
        image_members.c.image_id == image_id, image_members.c.member_id == member))


class ImageAPI:
    """Image records and data, with Glance's visibility rules and policies."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.store = ImageStore(settings.state_dir / "images")
        # Data staged for an import (``PUT …/stage``) until it is imported.
        self.staging = ImageStore(settings.state_dir / "image-staging")

    def image_path(self, image_id: str) -> Path:
        """Where the data of ``image_id`` lives (for drivers on this host)."""
        return self.store.path(image_id)

    # -- read ------------------------------------------------------------------
    @staticmethod
    def lookup(conn: sa.Connection, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        """The record in the caller's transaction, by visibility alone (the
        caller has passed its own policy); ImageNotFound (404) if missing or
        not visible. Whatever is not a UUID names no image."""
        return ImageAPI.seen(conn, ctx, image_id, ImageAPI.record(conn, image_id))

    @staticmethod
    def record(conn: sa.Connection, image_id: str) -> dict[str, Any] | None:
        """The live record of ``image_id`` whoever asks, or None (also for
        whatever is not a UUID)."""
        return _IMAGE.first(conn, image_id=image_id) if schema.is_image_id(image_id) else None

    @staticmethod
    def seen(conn: sa.Connection, ctx: RequestContext, image_id: str,
             row: dict[str, Any] | None) -> dict[str, Any]:
        """``row`` (:meth:`record` of ``image_id``) if the caller may see it;
        ImageNotFound (404) if not, or None."""
        if row is None or not _visible(ctx, row, lambda: _MEMBER.execute(
                conn, image_id=image_id, member_id=ctx.project_id).fetchone() is not None):
            raise exc.ImageNotFound(image_id=schema.shown(image_id))
        return row

    async def get(self, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        """The image record; 403 without a reader role, ImageNotFound (404) if
        missing or not visible."""
        policy.enforce(ctx, "image:get")
        return await self.db.read(self.lookup, ctx, image_id)

    async def writable(self, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        """The record, if the caller may change it (a member of its owner's
        project, or an admin): ImageNotFound (404) unseen, ImageForbidden (403)
        seen only."""
        row = await self.get(ctx, image_id)
        if not _may_modify(ctx, row["owner"]):
            raise exc.ImageForbidden(reason="You are not permitted to modify this image.")
        return row

    async def list(self, ctx: RequestContext, query: ListQuery) -> Rows:
        """The images ``query`` asks for among those the caller may list."""
        policy.enforce(ctx, "image:get")
        filters = query.filters

        def select(conn: sa.Connection) -> Rows:
            q = sa.select(images).where(images.c.deleted.is_(False))
            for key, value in filters.items():
                if not (key == "visibility" and value == "all"):
                    q = q.where(images.c[key] == value)
            rows = fetch_all(conn, q)
            member_rows = fetch_all(conn, sa.select(image_members).where(
                image_members.c.member_id == ctx.project_id))
            membership = {r["image_id"]: r["status"] for r in member_rows}
            return [r for r in rows if self._listed(ctx, r, membership, query)]
        rows = [r for r in await self.db.read(select) if query.hidden == (
            (r["properties"] or {}).get("os_hidden") is True) and _sized(r, query)]
        if query.tags:
            wanted = set(query.tags)
            rows = [r for r in rows if wanted <= {t for t in r["tags"] or [] if isinstance(t, str)}]
        if query.properties:
            rows = [r for r in rows if all((r["properties"] or {}).get(k) == v
                                           for k, v in query.properties.items())]
        for key, direction in reversed(query.sort):
            rows.sort(key=lambda r: (r[key] is None, r[key] if r[key] is not None else ""),
                      reverse=direction == "desc")
        if query.marker is not None:
            ids = [r["id"] for r in rows]
            if query.marker not in ids:
                raise exc.InvalidImage(reason="marker not found")
            rows = rows[ids.index(query.marker) + 1:]
        return rows[:query.limit]

    @staticmethod
    def _listed(ctx: RequestContext, row: dict[str, Any], membership: dict[str, str],
                query: ListQuery) -> bool:
        vis, mine = row["visibility"], row["owner"] is not None and row["owner"] == ctx.project_id
        if "visibility" not in query.filters and vis == "community" and not mine:
            return False  # community images are listed only when asked for
        if vis in ("public", "community") or mine:
            return True
        if vis == "shared" and row["id"] in membership:
            wanted = query.member_status
            return wanted == "all" or membership[row["id"]] == wanted
        return ctx.is_admin

    # -- write -----------------------------------------------------------------
    async def create(self, ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
        """A new queued image from a create body: 400/403/409/413 as Glance."""
        policy.enforce(ctx, "image:create")
        new = schema.new_image(body)
        core = new.core
        owner = core.pop("owner", ctx.project_id)
        if owner != ctx.project_id and not ctx.is_admin:
            raise exc.ImageForbidden(reason=f"You are not permitted to create images "
                                            f"owned by '{owner}'.")
        if core.get("visibility") == "public":
            policy.enforce(ctx, "image:publicize")
        image_id = new.image_id or str(uuidlib.uuid4())
        row = {"id": image_id, "name": core.get("name"), "status": "queued",
               "visibility": core.get("visibility", "shared"), "protected": core.get("protected", False),
               "min_disk": core.get("min_disk", 0), "min_ram": core.get("min_ram", 0),
               "disk_format": core.get("disk_format"), "container_format": core.get("container_format"),
               "owner": owner, "properties": new.properties, "tags": core.get("tags", []),
               "created_at": utcnow(), "deleted": False}

        def insert(conn: sa.Connection) -> None:
            if conn.execute(sa.select(images.c.id).where(images.c.id == image_id)).first():
                raise exc.ImageConflict(reason=f"Image with identifier {image_id} already exists!")
            conn.execute(images.insert().values(**row))
        await self.db.run(insert)
        return await self.get(ctx, image_id)

    async def update(self, ctx: RequestContext, image_id: str,
                     changes: Sequence[patch.Change]) -> dict[str, Any]:
        """Apply a PATCH's changes in order (see :func:`cirrus.image.patch.apply`)."""
        row = await self.writable(ctx, image_id)
        draft = patch.apply(row, changes)
        if "owner" in draft.touched and not ctx.is_admin:
            raise exc.ImageForbidden(reason="Owner can't be updated by non admin.")
        if "visibility" in draft.touched and draft.core["visibility"] == "public":
            policy.enforce(ctx, "image:publicize")
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id).values(properties=draft.properties, updated_at=utcnow(),
                                            **draft.core)))
        return await self.get(ctx, image_id)

    async def delete(self, ctx: RequestContext, image_id: str) -> None:
        row = await self.writable(ctx, image_id)
        if row["protected"]:
            raise exc.ImageForbidden(reason=f"Image {image_id} is protected and cannot be deleted.")
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id).values(deleted=True, status="deleted", updated_at=utcnow())))
        self.store.delete(image_id)
        self.staging.delete(image_id)

    async def upload(self, ctx: RequestContext, image_id: str, chunks: AsyncIterator[bytes]) -> None:
        row = await self.writable(ctx, image_id)
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

    async def upload_snapshot(self, ctx: RequestContext, image_id: str,
                              chunks: AsyncIterator[bytes], disk_format: str,
                              container_format: str) -> None:
        """A compute host's snapshot upload: the queued image gets the formats
        the driver wrote (a snapshot's record is created without them, as
        Nova's is), then its data (see :meth:`upload`)."""
        await self.writable(ctx, image_id)
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id, images.c.status == "queued").values(
            disk_format=disk_format, container_format=container_format, updated_at=utcnow())))
        await self.upload(ctx, image_id, chunks)

    async def download(self, ctx: RequestContext, image_id: str) -> tuple[dict[str, Any], AsyncIterator[bytes] | None]:
        """The record and its data (None when there is none); Glance lets only
        members (not readers) download."""
        row = await self.get(ctx, image_id)
        policy.enforce(ctx, "image:download")
        if row["status"] == ImageStatus.DEACTIVATED and not ctx.is_admin:
            raise exc.ImageForbidden(reason="The requested image has been deactivated. "
                                            "Image data download is forbidden.")
        if row["status"] not in (ImageStatus.ACTIVE, ImageStatus.DEACTIVATED) \
                or not self.store.path(image_id).exists():
            return row, None
        return row, self.store.read(image_id)

    # -- tags and members -------------------------------------------------------
    async def set_tag(self, ctx: RequestContext, image_id: str, tag: str, add: bool) -> None:
        """Add (at most TAG_QUOTA, 413) or remove (404 if absent) one tag."""
        if add:
            schema.tag(tag)
        row = await self.writable(ctx, image_id)
        tags = list(row["tags"] or [])
        if add and tag not in tags:
            tags.append(tag)
            schema.within_quota("tags", len(tags), schema.TAG_QUOTA)
        elif not add:
            if tag not in tags:
                raise exc.ImageNotFound(image_id=f"{image_id} tag {schema.shown(tag)}")
            tags.remove(tag)
        await self.db.run(lambda conn: conn.execute(images.update().where(
            images.c.id == image_id).values(tags=tags, updated_at=utcnow())))

    async def _shared(self, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        row = await self.get(ctx, image_id)
        if row["visibility"] != "shared":
            raise exc.ImageForbidden(reason="Only shared images have members.")
        return row

    async def members(self, ctx: RequestContext, image_id: str) -> Rows:
        """The memberships of a shared image the caller may see."""
        row = await self._shared(ctx, image_id)
        rows = await self.db.read(lambda conn: fetch_all(conn, sa.select(image_members).where(
            image_members.c.image_id == image_id)))
        return [m for m in rows if _sees_member(ctx, row, m["member_id"])]

    async def member(self, ctx: RequestContext, image_id: str, member: str) -> dict[str, Any]:
        """One membership; 404 for anything the caller may not see (as Glance)."""
        try:
            rows = await self.members(ctx, image_id) if schema.is_project_id(member) else []
        except Forbidden:
            rows = []
        for row in rows:
            if row["member_id"] == member:
                return row
        raise exc.MemberNotFound(member=schema.shown(member), image_id=image_id)

    async def add_member(self, ctx: RequestContext, image_id: str, member: Any) -> dict[str, Any]:
        """Share a shared image with project ``member``: the owner's members
        only; at most MEMBER_QUOTA members (413)."""
        schema.project_id("member", member)
        row = await self._shared(ctx, image_id)
        if not _may_modify(ctx, row["owner"]):
            raise exc.ImageForbidden(reason=f"Not allowed to create members for image {image_id}.")

        def add(conn: sa.Connection) -> dict[str, Any]:
            if _member_row(conn, image_id, member):
                raise exc.ImageConflict(reason=f"Member {member} is duplicated for image {image_id}")
            count = conn.execute(sa.select(sa.func.count()).select_from(image_members).where(
                image_members.c.image_id == image_id)).scalar_one()
            schema.within_quota("members for this image", count + 1, schema.MEMBER_QUOTA)
            conn.execute(image_members.insert().values(image_id=image_id, member_id=member,
                                                       status="pending", created_at=utcnow()))
            return _member_row(conn, image_id, member) or {}
        return await self.db.run(add)

    async def set_member_status(self, ctx: RequestContext, image_id: str, member: str,
                                status: Any) -> dict[str, Any]:
        """Accept, reject or reset a membership: only a member of that project
        (or an admin) may, not the image's owner."""
        schema.member_status(status)
        image = await self._shared(ctx, image_id)
        if not (schema.is_project_id(member) and _sees_member(ctx, image, member)):
            raise exc.MemberNotFound(member=schema.shown(member), image_id=image_id)
        if not (ctx.is_admin or policy.check(ctx, "image:modify", {"project_id": member})):
            raise exc.ImageForbidden(reason=f"Not allowed to update members for image {image_id}.")

        def update(conn: sa.Connection) -> dict[str, Any]:
            count = conn.execute(image_members.update().where(
                image_members.c.image_id == image_id, image_members.c.member_id == member).values(
                status=status, updated_at=utcnow())).rowcount
            if not count:
                raise exc.MemberNotFound(member=member, image_id=image_id)
            return _member_row(conn, image_id, member) or {}
        return await self.db.run(update)

    async def remove_member(self, ctx: RequestContext, image_id: str, member: str) -> None:
        """End a membership: the owner's members (or an admin) only."""
        image = await self._shared(ctx, image_id)
        if not (schema.is_project_id(member) and _sees_member(ctx, image, member)):
            raise exc.MemberNotFound(member=schema.shown(member), image_id=image_id)
        if not _may_modify(ctx, image["owner"]):
            raise exc.ImageForbidden(reason=f"Not allowed to delete members for image {image_id}.")

        def remove(conn: sa.Connection) -> None:
            if not conn.execute(image_members.delete().where(
                    image_members.c.image_id == image_id, image_members.c.member_id == member)).rowcount:
                raise exc.MemberNotFound(member=member, image_id=image_id)
        await self.db.run(remove)


def make_image_api(settings: Settings, db: Database, transport: Any = None) -> ImageAPI:
    return ImageAPI(settings, db)
