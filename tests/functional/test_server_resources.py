"""Smaller compute conformance gaps of issue #19: the v2.0 version entry,
the quota set's keys per microversion, the actions of a deleted server at
2.21, ``os-server-password`` and a server's ``os-security-groups``."""
from __future__ import annotations

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute import password
from tests.conftest import Api
from tests.functional.servers import (active_server, create_server, server_body, upload_image,
                                      wait_for_status)

COMPUTE = "/compute/v2.1"
SERVERS = f"{COMPUTE}/servers"


def _v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


@pytest.fixture
async def active(demo: httpx.AsyncClient) -> str:
    return await active_server(demo)


# -- versions ------------------------------------------------------------------------

async def test_the_version_list_has_v2_0_beside_v2_1(api: Api) -> None:
    async with api.client() as anonymous:
        resp = await anonymous.get("/compute/")
    assert resp.status_code == 200
    v20, v21 = resp.json()["versions"]
    assert v20 == {"id": "v2.0", "status": "SUPPORTED", "version": "", "min_version": "",
                   "updated": "2011-01-21T11:33:21Z",
                   "links": [{"rel": "self", "href": v20["links"][0]["href"]}]}
    assert v20["links"][0]["href"].endswith("/compute/v2/")
    assert (v21["id"], v21["status"], v21["min_version"]) == ("v2.1", "CURRENT", "2.1")
    assert v21["version"] == "2.92"
    assert set(v21) == set(v20) and [link["rel"] for link in v21["links"]] == ["self"]


@pytest.mark.parametrize("path", ["/compute/v2", "/compute/v2/"])
async def test_the_v2_0_document(api: Api, path: str) -> None:
    async with api.client() as anonymous:
        resp = await anonymous.get(path)
    assert resp.status_code == 200
    version = resp.json()["version"]
    assert (version["id"], version["status"], version["version"], version["min_version"]) == \
        ("v2.0", "SUPPORTED", "", "")
    assert version["media-types"] == [{"base": "application/json",
                                       "type": "application/vnd.openstack.compute+json;version=2"}]
    assert [link["rel"] for link in version["links"]] == ["self", "describedby"]


async def test_the_v2_1_document_is_unchanged(api: Api) -> None:
    async with api.client() as anonymous:
        version = (await anonymous.get("/compute/v2.1/")).json()["version"]
    assert (version["id"], version["version"], version["min_version"]) == ("v2.1", "2.92", "2.1")
    assert version["media-types"][0]["type"] == "application/vnd.openstack.compute+json;version=2.1"


# -- quota sets ------------------------------------------------------------------------

# Nova's api-samples for os-quota-sets at v2.1, v2.36 and v2.57.
QUOTAS_21 = {"cores", "fixed_ips", "floating_ips", "id", "injected_file_content_bytes",
             "injected_file_path_bytes", "injected_files", "instances", "key_pairs",
             "metadata_items", "ram", "security_group_rules", "security_groups",
             "server_groups", "server_group_members"}
QUOTAS_236 = QUOTAS_21 - {"fixed_ips", "floating_ips", "security_group_rules",
                          "security_groups"}
QUOTAS_257 = QUOTAS_236 - {"injected_file_content_bytes", "injected_file_path_bytes",
                           "injected_files"}


async def _demo_project(admin: httpx.AsyncClient) -> str:
    projects = (await admin.get("/identity/v3/projects")).json()["projects"]
    return next(p["id"] for p in projects if p["name"] == "demo")


@pytest.mark.parametrize("version,keys", [("2.1", QUOTAS_21), ("2.35", QUOTAS_21),
                                          ("2.36", QUOTAS_236), ("2.56", QUOTAS_236),
                                          ("2.57", QUOTAS_257), ("2.90", QUOTAS_257)])
async def test_quota_set_keys(demo: httpx.AsyncClient, admin: httpx.AsyncClient, version: str,
                              keys: set[str]) -> None:
    url = f"{COMPUTE}/os-quota-sets/{await _demo_project(admin)}"
    for suffix in ("", "/detail", "/defaults"):
        quota_set = (await demo.get(url + suffix, headers=_v(version))).json()["quota_set"]
        assert set(quota_set) == keys, suffix
    shown = (await demo.get(url, headers=_v(version))).json()["quota_set"]
    for legacy in ("fixed_ips", "floating_ips", "security_groups", "security_group_rules"):
        assert shown.get(legacy, -1) == -1  # Nova counts none of them
    updated = await admin.put(url, json={"quota_set": {"instances": 12}}, headers=_v(version))
    assert updated.status_code == 200, updated.text
    assert set(updated.json()["quota_set"]) == keys - {"id"}


@pytest.mark.parametrize("version,key,message", [
    ("2.1", "networks", "The networks quota has been removed"),
    ("2.35", "networks", "The networks quota has been removed"),
    ("2.36", "networks", "quota_set/networks"),
    ("2.36", "floating_ips", "quota_set/floating_ips"),
    ("2.57", "injected_files", "quota_set/injected_files"),
])
async def test_quotas_a_version_no_longer_has(admin: httpx.AsyncClient, version: str, key: str,
                                              message: str) -> None:
    url = f"{COMPUTE}/os-quota-sets/{await _demo_project(admin)}"
    resp = await admin.put(url, json={"quota_set": {key: 5}}, headers=_v(version))
    assert resp.status_code == 400, resp.text
    assert message in resp.json()["badRequest"]["message"]


