"""GET /servers/{id}/diagnostics over HTTP (admin): Nova's standard format
from 2.48 (Tempest's schema), the driver's counters before it; 409 for a
guest that is not running or a server on no host, 501 for a driver without
diagnostics, 403 for a project member."""
from __future__ import annotations

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.virt import exception as vexc
from cirrus.virt.fake import FaultRule, fail_for_instance
from tests.functional.actions import act
from tests.functional.servers import (active_server, create_server, fake_drivers, ports_of,
                                      server_body, upload_image, wait_for_status)

SERVERS = "/compute/v2.1/servers"
V248 = {"OpenStack-API-Version": "compute 2.48"}
KEYS = {"state", "driver", "hypervisor", "hypervisor_os", "uptime", "config_drive", "num_cpus",
        "num_nics", "num_disks", "memory_details", "cpu_details", "nic_details", "disk_details"}
NIC_KEYS = {"mac_address", "rx_octets", "rx_errors", "rx_drop", "rx_packets", "rx_rate",
            "tx_octets", "tx_errors", "tx_drop", "tx_packets", "tx_rate"}
DISK_KEYS = {"read_bytes", "read_requests", "write_bytes", "write_requests", "errors_count"}


async def _flavor(admin: httpx.AsyncClient, flavor_id: str) -> dict:
    return (await admin.get(f"/compute/v2.1/flavors/{flavor_id}")).json()["flavor"]


async def test_standard_diagnostics_from_248(admin: httpx.AsyncClient,
                                             demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    resp = await admin.get(f"{SERVERS}/{server}/diagnostics", headers=V248)
    assert resp.status_code == 200, resp.text
    diags = resp.json()
    flavor = await _flavor(admin, "1")
    assert set(diags) == KEYS
    assert (diags["state"], diags["driver"], diags["config_drive"]) == ("running", "libvirt", False)
    assert isinstance(diags["uptime"], int) and diags["uptime"] >= 0
    assert diags["memory_details"] == {"maximum": flavor["ram"], "used": flavor["ram"]}
    assert diags["num_cpus"] == len(diags["cpu_details"]) == flavor["vcpus"]
    assert [c["id"] for c in diags["cpu_details"]] == list(range(flavor["vcpus"]))
    macs = [p["mac_address"] for p in await ports_of(admin, server)]
    assert [n["mac_address"] for n in diags["nic_details"]] == macs and diags["num_nics"] == 1
    assert all(set(n) == NIC_KEYS for n in diags["nic_details"])
    assert diags["num_disks"] == 1 and set(diags["disk_details"][0]) == DISK_KEYS


async def test_driver_counters_below_248(admin: httpx.AsyncClient,
                                         demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    resp = await admin.get(f"{SERVERS}/{server}/diagnostics",
                           headers={"OpenStack-API-Version": "compute 2.47"})
    assert resp.status_code == 200, resp.text
    counters = resp.json()
    ram = (await _flavor(admin, "1"))["ram"]
    assert counters["memory"] == ram * 1024 and counters["cpu0_time"] == 0
    assert {"vda_read", "vda_read_req", "vda_write", "vda_write_req", "vda_errors",
            "nic0_rx", "nic0_tx_drop"} <= set(counters)
    assert all(isinstance(v, int) for v in counters.values())


async def test_a_guest_that_is_not_running_is_409(admin: httpx.AsyncClient,
                                                  demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    assert (await act(demo, server, {"os-stop": None})).status_code == 202
    await wait_for_status(demo, server, {"SHUTOFF"})
    for headers in (V248, {}):
        resp = await admin.get(f"{SERVERS}/{server}/diagnostics", headers=headers)
        assert resp.status_code == 409, resp.text
        assert "while it is in power state shutdown" in resp.json()["conflictingRequest"]["message"]


async def test_a_vanished_guest_is_409(cloud: Cloud, admin: httpx.AsyncClient,
                                       demo: httpx.AsyncClient) -> None:
    """No guest on the host is Nova's NOSTATE: not running (its message names
    the power state the database holds)."""
    server = await active_server(demo)
    for driver in fake_drivers(cloud).values():
        driver.instances.pop(server, None)
    resp = await admin.get(f"{SERVERS}/{server}/diagnostics", headers=V248)
    assert resp.status_code == 409, resp.text
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'get_diagnostics' instance {server} while it is in power state running")


async def test_a_server_on_no_host_is_409(cloud: Cloud, admin: httpx.AsyncClient,
                                          demo: httpx.AsyncClient) -> None:
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(fail_for_instance("broken"))
    image = await upload_image(demo)
    server = (await create_server(demo, server_body(image, name="broken")))["id"]
    await wait_for_status(demo, server, {"ERROR"})
    resp = await admin.get(f"{SERVERS}/{server}/diagnostics", headers=V248)
    assert resp.status_code == 409, resp.text
    assert resp.json()["conflictingRequest"]["message"] == f"Instance {server} is not ready"


async def test_a_driver_without_diagnostics_is_501(cloud: Cloud, admin: httpx.AsyncClient,
                                                   demo: httpx.AsyncClient) -> None:
    def unsupported(instance: dict) -> BaseException:
        return vexc.DriverNotImplemented(operation="get_instance_diagnostics")
    for driver in fake_drivers(cloud).values():
        driver.faults["get_instance_diagnostics"].append(FaultRule(error=unsupported))
    server = await active_server(demo)
    resp = await admin.get(f"{SERVERS}/{server}/diagnostics", headers=V248)
    assert resp.status_code == 501 and "notImplemented" in resp.json(), resp.text


@pytest.mark.parametrize("headers", [V248, {}])
async def test_admin_only_and_unknown_server_404(admin: httpx.AsyncClient,
                                                 demo: httpx.AsyncClient,
                                                 headers: dict[str, str]) -> None:
    server = await active_server(demo)
    assert (await demo.get(f"{SERVERS}/{server}/diagnostics", headers=headers)).status_code == 403
    missing = await admin.get(f"{SERVERS}/{'0' * 8}-0000-4000-8000-{'0' * 12}/diagnostics",
                              headers=headers)
    assert missing.status_code == 404 and "itemNotFound" in missing.json()
