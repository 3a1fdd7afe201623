"""The compute API (seed 000: ``compute/api.py`` ``create`` → ``_create_instance``).

Runs in the API process. It checks everything that can be checked before
answering (policy, flavor, image, zone, key pair, networks, group, quota),
writes the instance records (built by ``compute/records.py``) in one
transaction, records the ``create`` action and casts the build to the
conductor. The build runs after the 202.
"""
from __future__ import annotations

import base64
import binascii
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import exception as exc
from cirrus.compute.admission import BuildAdmission
from cirrus.compute.api_admin import AdminActions
from cirrus.compute.api_delete import DeleteActions
from cirrus.compute.api_images import ImageActions
from cirrus.compute.api_assisted_snapshots import AssistedSnapshotActions
from cirrus.compute.api_volumes import VolumeActions
from cirrus.compute import instance as inst
from cirrus.compute import (block_device, destinations, flavors, instance_actions, keypairs,
                            quotas, records, server_groups, tags)
from cirrus.compute.flavors import get_flavor
from cirrus.compute.models import (block_device_mappings, instance_group_members,
                                   instance_info_caches, instances)
from cirrus.compute.move_api import MoveAPI
from cirrus.compute.records import CreateRequest
from cirrus.compute.scope import require_project
from cirrus.compute.state_api import StateActions
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.transitions import TRANSITIONS, Transition
from cirrus.compute.volume_service import make_volume_api
from cirrus.compute.states import VmState
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.exception import CirrusException
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.db.prepared import Cursor, Prepared, pipelined
from cirrus.db.rows import PreparedRead, read_here
from cirrus.exception import NotFound
from cirrus.notifications import Notifier
from cirrus.network.exception import NoUniqueMatch, PortLimitExceeded, SecurityGroupNotFound
from cirrus.rpc import Transport
from cirrus.service_models import services
from cirrus.volume.cinder import VolumeAPI

MAX_USERDATA_SIZE = 65535
MAX_METADATA_ITEMS = 128
# Above this many servers a create reads the quota before it builds anything
# (a million asked for costs one read, not a million records); for fewer,
# building their records costs less than that read, and the create's
# transaction checks the quota before it writes them either way.
QUOTA_FIRST_ABOVE = 16
GROUP_POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")

# Every create writes these records: statements built once (cirrus/db/prepared.py).
INSTANCE_COLUMNS = (
    "uuid", "project_id", "user_id", "display_name", "display_description", "hostname",
    "image_ref", "flavor", "vcpus", "memory_mb", "root_gb", "ephemeral_gb", "vm_state",
    "task_state", "power_state", "availability_zone", "key_name", "key_data", "user_data",
    "config_drive", "metadata", "system_metadata", "security_groups", "requested_networks",
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "reservation_id", "launch_index",
    "locked", "progress", "deleted", "created_at")
BDM_COLUMNS = ("instance_uuid", "source_type", "destination_type", "image_id", "boot_index",
               "device_name", "volume_size", "delete_on_termination", "created_at",
               "uuid", "volume_id", "snapshot_id", "guest_format", "disk_bus", "device_type",
               "volume_type", "tag")


def _insert_of(table: sa.Table, columns: tuple[str, ...]) -> sa.Insert:
    """An INSERT of ``columns`` bound to parameters ``v_<column>``."""
    return table.insert().values({c: sa.bindparam(f"v_{c}") for c in columns})


