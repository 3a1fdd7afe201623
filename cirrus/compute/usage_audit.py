"""The instance usage audit as ``os-instance-usage-audit-log`` reports it.

cirrus runs no audit task, so every compute host is one that has not run in
the period (Nova's answer when ``task_log`` holds nothing for it)."""
from __future__ import annotations

import datetime as dt
from typing import TypedDict


class AuditLog(TypedDict):
    """Nova's audit summary for one period."""

    hosts_not_run: list[str]
    log: dict[str, object]
    num_hosts: int
    num_hosts_done: int
    num_hosts_not_run: int
    num_hosts_running: int
    overall_status: str
    period_beginning: str
    period_ending: str
    total_errors: int
    total_instances: int


def _month_start(year: int, month: int) -> dt.datetime:
    """The 1st of ``month`` (which may be 0: December of the year before)."""
    return dt.datetime(year - 1, 12, 1) if month == 0 else dt.datetime(year, month, 1)


def last_completed_audit_period(before: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The last whole month ending before ``before`` (Nova's default ``month``
    period; a month ending exactly at ``before`` is not yet completed)."""
    end = dt.datetime(before.year, before.month, 1)
    if end >= before:
        end = _month_start(end.year, end.month - 1)
    return _month_start(end.year, end.month - 1), end


def parse_before(text: str) -> dt.datetime | None:
    """Nova's two timestamp forms, ``%Y-%m-%d %H:%M:%S[.%f]``; None otherwise
    (and for year 1, whose period would begin before the calendar does)."""
    form = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    try:
        parsed = dt.datetime.strptime(text, form)
    except ValueError:
        return None
    return parsed if parsed.year > 1 else None


def audit_log(hosts: list[str], before: dt.datetime) -> AuditLog:
    """The summary for the period before ``before``: no host has a task log."""
    begin, end = last_completed_audit_period(before)
    unique = sorted(set(hosts))
    done = "ALL" if not unique else f"0 of {len(unique)}"
    return AuditLog(hosts_not_run=unique, log={}, num_hosts=len(unique), num_hosts_done=0,
                    num_hosts_not_run=len(unique), num_hosts_running=0,
                    overall_status=f"{done} hosts done. 0 errors.",
                    period_beginning=str(begin), period_ending=str(end),
                    total_errors=0, total_instances=0)
