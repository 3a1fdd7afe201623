"""Ready a running cirrus for Tempest and write its ``tempest.conf``.

    python -m tests.tempest.prepare --url http://127.0.0.1:PORT --clouds STATE/clouds.yaml \
        --output WORKSPACE/etc/tempest.conf --log-dir RESULTS [--computes 2]

Waits until the cloud answers and its compute hosts are up, then makes what
Tempest expects to find (idempotently: found by name first): two public images,
two small flavors and a shared network with a subnet. Everything else comes
from the cloud itself — URLs from the catalog's base, the highest microversion
from the compute version document, the network extensions from
``/v2.0/extensions``.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import httpx
import yaml

TEMPLATE = Path(__file__).with_name("tempest.conf.in")

# [compute-feature-enabled]: True where cirrus implements the feature today.
# Issue #19's list is here in full; switch one on as its actions land.
COMPUTE_FEATURES: dict[str, bool] = {
    "console_output": True,     # os-getConsoleOutput
    "interface_attach": True,   # os-interface
    "resize": True,
    "cold_migration": True,
    "live_migration": True,
    "pause": True,
    "suspend": True,
    "shelve": True,
    "rescue": True,
    "snapshot": True,          # createImage
    "change_password": True,
    "serial_console": True,
    # Server-create options Tempest also gates: OS-DCF:diskConfig (kept on
    # create, update, rebuild and resize); personality went at 2.57; adminPass
    # is returned on create.
    "disk_config": True,
    "personality": False,
    "enable_instance_password": True,
    "config_drive": True,
    # Volumes (issue 20): swapping an attached volume (admin's update of an
    # attachment) and a multiattach volume on several servers.
    "swap_volume": True,
    "volume_multiattach": True,
}

# [network-feature-enabled]: True where cirrus's network API does it (issue #21).
NETWORK_FEATURES: dict[str, bool] = {
    "ipv6": True,                    # IPv6 subnets and ports
    "ipv6_subnet_attributes": True,  # ipv6_ra_mode / ipv6_address_mode (SLAAC, DHCPv6)
    "port_security": True,
    "floating_ips": True,            # routers and floating IPs on PUBLIC_NETWORK
}

# [volume-feature-enabled] and [service_available] cinder: the block storage
# API (issue 20). Backups, manage/unmanage, volume upload to image and
# multiple backends are not implemented; extending an attached volume needs
# the compute side.
VOLUME_FEATURES: dict[str, bool] = {
    "cinder": True,
    "volume_snapshot": True,
    "volume_clone": True,
    "volume_backup": False,
    "extend_attached_volume": False,
    "volume_image_dep_tests": False,
}

FEATURES = {**COMPUTE_FEATURES, **NETWORK_FEATURES, **VOLUME_FEATURES}  # every switch

IMAGES = ("tempest-image", "tempest-image-alt")
MULTIATTACH_TYPE = "multiattach"
# devstack's m1.nano and m1.micro: the second is bigger, as resize tests need.
FLAVORS = (("42", "m1.nano", 1, 128, 1), ("84", "m1.micro", 1, 192, 1))
NETWORK = "tempest-net"
SUBNET_CIDR = "10.100.0.0/16"
# The admin's external network (devstack's ``public``): routers' gateways and
# floating IPs come from it.
PUBLIC_NETWORK = "public"
PUBLIC_CIDR = "172.24.4.0/22"
# Any bytes make an image for the fake driver; a small raw disk of zeros.
IMAGE_BYTES = bytes(64 * 1024)


@dataclass
class Admin:
    """The admin account from ``clouds.yaml``'s ``cirrus-admin`` cloud."""

    auth_url: str
    username: str
    password: str
    project: str
    region: str


def load_admin(clouds: Path) -> Admin:
    cloud = yaml.safe_load(clouds.read_text())["clouds"]["cirrus-admin"]
    auth = cloud["auth"]
    return Admin(auth_url=auth["auth_url"], username=auth["username"],
                 password=auth["password"], project=auth["project_name"],
                 region=cloud.get("region_name", "RegionOne"))


def wait_for(what: str, check: Any, timeout: float) -> Any:
    """Call ``check`` until it returns something true; raise after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            found = check()
            if found:
                return found
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{what}: not ready after {timeout:.0f} s ({last})")


class Cloud:
    """An admin-token HTTP client for the cloud at ``url``."""

    def __init__(self, url: str, admin: Admin) -> None:
        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=30.0)
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": admin.username, "domain": {"id": "default"}, "password": admin.password}}},
            "scope": {"project": {"name": admin.project, "domain": {"id": "default"}}}}}
        resp = self.http.post(f"{admin.auth_url}/v3/auth/tokens", json=body)
        resp.raise_for_status()
        self.http.headers["X-Auth-Token"] = resp.headers["X-Subject-Token"]

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self.http.request(method, self.url + path, **kwargs)
        resp.raise_for_status()
        return resp.json() if resp.content else None


def ensure_image(cloud: Cloud, name: str) -> str:
    found = cloud.call("GET", "/image/v2/images", params={"name": name})["images"]
    if found and found[0]["status"] == "active":
        return str(found[0]["id"])
    image = cloud.call("POST", "/image/v2/images", json={
        "name": name, "disk_format": "raw", "container_format": "bare",
        "visibility": "public"})
    cloud.call("PUT", f"/image/v2/images/{image['id']}/file", content=IMAGE_BYTES,
               headers={"Content-Type": "application/octet-stream"})
    wait_for(f"image {name}", lambda: cloud.call(
        "GET", f"/image/v2/images/{image['id']}")["status"] == "active", 30)
    return str(image["id"])


def ensure_flavor(cloud: Cloud, flavorid: str, name: str, vcpus: int, ram: int,
                  disk: int) -> str:
    resp = cloud.http.get(f"{cloud.url}/compute/v2.1/flavors/{flavorid}")
    if resp.status_code == 404:
        cloud.call("POST", "/compute/v2.1/flavors", json={"flavor": {
            "id": flavorid, "name": name, "vcpus": vcpus, "ram": ram, "disk": disk}})
    else:
        resp.raise_for_status()
    return flavorid


def ensure_network(cloud: Cloud, name: str = NETWORK, cidr: str = SUBNET_CIDR,
                   **attributes: Any) -> str:
    """The admin's network ``name`` with one IPv4 subnet (made if missing)."""
    found = cloud.call("GET", "/network/v2.0/networks", params={"name": name})["networks"]
    if found:
        return str(found[0]["id"])
    net = cloud.call("POST", "/network/v2.0/networks", json={"network": {
        "name": name, **(attributes or {"shared": True})}})["network"]
    cloud.call("POST", "/network/v2.0/subnets", json={"subnet": {
        "name": f"{name}-subnet", "network_id": net["id"], "ip_version": 4, "cidr": cidr}})
    return str(net["id"])


