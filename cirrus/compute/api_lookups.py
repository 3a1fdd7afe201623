"""The create's lookups (Nova's ``compute/api.py`` checks before a create or
rebuild: ``_check_requested_image``, ``_validate_and_build_base_options``' zone,
key pair and group reads).

One read unit finds the flavor, image, zone, key pair, group and, for a large
request, the quota; each error is kept and raised in the order Nova checks.
A mixin of :class:`cirrus.compute.api.API`.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import exception as exc
from cirrus.compute import destinations, flavors, keypairs, quotas, server_groups
from cirrus.compute.catalog_cache import MISSING, CatalogCache
from cirrus.compute.records import CreateRequest
from cirrus.compute.scope import require_project
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.rows import PreparedRead
from cirrus.exception import CirrusException, NotFound
from cirrus.image.api import visibility as image_visibility
from cirrus.service_models import services

MAX_USERDATA_SIZE = 65535
MAX_METADATA_ITEMS = 128
# Above this many servers a create reads the quota before it builds anything
# (a million asked for costs one read, not a million records); for fewer,
# building their records costs less than that read, and the create's
# transaction checks the quota before it writes them either way.
QUOTA_FIRST_ABOVE = 16
_COMPUTE_ZONES = PreparedRead(sa.select(services.c.host, services.c.availability_zone).where(
    services.c.binary == "cirrus-compute"))


Row = dict[str, Any]


def _copy(row: Row | None) -> Row | None:
    """A kept record, copied for one request (kept ones are shared)."""
    return None if row is None else dict(row)


@dataclass
class Found:
    """What the create's lookups found; an error in place of what failed."""

    flavor: dict[str, Any] | None
    image: dict[str, Any] | Exception | None
    zone_error: Exception | None
    destination: dict[str, str | None] | Exception | None
    key_data: str | Exception | None
    group: dict[str, Any] | Exception | None
    quota_fit: int | Exception | None  # how many of max_count the quota allows


def parse_availability_zone(ctx: RequestContext, value: str | None, default: str
                            ) -> tuple[str | None, str | None, str | None]:
    """``az``, ``az:host``, ``az:host:node`` or ``az::node`` → (az, host, node)."""
    if not value:
        return None, None, None
    az, host, node = (value.split(":") + [None, None])[:3]
    if host or node:
        if not policy.check(ctx, "compute:server:forced_host"):
            raise exc.ForcedHostForbidden(action="os_compute_api:servers:create:forced_host")
    return az or default, host or None, node or None


