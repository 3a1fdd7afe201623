"""The OpenStack-format metadata of one instance (Nova's ``api/metadata/base.py``).

``meta_data.json``, ``network_data.json``, ``vendor_data*.json`` and the user
data, from the instance row and its network info, as both the config drive
and the metadata service serve them; the versions each file appeared in.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any, Mapping, Sequence

from cirrus.network.model import VIF

# OpenStack metadata versions, oldest first (Nova's FOLSOM … VICTORIA), and
# the version each file first appeared in; ``latest`` has them all.
OPENSTACK_VERSIONS = ("2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15", "2016-06-30",
                      "2016-10-06", "2017-02-22", "2018-08-27", "2020-10-14")
LATEST = "latest"
FILE_SINCE = {
    "meta_data.json": "2012-08-10",
    "user_data": "2012-08-10",
    "password": "2013-04-04",
    "vendor_data.json": "2013-10-17",
    "network_data.json": "2015-10-15",
    "vendor_data2.json": "2016-10-06",
}


def files_of(version: str) -> list[str]:
    """The files of OpenStack metadata ``version`` (a known one or ``latest``)."""
    return sorted(name for name, since in FILE_SINCE.items()
                  if version == LATEST or since <= version)


def user_data(instance: Mapping[str, Any]) -> bytes | None:
    """The instance's user data as the guest gets it (the API keeps it in
    base64; anything that is not base64 is served as it was given)."""
    raw: str | None = instance.get("user_data")
    if not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw.encode()


def meta_data(instance: Mapping[str, Any], files: list[dict[str, str]],
              admin_password: str | None) -> dict[str, Any]:
    """``meta_data.json``: identity, keys, metadata and (config drive only)
    injected files and the admin password."""
    data: dict[str, Any] = {
        "uuid": instance["uuid"], "name": instance.get("display_name", ""),
        "hostname": instance.get("hostname") or instance["uuid"],
        "launch_index": instance.get("launch_index", 0),
        "availability_zone": instance.get("availability_zone"),
        "project_id": instance.get("project_id"),
        "meta": instance.get("metadata") or {}, "files": files, "devices": [],
    }
    if instance.get("key_data"):
        name = instance.get("key_name") or "key"
        data["public_keys"] = {name: instance["key_data"]}
        data["keys"] = [{"name": name, "type": "ssh", "data": instance["key_data"]}]
    if admin_password:
        data["admin_pass"] = admin_password
    return data


def network_data(network_info: Sequence[VIF] | None) -> dict[str, Any]:
    """``network_data.json``: links (one per VIF), networks (one per fixed
    address) and DNS services."""
    links: list[dict[str, Any]] = []
    networks: list[dict[str, Any]] = []
    services: list[dict[str, Any]] = []
    for vif in network_info or []:
        links.append({"id": vif["devname"], "vif_id": vif["id"], "type": "bridge",
                      "ethernet_mac_address": vif["address"],
                      "mtu": (vif["network"].get("meta") or {}).get("mtu")})
        for subnet in vif["network"]["subnets"]:
            for ip in subnet.get("ips", []):
                dhcp = (subnet.get("meta") or {}).get("enable_dhcp")
                v = subnet.get("version", 4)
                networks.append({"id": f"network{len(networks)}", "link": vif["devname"],
                                 "network_id": vif["network"]["id"],
                                 "type": f"ipv{v}_dhcp" if dhcp else f"ipv{v}",
                                 "ip_address": ip["address"], "netmask": subnet["cidr"]})
            services += [{"type": "dns", "address": d["address"]} for d in subnet.get("dns", [])]
    return {"links": links, "networks": networks, "services": services}


def vendor_data() -> dict[str, Any]:
    """``vendor_data.json`` and ``vendor_data2.json``: cirrus has no vendor
    data providers, so both are empty objects (Nova's with none configured)."""
    return {}
