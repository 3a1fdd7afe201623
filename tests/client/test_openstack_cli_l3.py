"""The ``openstack`` CLI on routers and floating IPs, as an admin (the
external network) and a user (router, interface, gateway, floating IP)
drive them."""
from __future__ import annotations

import uuid

from tests.client.conftest import RunningCloud


def test_router_and_floating_ip_with_the_cli(running: RunningCloud) -> None:
    tag = uuid.uuid4().hex[:6]
    public, private, router = f"public-{tag}", f"private-{tag}", f"router-{tag}"
    running.openstack("network", "create", "--external", public, cloud="cirrus-admin")
    running.openstack("subnet", "create", "--network", public, "--subnet-range",
                      "172.31.0.0/24", f"{public}-sub", cloud="cirrus-admin")
    running.openstack("network", "create", private)
    running.openstack("subnet", "create", "--network", private, "--subnet-range",
                      "10.96.0.0/24", f"{private}-sub")
    running.openstack("router", "create", router)
    running.openstack("router", "add", "subnet", router, f"{private}-sub")
    running.openstack("router", "set", "--external-gateway", public, router)
    shown = running.openstack("router", "show", router, "-f", "json")
    assert shown["external_gateway_info"]["network_id"] == \
        running.openstack("network", "show", public, "-f", "json")["id"]
    refused = running.openstack("router", "set", "--external-gateway", public, "--disable-snat",
                                router, check=False)
    assert refused.returncode != 0  # SNAT is the admin's to turn off

    port = running.openstack("port", "create", "--network", private, f"port-{tag}",
                             "-f", "json")
    fip = running.openstack("floating", "ip", "create", public, "-f", "json")
    assert fip["floating_ip_address"].startswith("172.31.0.")
    running.openstack("floating", "ip", "set", "--port", port["id"], fip["id"])
    shown = running.openstack("floating", "ip", "show", fip["id"], "-f", "json")
    assert shown["port_id"] == port["id"]
    assert shown["fixed_ip_address"] == port["fixed_ips"][0]["ip_address"]
    listed = running.openstack("floating", "ip", "list", "--port", port["id"], "-f", "json")
    assert [f["ID"] for f in listed] == [fip["id"]]

    busy = running.openstack("router", "delete", router, check=False)
    assert busy.returncode != 0  # it still has an interface
    running.openstack("floating", "ip", "unset", "--port", fip["id"])
    running.openstack("floating", "ip", "delete", fip["id"])
    running.openstack("router", "remove", "subnet", router, f"{private}-sub")
    running.openstack("router", "unset", "--external-gateway", router)
    running.openstack("router", "delete", router)
    assert all(r["Name"] != router for r in running.openstack("router", "list", "-f", "json"))