def ensure_public_network(cloud: Cloud) -> str:
    return ensure_network(cloud, PUBLIC_NETWORK, PUBLIC_CIDR, **{"router:external": True})


def ensure_volume_type(cloud: Cloud, name: str, extra_specs: dict[str, str]) -> str:
    """A public volume type, made if missing (devstack makes ``multiattach``,
    with the extra spec that makes its volumes multiattach, for Tempest)."""
    catalog = cloud.call("GET", "/identity/v3/auth/catalog")["catalog"]
    endpoint = next(s for s in catalog if s["type"] == "block-storage")["endpoints"][0]["url"]
    types = "/volume" + endpoint.split("/volume", 1)[1] + "/types"
    if not any(t["name"] == name for t in cloud.call("GET", types)["volume_types"]):
        cloud.call("POST", types, json={"volume_type": {"name": name,
                                                        "extra_specs": extra_specs}})
    return name


def max_microversion(cloud: Cloud) -> str:
    return str(cloud.call("GET", "/compute/v2.1")["version"]["version"])


def volume_max_microversion(cloud: Cloud) -> str:
    resp = cloud.http.get(f"{cloud.url}/volume/")  # 300 Multiple Choices, as Cinder
    return str(resp.json()["versions"][0]["version"])


def network_extensions(cloud: Cloud) -> str:
    return ",".join(e["alias"] for e in cloud.call("GET", "/network/v2.0/extensions")["extensions"])


def hosts_up(cloud: Cloud, computes: int) -> bool:
    services = cloud.call("GET", "/compute/v2.1/os-services",
                          params={"binary": "nova-compute"})["services"]
    return sum(s["state"] == "up" for s in services) >= computes


def flag(value: bool) -> str:
    return "true" if value else "false"


def render(values: dict[str, str], features: dict[str, bool]) -> str:
    """The template with every ``${name}`` filled (a missing one is an error)."""
    return Template(TEMPLATE.read_text()).substitute(
        {**values, **{k: flag(v) for k, v in features.items()}})


def prepare(url: str, admin: Admin, computes: int, log_dir: Path,
            build_timeout: int) -> str:
    """Make the cloud's Tempest resources; return the rendered ``tempest.conf``."""
    wait_for("the API", lambda: httpx.get(url, timeout=5).status_code == 200, 120)
    cloud = Cloud(url, admin)
    wait_for(f"{computes} compute hosts", lambda: hosts_up(cloud, computes), 120)
    from cirrus.scheduler.filters import DEFAULT_FILTERS

    images = [ensure_image(cloud, name) for name in IMAGES]
    flavors = [ensure_flavor(cloud, *spec) for spec in FLAVORS]
    ensure_network(cloud)
    multiattach = ensure_volume_type(cloud, MULTIATTACH_TYPE, {"multiattach": "<is> True"})
    values = {
        "log_dir": str(log_dir), "identity_url": admin.auth_url, "region": admin.region,
        "admin_username": admin.username, "admin_password": admin.password,
        "admin_project": admin.project, "image_ref": images[0], "image_ref_alt": images[1],
        "flavor_ref": flavors[0], "flavor_ref_alt": flavors[1], "network_name": NETWORK,
        "computes": str(computes), "min_microversion": "2.1",
        "max_microversion": max_microversion(cloud), "build_timeout": str(build_timeout),
        "scheduler_filters": ",".join(DEFAULT_FILTERS),
        "network_extensions": network_extensions(cloud),
        "public_network_id": ensure_public_network(cloud), "public_network_name": PUBLIC_NETWORK,
        "volume_max_microversion": volume_max_microversion(cloud),
        "volume_type_multiattach": multiattach}
    return render(values, FEATURES)


def _readable(clouds: Path) -> bool:
    try:
        load_admin(clouds)
    except (OSError, TypeError, KeyError, yaml.YAMLError):
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the cloud's base URL")
    parser.add_argument("--clouds", type=Path, required=True, help="its clouds.yaml")
    parser.add_argument("--output", type=Path, required=True, help="tempest.conf to write")
    parser.add_argument("--log-dir", type=Path, required=True, help="Tempest's log directory")
    parser.add_argument("--computes", type=int, default=2)
    parser.add_argument("--build-timeout", type=int, default=60)
    args = parser.parse_args(argv)
    # Written by the starting cloud: it may exist before its content does.
    wait_for("clouds.yaml", lambda: _readable(args.clouds), 120)
    conf = prepare(args.url, load_admin(args.clouds), args.computes, args.log_dir,
                   args.build_timeout)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(conf)
    print(f"tempest.conf: {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
