"""Client side of the conductor's RPC API (topic ``conductor``)."""
from __future__ import annotations

from typing import Any

from cirrus.context import RequestContext
from cirrus.rpc import RPCClient, Transport

TOPIC = "conductor"


class ComputeTaskAPI:
    """``compute_task_api`` in the seeds: casts build work to a conductor."""

    def __init__(self, transport: Transport) -> None:
        self.client = RPCClient(transport, TOPIC)

    async def build_instances(self, ctx: RequestContext, *, instance_uuids: list[str],
                              request_spec: dict[str, Any], filter_properties: dict[str, Any],
                              build_params: dict[str, Any]) -> None:
        """Schedule and start building; returns before anything is built."""
        await self.client.cast(ctx, "build_instances", instance_uuids=instance_uuids,
                               request_spec=request_spec, filter_properties=filter_properties,
                               build_params=build_params)

    async def unshelve_instance(self, ctx: RequestContext, *, instance_uuid: str,
                                image_id: str | None, request_spec: dict[str, Any],
                                availability_zone: str | None = None) -> None:
        """Schedule an offloaded server again and cast its unshelve to the host."""
        await self.client.cast(ctx, "unshelve_instance", instance_uuid=instance_uuid,
                               image_id=image_id, request_spec=request_spec,
                               availability_zone=availability_zone)

    async def migrate_server(self, ctx: RequestContext, *, instance_uuid: str,
                             migration_uuid: str, live: bool, host: str | None = None,
                             force: bool = False, block_migration: bool | None = None) -> None:
        """Schedule a resize, cold or live migration (its record made already)."""
        await self.client.cast(ctx, "migrate_server", instance_uuid=instance_uuid,
                               migration_uuid=migration_uuid, live=live, host=host, force=force,
                               block_migration=block_migration)

    async def evacuate_instance(self, ctx: RequestContext, *, instance_uuid: str,
                                migration_uuid: str, host: str | None, force: bool,
                                admin_password: str | None) -> None:
        """Schedule an evacuation (Nova's rebuild_instance with ``recreate``)."""
        await self.client.cast(ctx, "evacuate_instance", instance_uuid=instance_uuid,
                               migration_uuid=migration_uuid, host=host, force=force,
                               admin_password=admin_password)
