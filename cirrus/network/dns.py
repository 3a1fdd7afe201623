"""``dns-integration`` without an external DNS: the names a port's addresses
get (``dns_assignment``), which the host backend's dnsmasq hands out too.

A port with a ``dns_name`` is that host on every one of its addresses;
without one, each address is ``host-<address with dashes>``. The FQDN adds
the cloud's DNS domain (``settings.dns_domain``) unless the name is an FQDN
already (it ends with a dot).
"""
from __future__ import annotations

from typing import TypedDict

DEFAULT_DOMAIN = "openstacklocal."


class DnsAssignment(TypedDict):
    hostname: str
    ip_address: str
    fqdn: str


def default_hostname(address: str) -> str:
    """Neutron's name of an address of a port without a ``dns_name``."""
    return "host-" + address.replace(".", "-").replace(":", "-")


def hostname(dns_name: str, address: str) -> str:
    """The host name of ``address`` on a port named ``dns_name`` ("" for none)."""
    return dns_name.rstrip(".").split(".")[0] if dns_name else default_hostname(address)


def _domain(domain: str) -> str:
    return domain if not domain or domain.endswith(".") else domain + "."


def dns_assignment(dns_name: str, fixed_ips: list[dict[str, str]],
                   domain: str = DEFAULT_DOMAIN) -> list[DnsAssignment]:
    """The ``dns_assignment`` of a port named ``dns_name`` with ``fixed_ips``."""
    domain = _domain(domain)
    out: list[DnsAssignment] = []
    for ip in fixed_ips:
        address = ip["ip_address"]
        name = dns_name or default_hostname(address)
        if name.endswith("."):
            fqdn = name
        else:
            fqdn = f"{name}.{domain}" if domain else name
        out.append({"hostname": name, "ip_address": address, "fqdn": fqdn})
    return out
