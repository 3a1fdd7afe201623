"""Bad input to compute is refused (400, or Nova's 403/409) and never
stored; nothing stored can make a listing fail (issue #18).

After every refused request the victim's ``GET /servers/detail`` and the
admin's ``?all_tenants=1`` still answer 200, and no server was created.
"""
from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from cirrus.compute import instance as inst
from cirrus.compute.models import instances
from tests.functional.servers import (create_server, db_count, server_body, upload_image,
                                      wait_for_status)
from tests.security.conftest import Tenants

COMPUTE = "/compute/v2.1"
SERVERS = f"{COMPUTE}/servers"
LONE = "\ud800"  # a lone surrogate: JSON can carry it, UTF-8 cannot


def raw(body: Any) -> bytes:
    """``body`` as JSON bytes with its \\u escapes kept: how a client sends a
    lone surrogate (httpx's encoder would refuse it)."""
    return json.dumps(body).encode()


async def send(client: httpx.AsyncClient, method: str, path: str, body: Any,
               version: str = "2.1") -> httpx.Response:
    return await client.request(method, path, content=raw(body), headers={
        "Content-Type": "application/json", "OpenStack-API-Version": f"compute {version}"})


async def listings_still_answer(tenants: Tenants) -> None:
    assert (await tenants.member.get(f"{SERVERS}/detail")).status_code == 200
    resp = await tenants.admin.get(f"{SERVERS}/detail", params={"all_tenants": 1})
    assert resp.status_code == 200, resp.text


@pytest.fixture
async def image(tenants: Tenants) -> str:
    return await upload_image(tenants.member)


# -- POST /servers ---------------------------------------------------------------
def _server(**extra: Any) -> dict[str, Any]:
    return extra


CREATE_CASES = [
    # (server keys, microversion, status, fragment of the message)
    (_server(metadata={f"k{i}": "v" for i in range(129)}), "2.1", 403,
     "Maximum number of metadata items exceeds 128"),
    (_server(metadata={"": "v"}), "2.1", 400, "metadata"),
    (_server(metadata={"k" * 256: "v"}), "2.1", 400, "metadata"),
    (_server(metadata={"a/b": "v"}), "2.1", 400, "metadata key"),
    (_server(metadata={"k": "v" * 256}), "2.1", 400, "metadata/k"),
    (_server(metadata={"k": None}), "2.1", 400, "metadata/k"),
    (_server(metadata={"k": ["v"]}), "2.1", 400, "metadata/k"),
    (_server(metadata={"k": LONE}), "2.1", 400, "surrogate"),
    (_server(metadata={LONE: "v"}), "2.1", 400, "surrogate"),
    (_server(metadata=["k"]), "2.1", 400, "metadata"),
    (_server(name=LONE), "2.1", 400, "surrogate"),
    (_server(name="web", description=LONE), "2.19", 400, "surrogate"),
    (_server(description="d"), "2.1", 400, "description"),
    (_server(description="d" * 256), "2.19", 400, "description"),
    (_server(hostname="ok"), "2.89", 400, "hostname"),
    (_server(hostname="-bad"), "2.90", 400, "hostname"),
    (_server(hostname="a"), "2.90", 400, "hostname"),
    (_server(hostname="a_b"), "2.90", 400, "hostname"),
    (_server(hostname="a.b"), "2.90", 400, "hostname"),
    (_server(hostname="h" * 64), "2.90", 400, "hostname"),
    (_server(hostname=5), "2.90", 400, "hostname"),
    (_server(hostname="web", min_count=2), "2.90", 400, "single hostname"),
    (_server(**{"OS-DCF:diskConfig": "JUNK"}), "2.1", 400, "diskConfig"),
    (_server(**{"OS-DCF:diskConfig": None}), "2.1", 400, "diskConfig"),
    (_server(**{"OS-DCF:diskConfig": 1}), "2.1", 400, "diskConfig"),
    (_server(tags=["t"]), "2.1", 400, "tags"),
    (_server(tags=[f"t{i}" for i in range(51)]), "2.52", 400, "tags"),
    (_server(tags=["a,b"]), "2.52", 400, "tags"),
    (_server(trusted_image_certificates=[]), "2.63", 400, "trusted_image_certificates"),
    (_server(trusted_image_certificates="c"), "2.63", 400, "trusted_image_certificates"),
    (_server(security_groups=[{"name": "nope"}]), "2.1", 400,
     "Security group nope not found for project"),
    (_server(security_groups=[{"name": "default", "x": 1}]), "2.1", 400, "security_groups/0"),
    (_server(security_groups=[{"name": LONE}]), "2.1", 400, "surrogate"),
    (_server(min_count="abc"), "2.1", 400, "min_count"),
    (_server(min_count="1e3"), "2.1", 400, "min_count"),
    (_server(min_count=True), "2.1", 400, "min_count"),
    (_server(max_count=2 ** 64), "2.1", 400, "max_count"),
    (_server(max_count=1.5), "2.1", 400, "max_count"),
    (_server(networks=[{"uuid": "6f0b3c1e-0000-4000-8000-000000000000", "tag": "t"}]), "2.37",
     400, "tag"),
    (_server(networks=[{"uuid": "6f0b3c1e-0000-4000-8000-000000000000",
                        "fixed_ip": "fe80::1%eth0"}]), "2.1", 400, "fixed_ip"),
    (_server(accessIPv6="fe80::1%" + "e" * 100), "2.1", 400, "accessIPv6"),
    (_server(block_device_mapping_v2=[{"source_type": "image", "destination_type": "local",
                                       "uuid": "6f0b3c1e-0000-4000-8000-000000000000",
                                       "boot_index": "x"}]), "2.1", 400, "boot_index"),
    (_server(block_device_mapping={"x": 1}), "2.1", 400, "block_device_mapping"),
    (_server(availability_zone="z" * 256), "2.1", 400, "availability_zone"),
    (_server(key_name=["k"]), "2.1", 400, "key_name"),
]