def _params(row: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    return {f"v_{c}": row[c] for c in columns}


# RETURNING the id instead of reading the ids back afterwards.
_INSERT_INSTANCE = Prepared(_insert_of(instances, INSTANCE_COLUMNS).returning(instances.c.id))
_INSERT_INFO_CACHE = Prepared(_insert_of(instance_info_caches,
                                         ("instance_uuid", "network_info", "created_at")))
_INSERT_BDM = Prepared(_insert_of(block_device_mappings, BDM_COLUMNS))
_INSERT_GROUP_MEMBER = Prepared(_insert_of(instance_group_members,
                                           ("group_uuid", "instance_uuid")))
_GROUP_MEMBERS_LIVE = Prepared(sa.select(sa.func.count()).select_from(instance_group_members).join(
    instances, instances.c.uuid == instance_group_members.c.instance_uuid).where(
    instance_group_members.c.group_uuid == sa.bindparam("w_group"),
    instances.c.deleted.is_(False)))
_COMPUTE_ZONES = PreparedRead(sa.select(services.c.host, services.c.availability_zone).where(
    services.c.binary == "cirrus-compute"))


@dataclass
class _Found:
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


class API(VolumeActions, AssistedSnapshotActions, StateActions, ImageActions, AdminActions,
          DeleteActions):
    """The compute API used by the HTTP handlers (the guest-state actions in
    :class:`~cirrus.compute.state_api.StateActions`, the image ones in
    :class:`~cirrus.compute.api_images.ImageActions`, the consoles and admin
    actions in :class:`~cirrus.compute.api_admin.AdminActions`, the deletes in
    :class:`~cirrus.compute.api_delete.DeleteActions`, the volumes in
    :class:`~cirrus.compute.api_volumes.VolumeActions`, assisted volume snapshots in
    :class:`~cirrus.compute.api_assisted_snapshots.AssistedSnapshotActions`)."""

    def __init__(self, settings: Settings, db: Database, transport: Transport,
                 images: Any, network: Any, volume_api: VolumeAPI | None = None) -> None:
        self.settings = settings
        self.db = db
        self.transport = transport
        self.images = images
        self.network = network
        self.volume_api = volume_api or make_volume_api(settings, db)
        self.compute_task_api = ComputeTaskAPI(transport)
        self.compute_rpcapi = ComputeAPI(transport)
        self.notifier = Notifier("compute-api")  # the actions done here (lock, unlock)
        self.admission = BuildAdmission(db, settings.build_backlog_limit,
                                        settings.build_backlog_wait)
        self.moves = MoveAPI(settings, db, self.get, self.compute_task_api, self.compute_rpcapi,
                             self.admission)

    # -- create ------------------------------------------------------------------
    async def create(self, ctx: RequestContext, req: CreateRequest) -> tuple[list[dict[str, Any]], str]:
        """Create instance records and start their build; (instances, reservation_id).

        What needs no lookup is refused first; nothing is built before the
        count is known to fit ``max_instances_per_request`` and the quota."""
        policy.enforce(ctx, "compute:server:create", {"project_id": require_project(ctx)})
        self.admission.check_open()  # shutting down: 503 before any work
        if req.min_count > req.max_count:
            raise exc.InvalidRequest(reason="min_count must be <= max_count")
        req.max_count = self._within_request_cap(req.min_count, req.max_count)
        if len(req.metadata) > MAX_METADATA_ITEMS:
            raise exc.MetadataLimitExceeded(allowed=MAX_METADATA_ITEMS)
        if req.hostname and req.max_count > 1:
            raise exc.AmbiguousHostnameForMultipleInstances()
        if req.requested_host or req.requested_node:
            policy.enforce(ctx, "compute:server:requested_destination")
        return await self._create_instance(ctx, req)

    def _within_request_cap(self, min_count: int, max_count: int) -> int:
        """``max_count`` cut to ``max_instances_per_request``; 400 if even
        ``min_count`` is over it."""
        cap = self.settings.max_instances_per_request
        if cap <= 0:
            return max_count
        if min_count > cap:
            raise exc.InvalidRequest(reason=f"min_count {min_count} is more than the "
                                            f"{cap} servers one request may create")
        return min(max_count, cap)

    async def _create_instance(self, ctx: RequestContext, req: CreateRequest
                               ) -> tuple[list[dict[str, Any]], str]:
        az, forced_host, forced_node = parse_availability_zone(
            ctx, req.availability_zone, self.settings.default_availability_zone)
        if (forced_host or forced_node) and (req.requested_host or req.requested_node):
            raise exc.InvalidRequest(reason="One mechanism with host and/or hypervisor_hostname "
                                            "and another mechanism with zone:host:node are "
                                            "mutually exclusive.")
        # One read for every lookup, image included (on SQLite in the loop's own
        # thread: a few point reads cost less than the hop to a DB thread);
        # errors are raised in the order Nova checks.
        found = await read_here(self.db, self._lookups, ctx, req, self._boot_image_id(req),
                                az, forced_host)
        flavor = found.flavor
        if flavor is None:
            raise exc.FlavorNotFound(flavor_id=req.flavor_id)
        if flavor["disabled"]:
            raise exc.FlavorDisabled()
        volume_backed = block_device.is_volume_backed(req.block_device_mapping)
        # A volume-backed server's root is no disk of the flavor (Nova: the
        # image's min_disk is checked against the volume instead).
        image = self._checked_image(found.image, {**flavor, "root_gb": 0}
                                    if volume_backed else flavor)
        if found.zone_error is not None:
            raise found.zone_error
        destination, key_data, group = found.destination, found.key_data, found.group
        if isinstance(destination, Exception):
            raise destination
        if isinstance(key_data, Exception):
            raise key_data
        self._check_user_data(req.user_data)
        if isinstance(group, Exception):
            raise group
        image = await self._validate_bdm(ctx, req, flavor, image, az)
        try:  # an unknown group is a 400 now, not a build rescheduled on every host
            max_net = await self.network.validate_networks(ctx, req.requested_networks, req.max_count,
                                                           security_groups=req.security_groups)
        except SecurityGroupNotFound as error:
            raise exc.SecurityGroupNotFoundForProject(security_group_id=error.kwargs.get("id", ""),
                                                      project_id=ctx.project_id) from None
        except NoUniqueMatch as error:
            raise exc.SecurityGroupNotUnique(name=error.kwargs.get("name", "")) from None
        except NotFound as error:  # a missing network or port is a bad request here
            raise exc.InvalidRequest(reason=error.format_message()) from None
        if max_net == 0:  # seed 000: no port left for even one server
            raise PortLimitExceeded()
        if isinstance(found.quota_fit, Exception):
            raise found.quota_fit  # before a single record is built
        max_count = min(req.max_count, max_net, found.quota_fit or req.max_count)
        if max_count < req.min_count:
            max_count = req.min_count  # the network API raises if truly impossible
        reservation_id = "r-" + uuidlib.uuid4().hex[:8]
        # The scheduler gets the zone asked for (none: any host will do, as in
        # Nova); the record the default until a host's zone replaces it.
        requested_az, az = az, az or self.settings.default_availability_zone
        async with self.admission.admitted(max_count):
            # The records are built before the transaction, outside the write
            # lock (all of them fit, nearly always; built again inside if not).
            prepared = records.instance_rows(ctx, req, flavor, image, az, key_data,
                                             reservation_id, max_count, utcnow())
            rows = await self.db.run(self._provision_instances, ctx, req, flavor, image, az,
                                     key_data, group, reservation_id, max_count, prepared)
        await self._reserve_volumes(ctx, req, rows)
        request_spec = records.request_spec(ctx, rows, flavor, image, requested_az, forced_host,
                                            forced_node, req.scheduler_hints, group, destination)
        request_spec["is_bfv"] = volume_backed
        build_params = {"admin_password": req.admin_password,
                        "injected_files": [list(f) for f in req.injected_files],
                        "requested_networks": req.requested_networks,
                        "security_groups": req.security_groups,
                        "block_device_mapping": req.block_device_mapping}
        try:
            await self.compute_task_api.build_instances(
                ctx, instance_uuids=[r["uuid"] for r in rows], request_spec=request_spec,
                filter_properties={"scheduler_hints": req.scheduler_hints,
                                   "retry": {"num_attempts": 1, "hosts": []}},
                build_params=build_params)
        except BaseException:
            # Nothing will build them: the records must not stay in BUILD.
            await self.db.run(self._destroy_records, [r["uuid"] for r in rows])
            raise
        return rows, reservation_id

    @staticmethod
    def _destroy_records(conn: sa.Connection, uuids: list[str]) -> None:
        conn.execute(instance_group_members.delete().where(
            instance_group_members.c.instance_uuid.in_(uuids)))
        for uuid in uuids:
            inst.soft_delete(conn, uuid)

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

    def _lookups(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                 image_id: str | None, az: str | None, forced_host: str | None) -> "_Found":
        """Flavor, image, zone, key pair and group in one transaction; errors
        kept, to be raised in Nova's order."""
        def caught(fn: Any, *args: Any) -> Any:
            try:
                return fn(conn, *args)
            except CirrusException as error:
                return error
        # A private flavor the project may not use is missing (Nova: 400).
        flavor = flavors.visible(conn, get_flavor(conn, req.flavor_id), ctx.project_id,
                                 ctx.is_admin)
        return _Found(flavor=flavor,
                      image=caught(self._image, ctx, image_id) if image_id else None,
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

    def _image(self, conn: sa.Connection, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        try:
            image: dict[str, Any] = self.images.lookup(conn, ctx, image_id)
            return image
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

    def _provision_instances(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                             flavor: dict[str, Any], image: dict[str, Any] | None, az: str,
                             key_data: str | None, group: dict[str, Any] | None,
                             reservation_id: str, max_count: int,
                             prepared: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """All records of the request in one transaction, quota checked before
        and after the insert. ``prepared``: the records of ``max_count``
        servers, built beforehand (names depend on how many fit, so they are
        built again if fewer do)."""
        assert ctx.project_id is not None and ctx.user_id is not None
        if (prepared is not None and len(prepared) == max_count == req.min_count
                and group is None and not req.tags and conn.dialect.name == "postgresql"):
            return self._provision_in_one_flight(conn, ctx, req, flavor, image, prepared)
        quota = quotas.InstanceQuota(conn, self.settings, ctx.project_id, flavor)
        count = quota.allowed(req.min_count, max_count)
        rows = prepared if prepared is not None and len(prepared) == count else \
            records.instance_rows(ctx, req, flavor, image, az, key_data, reservation_id, count,
                                  utcnow())
        for row in rows:
            row["id"] = _INSERT_INSTANCE.execute(conn, **_params(row, INSTANCE_COLUMNS)
                                                 ).fetchone()[0]
        uuids = [r["uuid"] for r in rows]
        tags.instance_tags_create(conn, uuids, req.tags)
        if group is not None:
            self._add_group_members(conn, group, uuids)
        # One round trip on PostgreSQL, not three per server
        # (docs/performance.md, "Distributed (issue 22)").
        with pipelined(conn):
            actions = self._send_records(conn, ctx, req, flavor, image, rows)
        for action in actions:
            action.fetchone()
        # Last: on PostgreSQL it locks the project's usage row until COMMIT.
        quota.recheck(conn, len(rows))
        return rows

    def _provision_in_one_flight(self, conn: sa.Connection, ctx: RequestContext,
                                 req: CreateRequest, flavor: dict[str, Any],
                                 image: dict[str, Any] | None, rows: list[dict[str, Any]]
                                 ) -> list[dict[str, Any]]:
        """PostgreSQL, a create of exactly ``len(rows)`` servers: the quota's
        read, the records and the quota's locked recheck sent in one round
        trip, in the order of :meth:`_provision_instances`, and read after.
        The quota is checked then, not before the inserts: if it refuses, they
        roll back with the transaction, as a failed recheck's do."""
        assert ctx.project_id is not None
        with pipelined(conn):
            usage = quotas.InstanceQuota.send(conn, ctx.project_id)
            ids = [_INSERT_INSTANCE.execute(conn, **_params(row, INSTANCE_COLUMNS))
                   for row in rows]
            actions = self._send_records(conn, ctx, req, flavor, image, rows)
            # Last: it locks the project's usage row until COMMIT.
            locked = quotas.send_lock_usage(conn, ctx.project_id)
        quota = quotas.InstanceQuota(conn, self.settings, ctx.project_id, flavor, sent=usage)
        quota.allowed(len(rows), len(rows))
        for row, cursor in zip(rows, ids):
            row["id"] = cursor.fetchone()[0]
        for action in actions:
            action.fetchone()
        quota.recheck(conn, len(rows), locked=locked)
        return rows

    @staticmethod
    def _send_records(conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                      flavor: dict[str, Any], image: dict[str, Any] | None,
                      rows: list[dict[str, Any]]) -> list[Cursor]:
        """Each server's info cache, block device mappings and ``create``
        action inserted (results not read: in a pipeline, they go together);
        the actions' cursors."""
        now = rows[0]["created_at"] if rows else utcnow()
        uuids = [r["uuid"] for r in rows]
        for uuid in uuids:
            _INSERT_INFO_CACHE.execute(conn, v_instance_uuid=uuid, v_network_info=[],
                                       v_created_at=now)
        bdms = records.bdm_rows(req, image, flavor, now)
        for uuid in uuids:
            for bdm in bdms:
                _INSERT_BDM.execute(conn, **_params({**bdm, "instance_uuid": uuid,
                                                     "uuid": str(uuidlib.uuid4())},
                                                    BDM_COLUMNS))
        return [instance_actions.send_action_start(conn, ctx, uuid, "create")
                for uuid in uuids]

    def _add_group_members(self, conn: sa.Connection, group: dict[str, Any],
                           uuids: list[str]) -> None:
        limit = quotas.limits(conn, self.settings, group["project_id"])["server_group_members"]
        current = _GROUP_MEMBERS_LIVE.execute(conn, w_group=group["uuid"]).fetchone()[0]
        if limit >= 0 and current + len(uuids) > limit:
            raise exc.ServerGroupQuotaExceeded(resource="server_group_members")
        for uuid in uuids:
            _INSERT_GROUP_MEMBER.execute(conn, v_group_uuid=group["uuid"], v_instance_uuid=uuid)

    # -- read ----------------------------------------------------------------------
    async def lookup(self, ctx: RequestContext, uuid: str, *,
                     read_deleted: bool = False) -> dict[str, Any]:
        """The instance, looked up within the caller's project (an admin's:
        anywhere), whatever the caller's roles: :class:`InstanceNotFound` for
        another project's, as Nova's project-scoped read. Whether the caller
        may then act on it is a 403 that comes after this 404, for every
        route on a server (``cirrus/api/compute/routes.py``)."""
        row = await self.db.read(inst.get, uuid, read_deleted=read_deleted)
        if not ctx.is_admin and row["project_id"] != require_project(ctx):
            raise exc.InstanceNotFound(instance_id=uuid)
        return row

    async def get(self, ctx: RequestContext, uuid: str, *,
                  read_deleted: bool = False) -> dict[str, Any]:
        """The instance if the caller may see it; 404 otherwise (deleted ones
        too with ``read_deleted``)."""
        row = await self.lookup(ctx, uuid, read_deleted=read_deleted)
        if not policy.check(ctx, "compute:server:get", row):
            raise exc.InstanceNotFound(instance_id=uuid)
        return row

    async def _get_for_change(self, ctx: RequestContext, uuid: str, rule: str) -> dict[str, Any]:
        """The instance, if the caller may ``rule`` it and it is not locked
        (Nova's check_instance_lock: admins act on locked servers too). Every
        path that changes a server goes through here."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, rule, row)
        if row["locked"] and not ctx.is_admin:
            raise exc.InstanceIsLocked(instance_uuid=uuid)
        return row

    # -- update ------------------------------------------------------------------
    async def update_instance(self, ctx: RequestContext, uuid: str,
                              updates: dict[str, Any]) -> None:
        """Change the server's name, description, access IPs, hostname or
        disk config (``PUT /servers/{id}``); in any state but deleted."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        if "auto_disk_config" in updates:
            records.check_disk_config(row, updates["auto_disk_config"])
        if updates:
            await self.db.run(inst.save, uuid, updates)

    # -- metadata ----------------------------------------------------------------
    async def update_metadata(self, ctx: RequestContext, uuid: str, metadata: dict[str, str],
                              *, replace: bool = False, delete_key: str | None = None
                              ) -> dict[str, str]:
        """Merge (or replace) the server's metadata, or delete one key; the result."""
        await self._get_for_change(ctx, uuid, "compute:server:action")

        def apply(conn: sa.Connection) -> dict[str, str]:
            current = dict(inst.get(conn, uuid)["metadata"] or {})
            if delete_key is not None:
                if delete_key not in current:
                    raise exc.MetadataNotFound(key=delete_key)
                current.pop(delete_key)
            else:
                current = dict(metadata) if replace else {**current, **metadata}
            if len(current) > MAX_METADATA_ITEMS:
                raise exc.MetadataLimitExceeded(allowed=MAX_METADATA_ITEMS)
            inst.save(conn, uuid, {"metadata": current})
            return current
        return await self.db.run(apply)

    # -- interfaces ------------------------------------------------------------------
    async def attach_interface(self, ctx: RequestContext, uuid: str,
                               request: dict[str, Any]) -> str:
        """Attach a port (given, or new on a network) to an ACTIVE or STOPPED server."""
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        if not row["host"] or row["task_state"] is not None or \
                row["vm_state"] not in (VmState.ACTIVE.value, VmState.STOPPED.value):
            raise exc.InstanceInvalidState(method="attach_interface", instance_uuid=uuid,
                                           attr="vm_state", state=row["vm_state"])
        if not await self.network.validate_networks(ctx, [request], 1):
            raise PortLimitExceeded()
        return await self.compute_rpcapi.attach_interface(ctx, row["host"], uuid, request)

    async def detach_interface(self, ctx: RequestContext, uuid: str, port_id: str) -> None:
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        if not row["host"] or row["task_state"] is not None:
            raise exc.InstanceInvalidState(method="detach_interface", instance_uuid=uuid,
                                           attr="task_state", state=row["task_state"])
        await self.compute_rpcapi.detach_interface(ctx, row["host"], uuid, port_id)

    # -- actions (state-guarded, then cast to the host) -----------------------------
    async def _begin_action(self, ctx: RequestContext, uuid: str, t: Transition,
                            values: dict[str, Any] | None = None, *,
                            row: dict[str, Any] | None = None,
                            on_host: bool = True) -> dict[str, Any]:
        """Move the instance into ``t``'s task state if it is in an accepted
        state, else 409 saying which state it is in (Nova's check_instance_state);
        the action is recorded in the same transaction. ``values``: saved with
        the transition; ``row``: the instance as the caller read it already;
        ``on_host``: the action needs a host (all but unshelving an offloaded
        server)."""
        if row is None:
            row = await self._get_for_change(ctx, uuid, "compute:server:action")
        elif row["locked"] and not ctx.is_admin:
            raise exc.InstanceIsLocked(instance_uuid=uuid)
        if on_host and not row["host"]:
            raise exc.InstanceInvalidState(method=t.method, instance_uuid=uuid,
                                           attr="vm_state", state=row["vm_state"])
        await self.db.run(_begin, ctx, uuid, t, values)
        return row

    async def start(self, ctx: RequestContext, uuid: str) -> None:
        row = await self._begin_action(ctx, uuid, TRANSITIONS["start"])
        await self.compute_rpcapi.start_instance(ctx, row["host"], uuid)

    async def stop(self, ctx: RequestContext, uuid: str, clean_shutdown: bool = True) -> None:
        row = await self._begin_action(ctx, uuid, TRANSITIONS["stop"])
        await self.compute_rpcapi.stop_instance(ctx, row["host"], uuid, clean_shutdown)

    async def reboot(self, ctx: RequestContext, uuid: str, reboot_type: str) -> None:
        t = TRANSITIONS["reboot_hard" if reboot_type == "HARD" else "reboot_soft"]
        row = await self._begin_action(ctx, uuid, t)
        await self.compute_rpcapi.reboot_instance(ctx, row["host"], uuid, reboot_type)


def _begin(conn: sa.Connection, ctx: RequestContext, uuid: str, t: Transition,
           extra: dict[str, Any] | None = None) -> None:
    values = {} if t.task_state is None else {"task_state": t.task_state}
    values.update(extra or {})
    try:
        inst.save(conn, uuid, values, expected_vm_state=t.vm_states,
                  expected_task_state=t.task_states)
    except exc.UnexpectedTaskStateError:
        current = inst.get(conn, uuid)
        if current["vm_state"] not in [v.value for v in t.vm_states]:
            attr, state = "vm_state", current["vm_state"]
        else:
            attr, state = "task_state", current["task_state"]
        raise exc.InstanceInvalidState(method=t.method, instance_uuid=uuid, attr=attr,
                                       state=state) from None
    instance_actions.action_start(conn, ctx, uuid, t.action)


def make_compute_api(settings: Settings, db: Database, transport: Transport,
                     volume_api: VolumeAPI | None = None) -> API:
    """The compute API for ``app.state.compute_api`` (``volume_api``: block
    storage as the composition root gives it; None: the configured one)."""
    from cirrus.image.api import make_image_api
    from cirrus.network.api import make_network_api

    return API(settings, db, transport, make_image_api(settings, db, transport),
               make_network_api(settings, db, None, None), volume_api)
