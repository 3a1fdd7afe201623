"""Moving libvirt guests (Nova's ``virt/libvirt/migration.py`` and the
driver's ``migrate_disk_and_power_off``/``finish_migration``/``live_migration``).

cirrus's libvirt hosts keep their guests under one ``instances_path`` on one
machine (each host a libvirtd, possibly in its own network namespace), so a
resize moves the instance directory aside (``<uuid>_resize``, kept for a
revert) and copies it back in place for the destination; a live migration is
``virDomainMigrateToURI3`` from libvirtd to libvirtd (peer to peer) over
``live_migration_uri`` (Nova's option: ``%s`` is the destination host), the
disks shared unless a block migration copies them.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, TypedDict

from cirrus.compute.states import PowerState
from cirrus.virt import exception as vexc
from cirrus.virt.libvirt import imagebackend
from cirrus.virt.libvirt.config import DiskSpec, serial_port_of, with_disks, with_serial_port
from cirrus.virt.libvirt.volume import layout_with_volumes, volume_disks
from cirrus.virt.libvirt.serial import free_port_in_host

if TYPE_CHECKING:
    from cirrus.virt.libvirt.driver import LibvirtDriver

RESIZE_SUFFIX = "_resize"


class LiveMigrateData(TypedDict, total=False):
    """What the destination's ``pre_live_migration`` tells the source (Nova's
    ``LibvirtLiveMigrateData``, the fields cirrus uses)."""

    # The destination sees the instance's disks at their paths (one
    # ``instances_path`` for both hosts): nothing to copy.
    shared_storage: bool
    # The destination's ``live_migration_inbound_addr``: where its libvirtd
    # and the incoming QEMU are reached (None: its host name).
    target_connect_addr: str | None
    # A port free in the destination's namespace for each serial console
    # (the source's may be taken there).
    serial_listen_ports: list[int]
    # The volumes as the destination reaches them (DiskSpec fields), which
    # the domain's XML takes on there.
    volume_disks: list[dict[str, Any]]


def migration_uri(settings: Any, dest: str) -> str:
    """Where a live migration to ``dest`` goes (Nova's ``live_migration_uri``
    if set, else ``qemu+<live_migration_scheme>://<dest>/system``)."""
    template = settings.live_migration_uri or f"qemu+{settings.live_migration_scheme}://%s/system"
    return template % dest if "%s" in template else template


def migration_flags(libvirt: Any, block_migration: bool, tunnelled: bool = False,
                    disks_shared: bool = False) -> int:
    """Nova's live-migration flags: peer to peer, persistent on the
    destination, undefined on the source; incremental disk copy if a block
    migration; through libvirtd's connection if tunnelled.

    ``disks_shared``: the destination read the instance's files at their
    paths. libvirt counts only network file systems as shared storage and
    refuses any other migration that copies no disks (``VIR_ERR_MIGRATE_UNSAFE``);
    hosts on one machine share a local one, and QEMU hands the image over
    at the switch (the source flushes and lets go before the destination
    writes), so libvirt is told it is safe."""
    flags = (libvirt.VIR_MIGRATE_LIVE | libvirt.VIR_MIGRATE_PEER2PEER
             | libvirt.VIR_MIGRATE_PERSIST_DEST | libvirt.VIR_MIGRATE_UNDEFINE_SOURCE)
    if block_migration:
        flags |= libvirt.VIR_MIGRATE_NON_SHARED_INC
    elif disks_shared:
        flags |= libvirt.VIR_MIGRATE_UNSAFE
    if tunnelled:
        flags |= libvirt.VIR_MIGRATE_TUNNELLED
    return int(flags)


def migration_params(libvirt: Any, migrate_data: LiveMigrateData, tunnelled: bool,
                     xml: str | None = None) -> dict[str, str]:
    """``virDomainMigrateToURI3``'s parameters: the memory stream goes to the
    destination's inbound address (Nova's ``live_migration_inbound_addr``),
    not to whatever its host name resolves to (a tunnelled stream has no
    address of its own); the guest's serial console listens on the port the
    destination chose (``xml``: the domain's migratable XML)."""
    params = {}
    addr = migrate_data.get("target_connect_addr")
    if addr and not tunnelled:
        host = f"[{addr}]" if ":" in addr else addr
        params[libvirt.VIR_MIGRATE_PARAM_URI] = f"tcp://{host}"
    ports = migrate_data.get("serial_listen_ports")
    dest_xml = xml
    if dest_xml is not None and ports and serial_port_of(dest_xml) is not None:
        dest_xml = with_serial_port(dest_xml, ports[0])
    volumes = migrate_data.get("volume_disks")
    if dest_xml is not None and volumes:
        dest_xml = with_disks(dest_xml, [DiskSpec(**d) for d in volumes])
    if dest_xml is not None and dest_xml != xml:
        params[libvirt.VIR_MIGRATE_PARAM_DEST_XML] = dest_xml
    return params


def _resize_dir(driver: "LibvirtDriver", instance: dict[str, Any]) -> Path:
    return driver.instances_path / f"{instance['uuid']}{RESIZE_SUFFIX}"


# -- resize and cold migration --------------------------------------------------------------
async def migrate_disk_and_power_off(driver: "LibvirtDriver", instance: dict[str, Any],
                                     dest: str) -> dict[str, Any]:
    """Stop the guest, keep its directory aside, copy it for the destination."""
    await driver.power_off(instance, timeout=driver.settings.shutdown_timeout,
                           retry_interval=1)
    inst_dir, kept = driver._instance_dir(instance), _resize_dir(driver, instance)
    if not inst_dir.exists():
        raise vexc.MigrationError(reason=f"the disks of {instance['uuid']} are gone")

    def copy() -> None:
        shutil.rmtree(kept, ignore_errors=True)
        inst_dir.rename(kept)
        shutil.copytree(kept, inst_dir)
    await asyncio.to_thread(copy)
    return {"layout": json.loads((inst_dir / "layout.json").read_text()), "dest": dest}


async def finish_migration(driver: "LibvirtDriver", instance: dict[str, Any],
                           network_info: Any, power_on: bool,
                           block_device_info: Mapping[str, Any] | None = None) -> None:
    """The guest defined here with the instance's (new) flavor, the root disk
    grown to it, the volumes as this host reaches them."""
    inst_dir = driver._instance_dir(instance)
    layout = layout_with_volumes(json.loads((inst_dir / "layout.json").read_text()),
                                 block_device_info)
    root_gb = int(instance.get("root_gb") or 0)
    if root_gb:
        await imagebackend.qemu_img("resize", str(inst_dir / "disk"), f"{root_gb}G")
    await _define_and_start(driver, instance, layout, network_info, power_on)


async def _define_and_start(driver: "LibvirtDriver", instance: dict[str, Any],
                            layout: dict[str, Any], network_info: Any, power_on: bool) -> None:
    xml = driver._get_guest_xml(instance, layout, network_info)
    if power_on:
        await driver._create_domain_and_network(instance, xml, network_info)
        return
    await driver.plug_vifs(instance, network_info)
    await driver.host.call(lambda conn: conn.defineXML(xml))


async def confirm_migration(driver: "LibvirtDriver", instance: dict[str, Any],
                            network_info: Any) -> None:
    """The kept directory goes; so does the source's domain if the guest left
    this host (a resize on the same host redefined it already)."""
    if instance.get("host") != driver.hostname:
        await _undefine(driver, instance)
    await asyncio.to_thread(shutil.rmtree, _resize_dir(driver, instance), True)


async def finish_revert_migration(driver: "LibvirtDriver", instance: dict[str, Any],
                                  network_info: Any, power_on: bool,
                                  block_device_info: Mapping[str, Any] | None = None) -> None:
    """The kept directory back in place, the guest with its old flavor."""
    inst_dir, kept = driver._instance_dir(instance), _resize_dir(driver, instance)
    if not kept.exists():
        raise vexc.MigrationError(reason=f"nothing was kept of {instance['uuid']} to revert to")

    def restore() -> None:
        shutil.rmtree(inst_dir, ignore_errors=True)
        kept.rename(inst_dir)
    await asyncio.to_thread(restore)
    layout = layout_with_volumes(json.loads((inst_dir / "layout.json").read_text()),
                                 block_device_info)
    await _define_and_start(driver, instance, layout, network_info, power_on)


async def _undefine(driver: "LibvirtDriver", instance: dict[str, Any]) -> None:
    libvirt = driver.host.libvirt

    def undefine(conn: Any) -> None:
        dom = driver.host.find_domain(conn, instance["uuid"])
        if dom is None:
            return
        if dom.isActive():
            dom.destroy()
        dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
                          | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM)
    await driver.host.call(undefine)