async def test_legacy_quotas_are_accepted_where_they_exist(admin: httpx.AsyncClient) -> None:
    url = f"{COMPUTE}/os-quota-sets/{await _demo_project(admin)}"
    resp = await admin.put(url, json={"quota_set": {"floating_ips": 5, "injected_files": 3}},
                           headers=_v("2.35"))
    assert resp.status_code == 200, resp.text


# -- instance actions of a deleted server --------------------------------------------

async def test_a_deleted_servers_actions_from_2_21(demo: httpx.AsyncClient, active: str) -> None:
    assert (await demo.delete(f"{SERVERS}/{active}")).status_code == 204
    await wait_for_status(demo, active, {"DELETED"})
    url = f"{SERVERS}/{active}/os-instance-actions"
    for version in ("2.1", "2.20"):
        assert (await demo.get(url, headers=_v(version))).status_code == 404
    resp = await demo.get(url, headers=_v("2.21"))
    assert resp.status_code == 200, resp.text
    actions = resp.json()["instanceActions"]
    assert [a["action"] for a in actions] == ["delete", "create"]
    one = await demo.get(f"{url}/{actions[0]['request_id']}", headers=_v("2.21"))
    assert one.status_code == 200 and one.json()["instanceAction"]["action"] == "delete"
    assert (await demo.get(f"{url}/{actions[0]['request_id']}", headers=_v("2.20"))
            ).status_code == 404


# -- os-server-password --------------------------------------------------------------

@pytest.mark.parametrize("stored", ["", "x", "y" * 255, "z" * 256, "w" * password.MAX_SIZE])
def test_a_password_is_kept_in_chunks(stored: str) -> None:
    meta = password.convert_password(stored)
    assert sorted(meta) == ["password_0", "password_1", "password_2", "password_3"]
    assert all(len(chunk) <= password.CHUNK_LENGTH for chunk in meta.values())
    assert password.extract_password({"other": "kept", **meta}) == (stored or None)


async def test_read_and_clear_the_password(cloud: Cloud, demo: httpx.AsyncClient,
                                           active: str) -> None:
    url = f"{SERVERS}/{active}/os-server-password"
    assert (await demo.get(url)).json() == {"password": ""}
    encrypted = "c2VjcmV0" * 60  # longer than one chunk
    assert cloud.db is not None
    await cloud.db.run(password.save_password, active, encrypted)
    assert (await demo.get(url)).json() == {"password": encrypted}
    resp = await demo.delete(url)
    assert resp.status_code == 204 and resp.content == b""
    assert (await demo.get(url)).json() == {"password": ""}
    assert (await demo.get(f"{SERVERS}/00000000-0000-4000-8000-000000000000"
                           f"/os-server-password")).status_code == 404


async def test_a_password_too_long_is_refused(cloud: Cloud, active: str) -> None:
    from cirrus.compute.exception import InvalidRequest

    assert cloud.db is not None
    with pytest.raises(InvalidRequest):
        await cloud.db.run(password.save_password, active, "p" * (password.MAX_SIZE + 1))


# -- a server's security groups ------------------------------------------------------

async def test_a_servers_security_groups(demo: httpx.AsyncClient, active: str) -> None:
    groups = (await demo.get("/network/v2.0/security-groups")).json()["security_groups"]
    default = next(g for g in groups if g["name"] == "default")
    for rule in ({"protocol": "tcp", "port_range_min": 22, "port_range_max": 22,
                  "remote_ip_prefix": "192.0.2.0/24"}, {"protocol": "udp"}, {"protocol": "icmp"},
                 {"direction": "egress", "protocol": "tcp"}):
        resp = await demo.post("/network/v2.0/security-group-rules", json={"security_group_rule": {
            "security_group_id": default["id"], "direction": "ingress", **rule}})
        assert resp.status_code == 201, resp.text
    resp = await demo.get(f"{SERVERS}/{active}/os-security-groups")
    assert resp.status_code == 200, resp.text
    [group] = resp.json()["security_groups"]
    assert {k: group[k] for k in ("id", "name", "description", "tenant_id")} == {
        "id": default["id"], "name": "default", "description": default["description"],
        "tenant_id": default["tenant_id"]}
    rules = group["rules"]
    assert all(set(r) == {"id", "parent_group_id", "ip_protocol", "from_port", "to_port",
                          "group", "ip_range"} for r in rules)
    assert all(r["parent_group_id"] == default["id"] for r in rules)
    by_protocol = {r["ip_protocol"]: r for r in rules if r["ip_protocol"]}
    assert (by_protocol["tcp"]["from_port"], by_protocol["tcp"]["to_port"]) == (22, 22)
    assert by_protocol["tcp"]["ip_range"] == {"cidr": "192.0.2.0/24"}
    assert (by_protocol["udp"]["from_port"], by_protocol["udp"]["to_port"]) == (1, 65535)
    assert (by_protocol["icmp"]["from_port"], by_protocol["icmp"]["to_port"]) == (-1, -1)
    assert by_protocol["udp"]["ip_range"] == {"cidr": "0.0.0.0/0"}
    from_members = [r for r in rules if r["group"]]  # Neutron's default: ingress from itself
    assert from_members and all(r["group"] == {"name": "default",
                                               "tenant_id": default["tenant_id"]}
                                and r["ip_range"] == {} for r in from_members)
    assert len(rules) == len(from_members) + 3  # the egress rule is not shown


async def test_a_server_without_ports_has_no_groups(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image, networks="none"), version="2.37")
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    resp = await demo.get(f"{SERVERS}/{server['id']}/os-security-groups")
    assert resp.json() == {"security_groups": []}
