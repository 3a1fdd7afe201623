"""The metadata API through HTTP, as the host proxy calls it: requests signed
for an instance (good, wrong, missing, another project's), both trees,
the guest's password, and garbage paths that must be a 4xx."""
from __future__ import annotations

import base64

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.metadata.signature import shared_secret, sign
from tests.conftest import Api
from tests.functional.servers import active_server

USER_DATA = b"#!/bin/sh\necho metadata-marker\n"


def signed(api: Api, instance_id: str, tenant_id: str, signature: str | None = None,
           ) -> httpx.AsyncClient:
    """A client speaking as the proxy does for ``instance_id``."""
    secret = shared_secret(api.cloud.settings)
    return api.client(headers={"X-Instance-ID": instance_id, "X-Tenant-ID": tenant_id,
                               "X-Instance-ID-Signature": signature or sign(secret, instance_id)})


@pytest.fixture
async def key(demo: httpx.AsyncClient) -> str:
    resp = await demo.post("/compute/v2.1/os-keypairs", json={"keypair": {"name": "mdkey"}})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["keypair"]["public_key"])


@pytest.fixture
async def server(demo: httpx.AsyncClient, key: str) -> dict:
    uuid = await active_server(demo, name="md-vm", key_name="mdkey",
                               user_data=base64.b64encode(USER_DATA).decode(),
                               metadata={"role": "web"})
    resp = await demo.get(f"/compute/v2.1/servers/{uuid}")
    return dict(resp.json()["server"])


@pytest.fixture
async def guest(api: Api, server: dict) -> httpx.AsyncClient:
    async with signed(api, server["id"], server["tenant_id"]) as c:
        yield c


async def test_openstack_meta_data(guest: httpx.AsyncClient, server: dict, key: str) -> None:
    resp = await guest.get("/metadata/openstack/latest/meta_data.json")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "application/json"
    data = resp.json()
    assert data["uuid"] == server["id"]
    assert data["name"] == "md-vm"
    assert data["project_id"] == server["tenant_id"]
    assert data["availability_zone"] == "nova"
    assert data["meta"] == {"role": "web"}
    assert data["public_keys"] == {"mdkey": key}
    assert data["keys"] == [{"name": "mdkey", "type": "ssh", "data": key}]
    assert "admin_pass" not in data  # only the config drive carries it


async def test_openstack_files(guest: httpx.AsyncClient, server: dict) -> None:
    assert (await guest.get("/metadata/openstack/latest/user_data")).content == USER_DATA
    assert (await guest.get("/metadata/openstack/latest/vendor_data.json")).json() == {}
    assert (await guest.get("/metadata/openstack/2016-10-06/vendor_data2.json")).json() == {}
    network = (await guest.get("/metadata/openstack/latest/network_data.json")).json()
    [address] = [a["addr"] for addrs in server["addresses"].values() for a in addrs]
    assert [n["ip_address"] for n in network["networks"]] == [address]
    assert len(network["links"]) == 1


@pytest.mark.parametrize(("path", "lines"), [
    ("/metadata/", ["1.0", "2007-01-19", "2007-03-01", "2007-08-29", "2007-10-10",
                    "2007-12-15", "2008-02-01", "2008-09-01", "2009-04-04", "latest"]),
    ("/metadata/openstack", ["2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15",
                             "2016-06-30", "2016-10-06", "2017-02-22", "2018-08-27",
                             "2020-10-14", "latest"]),
    ("/metadata/openstack/latest", ["meta_data.json", "network_data.json", "password",
                                    "user_data", "vendor_data.json", "vendor_data2.json"]),
    ("/metadata/openstack/2012-08-10/", ["meta_data.json", "user_data"]),
    ("/metadata/openstack/2015-10-15", ["meta_data.json", "network_data.json", "password",
                                        "user_data", "vendor_data.json"]),
    ("/metadata/latest", ["meta-data/", "user-data"]),
    ("/metadata/latest/meta-data/public-keys", ["0=mdkey"]),
    ("/metadata/latest/meta-data/public-keys/0/", ["openssh-key"]),
    ("/metadata/2009-04-04/meta-data/placement/", ["availability-zone"]),
])
async def test_listings(guest: httpx.AsyncClient, path: str, lines: list[str]) -> None:
    resp = await guest.get(path)
    assert resp.status_code == 200, resp.text
    assert resp.text.split("\n") == lines


async def test_ec2_tree(guest: httpx.AsyncClient, server: dict, key: str) -> None:
    listing = (await guest.get("/metadata/latest/meta-data/")).text.split("\n")
    assert {"instance-id", "hostname", "local-ipv4", "public-ipv4", "public-keys/",
            "placement/", "ami-launch-index", "security-groups"} <= set(listing)
    leaf = {name: (await guest.get(f"/metadata/latest/meta-data/{name}")).text
            for name in ("instance-id", "hostname", "local-ipv4", "public-ipv4",
                         "public-keys/0/openssh-key", "placement/availability-zone",
                         "security-groups")}
    [address] = [a["addr"] for addrs in server["addresses"].values() for a in addrs]
    assert leaf["instance-id"].startswith("i-") and len(leaf["instance-id"]) == 10
    assert leaf["hostname"] == "md-vm"
    assert leaf["local-ipv4"] == address
    assert leaf["public-ipv4"] == ""  # no floating IP
    assert leaf["public-keys/0/openssh-key"] == key
    assert leaf["placement/availability-zone"] == "nova"
    assert leaf["security-groups"] == "default"
    assert (await guest.get("/metadata/latest/user-data")).content == USER_DATA