@pytest.mark.parametrize("extra, version, status, fragment", CREATE_CASES)
async def test_bad_create_bodies(tenants: Tenants, image: str, extra: dict[str, Any],
                                 version: str, status: int, fragment: str) -> None:
    body = server_body(image, **extra)
    resp = await send(tenants.member, "POST", SERVERS, body, version)
    assert resp.status_code == status, resp.text
    assert fragment in resp.text
    assert await db_count(tenants.api.cloud, instances) == 0
    await listings_still_answer(tenants)


async def test_what_nova_accepts_is_accepted(tenants: Tenants, image: str) -> None:
    body = server_body(image, name="n" * 255, min_count=2, hostname=None,
                       metadata={"Key-1_:. x": "v" * 255}, **{"OS-DCF:diskConfig": "AUTO"})
    body["server"].pop("hostname")
    resp = await send(tenants.member, "POST", SERVERS, body, "2.90")
    assert resp.status_code == 202, resp.text
    names = sorted(s["name"] for s in (await tenants.member.get(SERVERS)).json()["servers"])
    assert names == ["n" * 253 + "-1", "n" * 253 + "-2"]  # numbered within the column's 255
    one = server_body(image, name="solo", hostname="solo-1")
    assert (await send(tenants.member, "POST", SERVERS, one, "2.90")).status_code == 202


async def test_an_ambiguous_security_group_is_409(tenants: Tenants, image: str) -> None:
    for _ in range(2):
        resp = await tenants.member.post("/network/v2.0/security-groups",
                                         json={"security_group": {"name": "twin"}})
        assert resp.status_code == 201, resp.text
    body = server_body(image, security_groups=[{"name": "twin"}])
    resp = await tenants.member.post(SERVERS, json=body)
    assert resp.status_code == 409 and "twin" in resp.text
    # Another project's group is unknown here, by name and by id.
    theirs = await tenants.other.post("/network/v2.0/security-groups",
                                      json={"security_group": {"name": "theirs"}})
    for ref in ("theirs", theirs.json()["security_group"]["id"]):
        body = server_body(image, security_groups=[{"name": ref}])
        resp = await tenants.member.post(SERVERS, json=body)
        assert resp.status_code == 400 and "not found for project" in resp.text
    assert await db_count(tenants.api.cloud, instances) == 0


