"""``GET /os-hypervisors/{id}/uptime`` (before 2.88), which ``openstack
hypervisor show`` reads."""
from __future__ import annotations

import re

import httpx

from cirrus.virt.driver import uptime_line

HYP = "/compute/v2.1/os-hypervisors"
# What python-openstackclient parses out of it.
OSC_UPTIME = re.compile(r"\s*(.+)\sup\s+(.+),\s+(.+)\susers?,\s+load average:\s(.+)")


def v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def test_uptime_before_2_88(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    node = (await admin.get(HYP)).json()["hypervisors"][0]
    resp = await admin.get(f"{HYP}/{node['id']}/uptime")
    assert resp.status_code == 200, resp.text
    hypervisor = resp.json()["hypervisor"]
    assert set(hypervisor) == {"id", "hypervisor_hostname", "state", "status", "uptime"}
    assert hypervisor["id"] == node["id"] and hypervisor["state"] == "up"
    assert OSC_UPTIME.match(hypervisor["uptime"])
    by_uuid = (await admin.get(HYP, headers=v("2.53"))).json()["hypervisors"][0]["id"]
    assert (await admin.get(f"{HYP}/{by_uuid}/uptime", headers=v("2.87"))).status_code == 200
    assert (await admin.get(f"{HYP}/{by_uuid}/uptime", headers=v("2.88"))).status_code == 404
    assert (await admin.get(f"{HYP}/9999/uptime")).status_code == 404
    assert (await demo.get(f"{HYP}/{node['id']}/uptime")).status_code == 403


async def test_no_uptime_while_the_service_is_down(admin: httpx.AsyncClient) -> None:
    node = (await admin.get(HYP)).json()["hypervisors"][0]
    resp = await admin.put("/compute/v2.1/os-services/force-down", json={
        "host": node["hypervisor_hostname"], "binary": "nova-compute", "forced_down": True},
        headers=v("2.11"))
    assert resp.status_code == 200, resp.text
    assert (await admin.get(f"{HYP}/{node['id']}/uptime")).status_code == 400


async def test_uptime_in_the_detail_views_from_2_88(admin: httpx.AsyncClient) -> None:
    for url in (f"{HYP}/detail", None):
        if url is None:
            ident = (await admin.get(HYP, headers=v("2.88"))).json()["hypervisors"][0]["id"]
            body = (await admin.get(f"{HYP}/{ident}", headers=v("2.88"))).json()
            hypervisors = [body["hypervisor"]]
        else:
            hypervisors = (await admin.get(url, headers=v("2.88"))).json()["hypervisors"]
        for hypervisor in hypervisors:
            assert OSC_UPTIME.match(hypervisor["uptime"])
    older = (await admin.get(f"{HYP}/detail", headers=v("2.87"))).json()["hypervisors"][0]
    assert "uptime" not in older
    # A host that is down has none.
    node = (await admin.get(HYP)).json()["hypervisors"][0]
    await admin.put("/compute/v2.1/os-services/force-down", json={
        "host": node["hypervisor_hostname"], "binary": "nova-compute", "forced_down": True},
        headers=v("2.11"))
    down = (await admin.get(f"{HYP}/detail", headers=v("2.88"))).json()["hypervisors"]
    assert {h["hypervisor_hostname"]: h["uptime"] for h in down}[node["hypervisor_hostname"]] is None


def test_the_uptime_line_reads_as_the_uptime_command() -> None:
    import time

    match = OSC_UPTIME.match(uptime_line(3 * 86400 + 4 * 3600 + 5 * 60, (0.5, 0.25, 0.0),
                                         time.localtime()))
    assert match is not None
    assert re.fullmatch(r"[\d.]+, [\d.]+, [\d.]+", match.group(4))
