"""A real guest behind a router (issue 21): reached from outside through its
floating IP, reaching out through SNAT, its security group still in force,
and its metadata read through the router's subnet.

The outside world is the host namespace: as devstack's ``br-ex``, the
external network's bridge holds the external subnet's gateway there, so the
host namespace is the upstream router every external address is reached
from. The tenant subnet's bridge holds only the network's DHCP address (the
router holds the gateway), so the host reaches a guest's floating IP only
through the router's DNAT.
"""
from __future__ import annotations

import re
import subprocess
import time
from typing import Any, Callable, Iterator

import pytest

from tests.realvm.conftest import MARKER, RealCloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]

OUTSIDE_GW = "203.0.113.1"  # the external subnet's gateway: the host namespace
ECHO_PORT, GUEST_PORT = 8081, 8080
# The guest serves a page on GUEST_PORT and asks the outside, every 2 s, which
# address it sees the guest connect from.
USER_DATA = f"""#!/bin/sh
mkdir -p /www && echo FIP-TCP-OK > /www/index.html
httpd -p {GUEST_PORT} -h /www
while true; do
  echo "seen-as $(timeout 3 wget -q -O - http://{OUTSIDE_GW}:{ECHO_PORT}/ 2>/dev/null)"
  sleep 2
done
"""
# In the host namespace: answers every request with the caller's address.
ECHO_SERVER = f"""
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = self.client_address[0].encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("{OUTSIDE_GW}", {ECHO_PORT}), H).serve_forever()
"""


def _wait(what: str, check: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def _answers_ping(cloud: RealCloud, address: str) -> bool:
    return cloud.ns("ping", "-c", "1", "-W", "1", address).returncode == 0


def _answers_http(cloud: RealCloud, address: str) -> bool:
    got = cloud.ns("python3", "-c", "import urllib.request,sys; print(urllib.request.urlopen("
                   f"'http://{address}:{GUEST_PORT}/', timeout=2).read().decode())",
                   timeout=15)
    return got.returncode == 0 and "FIP-TCP-OK" in got.stdout


def _seen_as(cloud: RealCloud, server: str) -> str | None:
    found = re.findall(r"user-data: seen-as (\S+)", cloud.console(server))
    return found[-1] if found else None


@pytest.fixture(scope="module")
def routed(real_cloud: RealCloud) -> Iterator[dict[str, Any]]:
    """An external network, a router joining it to a tenant subnet, and a
    guest on that subnet in a group letting ICMP and its port in."""
    c = real_cloud
    c.openstack("network", "create", "--external", "rv-public", cloud="cirrus-admin")
    c.openstack("subnet", "create", "--network", "rv-public", "--subnet-range", "203.0.113.0/24",
                "--gateway", OUTSIDE_GW, "--no-dhcp", "rv-public-subnet", cloud="cirrus-admin")
    c.openstack("network", "create", "rv-inner")
    c.openstack("subnet", "create", "--network", "rv-inner", "--subnet-range", "10.78.0.0/24",
                "rv-inner-subnet")
    router = c.openstack("router", "create", "rv-router", "-f", "json")
    c.openstack("router", "set", "--external-gateway", "rv-public", "rv-router")
    c.openstack("router", "add", "subnet", "rv-router", "rv-inner-subnet")
    c.openstack("security", "group", "create", "rv-fip")
    c.openstack("security", "group", "rule", "create", "--ingress", "--protocol", "tcp",
                "--dst-port", str(GUEST_PORT), "rv-fip")
    icmp = c.openstack("security", "group", "rule", "create", "--ingress", "--protocol", "icmp",
                       "rv-fip", "-f", "json")
    echo = subprocess.Popen(["ip", "netns", "exec", c.netns, "python3", "-c", ECHO_SERVER],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    user_data = c.state_dir.parent / "fip-user-data.sh"
    user_data.write_text(USER_DATA)
    try:
        server = c.openstack("server", "create", "--flavor", "rv.tiny", "--image", "cirrus-tiny",
                             "--network", "rv-inner", "--security-group", "rv-fip",
                             "--user-data", str(user_data), "--wait", "rv-fip-vm", "-f", "json",
                             timeout=300)
        gateway = c.openstack("router", "show", "rv-router", "-f", "json")
        external = gateway["external_gateway_info"]["external_fixed_ips"][0]["ip_address"]
        yield {"router": router, "server": server, "icmp_rule": icmp["id"],
               "gateway_address": external}
    finally:
        echo.kill()
        echo.wait()
        c.openstack("server", "delete", "--wait", "rv-fip-vm", check=False, timeout=180)
        # Undone in order, so the router's namespace goes while the cloud runs.
        c.openstack("router", "remove", "subnet", "rv-router", "rv-inner-subnet", check=False)
        c.openstack("router", "unset", "--external-gateway", "rv-router", check=False)
        c.openstack("router", "delete", "rv-router", check=False)
        _wait("the router's namespace to go", lambda: f"qrouter-{router['id']}" not in
              subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout,
              timeout=30)


def test_guest_behind_a_router_reads_metadata_and_leaves_through_snat(
        real_cloud: RealCloud, routed: dict[str, Any]) -> None:
    server = routed["server"]
    console = real_cloud.wait_console("rv-fip-vm", re.escape(MARKER))
    # DHCP routed 169.254.169.254 through the bridge's DHCP address, not the router.
    assert f"metadata service: instance-id: {server['id']}" in console, console
    _wait("the guest's requests to leave as the router's gateway address",
          lambda: _seen_as(real_cloud, "rv-fip-vm") == routed["gateway_address"])


def test_floating_ip_reaches_the_guest_until_it_is_disassociated(
        real_cloud: RealCloud, routed: dict[str, Any]) -> None:
    c = real_cloud
    fip = c.openstack("floating", "ip", "create", "rv-public", "-f", "json")
    address = fip["floating_ip_address"]
    assert not _answers_ping(c, address)  # nothing behind it yet
    c.openstack("server", "add", "floating", "ip", "rv-fip-vm", address)
    _wait("the floating IP to answer ping", lambda: _answers_ping(c, address))
    assert _answers_http(c, address)
    _wait("the guest to leave as its floating IP", lambda: _seen_as(c, "rv-fip-vm") == address)

    # Its security group still applies to what comes in through the floating IP.
    c.openstack("security", "group", "rule", "delete", routed["icmp_rule"])
    _wait("ping to stop once ICMP is no longer allowed", lambda: not _answers_ping(c, address))
    assert _answers_http(c, address)  # TCP to its port is still allowed
    rule = c.openstack("security", "group", "rule", "create", "--ingress", "--protocol", "icmp",
                       "rv-fip", "-f", "json")
    routed["icmp_rule"] = rule["id"]
    _wait("ping to come back", lambda: _answers_ping(c, address))

    c.openstack("server", "remove", "floating", "ip", "rv-fip-vm", address)
    _wait("the floating IP to go dark", lambda: not _answers_ping(c, address), timeout=15)
    assert not _answers_http(c, address)
    c.openstack("floating", "ip", "delete", address)