class Lookups:
    """The create's and rebuild's checks that read the database."""

    # What the compute API (cirrus/compute/api.py) gives these methods.
    settings: Settings
    images: Any  # cirrus.image.api.ImageAPI
    catalog: CatalogCache

    @staticmethod
    def _boot_image_id(req: CreateRequest) -> str | None:
        for bdm in req.block_device_mapping:
            if bdm.get("boot_index") in (0, "0") and bdm.get("source_type") == "image":
                return bdm.get("uuid") or req.image_href
        return req.image_href or None

    @staticmethod
    def _checked_image(image: dict[str, Any] | Exception | None,
                       flavor: dict[str, Any]) -> dict[str, Any] | None:
        """The boot image (or None) if the flavor can boot it; else the error."""
        if image is None:
            return None
        if isinstance(image, Exception):
            raise image
        if image.get("status") != "active":
            raise exc.ImageNotActive(image_id=image["id"])
        if (image.get("min_ram") or 0) > flavor["memory_mb"]:
            raise exc.FlavorMemoryTooSmall()
        min_disk_gb = max(image.get("min_disk") or 0, -(-(image.get("size") or 0) // (1 << 30)))
        if flavor["root_gb"] and min_disk_gb > flavor["root_gb"]:
            raise exc.FlavorDiskTooSmall()
        return image

    def _kept_lookups(self, ctx: RequestContext, req: CreateRequest, image_id: str | None,
                      az: str | None, forced_host: str | None,
                      generation: int | None) -> "Found | None":
        """What :meth:`_lookups` would find, from the catalog cache alone, when
        the request needs nothing else read (no key pair, group, zone, host or
        large count); None when it does, or a record is not kept."""
        if (req.key_name is not None or req.scheduler_hints.get("group") or forced_host
                or req.requested_host or req.requested_node or req.max_count > QUOTA_FIRST_ABOVE
                or (az and az != self.settings.default_availability_zone)):
            return None
        access = self.catalog.get(generation, "flavor", req.flavor_id)
        row = self.catalog.get(generation, "image", image_id) if image_id else None
        if access is MISSING or row is MISSING:
            return None
        image: Row | Exception | None = None
        if image_id:
            seen = image_visibility(ctx, row) if row is not None else False
            if seen is None:
                return None  # a shared image: its members decide
            image = _copy(row) if seen else exc.ImageNotFound(image_id=image_id)
        return Found(flavor=_copy(flavors.visible_in(access, ctx.project_id, ctx.is_admin)),
                     image=image, zone_error=None, destination=None, key_data=None,
                     group=None, quota_fit=None)

    def _lookups(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                 image_id: str | None, az: str | None, forced_host: str | None,
                 generation: int | None = None) -> "Found":
        """Flavor, image, zone, key pair and group in one transaction; errors
        kept, to be raised in Nova's order. ``generation``: the catalog's, as
        known before this read (:meth:`CatalogCache.generation`)."""
        def caught(fn: Any, *args: Any) -> Any:
            try:
                return fn(conn, *args)
            except CirrusException as error:
                return error
        # A private flavor the project may not use is missing (Nova: 400).
        flavor = _copy(flavors.visible_in(self._flavor_access(conn, req.flavor_id, generation),
                                          ctx.project_id, ctx.is_admin))
        return Found(flavor=flavor,
                      image=caught(self._image, ctx, image_id, generation) if image_id else None,
                      zone_error=caught(self._check_zone_and_host, az, forced_host),
                      destination=caught(destinations.requested_destination,
                                         req.requested_host, req.requested_node),
                      key_data=caught(self._key_data, ctx.user_id, req.key_name),
                      group=caught(self._group, ctx, req.scheduler_hints.get("group")),
                      quota_fit=caught(self._quota_fit, ctx, req, flavor)
                      if flavor and req.max_count > QUOTA_FIRST_ABOVE else None)

    def _quota_fit(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                   flavor: dict[str, Any]) -> int:
        """How many of ``max_count`` the project's quota allows now (403 if not
        ``min_count``): a first look, so that a request far over it costs one
        read, not a million records. The create's transaction checks again."""
        quota = quotas.InstanceQuota(conn, self.settings, require_project(ctx), flavor)
        return quota.allowed(req.min_count, req.max_count)

    def _flavor_access(self, conn: sa.Connection, flavorid: str,
                       generation: int | None) -> flavors.FlavorAccess:
        access = self.catalog.get(generation, "flavor", flavorid)
        if access is MISSING:
            access = flavors.with_access(conn, flavorid)
            self.catalog.put(generation, "flavor", flavorid, access)
        return access  # type: ignore[no-any-return]

    def _image(self, conn: sa.Connection, ctx: RequestContext, image_id: str,
               generation: int | None = None) -> dict[str, Any]:
        """The image if the caller may see it (ImageNotFound, 400, if not);
        its record kept at ``generation`` (None: read, not kept)."""
        row = self.catalog.get(generation, "image", image_id)
        if row is MISSING:
            row = self.images.record(conn, image_id)
            self.catalog.put(generation, "image", image_id, row)
        try:
            return dict(self.images.seen(conn, ctx, image_id, row))
        except NotFound:
            raise exc.ImageNotFound(image_id=image_id) from None

    def _check_zone_and_host(self, conn: sa.Connection, az: str | None, host: str | None) -> None:
        other_zone = bool(az) and az != self.settings.default_availability_zone
        if not other_zone and not host:
            return  # the default zone is always valid: nothing to look up
        rows = _COMPUTE_ZONES.all(conn)
        if other_zone and az not in {r["availability_zone"] for r in rows}:
            raise exc.InvalidAvailabilityZone()
        if host and host not in {r["host"] for r in rows}:
            raise exc.ComputeHostNotFound(host=host)

    def _check_unshelve_target(self, conn: sa.Connection, new_zone: str | None,
                               host: str | None, zone: str | None) -> None:
        """An unshelve's new zone and host exist (400), and the host is in the
        zone the server will be in, if any (409: Nova's ``_ensure_host_in_az``)."""
        self._check_zone_and_host(conn, new_zone, host)
        if host and zone:
            zones = {r["host"]: r["availability_zone"] for r in _COMPUTE_ZONES.all(conn)}
            if (zones.get(host) or self.settings.default_availability_zone) != zone:
                raise exc.UnshelveHostNotInAZ(host=host, availability_zone=zone)

    @staticmethod
    def _key_data(conn: sa.Connection, user_id: str | None, key_name: str | None) -> str | None:
        if key_name is None:
            return None
        try:
            key: str | None = keypairs.get(conn, user_id or "", key_name)["public_key"]
            return key
        except exc.KeyPairMissing:
            raise exc.KeypairNotFound() from None

    @staticmethod
    def _check_user_data(user_data: str | None) -> None:
        if user_data is None:
            return
        if len(user_data) > MAX_USERDATA_SIZE:
            raise exc.InvalidRequest(reason=f"User data too large. User data must be no larger "
                                            f"than {MAX_USERDATA_SIZE} bytes once base64 encoded.")
        try:
            base64.b64decode(user_data, validate=True)
        except (binascii.Error, ValueError):
            raise exc.InvalidRequest(reason="Userdata content cannot be decoded.") from None

    @staticmethod
    def _group(conn: sa.Connection, ctx: RequestContext,
               group_uuid: str | None) -> dict[str, Any] | None:
        if not group_uuid:
            return None
        try:
            return server_groups.get_group(conn, ctx, group_uuid)
        except exc.InstanceGroupMissing:
            raise exc.InstanceGroupNotFound(group_uuid=group_uuid) from None