async def test_wrong_or_missing_signature_is_403(api: Api, server: dict) -> None:
    uuid, tenant = server["id"], server["tenant_id"]
    other_secret = sign("not-the-secret", uuid)
    for client in (signed(api, uuid, tenant, other_secret),
                   signed(api, uuid, tenant, sign(shared_secret(api.cloud.settings), "x" + uuid)),
                   api.client(headers={"X-Instance-ID": uuid, "X-Tenant-ID": tenant}),
                   api.client()):
        async with client as c:
            resp = await c.get("/metadata/openstack/latest/meta_data.json")
            assert resp.status_code == 403, resp.text
            assert uuid not in resp.text


async def test_a_token_is_not_a_signature(api: Api, server: dict) -> None:
    for user in ("demo", "admin"):
        async with await api.as_user(user) as c:
            resp = await c.get("/metadata/openstack/latest/meta_data.json",
                               headers={"X-Instance-ID": server["id"],
                                        "X-Tenant-ID": server["tenant_id"]})
            assert resp.status_code == 403, resp.text


async def test_another_projects_instance_is_404(api: Api, server: dict) -> None:
    """A signature for the instance under the wrong project: the proxy's
    tenant must own it, else the instance does not exist for it."""
    async with signed(api, server["id"], "someone-elses-project") as c:
        resp = await c.get("/metadata/openstack/latest/meta_data.json")
    assert resp.status_code == 404, resp.text
    assert "md-vm" not in resp.text


async def test_unknown_instance_is_404(api: Api, server: dict) -> None:
    for uuid in ("00000000-0000-0000-0000-000000000000", "not-a-uuid", "x" * 5000):
        async with signed(api, uuid, server["tenant_id"]) as c:
            resp = await c.get("/metadata/latest/meta-data/instance-id")
        assert resp.status_code == 404, resp.text


async def test_deleted_instance_is_404(api: Api, demo: httpx.AsyncClient, server: dict) -> None:
    cloud: Cloud = api.cloud
    cloud.state["metadata"].cache.ttl = 0  # no cached answer for the gone instance
    assert (await demo.delete(f"/compute/v2.1/servers/{server['id']}")).status_code == 204
    async with signed(api, server["id"], server["tenant_id"]) as c:
        for _ in range(200):
            resp = await c.get("/metadata/openstack/latest/meta_data.json")
            if resp.status_code == 404:
                break
            await demo.get(f"/compute/v2.1/servers/{server['id']}")
        assert resp.status_code == 404, resp.text


@pytest.mark.parametrize("path", [
    "/metadata/openstack/1999-01-01/meta_data.json", "/metadata/openstack/latest/nope",
    "/metadata/openstack/2012-08-10/network_data.json", "/metadata/openstack/latest/user_data/x",
    "/metadata/nope", "/metadata/latest/meta-data/nope", "/metadata/latest/meta-data/_name",
    "/metadata/latest/meta-data/public-keys/0/_name", "/metadata/latest/meta-data/hostname/x",
    "/metadata/latest/nope", "/metadata/1999/meta-data/", "/metadata/" + "a/" * 2000,
    "/metadata/openstack/latest/%00", "/metadata/latest/meta-data/%ff%fe",
])
async def test_garbage_paths_are_404(guest: httpx.AsyncClient, path: str) -> None:
    resp = await guest.get(path)
    assert resp.status_code == 404, resp.text


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/metadata/latest/meta-data/"), ("PUT", "/metadata/openstack/latest/password"),
    ("DELETE", "/metadata/openstack/latest/meta_data.json"),
])
async def test_other_methods_are_405(guest: httpx.AsyncClient, method: str, path: str) -> None:
    assert (await guest.request(method, path)).status_code == 405


async def test_password_is_posted_once(guest: httpx.AsyncClient, demo: httpx.AsyncClient,
                                       server: dict) -> None:
    url = "/metadata/openstack/latest/password"
    assert (await guest.get(url)).text == ""
    resp = await guest.post(url, content=b"encrypted-secret")
    assert resp.status_code == 200, resp.text
    assert (await guest.get(url)).text == "encrypted-secret"
    assert (await guest.post(url, content=b"again")).status_code == 409
    api_url = f"/compute/v2.1/servers/{server['id']}/os-server-password"
    assert (await demo.get(api_url)).json() == {"password": "encrypted-secret"}
    assert (await demo.delete(api_url)).status_code == 204
    assert (await guest.post(url, content=b"second")).status_code == 200
    assert (await demo.get(api_url)).json() == {"password": "second"}


@pytest.mark.parametrize(("path", "body", "code"), [
    ("/metadata/openstack/latest/password", b"x" * 1021, 400),
    ("/metadata/openstack/latest/password", b"\xff\xfe", 400),
    ("/metadata/openstack/1999-01-01/password", b"x", 404),
])
async def test_bad_passwords(guest: httpx.AsyncClient, path: str, body: bytes, code: int) -> None:
    assert (await guest.post(path, content=body)).status_code == code
    assert (await guest.get("/metadata/openstack/latest/password")).text == ""