# -- the bodies of a server's other routes -------------------------------------------
@pytest.fixture
async def active(tenants: Tenants, image: str) -> str:
    server = await create_server(tenants.member, server_body(image, name="vm"))
    await wait_for_status(tenants.member, server["id"], {"ACTIVE"})
    return server["id"]


SERVER_ROUTE_CASES = [
    # (method, path under the server, body, microversion)
    ("POST", "action", {"os-getConsoleOutput": {"length": 2 ** 64}}, "2.1"),
    ("POST", "action", {"os-getConsoleOutput": {"length": "abc"}}, "2.1"),
    ("POST", "action", {"os-getConsoleOutput": {"length": -2}}, "2.1"),
    ("POST", "action", {"os-getConsoleOutput": {"length": 1.5}}, "2.1"),
    ("POST", "action", {"os-getConsoleOutput": {"length": "1e3"}}, "2.1"),
    ("POST", "action", {"os-getConsoleOutput": {"length": "\u0661"}}, "2.1"),  # Arabic-Indic 1
    ("POST", "action", {"os-getConsoleOutput": {"length": 1, "x": 2}}, "2.1"),
    ("POST", "action", {"os-getConsoleOutput": []}, "2.1"),
    ("POST", "action", {"reboot": {"type": "HARD", "x": 1}}, "2.1"),
    ("POST", "action", {"reboot": {"type": ["HARD"]}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": "10.0.0.9"}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": {"ip_address": "10.0.0.9"}}},
     "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": [{"ip_address": "bad"}]}},
     "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": [1]}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": []}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": [
        {"ip_address": "10.0.0.9", "subnet_id": ["s"]}]}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"fixed_ips": [
        {"subnet_id": {"a": 1}}]}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"net_id": ["n"]}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": {"port_id": "p", "tag": "t"}}, "2.1"),
    ("POST", "os-interface", {"interfaceAttachment": []}, "2.1"),
    ("POST", "metadata", {"metadata": {"k": LONE}}, "2.1"),
    ("POST", "metadata", {"metadata": {"a/b": "v"}}, "2.1"),
    ("PUT", "metadata", {"metadata": {"k": 1}}, "2.1"),
    ("PUT", "metadata/k", {"meta": {"k": LONE}}, "2.1"),
    ("PUT", "metadata/k", {"meta": {"j": "v"}}, "2.1"),
]


