"""The ``fixed_ips`` filter of a port listing (Neutron's, with
``ip-substring-filtering``): ``?fixed_ips=ip_address=10.0.0.5``,
``?fixed_ips=subnet_id=<id>``, ``?fixed_ips=ip_address_substr=10.0``.

A port matches when one of its fixed IPs meets every kind given: its address
among the ``ip_address`` values, its subnet among the ``subnet_id`` values,
its address containing each ``ip_address_substr``. A value of another kind,
or none at all, matches nothing (it names no address).
"""
from __future__ import annotations

from typing import Callable

FixedIps = list[dict[str, str]]
KINDS = ("ip_address", "subnet_id", "ip_address_substr")


def fixed_ip_filter(values: list[str]) -> Callable[[FixedIps], bool]:
    """A test of a port's fixed IPs for the ``fixed_ips`` query values."""
    if not values:
        return lambda fixed: True
    asked: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for value in values:
        kind, _, wanted = value.partition("=")
        if kind not in asked:
            return lambda fixed: False
        asked[kind].append(wanted)

    def one(ip: dict[str, str]) -> bool:
        return ((not asked["ip_address"] or ip["ip_address"] in asked["ip_address"])
                and (not asked["subnet_id"] or ip["subnet_id"] in asked["subnet_id"])
                and all(part in ip["ip_address"] for part in asked["ip_address_substr"]))
    return lambda fixed: any(one(ip) for ip in fixed)
