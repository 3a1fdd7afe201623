"""os-instance-usage-audit-log over HTTP: Nova's summary with no audit task
run (every compute host not run), for the last month or one before a time."""
from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import httpx
import pytest

LOG = "/compute/v2.1/os-instance_usage_audit_log"  # Nova's path has underscores
KEYS = {"hosts_not_run", "log", "num_hosts", "num_hosts_done", "num_hosts_not_run",
        "num_hosts_running", "overall_status", "period_beginning", "period_ending",
        "total_errors", "total_instances"}


async def _compute_hosts(admin: httpx.AsyncClient) -> list[str]:
    services = (await admin.get("/compute/v2.1/os-services",
                                params={"binary": "nova-compute"})).json()["services"]
    return sorted(s["host"] for s in services)


async def test_list_reports_every_compute_host_not_run(admin: httpx.AsyncClient) -> None:
    resp = await admin.get(LOG)
    assert resp.status_code == 200, resp.text
    log = resp.json()["instance_usage_audit_logs"]
    hosts = await _compute_hosts(admin)
    assert set(log) == KEYS
    assert sorted(log["hosts_not_run"]) == hosts and log["log"] == {}
    assert (log["num_hosts"], log["num_hosts_not_run"], log["num_hosts_done"],
            log["num_hosts_running"], log["total_errors"], log["total_instances"]) == (
        len(hosts), len(hosts), 0, 0, 0, 0)
    assert log["overall_status"] == f"0 of {len(hosts)} hosts done. 0 errors."
    end = dt.datetime.strptime(log["period_ending"], "%Y-%m-%d %H:%M:%S")
    begin = dt.datetime.strptime(log["period_beginning"], "%Y-%m-%d %H:%M:%S")
    assert end.day == begin.day == 1 and end < dt.datetime.utcnow()
    assert (end.year * 12 + end.month) - (begin.year * 12 + begin.month) == 1


@pytest.mark.parametrize("before, begin, end", [
    ("2026-03-15 10:00:00", "2026-02-01 00:00:00", "2026-03-01 00:00:00"),
    ("2026-01-01 00:00:00.5", "2025-12-01 00:00:00", "2026-01-01 00:00:00"),
    ("2026-01-01 00:00:00", "2025-11-01 00:00:00", "2025-12-01 00:00:00"),
])
async def test_show_is_the_period_before_the_timestamp(admin: httpx.AsyncClient, before: str,
                                                      begin: str, end: str) -> None:
    resp = await admin.get(f"{LOG}/{quote(before)}")
    assert resp.status_code == 200, resp.text
    log = resp.json()["instance_usage_audit_log"]
    assert set(log) == KEYS
    assert (log["period_beginning"], log["period_ending"]) == (begin, end)
    assert sorted(log["hosts_not_run"]) == await _compute_hosts(admin)


@pytest.mark.parametrize("before", ["invalid_time", "2026-02-30 00:00:00",
                                    "0001-01-01 00:00:00", "2026-01-01T00:00:00"])
async def test_an_invalid_timestamp_is_400(admin: httpx.AsyncClient, before: str) -> None:
    resp = await admin.get(f"{LOG}/{quote(before)}")
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"].startswith("Invalid timestamp for date ")


async def test_admin_only(demo: httpx.AsyncClient) -> None:
    assert (await demo.get(LOG)).status_code == 403
    assert (await demo.get(f"{LOG}/{quote('2026-01-01 00:00:00')}")).status_code == 403
