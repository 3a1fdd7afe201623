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

    async def get_diagnostics(self, ctx: RequestContext, host: str,
                              instance_uuid: str) -> dict[str, int]:
        counters: dict[str, int] = await self.client.prepare(server=host, timeout=30).call(
            ctx, "get_diagnostics", instance_uuid=instance_uuid)
        return counters

    async def get_instance_diagnostics(self, ctx: RequestContext, host: str,
                                       instance_uuid: str) -> dict[str, Any]:
        diags: dict[str, Any] = await self.client.prepare(server=host, timeout=30).call(
            ctx, "get_instance_diagnostics", instance_uuid=instance_uuid)
        return diags

    async def get_host_uptime(self, ctx: RequestContext, host: str) -> str:
        uptime: str = await self.client.prepare(server=host, timeout=30).call(ctx, "get_host_uptime")
        return uptime

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

    # -- issue #19: pause, suspend, rescue, password, soft delete --------------------
    async def _cast_to(self, ctx: RequestContext, host: str, method: str, instance_uuid: str,
                       **kwargs: Any) -> None:
        await self.client.prepare(server=host).cast(ctx, method, instance_uuid=instance_uuid,
                                                    **kwargs)

    async def pause_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "pause_instance", instance_uuid)

    async def unpause_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "unpause_instance", instance_uuid)

    async def suspend_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "suspend_instance", instance_uuid)

    async def resume_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "resume_instance", instance_uuid)

    async def rescue_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                              rescue_password: str, rescue_image_ref: str | None) -> None:
        await self._cast_to(ctx, host, "rescue_instance", instance_uuid,
                            rescue_password=rescue_password, rescue_image_ref=rescue_image_ref)

    async def unrescue_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "unrescue_instance", instance_uuid)

    async def set_admin_password(self, ctx: RequestContext, host: str, instance_uuid: str,
                                 new_pass: str) -> None:
        """A call, as Nova's: the API answers with what the driver said."""
        await self.client.prepare(server=host, timeout=60).call(
            ctx, "set_admin_password", instance_uuid=instance_uuid, new_pass=new_pass)

    async def soft_delete_instance(self, ctx: RequestContext, host: str,
                                   instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "soft_delete_instance", instance_uuid)

    async def restore_instance(self, ctx: RequestContext, host: str, instance_uuid: str) -> None:
        await self._cast_to(ctx, host, "restore_instance", instance_uuid)
    # -- images (rebuild.py, snapshot.py, shelve.py) -----------------------------------
    async def rebuild_instance(self, ctx: RequestContext, host: str, instance_uuid: str, *,
                               image_ref: str, orig_image_ref: str | None,
                               admin_password: str | None, injected_files: list[list[str]],
                               preserve_ephemeral: bool) -> None:
        await self.client.prepare(server=host).cast(
            ctx, "rebuild_instance", instance_uuid=instance_uuid, image_ref=image_ref,
            orig_image_ref=orig_image_ref, admin_password=admin_password,
            injected_files=injected_files, preserve_ephemeral=preserve_ephemeral)

    async def snapshot_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                                image_id: str) -> None:
        await self.client.prepare(server=host).cast(ctx, "snapshot_instance",
                                                    instance_uuid=instance_uuid, image_id=image_id)

    async def backup_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                              image_id: str, backup_type: str, rotation: int) -> None:
        await self.client.prepare(server=host).cast(
            ctx, "backup_instance", instance_uuid=instance_uuid, image_id=image_id,
            backup_type=backup_type, rotation=rotation)

    async def shelve_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                              image_id: str, clean_shutdown: bool = True) -> None:
        await self.client.prepare(server=host).cast(
            ctx, "shelve_instance", instance_uuid=instance_uuid, image_id=image_id,
            clean_shutdown=clean_shutdown)

    async def shelve_offload_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                                      clean_shutdown: bool = True) -> None:
        await self.client.prepare(server=host).cast(
            ctx, "shelve_offload_instance", instance_uuid=instance_uuid,
            clean_shutdown=clean_shutdown)

    async def unshelve_instance(self, ctx: RequestContext, host: str, instance_uuid: str,
                                image_id: str | None, node: str | None) -> None:
        await self.client.prepare(server=host).cast(
            ctx, "unshelve_instance", instance_uuid=instance_uuid, image_id=image_id, node=node)

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

    # -- volumes (issue 20) ----------------------------------------------------------
    async def attach_volume(self, ctx: RequestContext, host: str, instance_uuid: str,
                            volume_id: str) -> None:
        await self._cast_to(ctx, host, "attach_volume", instance_uuid, volume_id=volume_id)

    async def detach_volume(self, ctx: RequestContext, host: str, instance_uuid: str,
                            volume_id: str) -> None:
        await self._cast_to(ctx, host, "detach_volume", instance_uuid, volume_id=volume_id)

    async def volume_snapshot_create(self, ctx: RequestContext, host: str, instance_uuid: str,
                                     volume_id: str, create_info: dict[str, Any]) -> None:
        await self._cast_to(ctx, host, "volume_snapshot_create", instance_uuid,
                            volume_id=volume_id, create_info=create_info)

    async def volume_snapshot_delete(self, ctx: RequestContext, host: str, instance_uuid: str,
                                     volume_id: str, snapshot_id: str,
                                     delete_info: dict[str, Any]) -> None:
        await self._cast_to(ctx, host, "volume_snapshot_delete", instance_uuid,
                            volume_id=volume_id, snapshot_id=snapshot_id,
                            delete_info=delete_info)

    async def swap_volume(self, ctx: RequestContext, host: str, instance_uuid: str,
                          old_volume_id: str, new_volume_id: str,
                          new_attachment_id: str) -> None:
        await self._cast_to(ctx, host, "swap_volume", instance_uuid,
                            old_volume_id=old_volume_id, new_volume_id=new_volume_id,
                            new_attachment_id=new_attachment_id)
