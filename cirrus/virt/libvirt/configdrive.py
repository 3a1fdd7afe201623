"""The config drive: an ISO 9660 volume labelled ``config-2`` in OpenStack's layout.

``openstack/latest/meta_data.json`` (uuid, name, hostname, keys, meta, files,
admin_pass), ``user_data``, ``network_data.json`` and injected files under
``openstack/content/``. Guests without a metadata service read it at boot.
"""
from __future__ import annotations

import base64
import binascii
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Sequence

from cirrus.network.model import VIF
from cirrus.virt import exception as vexc


def _user_data(instance: dict[str, Any]) -> bytes | None:
    raw: str | None = instance.get("user_data")
    if not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw.encode()


def meta_data(instance: dict[str, Any], files: list[dict[str, str]],
              admin_password: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "uuid": instance["uuid"], "name": instance.get("display_name", ""),
        "hostname": instance.get("hostname") or instance["uuid"],
        "launch_index": instance.get("launch_index", 0),
        "availability_zone": instance.get("availability_zone"),
        "project_id": instance.get("project_id"),
        "meta": instance.get("metadata") or {}, "files": files,
    }
    if instance.get("key_data"):
        name = instance.get("key_name") or "key"
        data["public_keys"] = {name: instance["key_data"]}
        data["keys"] = [{"name": name, "type": "ssh", "data": instance["key_data"]}]
    if admin_password:
        data["admin_pass"] = admin_password
    return data


def network_data(network_info: Sequence[VIF] | None) -> dict[str, Any]:
    links: list[dict[str, Any]] = []
    networks: list[dict[str, Any]] = []
    services: list[dict[str, Any]] = []
    for i, vif in enumerate(network_info or []):
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


def make_config_drive(path: Path, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                      injected_files: list[tuple[str, bytes]], admin_password: str | None) -> None:
    """Write the ISO to ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        latest = root / "openstack" / "latest"
        content = root / "openstack" / "content"
        latest.mkdir(parents=True)
        content.mkdir(parents=True)
        files = []
        for i, (target, data) in enumerate(injected_files):
            name = f"{i:04x}"
            (content / name).write_bytes(data)
            files.append({"path": target, "content_path": f"/content/{name}"})
        (latest / "meta_data.json").write_text(json.dumps(meta_data(instance, files, admin_password)))
        (latest / "network_data.json").write_text(json.dumps(network_data(network_info)))
        (latest / "vendor_data.json").write_text("{}")
        user = _user_data(instance)
        if user is not None:
            (latest / "user_data").write_bytes(user)
        tool = shutil.which("genisoimage") or shutil.which("mkisofs")
        if tool is None:
            raise vexc.InstanceSpawnError(instance_uuid=instance["uuid"],
                                          reason="genisoimage is not installed")
        done = subprocess.run([tool, "-o", str(path), "-ldots", "-allow-lowercase",
                               "-allow-multidot", "-l", "-publisher", "cirrus", "-quiet",
                               "-J", "-r", "-V", "config-2", str(root)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise vexc.InstanceSpawnError(instance_uuid=instance["uuid"],
                                          reason=f"config drive: {done.stderr.strip()[-300:]}")
