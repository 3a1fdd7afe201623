"""The volume service: Cinder's ``volume/api.py`` checks and flows on the
shared database and the configured backend.

A create commits the record as ``creating`` (quota counted in that
transaction), then has the backend make the data and moves the volume to
``available``, or to ``error`` with a user message (``GET /messages``) saying
why. The work runs in the request that asked for it: the file backend's
copies are local and short, and a process killed half way leaves the volume
``creating`` for the sweep (:mod:`cirrus.volume.periodic`) to fail.

Policy: the route rules have checked role and scope; here every row is read
within the caller's project (another project's volume is 404) and the
admin-only actions check the admin role.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all
from cirrus.image.api import ImageAPI
from cirrus.volume import db, encryption, messages, quotas, types
from cirrus.volume import exception as exc
from cirrus.volume.backends import backend_host
from cirrus.volume.backends.base import VolumeDriver
from cirrus.volume.exception import BackendError
from cirrus.volume.models import snapshots, volumes
from cirrus.volume.states import SnapshotStatus as S
from cirrus.volume.states import VolumeStatus as V

Row = dict[str, Any]
# (classes below have a ``list`` method, which hides the builtin in their annotations)
Rows = list[Row]
Names = list[str]
IMAGE_KEYS = ("checksum", "container_format", "disk_format", "min_disk", "min_ram", "size")


@dataclass(frozen=True)
class Storage:
    """What every part of the volume service works with."""

    settings: Settings
    db: Database
    driver: VolumeDriver
    images: ImageAPI


@dataclass(frozen=True)
class CreateRequest:
    """A checked ``POST /volumes`` body (the schema has run)."""

    size: int | None
    name: str | None = None
    description: str | None = None
    volume_type: str | None = None
    availability_zone: str | None = None
    snapshot_id: str | None = None
    source_volid: str | None = None
    image_id: str | None = None
    metadata: dict[str, str] | None = None
    multiattach: bool = False


class VolumeService:
    """Volumes: create, read, change, delete (Cinder's volume API)."""

    def __init__(self, storage: Storage) -> None:
        self.s = storage

    # -- create ----------------------------------------------------------------
    async def create(self, ctx: RequestContext, req: CreateRequest) -> Row:
        """The new volume, ``available`` or ``error`` (see the module doc)."""
        row, source = await self.s.db.run(self._record, ctx, req)
        try:
            self._check_backend(row)
            await self._make_data(row, source)
        except BackendError as err:
            await self.s.db.run(self._failed, ctx, row, err.format_message())
        else:
            await self.s.db.run(db.save_volume, row["id"], {"status": V.AVAILABLE},
                                [V.CREATING], "finish its create")
        return await self.get(ctx, row["id"])

    def _record(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest
                ) -> tuple[Row, Row | None]:
        """Checks, quota and the ``creating`` record, in one transaction."""
        assert ctx.project_id is not None
        source, size, extra = self._source(conn, ctx, req)
        vtype = types.resolve(conn, ctx, req.volume_type, source)
        zone = req.availability_zone or self.s.settings.default_availability_zone
        if zone != self.s.settings.default_availability_zone:
            raise exc.InvalidInput(reason=f"Availability zone '{zone[:64]}' is invalid.")
        quotas.check_volume(conn, self.s.settings, ctx.project_id, size, vtype["name"])
        row: Row = {
            "id": str(uuid.uuid4()), "project_id": ctx.project_id, "user_id": ctx.user_id or "",
            "name": req.name, "description": req.description, "size": size,
            "status": V.CREATING.value, "attach_status": "detached", "availability_zone": zone,
            "host": f"{backend_host(self.s.settings)}#file",
            "multiattach": req.multiattach or types.is_multiattach(vtype),
            "volume_type_id": vtype["id"], "snapshot_id": req.snapshot_id,
            "source_volid": req.source_volid, "image_id": req.image_id,
            "format": getattr(self.s.driver, "fmt", "raw"), "metadata": req.metadata or {},
            "admin_metadata": {}, "created_at": utcnow(), "deleted": False, **extra}
        conn.execute(volumes.insert().values(**row))
        return {**row, "_type": vtype}, source

    def _source(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest
                ) -> tuple[Row | None, int, Row]:
        """(source row, size, extra columns) of what the volume is made from."""
        if req.snapshot_id is not None:
            snap = db.get_snapshot(conn, ctx, req.snapshot_id)
            if snap["status"] != S.AVAILABLE.value:
                raise exc.InvalidSnapshot(reason="Originating snapshot status must be one of "
                                                 f"'available' values, not {snap['status']}.")
            origin = db.get_volume(conn, ctx.elevated(), snap["volume_id"])
            return {**snap, "kind": "snapshot", "volume_type_id": origin["volume_type_id"]}, \
                _at_least(req.size, snap["size"], "snapshot"), {"bootable": origin["bootable"]}
        if req.source_volid is not None:
            src = db.get_volume(conn, ctx, req.source_volid)
            db.check_volume(src, "clone")
            return {**src, "kind": "volume"}, _at_least(req.size, src["size"], "source volume"), \
                {"bootable": src["bootable"], "image_metadata": src["image_metadata"]}
        if req.size is None:
            raise exc.InvalidInput(reason="Size must be specified for a volume that is not "
                                          "created from a snapshot or another volume.")
        if req.image_id is not None:
            image = self._image(conn, ctx, req.image_id, req.size)
            return {**image, "kind": "image"}, req.size, {
                "bootable": True, "image_metadata": _image_metadata(image)}
        return None, req.size, {}

    def _image(self, conn: sa.Connection, ctx: RequestContext, image_id: str, size: int) -> Row:
        try:
            image = ImageAPI.lookup(conn, ctx, image_id)
        except Exception as err:  # the image service's 404: Cinder's 400
            raise exc.ImageNotFound() from err
        if image["status"] != "active":
            raise exc.InvalidInput(reason=f"Image {image_id} is not active.")
        need = max(image["min_disk"] or 0, -(-(image["virtual_size"] or image["size"] or 0) >> 30))
        if size < need:
            raise exc.InvalidInput(reason=f"Volume size {size}GB cannot be smaller than the "
                                          f"image minDisk size {need}GB.")
        return image

    def _check_backend(self, row: Row) -> None:
        """Cinder's scheduler capability filter: a type's extra specs that
        name a backend capability must match this backend's."""
        caps = self.s.driver.capabilities
        have = {"volume_backend_name": caps.volume_backend_name,
                "storage_protocol": caps.storage_protocol, "vendor_name": caps.vendor_name}
        for key, wanted in (row["_type"]["extra_specs"] or {}).items():
            name = key.removeprefix("capabilities:")
            if name in have and str(wanted).removeprefix("<in> ").strip() != have[name]:
                raise BackendError(reason=f"No valid backend was found: {name} {wanted!r} "
                                          f"is not offered (the backend has {have[name]!r}).")

    async def _make_data(self, row: Row, source: Row | None) -> None:
        d, vid, size = self.s.driver, row["id"], row["size"]
        if source is None:
            await d.create_volume(vid, size)
        elif source["kind"] == "snapshot":
            await d.create_volume_from_snapshot(vid, source["id"], size)
        elif source["kind"] == "volume":
            await d.create_cloned_volume(vid, source["id"], size)
        else:
            path = self.s.images.image_path(source["id"])
            if not path.exists():
                raise BackendError(reason=f"image {source['id']} has no data")
            await d.create_volume_from_image(vid, str(path), size)

    def _failed(self, conn: sa.Connection, ctx: RequestContext, row: Row, why: str) -> None:
        db.save_volume(conn, row["id"], {"status": V.ERROR}, [V.CREATING], "fail its create")
        messages.record(conn, row["project_id"], "VOLUME", row["id"], "VOLUME_000001",
                        f"create volume: {why}")

    # -- read ------------------------------------------------------------------
    async def get(self, ctx: RequestContext, volume_id: str) -> Row:
        """The volume with its ``attachments`` and ``volume_type`` row; 404 if unseen."""
        return await self.s.db.read(self._get, ctx, volume_id)

    def _get(self, conn: sa.Connection, ctx: RequestContext, volume_id: str) -> Row:
        return self._decorate(conn, [db.get_volume(conn, ctx, volume_id)])[0]

    @staticmethod
    def _decorate(conn: sa.Connection, rows: Rows) -> Rows:
        attached = db.attachments_of(conn, [r["id"] for r in rows])
        type_ids = {r["volume_type_id"] for r in rows if r["volume_type_id"]}
        by_id = types.by_id(conn, type_ids)
        encrypted = encryption.encrypted_types(conn, type_ids)
        return [{**r, "attachments": attached[r["id"]],
                 "volume_type": by_id.get(r["volume_type_id"] or ""),
                 "encrypted": r["volume_type_id"] in encrypted} for r in rows]

    async def list(self, ctx: RequestContext, filters: dict[str, Any], all_tenants: bool
                   ) -> Rows:
        """The caller's volumes (every project's for an admin asking for all)."""
        def select(conn: sa.Connection) -> Rows:
            q = sa.select(volumes).where(volumes.c.deleted.is_(False))
            if not (ctx.is_admin and all_tenants):
                q = q.where(volumes.c.project_id == ctx.project_id)
            elif "project_id" in filters:
                q = q.where(volumes.c.project_id == filters["project_id"])
            for key in ("status", "name", "bootable", "availability_zone"):
                if key in filters:
                    q = q.where(volumes.c[key] == filters[key])
            return self._decorate(conn, fetch_all(conn, q))
        return await self.s.db.read(select)

    # -- change ----------------------------------------------------------------
    async def update(self, ctx: RequestContext, volume_id: str, values: Row) -> Row:
        def change(conn: sa.Connection) -> None:
            db.check_volume(db.get_volume(conn, ctx, volume_id), "update")
            db.save_volume(conn, volume_id, values)
        await self.s.db.run(change)
        return await self.get(ctx, volume_id)

    async def set_metadata(self, ctx: RequestContext, volume_id: str, meta: dict[str, str],
                           replace: bool) -> dict[str, str]:
        """Merge ``meta`` into the volume's metadata (or replace it); the result."""
        def change(conn: sa.Connection) -> dict[str, str]:
            row = db.get_volume(conn, ctx, volume_id)
            db.check_volume(row, "metadata")
            new = dict(meta) if replace else {**(row["metadata"] or {}), **meta}
            db.save_volume(conn, volume_id, {"metadata": new})
            return new
        return await self.s.db.run(change)

    async def delete_metadata(self, ctx: RequestContext, volume_id: str, key: str) -> None:
        def change(conn: sa.Connection) -> None:
            row = db.get_volume(conn, ctx, volume_id)
            db.check_volume(row, "metadata")
            meta = dict(row["metadata"] or {})
            if meta.pop(key, None) is None:
                raise exc.MetadataNotFound()
            db.save_volume(conn, volume_id, {"metadata": meta})
        await self.s.db.run(change)

    async def extend(self, ctx: RequestContext, volume_id: str, new_size: int,
                     in_use_allowed: bool) -> None:
        """Grow the volume (``extending`` while the backend works)."""
        action = "extend_in_use" if in_use_allowed else "extend"

        def begin(conn: sa.Connection) -> str:
            row = db.get_volume(conn, ctx, volume_id)
            db.check_volume(row, action)
            if new_size <= row["size"]:
                raise exc.InvalidInput(reason=f"New size for extend must be greater than current "
                                              f"size. (current: {row['size']}, extended: {new_size}).")
            quotas.check_extend(conn, self.s.settings, row["project_id"], new_size - row["size"])
            db.save_volume(conn, volume_id, {"status": V.EXTENDING}, [row["status"]], "extend")
            return str(row["status"])
        previous = await self.s.db.run(begin)
        try:
            await self.s.driver.extend_volume(volume_id, new_size)
        except BackendError:
            await self.s.db.run(db.save_volume, volume_id, {"status": V.ERROR_EXTENDING},
                                [V.EXTENDING], "fail its extend")
            raise
        await self.s.db.run(db.save_volume, volume_id, {"status": previous, "size": new_size},
                            [V.EXTENDING], "finish its extend")

    async def retype(self, ctx: RequestContext, volume_id: str, new_type: str) -> None:
        """Change the type; data stays where it is (one backend serves every type)."""
        def change(conn: sa.Connection) -> None:
            row = db.get_volume(conn, ctx, volume_id)
            db.check_volume(row, "retype")
            vtype = types.resolve(conn, ctx, new_type, None)
            if vtype["id"] == row["volume_type_id"]:
                raise exc.InvalidInput(reason="New volume type must be different from the "
                                              "current volume type.")
            both = encryption.encrypted_types(conn, [vtype["id"], row["volume_type_id"] or ""])
            if len(both) == 1:  # the data would need encrypting or decrypting
                raise exc.InvalidInput(reason="Retype between an encrypted and an unencrypted "
                                              "volume type is not supported.")
            multiattach = types.is_multiattach(vtype)
            if multiattach != bool(row["multiattach"]) and row["status"] != V.AVAILABLE.value:
                raise exc.InvalidInput(reason="Retype needs an available volume to change "
                                              "multiattach.")
            db.save_volume(conn, volume_id, {"volume_type_id": vtype["id"],
                                             "multiattach": multiattach}, [row["status"]],
                           "retype")
        await self.s.db.run(change)

    async def set_flag(self, ctx: RequestContext, volume_id: str, action: str,
                       values: Row) -> None:
        """``os-set_bootable`` / ``os-update_readonly_flag``: one guarded save."""
        def change(conn: sa.Connection) -> None:
            row = db.get_volume(conn, ctx, volume_id)
            db.check_volume(row, action)
            if "readonly" in values:
                values["admin_metadata"] = {**(row["admin_metadata"] or {}),
                                            "readonly": str(values.pop("readonly"))}
            db.save_volume(conn, volume_id, values, [row["status"]], action)
        await self.s.db.run(change)

    async def set_image_metadata(self, ctx: RequestContext, volume_id: str,
                                 meta: dict[str, str], unset: str | None) -> dict[str, str]:
        """Merge ``meta`` into the volume's image metadata, or remove key ``unset``
        (404 if it has no such key); the result."""
        def change(conn: sa.Connection) -> dict[str, str]:
            row = db.get_volume(conn, ctx, volume_id)
            db.check_volume(row, "metadata")
            new = {**(row["image_metadata"] or {}), **meta}
            if unset is not None and new.pop(unset, None) is None:
                raise exc.MetadataNotFound()
            db.save_volume(conn, volume_id, {"image_metadata": new})
            return new
        return await self.s.db.run(change)

    async def reset_status(self, ctx: RequestContext, volume_id: str, values: Row) -> None:
        """Admin: set ``status``/``attach_status`` whatever they are now."""
        def change(conn: sa.Connection) -> None:
            db.get_volume(conn, ctx, volume_id)
            db.save_volume(conn, volume_id, values)
        await self.s.db.run(change)

    # -- delete ----------------------------------------------------------------
    async def delete(self, ctx: RequestContext, volume_id: str, cascade: bool = False,
                     force: bool = False) -> None:
        """Delete the volume (and with ``cascade`` its snapshots): ``deleting``,
        the backend, then the record; ``error_deleting`` if the backend fails."""
        snaps = await self.s.db.run(self._begin_delete, ctx, volume_id, cascade, force)
        try:
            for snap_id in snaps:
                await self.s.driver.delete_snapshot(snap_id)
            await self.s.driver.delete_volume(volume_id)
        except BackendError:
            await self.s.db.run(db.save_volume, volume_id, {"status": V.ERROR_DELETING},
                                [V.DELETING], "fail its delete")
            raise
        await self.s.db.run(_remove, volume_id)

    def _begin_delete(self, conn: sa.Connection, ctx: RequestContext, volume_id: str,
                      cascade: bool, force: bool) -> Names:
        row = db.get_volume(conn, ctx, volume_id)
        action = "force_delete" if force else "delete_cascade" if cascade else "delete"
        db.check_volume(row, action)
        if not force and db.attachments_of(conn, [volume_id])[volume_id]:
            raise exc.InvalidVolume(reason="Volume cannot be deleted while attached.")
        snaps = fetch_all(conn, sa.select(snapshots.c.id, snapshots.c.status).where(
            snapshots.c.volume_id == volume_id, snapshots.c.deleted.is_(False)))
        if snaps and not (cascade or force):
            raise exc.InvalidVolume(reason="Volume has snapshots, use cascade to delete them.")
        if any(s["status"] not in ("available", "error") for s in snaps) and not force:
            raise exc.InvalidVolume(reason="Snapshots of the volume are in a state that does "
                                           "not allow delete.")
        db.save_volume(conn, volume_id, {"status": V.DELETING}, [row["status"]], action)
        conn.execute(snapshots.update().where(snapshots.c.volume_id == volume_id,
                                              snapshots.c.deleted.is_(False))
                     .values(status=S.DELETING.value))
        return [s["id"] for s in snaps]


def _remove(conn: sa.Connection, volume_id: str) -> None:
    from cirrus.volume.models import volume_attachment

    now = utcnow()
    conn.execute(snapshots.update().where(snapshots.c.volume_id == volume_id)
                 .values(deleted=True, status="deleted", updated_at=now))
    conn.execute(volume_attachment.update().where(volume_attachment.c.volume_id == volume_id)
                 .values(deleted=True, attach_status="detached", detach_time=now))
    db.save_volume(conn, volume_id, {"deleted": True, "deleted_at": now, "status": "deleted"},
                   [V.DELETING], "finish its delete")


def _at_least(size: int | None, minimum: int, what: str) -> int:
    if size is None:
        return minimum
    if size < minimum:
        raise exc.InvalidInput(reason=f"Volume size '{size}'GB cannot be smaller than the "
                                      f"{what} size {minimum}GB. They must be >= original "
                                      f"{what} size.")
    return size


def _image_metadata(image: Row) -> dict[str, str]:
    out = {k: str(image[k]) for k in IMAGE_KEYS if image.get(k) is not None}
    out.update({"image_id": image["id"], "image_name": image["name"] or ""})
    out.update({k: str(v) for k, v in (image.get("properties") or {}).items()})
    return out
