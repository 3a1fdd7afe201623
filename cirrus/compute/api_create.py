"""The create (Nova's ``compute/api.py`` ``create`` → ``_create_instance``).

Runs in the API process. It checks everything that can be checked before
answering (policy, flavor, image, zone, key pair, networks, group, quota:
:mod:`cirrus.compute.api_lookups`), writes the instance records in one
transaction (:mod:`cirrus.compute.provision`), records the ``create`` action
and casts the build to the conductor. The build runs after the 202.
A mixin of :class:`cirrus.compute.api.API`.
"""
from __future__ import annotations

import uuid as uuidlib
from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import block_device, records
from cirrus.compute import exception as exc
from cirrus.compute.admission import BuildAdmission
from cirrus.compute.api_lookups import MAX_METADATA_ITEMS, Lookups, parse_availability_zone
from cirrus.compute.provision import (create_in_one_statement, destroy_records,
                                      one_statement_fits, one_statement_shape,
                                      provision_instances)
from cirrus.compute.records import CreateRequest
from cirrus.compute.scope import require_project
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.db.rows import read_here
from cirrus.exception import NotFound
from cirrus.network.exception import NoUniqueMatch, PortLimitExceeded, SecurityGroupNotFound

Row = dict[str, Any]


class CreateActions(Lookups):
    """``create``: the checks, the records, the build cast."""

    # What the compute API (cirrus/compute/api.py) gives these methods.
    db: Database
    network: Any  # cirrus.network.api.API
    admission: BuildAdmission
    compute_task_api: ComputeTaskAPI
    _validate_bdm: Callable[[RequestContext, CreateRequest, Row, Row | None, str | None],
                            Awaitable[Row | None]]
    _reserve_volumes: Callable[[RequestContext, CreateRequest, list[Row]], Awaitable[None]]

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
        # Flavor and image kept by this process while the catalog stays as the
        # token check read it: often no read at all (catalog_cache.py). Else
        # one read for every lookup (on SQLite in the loop's own thread: a few
        # point reads cost less than the hop to a DB thread). Errors are
        # raised in the order Nova checks.
        generation = self.catalog.generation()
        image_id = self._boot_image_id(req)
        found = self._kept_lookups(ctx, req, image_id, az, forced_host, generation)
        if found is None:
            found = await read_here(self.db, self._lookups, ctx, req, image_id, az,
                                    forced_host, generation)
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
        # PostgreSQL's one-statement create (a fixed count, no group, no tags)
        # checks the port quota of network requests in its statement: no read here.
        ports_each = self.network.ports_a_create_can_check(req.requested_networks) \
            if one_statement_shape(self.db.is_postgresql, req, group) else 0
        try:  # an unknown group is a 400 now, not a build rescheduled on every host
            max_net = await self.network.validate_networks(
                ctx, req.requested_networks, req.max_count,
                security_groups=req.security_groups, ports_checked_later=bool(ports_each))
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
            if one_statement_fits(self.db.is_postgresql, req, group, max_count, prepared):
                # One statement in autocommit: the usage row locked for it alone.
                rows = await self.db.run(create_in_one_statement, self.settings, ctx, req,
                                         flavor, image, prepared, ports_each)
            else:
                if ports_each and not await self.network.within_port_quota(
                        ctx, ports_each, max_count):  # the check left to the statement
                    raise PortLimitExceeded()
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

    def _provision_instances(self, conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                             flavor: dict[str, Any], image: dict[str, Any] | None, az: str,
                             key_data: str | None, group: dict[str, Any] | None,
                             reservation_id: str, max_count: int,
                             prepared: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """:func:`cirrus.compute.provision.provision_instances` with this API's settings."""
        return provision_instances(conn, self.settings, ctx, req, flavor, image, az, key_data,
                                   group, reservation_id, max_count, prepared)

    @staticmethod
    def _destroy_records(conn: sa.Connection, uuids: list[str]) -> None:
        destroy_records(conn, uuids)
