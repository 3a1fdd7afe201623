"""Server views: the JSON a client sees for an instance, per microversion."""
from __future__ import annotations

import hashlib
from typing import Any

from cirrus.compute.states import status_of
from cirrus.db.base import isotime

Version = tuple[int, int]


def links(base: str, kind: str, ident: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/{kind}/{ident}"},
            {"rel": "bookmark", "href": f"{base}/compute/{kind}/{ident}"}]


def host_id(project_id: str, host: str | None) -> str:
    """Nova's obfuscated host id: same host + project → same value."""
    if not host:
        return ""
    return hashlib.sha224((project_id + host).encode()).hexdigest()


def addresses(network_info: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for vif in network_info or []:
        net = vif.get("network") or {}
        label = net.get("label") or net.get("id") or "network"
        entries = out.setdefault(label, [])
        for subnet in net.get("subnets", []):
            for ip in subnet.get("ips", []):
                entries.append({"version": ip.get("version", 4), "addr": ip["address"],
                                "OS-EXT-IPS:type": ip.get("type", "fixed"),
                                "OS-EXT-IPS-MAC:mac_addr": vif.get("address")})
                for fip in ip.get("floating_ips", []):
                    entries.append({"version": 4, "addr": fip["address"],
                                    "OS-EXT-IPS:type": "floating",
                                    "OS-EXT-IPS-MAC:mac_addr": vif.get("address")})
    return out


def flavor_view(base: str, flavor: dict[str, Any], version: Version) -> dict[str, Any]:
    if version >= (2, 47):
        return {"vcpus": flavor["vcpus"], "ram": flavor["memory_mb"], "disk": flavor["root_gb"],
                "ephemeral": flavor.get("ephemeral_gb", 0), "swap": flavor.get("swap", 0),
                "original_name": flavor["name"], "extra_specs": flavor.get("extra_specs") or {}}
    return {"id": flavor["flavorid"], "links": [{"rel": "bookmark",
                                                "href": f"{base}/compute/flavors/{flavor['flavorid']}"}]}


def image_view(base: str, image_ref: str | None) -> Any:
    if not image_ref:
        return ""  # booted from volume
    return {"id": image_ref, "links": [{"rel": "bookmark", "href": f"{base}/compute/images/{image_ref}"}]}


def fault_view(fault: dict[str, Any] | None, is_admin: bool) -> dict[str, Any] | None:
    if not fault:
        return None
    out = {"code": fault["code"], "created": isotime(fault["created_at"]), "message": fault["message"]}
    if is_admin or fault["code"] != 500:
        out["details"] = fault.get("details") or fault["message"]
    return out


def basic(base: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["uuid"], "name": row["display_name"],
            "links": links(base, "servers", row["uuid"])}


def detail(base: str, row: dict[str, Any], version: Version, *, is_admin: bool,
           network_info: list[dict[str, Any]], fault: dict[str, Any] | None) -> dict[str, Any]:
    """The full server body of GET /servers/{id} and /servers/detail."""
    status = status_of(row["vm_state"], row["task_state"])
    server: dict[str, Any] = {
        "id": row["uuid"], "name": row["display_name"], "status": status,
        "tenant_id": row["project_id"], "user_id": row["user_id"],
        "metadata": row["metadata"] or {}, "hostId": host_id(row["project_id"], row["host"]),
        "image": image_view(base, row["image_ref"]),
        "flavor": flavor_view(base, row["flavor"], version),
        "created": isotime(row["created_at"]), "updated": isotime(row["updated_at"] or row["created_at"]),
        "addresses": addresses(network_info),
        "accessIPv4": row["access_ip_v4"] or "", "accessIPv6": row["access_ip_v6"] or "",
        "links": links(base, "servers", row["uuid"]),
        "OS-DCF:diskConfig": "MANUAL",
        "progress": row["progress"] or 0,
        "OS-EXT-AZ:availability_zone": row["availability_zone"] or "",
        "config_drive": "True" if row["config_drive"] else "",
        "key_name": row["key_name"],
        "OS-SRV-USG:launched_at": isotime(row["launched_at"]),
        "OS-SRV-USG:terminated_at": isotime(row["terminated_at"]),
        "OS-EXT-STS:task_state": row["task_state"],
        "OS-EXT-STS:vm_state": row["vm_state"],
        "OS-EXT-STS:power_state": row["power_state"],
        "os-extended-volumes:volumes_attached": [],
    }
    server["security_groups"] = [{"name": n} for n in (row["security_groups"] or [])]
    if status in ("ERROR", "DELETED") and fault:
        server["fault"] = fault_view(fault, is_admin)
    if is_admin:
        server.update({
            "OS-EXT-SRV-ATTR:host": row["host"],
            "OS-EXT-SRV-ATTR:hypervisor_hostname": row["node"],
            "OS-EXT-SRV-ATTR:instance_name": f"instance-{row['id']:08x}",
        })
        if version >= (2, 3):
            server.update({
                "OS-EXT-SRV-ATTR:reservation_id": row["reservation_id"],
                "OS-EXT-SRV-ATTR:launch_index": row["launch_index"],
                "OS-EXT-SRV-ATTR:hostname": row["hostname"],
                "OS-EXT-SRV-ATTR:kernel_id": (row["system_metadata"] or {}).get("image_kernel_id", ""),
                "OS-EXT-SRV-ATTR:ramdisk_id": (row["system_metadata"] or {}).get("image_ramdisk_id", ""),
                "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                "OS-EXT-SRV-ATTR:user_data": row["user_data"],
            })
    elif version >= (2, 90):
        server["OS-EXT-SRV-ATTR:hostname"] = row["hostname"]
    if version >= (2, 9):
        server["locked"] = bool(row["locked"])
    if version >= (2, 16) and row["host"]:
        server["host_status"] = "UP" if is_admin else ""
    if version >= (2, 19):
        server["description"] = row["display_description"]
    if version >= (2, 26):
        server["tags"] = row["tags"] or []
    if version >= (2, 73):
        server["locked_reason"] = None
    if version >= (2, 96):
        server["pinned_availability_zone"] = None
    return server
