"""What every API refuses before a handler runs: bodies that are not strict
JSON, bodies not announced as JSON, unusable headers; and what an unexpected
error looks like (the family's 500 body with the request id, nothing raised
to the server, so the connection stays usable)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.api.wsgi import MAX_DEPTH
from tests.security.conftest import Tenants

# One write per API family, each with the body it would take.
WRITES = [
    ("/compute/v2.1/os-server-groups", '{"server_group": {"name": %s, "policies": ["affinity"]}}'),
    ("/network/v2.0/networks", '{"network": {"name": %s}}'),
    ("/image/v2/images", '{"name": %s, "disk_format": "raw", "container_format": "bare"}'),
    ("/identity/v3/projects", '{"project": {"name": %s, "domain_id": "default"}}'),
]
LISTINGS = ["/compute/v2.1/os-server-groups", "/network/v2.0/networks", "/image/v2/images",
            "/identity/v3/projects"]
JUNK_NAMES = ['"\\ud800"', '"a\\u0000b"', '"a\\udfff"', "NaN", "Infinity", "-Infinity", '"\\ud800\\ud800"']


@pytest.mark.parametrize("junk", JUNK_NAMES)
async def test_lone_surrogates_and_non_finite_numbers_are_400_and_nothing_is_stored(
        tenants: Tenants, junk: str) -> None:
    for url, template in WRITES:
        resp = await tenants.admin.post(url, content=(template % junk).encode(),
                                        headers={"Content-Type": "application/json"})
        assert resp.status_code == 400, (url, resp.status_code, resp.text)
    for url in LISTINGS:
        assert (await tenants.admin.get(url)).status_code == 200, url


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
async def test_deep_nesting_is_400(tenants: Tenants, depth: int) -> None:
    body = b'{"network": {"name": ' + b"[" * depth + b"]" * depth + b"}}"
    resp = await tenants.member.post("/network/v2.0/networks", content=body,
                                     headers={"Content-Type": "application/json"})
    assert resp.status_code in (400, 413), resp.text
    resp = await tenants.member.post("/network/v2.0/networks", content=b"[" * depth + b"]" * depth)
    assert resp.status_code in (400, 413)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/xml", "multipart/form-data; boundary=x"])
async def test_a_body_not_announced_as_json_is_415(tenants: Tenants, content_type: str) -> None:
    for url, template in WRITES:
        resp = await tenants.admin.post(url, content=(template % '"x"').encode(),
                                        headers={"Content-Type": content_type})
        assert resp.status_code == 415, (url, resp.text)
    nova = await tenants.member.post("/compute/v2.1/os-server-groups", content=b"{}",
                                     headers={"Content-Type": "text/plain"})
    assert nova.json()["badMediaType"]["code"] == 415


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=UTF-8",
                                          None])
async def test_json_with_or_without_its_type_is_read(tenants: Tenants, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    resp = await tenants.member.post("/network/v2.0/networks", content=b'{"network": {"name": "n"}}',
                                     headers=headers)
    assert resp.status_code == 201, resp.text


@pytest.mark.parametrize("version,status", [
    ("compute 2." + "9" * 5000, 406), ("compute 9" * 3000, 400), ("compute 2.x", 400),
    ("compute " + "1" * 7 + ".1", 406), ("compute 2.1000000", 406)])
async def test_unusable_microversions_are_4xx(tenants: Tenants, version: str, status: int) -> None:
    resp = await tenants.member.get("/compute/v2.1/servers",
                                    headers={"OpenStack-API-Version": version})
    assert resp.status_code == status, resp.text
    assert len(resp.text) < 1000  # the answer does not echo the whole header


@pytest.mark.parametrize("token", [b"\xff\xfe\xfd", "gAAAAé".encode(), b"x" * 5000])
async def test_an_unreadable_token_is_401(api: Any, token: bytes) -> None:
    async with api.client() as c:
        resp = await c.get("/compute/v2.1/servers", headers=[(b"X-Auth-Token", token)])
    assert resp.status_code == 401, resp.text


class _Exploding:
    """An image service whose listing fails as a bug would."""

    async def list(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")


async def test_an_unexpected_error_is_the_familys_500_with_the_request_id(
        cloud: Any, tenants: Tenants) -> None:
    images = cloud.app.state.images
    cloud.app.state.images = _Exploding()
    try:
        # ASGITransport raises what the app raises: getting a response at all
        # proves the error was answered and not passed to the server.
        resp = await tenants.member.get("/image/v2/images")
    finally:
        cloud.app.state.images = images
    assert resp.status_code == 500
    request_id = resp.headers["x-openstack-request-id"]
    assert request_id.startswith("req-")
    assert resp.json()["code"] == "500 Internal Server Error"
    assert request_id in resp.json()["message"]
    assert (await tenants.member.get("/image/v2/images")).status_code == 200
