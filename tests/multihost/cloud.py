"""Driving a multi-process deployment through its API: bursts of boots in
background threads, waiting for final states, and the no-leak invariants."""
from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

SERVERS = "/compute/v2.1/servers"
FINAL = ("ACTIVE", "ERROR")


def login(url: str) -> str:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": "admin"}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
    return httpx.post(f"{url}/identity/v3/auth/tokens", json=body,
                      timeout=30).headers["X-Subject-Token"]


def client(url: str, token: str) -> httpx.Client:
    # 2.37: "networks" may be "auto"; before 2.88 hypervisors report usage.
    return httpx.Client(base_url=url, timeout=120, headers={
        "X-Auth-Token": token, "OpenStack-API-Version": "compute 2.37"})


def image_id(api: httpx.Client) -> str:
    """The test image, uploaded on first use."""
    found = api.get("/image/v2/images", params={"name": "mh"}).json()["images"]
    if found:
        return found[0]["id"]
    image = api.post("/image/v2/images", json={"name": "mh", "disk_format": "raw",
                                               "container_format": "bare"}).json()["id"]
    api.put(f"/image/v2/images/{image}/file", content=b"x" * 64,
            headers={"Content-Type": "application/octet-stream"})
    return image


def wait_computes(api: httpx.Client, hosts: set[str], timeout: float = 60) -> None:
    """Until exactly ``hosts`` are up among the hypervisors."""
    deadline = time.monotonic() + timeout
    while True:
        hyps = api.get("/compute/v2.1/os-hypervisors/detail").json()["hypervisors"]
        if {h["service"]["host"] for h in hyps if h["state"] == "up"} == hosts:
            return
        assert time.monotonic() < deadline, hyps
        time.sleep(0.5)


class Burst:
    """``posts`` POSTs of ``per_post`` servers each, ``workers`` at a time, in the
    background. ``accepted`` fills with server ids as 202s come back; anything
    else lands in ``rejected``."""

    def __init__(self, url: str, token: str, image: str, prefix: str, posts: int,
                 workers: int, per_post: int = 1, zone: str | None = None) -> None:
        self.url, self.token, self.image = url, token, image
        self.prefix, self.posts, self.workers, self.per_post = prefix, posts, workers, per_post
        self.zone = zone
        self.accepted: list[str] = []
        self.rejected: list[tuple[int, str]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Burst":
        self._thread.start()
        return self

    def _run(self) -> None:
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(self._post, range(self.posts)))

    def _post(self, index: int) -> None:
        body: dict[str, Any] = {"name": f"{self.prefix}{index}", "imageRef": self.image,
                                "flavorRef": "1", "networks": "auto"}
        if self.per_post > 1:
            body.update(min_count=self.per_post, max_count=self.per_post,
                        return_reservation_id=True)
        if self.zone:
            body["availability_zone"] = self.zone
        with client(self.url, self.token) as api:
            resp = api.post(SERVERS, json={"server": body})
            if resp.status_code != 202:
                with self._lock:
                    self.rejected.append((resp.status_code, resp.text))
                return
            if self.per_post > 1:
                rid = resp.json()["reservation_id"]
                ids = [s["id"] for s in api.get(SERVERS, params={"reservation_id": rid}
                                                ).json()["servers"]]
            else:
                ids = [resp.json()["server"]["id"]]
        with self._lock:
            self.accepted.extend(ids)

    def join(self, timeout: float = 300) -> "Burst":
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "burst did not finish"
        return self


def servers(api: httpx.Client) -> dict[str, dict[str, Any]]:
    """Every server of every project, by id."""
    body = api.get(f"{SERVERS}/detail", params={"all_tenants": 1, "limit": 1000}).json()
    return {s["id"]: s for s in body["servers"]}


def settle(api: httpx.Client, ids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """Wait until each of ``ids`` is ACTIVE or ERROR; their final views."""
    deadline = time.monotonic() + timeout
    while True:
        found = servers(api)
        pending = {i: found[i]["status"] for i in ids if found[i]["status"] not in FINAL}
        if not pending:
            return {i: found[i] for i in ids}
        assert time.monotonic() < deadline, f"not final after {timeout}s: {pending}"
        time.sleep(0.5)


def assert_failures_explained(views: dict[str, dict[str, Any]]) -> None:
    for view in views.values():
        assert view["status"] in FINAL, view
        if view["status"] == "ERROR":
            assert (view.get("fault") or {}).get("message"), f"ERROR without a fault: {view}"


def assert_no_leaks(api: httpx.Client) -> None:
    """Once nothing is building: each node's usage is exactly its ACTIVE servers,
    and each ACTIVE server has exactly one port — so nothing that failed, timed
    out or died with its host still holds a claim or a port."""
    found = servers(api)
    assert not [s for s in found.values() if s["status"] == "BUILD"], "something is building"
    active = {i: s for i, s in found.items() if s["status"] == "ACTIVE"}
    per_node = Counter(s["OS-EXT-SRV-ATTR:hypervisor_hostname"] for s in active.values())
    flavor = api.get("/compute/v2.1/flavors/1").json()["flavor"]
    for hyp in api.get("/compute/v2.1/os-hypervisors/detail").json()["hypervisors"]:
        count = per_node[hyp["hypervisor_hostname"]]
        usage = (hyp["running_vms"], hyp["vcpus_used"], hyp["memory_mb_used"])
        assert usage == (count, count * flavor["vcpus"], count * flavor["ram"]), (
            f"{hyp['hypervisor_hostname']}: usage {usage} but {count} ACTIVE servers")
    ports = api.get("/network/v2.0/ports", params={"limit": 5000}).json()["ports"]
    owners = Counter(p["device_id"] for p in ports
                     if (p.get("device_owner") or "").startswith("compute:"))
    leaked = {d: n for d, n in owners.items() if d not in active}
    assert not leaked, f"ports of servers that are not ACTIVE: {leaked}"
    missing = [i for i in active if owners[i] != 1]
    assert not missing, f"ACTIVE servers without exactly one port: {missing}"
