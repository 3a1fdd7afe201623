"""The network info model compute keeps in the instance's info cache (seed 002).

A ``NetworkInfo`` is a list of VIF dicts, JSON-safe as they are, so it crosses
the bus and sits in the database without conversion.
"""
from __future__ import annotations

import json
from typing import Any, TypedDict


class FixedIP(TypedDict):
    """An address of the port on one subnet, with its floating IPs."""

    address: str
    type: str  # "fixed"
    version: int
    floating_ips: list[dict[str, Any]]


class Subnet(TypedDict):
    """A subnet of the VIF's network, with the port's addresses on it."""

    cidr: str
    version: int
    gateway: dict[str, Any]  # {} without a gateway
    dns: list[dict[str, Any]]
    routes: list[dict[str, Any]]
    ips: list[FixedIP]
    meta: dict[str, Any]


class NetworkMeta(TypedDict):
    injected: bool
    tenant_id: str | None
    mtu: int | None


class Network(TypedDict):
    """The network a VIF is on, and the bridge that carries it on a host."""

    id: str
    label: str
    bridge: str
    subnets: list[Subnet]
    meta: NetworkMeta


class VIF(TypedDict):
    """One virtual interface: a port as compute and the drivers see it
    (Nova's ``network.model.VIF``), JSON-safe as it is."""

    id: str
    address: str
    network: Network
    type: str
    details: dict[str, Any]
    devname: str
    ovs_interfaceid: str | None
    qbh_params: Any
    qbg_params: Any
    active: bool
    vnic_type: str
    profile: dict[str, Any]
    preserve_on_delete: bool
    meta: dict[str, Any]


def devname(port_id: str) -> str:
    """The tap device name Nova derives from a port id."""
    return ("tap" + port_id)[:14]


class NetworkInfo(list[VIF]):
    """VIFs of one instance, in request order."""

    def fixed_ips(self) -> list[FixedIP]:
        return [ip for vif in self for subnet in vif["network"]["subnets"]
                for ip in subnet.get("ips", [])]

    def floating_ips(self) -> list[dict[str, Any]]:
        return [fip for ip in self.fixed_ips() for fip in ip.get("floating_ips", [])]

    def json(self) -> str:
        return json.dumps(list(self))

    @classmethod
    def hydrate(cls, data: Any) -> "NetworkInfo":
        """From a cache value (list or its JSON text)."""
        if isinstance(data, str):
            data = json.loads(data) if data else []
        return cls(data or [])


def build_vif(port: dict[str, Any], fixed_ips: list[dict[str, str]], network: dict[str, Any],
              subnets: dict[str, dict[str, Any]], preserve_on_delete: bool) -> VIF:
    """A VIF from a port, its network and subnets (``info_cache.build_network_info_model``)."""
    by_subnet: dict[str, list[dict[str, Any]]] = {}
    for ip in fixed_ips:
        by_subnet.setdefault(ip["subnet_id"], []).append(ip)
    subnet_models: list[Subnet] = []
    for subnet_id, ips in by_subnet.items():
        subnet = subnets.get(subnet_id)
        if subnet is None:
            continue
        version = subnet["ip_version"]
        subnet_models.append({
            "cidr": subnet["cidr"], "version": version,
            "gateway": {"address": subnet["gateway_ip"], "type": "gateway", "version": version}
            if subnet["gateway_ip"] else {},
            "dns": [{"address": d, "type": "dns", "version": version}
                    for d in subnet["dns_nameservers"] or []],
            "routes": [{"cidr": r.get("destination"), "gateway": {"address": r.get("nexthop")}}
                       for r in subnet["host_routes"] or []],
            "ips": [{"address": ip["ip_address"], "type": "fixed", "version": version,
                     "floating_ips": []} for ip in ips],
            "meta": {"dhcp_server": None, "enable_dhcp": subnet["enable_dhcp"]},
        })
    return {
        "id": port["id"], "address": port["mac_address"],
        "network": {"id": network["id"], "label": network["name"] or network["id"],
                    "bridge": "brq" + network["id"][:11], "subnets": subnet_models,
                    "meta": {"injected": False, "tenant_id": network["project_id"],
                             "mtu": network["mtu"]}},
        "type": port["binding_vif_type"] if port["binding_host_id"] else "bridge",
        "details": port["binding_vif_details"] or {"port_filter": True},
        "devname": devname(port["id"]), "ovs_interfaceid": None,
        "qbh_params": None, "qbg_params": None,
        "active": port["status"] == "ACTIVE", "vnic_type": port["binding_vnic_type"],
        "profile": port["binding_profile"] or {}, "preserve_on_delete": preserve_on_delete,
        "meta": {},
    }
