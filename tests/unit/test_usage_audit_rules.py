"""Nova's monthly audit period and timestamp forms, as a table."""
from __future__ import annotations

import datetime as dt

import pytest

from cirrus.compute import usage_audit

D = dt.datetime


@pytest.mark.parametrize("before, begin, end", [
    (D(2026, 11, 25, 10), D(2026, 10, 1), D(2026, 11, 1)),
    (D(2026, 11, 1), D(2026, 9, 1), D(2026, 10, 1)),  # a month ending now is not completed
    (D(2026, 11, 1, 0, 0, 1), D(2026, 10, 1), D(2026, 11, 1)),
    (D(2026, 1, 1), D(2025, 11, 1), D(2025, 12, 1)),
    (D(2026, 1, 5), D(2025, 12, 1), D(2026, 1, 1)),
    (D(2026, 2, 5), D(2026, 1, 1), D(2026, 2, 1)),
    (D(2, 1, 1), D(1, 11, 1), D(1, 12, 1)),
])
def test_last_completed_audit_period(before: D, begin: D, end: D) -> None:
    assert usage_audit.last_completed_audit_period(before) == (begin, end)


@pytest.mark.parametrize("text, parsed", [
    ("2026-01-02 03:04:05", D(2026, 1, 2, 3, 4, 5)),
    ("2026-01-02 03:04:05.25", D(2026, 1, 2, 3, 4, 5, 250000)),
    ("invalid_time", None), ("2026-01-02", None), ("2026-13-02 03:04:05", None),
    ("2026-01-02T03:04:05", None), ("0001-01-01 00:00:00", None), ("", None),
])
def test_parse_before(text: str, parsed: D | None) -> None:
    assert usage_audit.parse_before(text) == parsed


@pytest.mark.parametrize("hosts, status", [
    ([], "ALL hosts done. 0 errors."),
    (["c2", "c1", "c1"], "0 of 2 hosts done. 0 errors."),
])
def test_audit_log_without_task_logs(hosts: list[str], status: str) -> None:
    log = usage_audit.audit_log(hosts, D(2026, 3, 4))
    assert log["overall_status"] == status
    assert log["hosts_not_run"] == sorted(set(hosts))
    assert log["num_hosts"] == log["num_hosts_not_run"] == len(set(hosts))
    assert (log["period_beginning"], log["period_ending"]) == ("2026-02-01 00:00:00",
                                                              "2026-03-01 00:00:00")
