"""A port's ``extra_dhcp_opts`` as dnsmasq options (``--dhcp-optsfile``).

Each port with options gets a dnsmasq tag, ``port-<id>``, set by its hosts
file lines; each option is a line ``tag:port-<id>,option:<name>,<value>``
(``option6:`` for ``ip_version`` 6; a numeric name is the option's code).
dnsmasq logs and skips a line it does not understand, so a wrong option name
costs only that option. The values cannot break out of their line: the API
refuses control characters in them (``validators.dhcp_options``).
"""
from __future__ import annotations

from typing import Any


def port_tag(port_id: str) -> str:
    return f"port-{port_id}"


def has_options(port: dict[str, Any]) -> bool:
    return any(opt.get("opt_value") is not None for opt in port.get("extra_dhcp_opts") or [])


def opts_text(ports: list[dict[str, Any]]) -> str:
    """The ``--dhcp-optsfile`` of ``ports`` (options without a value are unset)."""
    lines = []
    for port in sorted(ports, key=lambda p: p["id"]):
        for opt in port.get("extra_dhcp_opts") or []:
            if opt.get("opt_value") is None:
                continue
            name = str(opt["opt_name"])
            family = "option6" if opt.get("ip_version") == 6 else "option"
            key = name if name.isdigit() else f"{family}:{name}"
            lines.append(f"tag:{port_tag(port['id'])},{key},{opt['opt_value']}")
    return "".join(line + "\n" for line in lines)
