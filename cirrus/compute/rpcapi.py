"""Client side of the compute host RPC API (topic ``compute``, one server per host)."""
from __future__ import annotations

from typing import Any

from cirrus.context import RequestContext
from cirrus.rpc import RPCClient, Transport

TOPIC = "compute"


class ComputeAPI:
    """Casts and calls to the compute service on a named host."""

    def __init__(self, transport: Transport) -> None:
        self.client = RPCClient(transport, TOPIC)

    async def build_and_run_instance(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                                     node: str, request_spec: dict[str, Any],
                                     filter_properties: dict[str, Any],
                                     build_params: dict[str, Any]) -> None:
        await self.client.prepare(server=host).cast(
            ctx, "build_and_run_instance", instance_uuid=instance_uuid, node=node,
            request_spec=request_spec, filter_properties=filter_properties,
            build_params=build_params)

    async def terminate_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self.client.prepare(server=host).cast(ctx, "terminate_instance",
                                                    instance_uuid=instance_uuid)

    async def start_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self.client.prepare(server=host).cast(ctx, "start_instance",
                                                    instance_uuid=instance_uuid)

    async def stop_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                            clean_shutdown: bool = True) -> None:
        await self.client.prepare(server=host).cast(ctx, "stop_instance",
                                                    instance_uuid=instance_uuid,
                                                    clean_shutdown=clean_shutdown)

    async def reboot_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                              reboot_type: str) -> None:
        await self.client.prepare(server=host).cast(ctx, "reboot_instance",
                                                    instance_uuid=instance_uuid,
                                                    reboot_type=reboot_type)

    async def get_console_output(self, ctx: RequestContext, host: str, instance_uuid: str,
                                 tail_length: int | None) -> str:
        output: str = await self.client.prepare(server=host, timeout=30).call(
            ctx, "get_console_output", instance_uuid=instance_uuid, tail_length=tail_length)
        return output

    async def get_serial_console(self, ctx: RequestContext, host: str,
                                 instance_uuid: str) -> dict[str, Any]:
        where: dict[str, Any] = await self.client.prepare(server=host, timeout=30).call(
            ctx, "get_serial_console", instance_uuid=instance_uuid)
        return where

    async def attach_interface(self, ctx: RequestContext, host: str, instance_uuid: str,
                               request: dict[str, Any]) -> str:
        port_id: str = await self.client.prepare(server=host, timeout=120).call(
            ctx, "attach_interface", instance_uuid=instance_uuid, request=request)
        return port_id

    async def detach_interface(self, ctx: RequestContext, host: str, instance_uuid: str,
                               port_id: str) -> None:
        await self.client.prepare(server=host, timeout=120).call(
            ctx, "detach_interface", instance_uuid=instance_uuid, port_id=port_id)

    async def external_instance_event(self, ctx: RequestContext, host: str,
                                      events: list[dict[str, Any]]) -> None:
        await self.client.prepare(server=host).cast(ctx, "external_instance_event", events=events)

    # -- moves (resize, migrate, live migration, evacuation) -------------------------
    async def _cast_move(self, ctx: RequestContext, host: str, method: str, **kw: Any) -> None:
        await self.client.prepare(server=host).cast(ctx, method, **kw)

    async def prep_resize(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                          migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "prep_resize", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def resize_instance(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                              migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "resize_instance", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def finish_resize(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                            migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "finish_resize", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def confirm_resize(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                             migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "confirm_resize", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def cleanup_resize(self, ctx: RequestContext, host: str, *,
                             instance_uuid: str) -> None:
        await self._cast_move(ctx, host, "cleanup_resize", instance_uuid=instance_uuid)

    async def revert_resize(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                            migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "revert_resize", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def finish_revert_resize(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                                   migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "finish_revert_resize", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def live_migration(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                             migration_uuid: str, block_migration: bool | None) -> None:
        await self._cast_move(ctx, host, "live_migration", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid, block_migration=block_migration)

    async def pre_live_migration(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                                 migration_uuid: str, block_migration: bool | None
                                 ) -> dict[str, Any]:
        """On the destination, before the source starts: what the source needs."""
        data: dict[str, Any] = await self.client.prepare(server=host, timeout=300).call(
            ctx, "pre_live_migration", instance_uuid=instance_uuid,
            migration_uuid=migration_uuid, block_migration=block_migration)
        return data

    async def post_live_migration_at_destination(self, ctx: RequestContext, host: str, *,
                                                 instance_uuid: str, migration_uuid: str,
                                                 power_state: int) -> None:
        await self._cast_move(ctx, host, "post_live_migration_at_destination",
                              instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                              power_state=power_state)

    async def rollback_live_migration_at_destination(self, ctx: RequestContext, host: str, *,
                                                     instance_uuid: str) -> None:
        await self.client.prepare(server=host, timeout=300).call(
            ctx, "rollback_live_migration_at_destination", instance_uuid=instance_uuid)

    async def live_migration_abort(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                                   migration_uuid: str) -> None:
        await self._cast_move(ctx, host, "live_migration_abort", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid)

    async def live_migration_force_complete(self, ctx: RequestContext, host: str, *,
                                            instance_uuid: str) -> None:
        await self._cast_move(ctx, host, "live_migration_force_complete",
                              instance_uuid=instance_uuid)

    async def evacuate_instance(self, ctx: RequestContext, host: str, *, instance_uuid: str,
                                migration_uuid: str, admin_password: str | None) -> None:
        """Rebuild an evacuated instance on ``host`` (Nova's rebuild_instance
        with ``recreate``)."""
        await self._cast_move(ctx, host, "evacuate_instance", instance_uuid=instance_uuid,
                              migration_uuid=migration_uuid, admin_password=admin_password)
