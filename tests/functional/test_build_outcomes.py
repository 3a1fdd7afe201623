"""Where the build follows seeds 000/004 on its failure paths and access IPs,
through the HTTP API with the fake driver's faults as data."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations
from cirrus.network import exception as nexc
from cirrus.network.auto_allocate import AUTO_NAME
from cirrus.virt import exception as vexc
from cirrus.virt.fake import FaultRule, fail_on_host
from tests.functional.servers import (build_events, create_server, db_count, fake_drivers,
                                      ports_of, server_body, upload_image, wait_for_status)


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


# -- (a) access IPs: the user's stay ------------------------------------------------
@pytest.mark.parametrize("settings_overrides", [{"default_access_ip_network_name": AUTO_NAME}])
async def test_a_users_access_ip_is_not_overwritten(demo: httpx.AsyncClient,
                                                    image: str) -> None:
    created = await create_server(demo, server_body(image, accessIPv4="192.0.2.10"))
    server = await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"})
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["accessIPv4"] == "192.0.2.10"
    assert server["accessIPv6"] == ""
    assert server["addresses"][AUTO_NAME][0]["addr"] != "192.0.2.10"


@pytest.mark.parametrize("settings_overrides", [{"default_access_ip_network_name": AUTO_NAME}])
async def test_access_ips_come_from_the_named_network_when_none_given(
        demo: httpx.AsyncClient, image: str) -> None:
    created = await create_server(demo, server_body(image))
    server = await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"})
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["accessIPv4"] == server["addresses"][AUTO_NAME][0]["addr"]


async def test_no_access_ip_network_named_leaves_them_empty(demo: httpx.AsyncClient,
                                                            image: str) -> None:
    created = await create_server(demo, server_body(image))
    server = await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"})
    assert (server["accessIPv4"], server["accessIPv6"]) == ("", "")


# -- (b) out of network: abort with seed 004's words, no reschedule ------------------
@pytest.mark.parametrize("error", [
    lambda i: nexc.NoMoreFixedIps(net="n-1"),
    lambda i: nexc.FixedIpLimitExceeded(),
    lambda i: nexc.NoMoreNetworks(),
    lambda i: nexc.IpAddressGenerationFailure(net_id="n-1"),
    lambda i: nexc.PortLimitExceeded(),
], ids=["NoMoreFixedIps", "FixedIpLimitExceeded", "NoMoreNetworks",
        "IpAddressGenerationFailure", "PortLimitExceeded"])
async def test_out_of_network_aborts_without_reschedule(cloud: Cloud, demo: httpx.AsyncClient,
                                                       admin: httpx.AsyncClient, image: str,
                                                       error: Any) -> None:
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(FaultRule(error=error))
    created = await create_server(demo, server_body(image))
    server = await wait_for_status(demo, created["id"], {"ERROR", "ACTIVE"})
    assert server["status"] == "ERROR"
    message = server["fault"]["message"]
    assert message.startswith(f"Build of instance {created['id']} aborted: Failed to allocate "
                              f"the network(s) with error ")
    assert message.endswith(", not rescheduling.")
    assert len(await build_events(admin, created["id"])) == 1  # one host tried
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []


# -- (c) a half-built guest that cannot be destroyed: abort --------------------------
async def test_a_failed_clean_up_of_a_failed_spawn_aborts(cloud: Cloud, demo: httpx.AsyncClient,
                                                         admin: httpx.AsyncClient,
                                                         image: str) -> None:
    """Seed 000: the spawn failed (which alone would reschedule) and destroying
    what it left failed too: no other host gets the build; ERROR with a fault."""
    for host, driver in fake_drivers(cloud).items():
        driver.faults["spawn"].append(fail_on_host(host))
        driver.faults["destroy"].append(FaultRule(
            error=lambda i: vexc.InstancePowerOffFailure(reason="stuck"), times=1))
    created = await create_server(demo, server_body(image))
    server = await wait_for_status(demo, created["id"], {"ERROR", "ACTIVE"})
    assert server["status"] == "ERROR"
    assert server["fault"]["message"] == (f"Build of instance {created['id']} aborted: Could not "
                                          f"clean up failed build, not rescheduling")
    events = await build_events(admin, created["id"])
    assert len(events) == 1 and events[0]["result"] == "Error"
    assert server["OS-EXT-STS:task_state"] is None
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []

