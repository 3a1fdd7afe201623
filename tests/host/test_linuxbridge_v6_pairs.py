"""The linuxbridge backend's IPv6 address modes and allowed address pairs,
on real bridges, dnsmasq and nftables (see test_linuxbridge.py for the
namespaces that play the host and its guests)."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network.host_view import bridge_name
from tests.host.netns import eventually, sh
from tests.host.test_linuxbridge import CTX, HOST, PROJECT, Env, env  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


async def _port(env: Env, net: dict[str, Any], groups: list[str], **extra: Any) -> dict[str, Any]:
    def create(conn: Any) -> dict[str, Any]:
        row = port_db.create_port(conn, CTX, {
            "network_id": net["id"], "project_id": PROJECT, "security_groups": groups,
            "device_id": str(uuid.uuid4()), "device_owner": "compute:nova",
            "binding_host_id": HOST, **extra}, env.settings.base_mac)
        row["fixed_ips"] = port_db.fixed_ips_of(conn, [row["id"]])[row["id"]]
        return row
    return await env.db.run(create)


async def _guest_addresses(ns: str) -> str:
    return (await sh("ip", "-n", ns, "-6", "-o", "addr", "show", "dev", "eth0")).stdout


@pytest.mark.parametrize("mode", ["slaac", "dhcpv6-stateless"])
async def test_guests_configure_their_eui64_address_from_the_bridge(env: Env, mode: str) -> None:
    await env.start_backend()
    net, _ = await env.network("10.93.0.0/24")
    v6 = await env.db.run(net_db.create_subnet, CTX, {
        "network_id": net["id"], "cidr": "fd00:93::/64", "ipv6_ra_mode": mode,
        "ipv6_address_mode": mode, "project_id": PROJECT})
    port = await _port(env, net, [])
    [address] = [ip["ip_address"] for ip in port["fixed_ips"] if ip["subnet_id"] == v6["id"]]
    assert env.binder is not None
    await env.binder.bound(port)
    guest = env.guest(port)
    await guest.plug(bridge_name(net["id"]))

    async def configured() -> bool:
        return address in await _guest_addresses(guest.ns)
    # The kernel's SLAAC from dnsmasq's router advertisements gives the
    # address the IPAM recorded, which anti-spoofing lets through.
    assert await eventually(configured, 30), await _guest_addresses(guest.ns)
    assert "fd00:93::1/64" in await env.host("ip", "-o", "addr", "show", "dev",
                                             bridge_name(net["id"]))


async def test_an_allowed_address_pair_may_send_and_others_may_not(env: Env) -> None:
    await env.start_backend()
    net, _ = await env.network("10.94.0.0/24")
    group = await env.group("pairs")  # egress to anywhere, as Neutron's new groups
    port = await _port(env, net, [group],
                       allowed_address_pairs=[{"ip_address": "10.94.0.250"}])
    assert env.binder is not None
    await env.binder.bound(port)
    guest = env.guest(port)
    await guest.plug(bridge_name(net["id"]))
    assert await env.wait_up(port["id"])
    own = port["fixed_ips"][0]["ip_address"]
    for address in (own, "10.94.0.250", "10.94.0.251"):
        await guest.configure(address, 24)
    assert await guest.ping("10.94.0.1", source=own)
    assert await guest.ping("10.94.0.1", source="10.94.0.250")   # the pair
    assert not await guest.ping("10.94.0.1", source="10.94.0.251")  # no pair: spoofing
    counters = await env.host("nft", "list", "chain", "bridge", "cirrus", f"spoof-{port['id']}")
    assert "10.94.0.250" in counters


async def test_a_ports_extra_dhcp_options_reach_its_guest(env: Env) -> None:
    await env.start_backend()
    net, _ = await env.network("10.97.0.0/24")
    port = await _port(env, net, [], port_security_enabled=False, extra_dhcp_opts=[
        {"opt_name": "ntp-server", "opt_value": "192.0.2.123"}])
    other = await _port(env, net, [], port_security_enabled=False)
    assert env.binder is not None
    for p in (port, other):
        await env.binder.bound(p)
    seen = {}
    for p in (port, other):
        guest = env.guest(p)
        await guest.plug(bridge_name(net["id"]))
        out = env.workdir / f"{p['id']}.ntp"
        script = env.workdir / f"{p['id']}.sh"
        script.write_text(f"#!/bin/sh\n[ \"$1\" = bound ] && echo \"ntp=$ntpsrv\" > {out}\nexit 0\n")
        script.chmod(0o755)
        await sh("ip", "netns", "exec", guest.ns, "busybox", "udhcpc", "-i", "eth0", "-n", "-q",
                 "-t", "5", "-T", "1", "-O", "ntpsrv", "-s", str(script), timeout=30)
        seen[p["id"]] = out.read_text().strip()
    assert seen == {port["id"]: "ntp=192.0.2.123", other["id"]: "ntp="}
