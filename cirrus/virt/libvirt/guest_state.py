"""The libvirt driver's guest-state operations (issue #19), mixed into
:class:`~cirrus.virt.libvirt.driver.LibvirtDriver`:

* pause/unpause: ``virDomainSuspend``/``virDomainResume`` (the guest stays in memory);
* suspend/resume: ``virDomainManagedSave`` (memory to disk, the domain off),
  then ``virDomainCreate``, which restores the managed save (VIFs plugged first);
* rescue/unrescue: the domain's XML kept in ``unrescue.xml``; a rescue domain
  booting ``disk.rescue`` (an overlay of the rescue image) with the original
  disk attached second; on unrescue the kept XML defined and started again;
* set_admin_password: there is no guest agent channel in cirrus's guests, so
  QemuGuestAgentNotEnabled (409), as Nova without ``hw_qemu_guest_agent``.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from cirrus.compute.states import PowerState
from cirrus.virt import exception as vexc
from cirrus.compute.image_service import ImageMeta
from cirrus.virt.libvirt import imagebackend

UNRESCUE_XML = "unrescue.xml"
RESCUE_DISK = "disk.rescue"
LAYOUT = "layout.json"


class GuestStateOps:
    """Mixin for LibvirtDriver; uses its host, paths and domain helpers."""

    host: Any
    settings: Any

    # Provided by LibvirtDriver (declared for the type checker).
    def _instance_dir(self, instance: dict[str, Any]) -> Path:
        raise NotImplementedError

    def _get_guest_xml(self, instance: dict[str, Any], layout: dict[str, Any],
                       network_info: Any) -> str:
        raise NotImplementedError

    def _base(self, context: Any, image_id: str
              ) -> contextlib.AbstractAsyncContextManager[tuple[ImageMeta, Path]]:
        raise NotImplementedError

    async def _destroy_domain(self, instance: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _create_domain_and_network(self, instance: dict[str, Any], xml: str,
                                         network_info: Any,
                                         vifs_already_plugged: bool = False) -> None:
        raise NotImplementedError

    async def _wait_for_state(self, instance: dict[str, Any], state: PowerState,
                              timeout: float) -> bool:
        raise NotImplementedError

    async def plug_vifs(self, instance: dict[str, Any], network_info: Any) -> None:
        raise NotImplementedError

    # -- one libvirt call on the instance's domain ----------------------------------------
    async def _guest_op(self, instance: dict[str, Any], operation: str, method: str,
                        *args: Any) -> None:
        """``dom.<method>(*args)``; InstanceStateChangeFailure naming ``operation``."""
        libvirt = self.host.libvirt
        uuid = instance["uuid"]

        def run(conn: Any) -> None:
            dom = self.host.find_domain(conn, uuid)
            if dom is None:
                raise vexc.InstanceNotFound(instance_id=uuid)
            getattr(dom, method)(*args)
        try:
            await self.host.call(run)
        except libvirt.libvirtError as e:
            raise vexc.InstanceStateChangeFailure(operation=operation, instance_uuid=uuid,
                                                  reason=e.get_error_message()) from e

    async def _until(self, instance: dict[str, Any], state: PowerState, operation: str) -> None:
        if not await self._wait_for_state(instance, state, timeout=60):
            raise vexc.InstanceStateChangeFailure(
                operation=operation, instance_uuid=instance["uuid"],
                reason=f"the domain did not reach {state.name} in 60 s")

    # -- pause, suspend ------------------------------------------------------------------
    async def pause(self, instance: dict[str, Any]) -> None:
        await self._guest_op(instance, "pause", "suspend")

    async def unpause(self, instance: dict[str, Any]) -> None:
        await self._guest_op(instance, "unpause", "resume")

    async def suspend(self, context: Any, instance: dict[str, Any]) -> None:
        await self._guest_op(instance, "suspend", "managedSave", 0)

    async def resume(self, context: Any, instance: dict[str, Any], network_info: Any,
                     block_device_info: dict[str, Any] | None = None) -> None:
        await self.plug_vifs(instance, network_info)
        await self._guest_op(instance, "resume", "create")  # restores the managed save
        await self._until(instance, PowerState.RUNNING, "resume")

    # -- rescue --------------------------------------------------------------------------
    async def rescue(self, context: Any, instance: dict[str, Any], network_info: Any,
                     image_meta: dict[str, Any], rescue_password: str,
                     block_device_info: dict[str, Any] | None = None) -> None:
        inst_dir = self._instance_dir(instance)
        await self._keep_domain_xml(instance, inst_dir / UNRESCUE_XML)
        layout = await self._rescue_layout(context, instance, image_meta, inst_dir)
        xml = self._get_guest_xml(instance, layout, network_info)
        await self._destroy_domain(instance)
        await self._create_domain_and_network(instance, xml, network_info,
                                              vifs_already_plugged=True)

    async def _keep_domain_xml(self, instance: dict[str, Any], path: Path) -> None:
        """The domain's persistent definition, for unrescue to bring back."""
        def describe(conn: Any) -> str:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is None:
                raise vexc.InstanceNotFound(instance_id=instance["uuid"])
            return str(dom.XMLDesc(self.host.libvirt.VIR_DOMAIN_XML_INACTIVE))
        xml = await self.host.call(describe)
        await asyncio.to_thread(path.write_text, xml)

    async def _rescue_layout(self, context: Any, instance: dict[str, Any],
                             image_meta: dict[str, Any], inst_dir: Path) -> dict[str, Any]:
        """The rescue image's overlay as vda, the instance's own disk as vdb
        (Nova's rescue disk order), the rescue image's kernel if it has one."""
        rescue_disk = inst_dir / RESCUE_DISK
        await asyncio.to_thread(rescue_disk.unlink, True)
        async with self._base(context, image_meta["id"]) as (meta, base):
            fmt = imagebackend.FORMATS.get(meta.get("disk_format") or "raw", "raw")
            await imagebackend.create_root_disk(base, fmt, rescue_disk,
                                                int(instance.get("root_gb") or 0),
                                                instance["uuid"])
        original = json.loads(await asyncio.to_thread((inst_dir / LAYOUT).read_text))
        layout: dict[str, Any] = {"disks": [
            {"path": str(rescue_disk), "target": "vda", "fmt": "qcow2"},
            {**original["disks"][0], "target": "vdb"}]}
        props = meta.get("properties") or {}
        for key, name in (("kernel_id", "kernel"), ("ramdisk_id", "ramdisk")):
            if props.get(key):
                # QEMU reads it once, at the rescue guest's start.
                async with self._base(context, props[key]) as (_, path):
                    layout[name] = str(path)
            elif original.get(name):
                layout[name] = original[name]
        if layout.get("kernel"):
            layout["cmdline"] = props.get("os_command_line") or "console=ttyS0 root=/dev/vda"
        return layout

    async def unrescue(self, context: Any, instance: dict[str, Any]) -> None:
        inst_dir = self._instance_dir(instance)
        kept = inst_dir / UNRESCUE_XML
        if not kept.exists():
            raise vexc.InstanceStateChangeFailure(operation="unrescue",
                                                  instance_uuid=instance["uuid"],
                                                  reason="the original domain XML is gone")
        xml = await asyncio.to_thread(kept.read_text)
        await self._destroy_domain(instance)
        # The kept XML names the VIFs already plugged for the rescue domain.
        await self._create_domain_and_network(instance, xml, None, vifs_already_plugged=True)
        for name in (UNRESCUE_XML, RESCUE_DISK):
            await asyncio.to_thread((inst_dir / name).unlink, True)

    # -- password ------------------------------------------------------------------------
    async def set_admin_password(self, instance: dict[str, Any], new_pass: str) -> None:
        raise vexc.QemuGuestAgentNotEnabled()
