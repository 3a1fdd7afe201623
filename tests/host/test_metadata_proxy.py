"""The metadata proxy on real bridges: a namespace "guest" on a linuxbridge
network gets the route to 169.254.169.254 by DHCP (option 121) and reads its
own meta_data.json through the proxy, which names it by its address and
signs for it; the metadata API is the real one, in process."""
from __future__ import annotations

import base64
import datetime as dt
import json
import re
import socket
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cirrus.api.app import build_app
from cirrus.api.metadata.service import make_metadata_service
from cirrus.compute.models import instances
from cirrus.network.backends.linuxbridge import LinuxBridgeBackend
from cirrus.network.backends.metadata_forward import AsgiForwarder
from cirrus.network.backends.metadata_proxy import METADATA_ADDRESS, MetadataProxy
from cirrus.network.host_view import bridge_name
from cirrus.network.linux.netns import enter
from tests.host.netns import Guest, sh
from tests.host.test_linuxbridge import PROJECT, Env, env  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow
URL = f"http://{METADATA_ADDRESS}/openstack/latest/meta_data.json"


def add_instance(conn: Any, uuid: str, name: str, project: str = PROJECT) -> None:
    """The instance row the metadata API reads (what compute's create writes)."""
    conn.execute(instances.insert().values(
        uuid=uuid, project_id=project, user_id="u", display_name=name, hostname=name,
        flavor={"name": "m1.tiny"}, vcpus=1, memory_mb=64, root_gb=1, vm_state="active",
        reservation_id="r-1", availability_zone="nova", metadata={}, system_metadata={},
        user_data=base64.b64encode(b"hello from user data\n").decode(),
        created_at=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)))


@pytest.fixture
async def backend(env: Env) -> AsyncIterator[LinuxBridgeBackend]:  # noqa: F811
    """A backend whose proxy forwards to the real metadata API app."""
    app = build_app({"settings": env.settings,
                     "metadata": make_metadata_service(env.settings, env.db, None)})
    found = await env.start_backend()
    found.metadata = MetadataProxy(env.settings, AsgiForwarder(app))
    yield found


async def dhcp_routes(guest: Guest, workdir: Any) -> dict[str, str]:
    """udhcpc asking for option 121, as the tiny guest does; the lease's ip,
    router and staticroutes."""
    out, script = workdir / f"{guest.tap}.routes", workdir / f"{guest.tap}.r.sh"
    script.write_text("#!/bin/sh\n[ \"$1\" = bound ] && "
                      f"echo \"ip=$ip router=$router routes=$staticroutes\" > {out}\nexit 0\n")
    script.chmod(0o755)
    await sh("ip", "netns", "exec", guest.ns, "busybox", "udhcpc", "-i", "eth0", "-n", "-q",
             "-O", "staticroutes", "-t", "5", "-T", "1", "-s", str(script), timeout=30)
    text = out.read_text()
    found = dict(re.findall(r"(ip|router)=(\S*)", text))
    found["routes"] = text.split("routes=", 1)[1].strip()
    return found


async def fetch(guest: Guest, url: str, *headers: str) -> tuple[int, str]:
    """``busybox wget`` from the guest: (0, body) or (exit code, stderr)."""
    # busybox 1.35's wget crashes with -T; sh's timeout bounds it instead.
    argv = ["ip", "netns", "exec", guest.ns, "busybox", "wget", "-q", "-O", "-"]
    for header in headers:
        argv += ["--header", header]
    done = await sh(*argv, url, check=False)
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr


