"""Register the tiny guest in a running cloud, found the way the ``openstack`` CLI finds it.

The cloud comes from ``--os-cloud``/``OS_CLOUD`` in clouds.yaml (searched in
``OS_CLIENT_CONFIG_FILE``, ./clouds.yaml, ~/.config/openstack/clouds.yaml,
/etc/openstack/clouds.yaml). The kernel and ramdisk become ``aki``/``ari``
images and the root disk a ``qcow2`` image whose ``kernel_id``,
``ramdisk_id`` and ``os_command_line`` properties make servers boot by direct
kernel boot.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import yaml

from cirrus.image.tiny import COMMAND_LINE, TinyGuest


class CloudConfigError(RuntimeError):
    pass


def clouds_files() -> list[Path]:
    env = os.environ.get("OS_CLIENT_CONFIG_FILE")
    paths = [Path(env)] if env else []
    return paths + [Path("clouds.yaml"), Path.home() / ".config/openstack/clouds.yaml",
                    Path("/etc/openstack/clouds.yaml")]


def load_cloud(name: str | None) -> dict[str, Any]:
    """The ``clouds.<name>`` entry (the only one when no name is given)."""
    name = name or os.environ.get("OS_CLOUD")
    for path in clouds_files():
        if not path.exists():
            continue
        clouds = (yaml.safe_load(path.read_text()) or {}).get("clouds") or {}
        if name is None and len(clouds) == 1:
            return next(iter(clouds.values()))
        if name in clouds:
            return clouds[name]
    where = ", ".join(str(p) for p in clouds_files())
    raise CloudConfigError(f"cloud {name!r} is not in any clouds.yaml ({where}); "
                           "pass --os-cloud or set OS_CLOUD / OS_CLIENT_CONFIG_FILE")


class ImageClient:
    """Just enough Keystone and Glance for three uploads."""

    def __init__(self, cloud: dict[str, Any]) -> None:
        auth = cloud.get("auth") or {}
        url = auth["auth_url"].rstrip("/")
        if not url.endswith("/v3"):
            url += "/v3"
        scope: dict[str, Any] = {"project": {"name": auth.get("project_name"), "domain": {
            "name": auth.get("project_domain_name") or "Default"}}}
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": auth["username"], "password": auth["password"],
            "domain": {"name": auth.get("user_domain_name") or "Default"}}}}, "scope": scope}}
        self.http = httpx.Client(timeout=120)
        reply = self.http.post(f"{url}/auth/tokens", json=body)
        if reply.status_code != 201:
            raise CloudConfigError(f"authentication failed: {reply.status_code} {reply.text[:200]}")
        self.http.headers["X-Auth-Token"] = reply.headers["X-Subject-Token"]
        region = cloud.get("region_name")
        interface = cloud.get("interface") or "public"
        for service in reply.json()["token"]["catalog"]:
            if service["type"] == "image":
                for ep in service["endpoints"]:
                    if ep["interface"] == interface and (region is None or ep["region"] == region):
                        self.endpoint = ep["url"].rstrip("/")
                        return
        raise CloudConfigError("the cloud's catalog has no image endpoint")

    def upload(self, name: str, path: Path, disk_format: str, visibility: str,
               **properties: str) -> str:
        body = {"name": name, "disk_format": disk_format, "container_format": "bare",
                "visibility": visibility, **properties}
        reply = self.http.post(f"{self.endpoint}/v2/images", json=body)
        reply.raise_for_status()
        image_id = reply.json()["id"]
        with path.open("rb") as data:
            put = self.http.put(f"{self.endpoint}/v2/images/{image_id}/file", content=data,
                                headers={"Content-Type": "application/octet-stream"})
        put.raise_for_status()
        return image_id


def register(guest: TinyGuest, cloud: dict[str, Any], name: str = "cirrus-tiny",
             visibility: str = "public") -> dict[str, str]:
    """Upload kernel, ramdisk and disk; returns their image ids."""
    client = ImageClient(cloud)
    kernel = client.upload(f"{name}-kernel", guest.kernel, "aki", visibility)
    ramdisk = client.upload(f"{name}-ramdisk", guest.ramdisk, "ari", visibility)
    disk = client.upload(name, guest.disk, "qcow2", visibility, kernel_id=kernel,
                         ramdisk_id=ramdisk, os_command_line=COMMAND_LINE)
    return {"kernel": kernel, "ramdisk": ramdisk, "image": disk}