async def test_bad_bodies_of_a_servers_routes(tenants: Tenants, active: str) -> None:
    wrong = {}
    for method, path, body, version in SERVER_ROUTE_CASES:
        resp = await send(tenants.member, method, f"{SERVERS}/{active}/{path}", body, version)
        if resp.status_code != 400:
            wrong[(method, path, json.dumps(body))] = (resp.status_code, resp.text[:200])
    assert not wrong, wrong
    server = (await tenants.member.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "ACTIVE" and server["metadata"] == {}
    ports = (await tenants.member.get(f"{SERVERS}/{active}/os-interface")).json()
    assert len(ports["interfaceAttachments"]) == 1
    await listings_still_answer(tenants)


async def test_metadata_beyond_128_items_is_403(tenants: Tenants, active: str) -> None:
    url = f"{SERVERS}/{active}/metadata"
    resp = await tenants.member.put(url, json={"metadata": {f"k{i}": "v" for i in range(128)}})
    assert resp.status_code == 200, resp.text
    resp = await tenants.member.post(url, json={"metadata": {"one-more": "v"}})
    assert resp.status_code == 403 and "128" in resp.text


# -- other compute bodies ----------------------------------------------------------------
OTHER_CASES = [
    # (persona, method, path, body, microversion, status)
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"instances": 2 ** 63}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"instances": 2 ** 64}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"cores": 0x80000000}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"ram": -2}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"ram": "99999999999999999999"}},
     "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"ram": 1.5}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"bogus": 1}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/{demo}", {"quota_set": {"force": [1]}}, "2.1", 400),
    ("admin", "PUT", "os-quota-sets/" + "p" * 65, {"quota_set": {"ram": 1}}, "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 2 ** 63, "vcpus": 1,
                                             "disk": 1}}, "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 0, "disk": 1}},
     "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": -1}},
     "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1,
                                             "swap": "abc"}}, "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1,
                                             "rxtx_factor": 1e39}}, "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "", "ram": 1, "vcpus": 1, "disk": 1}},
     "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1,
                                             "id": "i" * 256}}, "2.1", 400),
    ("admin", "POST", "flavors", {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1,
                                             "description": LONE}}, "2.55", 400),
    ("admin", "PUT", "flavors/1", {"flavor": {"description": LONE}}, "2.55", 400),
    ("admin", "POST", "flavors/1/os-extra_specs", {"extra_specs": {"k": LONE}}, "2.1", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": "bad/name"}}, "2.1", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": ""}}, "2.1", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": "k" * 256}}, "2.1", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": 5}}, "2.1", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": "k", "public_key": 5}}, "2.1", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": "k", "type": "x509",
                                                   "public_key": LONE}}, "2.2", 400),
    ("member", "POST", "os-keypairs", {"keypair": {"name": "k", "type": "rsa"}}, "2.2", 400),
    ("admin", "POST", "os-keypairs", {"keypair": {"name": "k", "user_id": ["u"]}}, "2.10", 400),
    ("admin", "POST", "os-keypairs", {"keypair": {"name": "k", "user_id": "u" * 65}}, "2.10",
     400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": "", "policies":
                                                             ["affinity"]}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": LONE, "policies":
                                                             ["affinity"]}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": "g" * 256, "policies":
                                                             ["affinity"]}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": 5, "policies":
                                                             ["affinity"]}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": "g", "policies":
                                                             [["affinity"]]}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": "g", "policies":
                                                             "affinity"}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": "g", "policies":
                                                             ["soft-affinity"]}}, "2.1", 400),
    ("member", "POST", "os-server-groups", {"server_group": {"name": "g", "policy": 5}},
     "2.64", 400),
    ("member", "POST", "os-server-groups", {"server_group": {
        "name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": 2 ** 64}}},
     "2.64", 400),
    ("member", "POST", "os-server-groups", {"server_group": {
        "name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}}}, "2.64", 400),
    ("admin", "POST", "os-server-external-events", {"events": [{
        "name": "network-changed", "server_uuid": "s", "status": ["x"]}]}, "2.1", 400),
    ("admin", "POST", "os-server-external-events", {"events": [{
        "name": "network-changed", "server_uuid": 5}]}, "2.1", 400),
    ("admin", "POST", "os-server-external-events", {"events": [{
        "name": "network-changed", "server_uuid": "s", "x": 1}]}, "2.1", 400),
]


@pytest.mark.parametrize("persona, method, path, body, version, status", OTHER_CASES)
async def test_bad_bodies_of_other_compute_routes(tenants: Tenants, persona: str, method: str,
                                                  path: str, body: Any, version: str,
                                                  status: int) -> None:
    url = f"{COMPUTE}/{path.format(demo=tenants.project['demo'])}"
    resp = await send(getattr(tenants, persona), method, url, body, version)
    assert resp.status_code == status, resp.text
    assert (await tenants.member.get(f"{COMPUTE}/os-keypairs")).json()["keypairs"] == []
    groups = await tenants.admin.get(f"{COMPUTE}/os-server-groups", params={"all_projects": 1})
    assert groups.json()["server_groups"] == []
    assert (await tenants.member.get(f"{COMPUTE}/limits")).status_code == 200
    flavors = await tenants.admin.get(f"{COMPUTE}/flavors/detail", params={"is_public": "None"})
    assert flavors.status_code == 200 and all(f["name"] != "f" for f in flavors.json()["flavors"])
    await listings_still_answer(tenants)


QUERY_CASES = [
    # (path, params, microversion, status)
    ("servers", {"limit": "abc"}, "2.1", 400),
    ("servers/detail", {"limit": "-1"}, "2.1", 400),
    ("servers/detail", {"limit": "9" * 30}, "2.1", 200),
    ("servers", {"marker": "junk"}, "2.1", 400),
    ("servers/detail", {"marker": "m" * 5000}, "2.1", 400),
    ("servers", {"sort_key": "bogus"}, "2.1", 400),
    ("servers", {"sort_dir": "sideways"}, "2.1", 400),
    ("servers/detail", {"changes-since": "junk"}, "2.1", 400),
    ("servers/detail", {"ip": "["}, "2.1", 400),
    ("os-server-groups", {"limit": "abc"}, "2.1", 400),
    ("os-server-groups", {"offset": "-1"}, "2.1", 400),
    ("os-server-groups", {"limit": "9" * 30}, "2.1", 200),
    ("os-keypairs", {"limit": "x"}, "2.35", 400),
    ("flavors", {"limit": "0"}, "2.1", 200),
    ("flavors/detail", {"limit": "0", "marker": "1"}, "2.1", 200),
    ("flavors", {"minRam": "x"}, "2.1", 400),
    ("flavors", {"limit": "9" * 30}, "2.1", 200),
]


@pytest.mark.parametrize("path, params, version, status", QUERY_CASES)
async def test_junk_query_strings(tenants: Tenants, path: str, params: dict[str, str],
                                  version: str, status: int) -> None:
    resp = await tenants.member.get(f"{COMPUTE}/{path}", params=params,
                                    headers={"OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == status, resp.text
    await listings_still_answer(tenants)


# -- what was stored before it was refused --------------------------------------------------
async def test_stored_lone_surrogates_do_not_break_listings(tenants: Tenants,
                                                            active: str) -> None:
    cloud = tenants.api.cloud
    assert cloud.db is not None
    if cloud.db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's jsonb cannot hold a lone surrogate: nothing to read back")
    await cloud.db.run(inst.save, active, {"metadata": {"k": LONE, LONE: "v"}})
    for client, params in ((tenants.member, {}), (tenants.admin, {"all_tenants": 1})):
        resp = await client.get(f"{SERVERS}/detail", params=params)
        assert resp.status_code == 200, resp.text
        assert resp.json()["servers"][0]["metadata"] == {"k": "\ufffd", "\ufffd": "v"}
    for path in ("", "/metadata", "/metadata/k"):
        resp = await tenants.member.get(f"{SERVERS}/{active}{path}")
        assert resp.status_code == 200, (path, resp.text)


SERVICE_CASES = [
    ("2.53", {"status": "disabled", "disabled_reason": [["x"]]}),
    ("2.53", {"status": "disabled", "disabled_reason": {"a": 1}}),
    ("2.53", {"status": "disabled", "disabled_reason": "r" * 256}),
    ("2.53", {"status": "enabled", "disabled_reason": "why"}),
    ("2.53", {"forced_down": "yes"}),
    ("2.1", {"host": ["h"], "binary": "nova-compute"}),
    ("2.1", {"host": "compute1", "binary": {"b": 1}}),
    ("2.1", {"host": "compute1", "disabled_reason": ["x"]}),
]


@pytest.mark.parametrize("version, body", SERVICE_CASES)
async def test_bad_service_updates_are_400(tenants: Tenants, version: str, body: dict[str, Any]) -> None:
    services = (await tenants.admin.get("/compute/v2.1/os-services",
                                        headers={"OpenStack-API-Version": "compute 2.53"})).json()
    target = services["services"][0]["id"] if version == "2.53" else "disable-log-reason"
    resp = await send(tenants.admin, "PUT", f"/compute/v2.1/os-services/{target}", body, version)
    assert resp.status_code == 400, resp.text
    for junk in ("9" * 400, "x" * 300):
        resp = await send(tenants.admin, "PUT", f"/compute/v2.1/os-services/{junk}",
                          {"status": "enabled"}, "2.53")
        assert resp.status_code == 404, resp.text
    assert (await tenants.admin.get("/compute/v2.1/os-services")).status_code == 200
