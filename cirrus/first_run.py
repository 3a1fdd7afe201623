"""What a fresh cloud starts with, so a first server needs nothing made first.

On the first start of a state dir (``bootstrap_defaults``, on by default;
``cirrus up --no-defaults`` turns it off) the cloud gets:

* a public image: the tiny guest (kernel, ramdisk and root disk, bootable by
  the libvirt driver) when ``cirrus image build-tiny`` has built it in
  ``tiny_guest_dir``; else ``cirrus-blank``, a small raw disk of zeros: any
  bytes boot on the fake driver, and it is a valid disk for libvirt (which
  finds no OS on it);
* for the demo project, a network with a subnet (also its auto-allocated
  network, which ``networks: auto`` boots use), and its default security group.

Each default is recorded in ``first_run_defaults`` when made, and never made
again: a restart keeps what the user has, and a default the user deleted
stays deleted.
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.identity import models as identity
from cirrus.image.api import ImageAPI
from cirrus.image.tiny import COMMAND_LINE, DEFAULT_OUTPUT, TinyGuest, built
from cirrus.network import bulk
from cirrus.network.auto_allocate import adopt_as_auto_network
from cirrus.network.security_groups import ensure_default
from cirrus.network.service import NetworkService
from cirrus.service_models import first_run_defaults as table

LOG = logging.getLogger(__name__)
TINY_IMAGE = "cirrus-tiny"
BLANK_IMAGE = "cirrus-blank"
BLANK_SIZE = 1 << 20  # 1 MiB: small to store, and a whole number of sectors
NETWORK = "demo-net"
SUBNET = "demo-subnet"
SUBNET_CIDR = "10.10.0.0/24"


def made(conn: sa.Connection) -> dict[str, str | None]:
    """The defaults made so far: name → the id of what was made."""
    return {row.name: row.resource_id for row in conn.execute(sa.select(table))}


def record(conn: sa.Connection, name: str, resource_id: str) -> None:
    conn.execute(table.insert().values(name=name, resource_id=resource_id, created_at=utcnow()))


def _project_id(conn: sa.Connection, name: str) -> str:
    return str(conn.execute(sa.select(identity.projects.c.id).where(
        identity.projects.c.name == name)).scalar_one())


def _context(project_id: str, project: str, roles: list[str]) -> RequestContext:
    return RequestContext(project_id=project_id, project_name=project, user_name=project,
                          roles=roles)


async def ensure_defaults(settings: Settings, db: Database, images: ImageAPI,
                          network: NetworkService) -> dict[str, str]:
    """Make the defaults not made before; returns what it made (name → id)."""
    done = await db.read(made)
    out: dict[str, str] = {}
    if "image" not in done:
        admin = _context(await db.read(_project_id, "admin"), "admin",
                         ["admin", "member", "reader"])
        tiny = built(Path(settings.tiny_guest_dir) if settings.tiny_guest_dir
                     else DEFAULT_OUTPUT)
        out["image"] = await (_tiny_images(images, admin, tiny) if tiny
                              else _blank_image(images, admin))
        await db.run(record, "image", out["image"])
    if "network" not in done:
        demo = _context(await db.read(_project_id, "demo"), "demo", ["member", "reader"])
        out["network"] = await _demo_network(db, network, demo)
        await db.run(record, "network", out["network"])
    if out:
        LOG.info("first start: made the defaults %s", out)
    return out


async def _upload(images: ImageAPI, ctx: RequestContext, body: dict[str, Any],
                  chunks: AsyncIterator[bytes]) -> str:
    image = await images.create(ctx, {"container_format": "bare", "visibility": "public", **body})
    await images.upload(ctx, image["id"], chunks)
    return str(image["id"])


async def _file(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            yield chunk


async def _zeros(size: int) -> AsyncIterator[bytes]:
    yield bytes(size)


async def _blank_image(images: ImageAPI, ctx: RequestContext) -> str:
    return await _upload(images, ctx, {"name": BLANK_IMAGE, "disk_format": "raw"},
                         _zeros(BLANK_SIZE))


async def _tiny_images(images: ImageAPI, ctx: RequestContext, guest: TinyGuest) -> str:
    """The tiny guest as ``cirrus image build-tiny`` registers it; the disk's id."""
    kernel = await _upload(images, ctx, {"name": f"{TINY_IMAGE}-kernel", "disk_format": "aki"},
                           _file(guest.kernel))
    ramdisk = await _upload(images, ctx, {"name": f"{TINY_IMAGE}-ramdisk",
                                          "disk_format": "ari"}, _file(guest.ramdisk))
    return await _upload(images, ctx, {
        "name": TINY_IMAGE, "disk_format": "qcow2", "kernel_id": kernel, "ramdisk_id": ramdisk,
        "os_command_line": COMMAND_LINE}, _file(guest.disk))


async def _demo_network(db: Database, network: NetworkService, ctx: RequestContext) -> str:
    """The demo project's network and subnet, made as its own API calls would."""
    [net], _ = await bulk.create(network, ctx, "network", {"network": {"name": NETWORK}})
    await bulk.create(network, ctx, "subnet", {"subnet": {
        "name": SUBNET, "network_id": net["id"], "ip_version": 4, "cidr": SUBNET_CIDR}})
    assert ctx.project_id is not None
    await db.run(ensure_default, ctx.project_id)
    # The openstack CLI boots with ``networks: auto`` (2.37+): this one, not a second.
    await db.run(adopt_as_auto_network, ctx.project_id, net["id"])
    return str(net["id"])