async def booted_guest(env: Env, net: dict[str, Any], name: str | None) -> tuple[Guest, dict]:  # noqa: F811
    """A plugged guest with its lease and the metadata route applied; its
    port's instance row exists when ``name`` is given."""
    group = await env.group(f"g-{name}")
    port = await env.port(net, [group])
    if name is not None:
        await env.db.run(add_instance, port["device_id"], name)
    assert env.binder is not None
    await env.binder.bound(port)
    guest = env.guest(port)
    await guest.plug(bridge_name(net["id"]))
    assert await env.wait_up(port["id"])
    lease = await dhcp_routes(guest, env.workdir)
    assert lease["ip"] == port["ip"]
    await guest.configure(lease["ip"], 24)
    pairs = lease["routes"].split()
    for dest, via in zip(pairs[::2], pairs[1::2]):
        if dest != "0.0.0.0/0":
            await sh("ip", "-n", guest.ns, "route", "replace", dest, "via", via)
    return guest, port


async def test_a_guest_reads_its_metadata_through_the_proxy(
        env: Env, backend: LinuxBridgeBackend) -> None:  # noqa: F811
    net, _ = await env.network("10.81.0.0/24")
    guest, port = await booted_guest(env, net, "md-guest")
    lease_routes = await dhcp_routes(guest, env.workdir)
    # Option 121: the metadata address via this server, then the default route.
    assert lease_routes["routes"] == f"{METADATA_ADDRESS}/32 10.81.0.1 0.0.0.0/0 10.81.0.1"
    assert f"{METADATA_ADDRESS}/32" in await env.host("ip", "-o", "addr", "show", "dev",
                                                      bridge_name(net["id"]))

    code, body = await fetch(guest, URL)
    assert code == 0, body
    data = json.loads(body)
    assert data["uuid"] == port["device_id"] and data["hostname"] == "md-guest"
    code, body = await fetch(guest, f"http://{METADATA_ADDRESS}/openstack/latest/user_data")
    assert (code, body) == (0, "hello from user data\n")
    code, body = await fetch(guest, f"http://{METADATA_ADDRESS}/latest/meta-data/hostname")
    assert (code, body) == (0, "md-guest")


async def test_a_guest_cannot_speak_for_another(env: Env, backend: LinuxBridgeBackend) -> None:  # noqa: F811
    """The guest's own X-Instance-* headers are replaced by the proxy's; a
    port with no instance behind it gets a 404."""
    net, _ = await env.network("10.82.0.0/24")
    guest_a, port_a = await booted_guest(env, net, "md-a")
    guest_b, port_b = await booted_guest(env, net, None)
    code, body = await fetch(guest_b, URL, f"X-Instance-ID: {port_a['device_id']}",
                             f"X-Tenant-ID: {PROJECT}", "X-Instance-ID-Signature: forged")
    assert code != 0 and "404" in body, body
    code, body = await fetch(guest_a, URL, "X-Instance-ID: someone-else")
    assert code == 0 and json.loads(body)["uuid"] == port_a["device_id"]


async def test_the_listener_goes_with_the_network(env: Env, backend: LinuxBridgeBackend) -> None:  # noqa: F811
    net, _ = await env.network("10.83.0.0/24")
    guest, port = await booted_guest(env, net, "md-gone")
    assert backend.metadata.serving() == {net["id"]}
    await guest.unplug()
    await env.unbind(port)
    assert backend.metadata.serving() == set()
    listening = await env.host("ss", "-Hltn")
    assert f"{METADATA_ADDRESS}:80" not in listening


def listener_everywhere(netns: str, port: int) -> socket.socket:
    """A socket on every address's ``port`` in ``netns`` (another server's)."""
    made: list[socket.socket] = []

    def run() -> None:
        enter(netns)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("0.0.0.0", port))
        sock.listen(1)
        made.append(sock)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return made[0]


async def test_a_taken_port_costs_the_metadata_not_the_network(
        env: Env, backend: LinuxBridgeBackend) -> None:  # noqa: F811
    """Another server on every address's port 80 in the namespace: no proxy,
    but the port is still bound, served DHCP and reported up."""
    blocker = listener_everywhere(env.host_ns, 80)
    try:
        net, _ = await env.network("10.84.0.0/24")
        await booted_guest(env, net, "md-blocked")  # bound, up, leased
        assert backend.metadata.serving() == set()
    finally:
        blocker.close()