# -- live migration ----------------------------------------------------------------------------
async def pre_live_migration(driver: "LibvirtDriver", instance: dict[str, Any],
                             network_info: Any, block_migration: bool,
                             block_device_info: Mapping[str, Any] | None = None
                             ) -> LiveMigrateData:
    """The destination's bridges exist; its view of the disks and its
    inbound address reported."""
    await driver.plug_vifs(instance, network_info)
    shared = (driver._instance_dir(instance) / "layout.json").exists()
    if not shared and not block_migration:
        raise vexc.MigrationError(reason=f"{driver.hostname} does not share the disks of "
                                         f"{instance['uuid']}: a block migration is needed")
    data = LiveMigrateData(shared_storage=shared,
                           target_connect_addr=driver.settings.live_migration_inbound_addr or None)
    if driver.settings.serial_console_enabled:
        data["serial_listen_ports"] = [await free_port_in_host(driver.settings)]
    volumes = volume_disks(block_device_info)
    if volumes:
        data["volume_disks"] = [dataclasses.asdict(v) for v in volumes]
    return data


async def live_migration(driver: "LibvirtDriver", instance: dict[str, Any], dest: str,
                         block_migration: bool, migrate_data: LiveMigrateData) -> None:
    """``virDomainMigrateToURI3``; blocks (in a worker thread) until done.
    Afterwards nothing of the guest is left here: libvirt undefined the
    domain, its tap went with QEMU, and disks that were copied go too."""
    libvirt, settings = driver.host.libvirt, driver.settings
    uri = migration_uri(settings, migrate_data.get("target_connect_addr") or dest)
    shared = bool(migrate_data.get("shared_storage"))
    tunnelled = settings.live_migration_tunnelled
    flags = migration_flags(libvirt, block_migration and not shared, tunnelled, shared)

    def migrate(conn: Any) -> None:
        dom = driver.host.find_domain(conn, instance["uuid"])
        if dom is None:
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_MIGRATABLE)
        dom.migrateToURI3(uri, migration_params(libvirt, migrate_data, tunnelled, xml), flags)
    try:
        await driver.host.call(migrate)
    except libvirt.libvirtError as e:
        if e.get_error_code() == libvirt.VIR_ERR_OPERATION_ABORTED:
            raise vexc.LiveMigrationAborted(instance_uuid=instance["uuid"]) from e
        raise vexc.MigrationError(reason=f"to {uri}: {e.get_error_message()}") from e
    if not shared:
        await asyncio.to_thread(shutil.rmtree, driver._instance_dir(instance), True)


async def job_op(driver: "LibvirtDriver", instance: dict[str, Any], op: str) -> None:
    """``abortJob`` (abort) or ``suspend`` (force complete: a paused guest's
    memory stops changing, so the copy converges) on the migrating domain."""
    libvirt = driver.host.libvirt

    def run(conn: Any) -> None:
        dom = driver.host.find_domain(conn, instance["uuid"])
        if dom is None:
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        getattr(dom, op)()
    try:
        await driver.host.call(run)
    except libvirt.libvirtError as e:
        raise vexc.MigrationError(reason=f"{op}: {e.get_error_message()}") from e


async def post_live_migration_at_destination(driver: "LibvirtDriver",
                                             instance: dict[str, Any]) -> None:
    """A guest paused by a force complete runs again here."""
    if (await driver.get_info(instance)).state == PowerState.PAUSED:
        await driver._domain_op(instance, "resume")
