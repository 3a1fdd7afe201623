"""Requests issue #18 reports as breaking cirrus: sent first in every run
(Hypothesis's explicit examples), so that CI checks each of them whatever the
random draws reach. Each is a batch: the listings are checked after it.
"""
from __future__ import annotations

from typing import Any

from tests.fuzz.bodies import JSON, PATCH
from tests.fuzz.hostile import Raw, Ref
from tests.fuzz.routes import Target
from tests.fuzz.strategies import SEED, Case

SERVERS = "/compute/v2.1/servers"


def case(method: str, path: str, body: Any = None, *, persona: str = "member",
         headers: dict[str, Any] | None = None, query: dict[str, str] | None = None,
         content_type: str | None = JSON, params: dict[str, str] | None = None,
         note: str = "") -> Case:
    names = tuple(p.strip("{}") for p in path.split("/") if p.startswith("{"))
    fixed = params or {}
    return Case(Target(method, path, names), persona,
                tuple((n, fixed.get(n, SEED)) for n in names), body,
                content_type if body is not None else None, tuple((headers or {}).items()),
                tuple((query or {}).items()), (f"issue #18: {note}",))


def _server(**extra: Any) -> dict[str, Any]:
    return {"server": {"name": "vm", "imageRef": Ref("boot_image"), "flavorRef": "1",
                       "networks": "auto", **extra}}


KNOWN: list[list[Case]] = [
    [case("GET", SERVERS, query={"ip": "["}, note="?ip=[")],
    [case("GET", f"{SERVERS}/detail", query={"name": "^(a+)+$"},
          note="a backtracking ?name= against a server named 26×a + '!'")],
    [case("POST", SERVERS, _server(), headers={"OpenStack-API-Version": "compute 2." + "9" * 5000},
          note="a 5,000-digit microversion")],
    [case("POST", "/network/v2.0/networks", {"network": {"name": "n"}},
          headers={"X-Auth-Token": b"\xff\xfe"}, note="a non-UTF-8 X-Auth-Token")],
    [case("POST", SERVERS, Raw(b"[" * 100_000 + b"]" * 100_000), note="100,000-deep JSON")],
    [case("PUT", f"{SERVERS}/{{server_id}}/metadata", {"metadata": {"k": "\ud800"}},
          note="a lone surrogate in server metadata")],
    [case("POST", "/network/v2.0/ports", {"port": {
        "network_id": Ref("network"), "allowed_address_pairs": [{"ip_address": "\ud800"}]}},
        note="a lone surrogate in allowed_address_pairs")],
    [case("PUT", "/network/v2.0/subnets/{id}", {"subnet": {"dns_nameservers": ["\ud800"]}},
          note="a lone surrogate in dns_nameservers")],
    [case("PATCH", "/image/v2/images/{image_id}",
          [{"op": "add", "path": "/k", "value": Raw(b"NaN")}], content_type=PATCH,
          note="NaN in an image property")],
    [case("PATCH", "/image/v2/images/{image_id}",
          [{"op": "add", "path": "/k", "value": "\ud800"}], content_type=PATCH,
          note="a lone surrogate in an image property")],
    [case("PATCH", "/image/v2/images/{image_id}",
          [{"op": "replace", "path": "/min_ram", "value": 2**63}], content_type=PATCH,
          note="image min_ram 2^63")],
    [case("POST", "/image/v2/images", {"name": "big", "min_disk": 2**63},
          note="image min_disk 2^63")],
    [case("PUT", "/compute/v2.1/os-quota-sets/{project_id}", {"quota_set": {"instances": 2**63}},
          persona="admin", note="a quota of 2^63")],
    [case("POST", "/network/v2.0/ports", {"port": {
        "network_id": Ref("network"), "fixed_ips": [{"ip_address": "10.0.0.999"}]}},
        note="fixed_ips with a bad ip_address")],
    [case("POST", "/network/v2.0/ports", {"port": {
        "network_id": Ref("network"), "fixed_ips": [{"subnet_id": [Ref("subnet")]}]}},
        note="fixed_ips with a list subnet_id")],
    [case("PUT", "/network/v2.0/ports/{id}", {"port": {
        "fixed_ips": [{"subnet_id": {"id": Ref("subnet")}}]}}, note="a dict subnet_id")],
    [case("POST", f"{SERVERS}/{{server_id}}/os-interface", {"interfaceAttachment": {
        "net_id": Ref("network"), "fixed_ips": [{"ip_address": "10.0.0.999"}]}},
        note="os-interface with a bad fixed IP")],
    [case("POST", f"{SERVERS}/{{server_id}}/os-interface", {"interfaceAttachment": {
        "net_id": Ref("network"), "fixed_ips": "10.77.0.9"}},
        note="os-interface fixed_ips of the wrong type")],
    [case("POST", f"{SERVERS}/{{server_id}}/action", {"os-getConsoleOutput": {"length": 2**64}},
          note="console length 2^64")],
    [case("POST", "/identity/v3/auth/tokens", {"auth": {"identity": {
        "methods": ["password"], "password": {"user": {
            "name": ["demo"], "domain": {"id": "default"}, "password": "demo"}}}}},
        content_type=JSON, note="a list in a token auth field")],
    [case("POST", "/identity/v3/auth/tokens", {"auth": {"identity": {
        "methods": ["password"], "password": {"user": {
            "id": 2**63, "password": "demo"}}}}}, note="2^63 in a token auth field")],
    [case("PUT", "/network/v2.0/subnets/{id}", {"subnet": {
        "allocation_pools": [{"start": "junk", "end": ["10.77.0.9"]}]}}),
     case("POST", "/network/v2.0/ports", {"port": {"network_id": Ref("network")}},
          note="junk allocation_pools on a subnet, then a port on its network")],
    [case("PUT", "/network/v2.0/ports/{id}", {"port": {"mac_address": Ref("used_mac")}},
          note="a port updated to another port's MAC")],
]
