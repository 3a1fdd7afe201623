"""The compute host's image client (``cirrus.image.client``) against a fake
Keystone and Glance (httpx's MockTransport): service credentials, the
endpoint from the catalog, a new token on 401, errors mapped at the boundary."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import httpx
import pytest

from cirrus.config import Settings
from cirrus.compute import exception as cexc
from cirrus.image.client import (ImageClient, PATCH_TYPE, ServiceCredentials, from_glance,
                                 image_endpoint)

IMAGE = "0e7a3c1b-5d0f-4c1e-9a9b-3f1d2e4c5a6b"
CREDS = ServiceCredentials(auth_url="http://ctl:8774/identity", username="nova",
                           password="secret", project_name="service", region="RegionOne")


def catalog(url: str = "http://ctl:8774/image", region: str = "RegionOne") -> list[dict[str, Any]]:
    return [{"type": "identity", "endpoints": []},
            {"type": "image", "endpoints": [
                {"interface": "admin", "region": region, "url": "http://admin-only/"},
                {"interface": "public", "region": region, "url": url + "/"}]}]


@dataclass
class FakeCloud:
    """Keystone issuing numbered tokens and Glance knowing one image; ``stale``:
    tokens the image API refuses with 401."""

    data: bytes = b"0123456789" * 100
    status: int = 200
    stale: set[str] = field(default_factory=set)
    tokens: int = 0
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def handler(self, request: httpx.Request) -> httpx.Response:
        token = request.headers.get("X-Auth-Token")
        self.seen.append((request.method, request.url.path, token))
        if request.url.path == "/identity/v3/auth/tokens":
            body = json.loads(request.content)
            user = body["auth"]["identity"]["password"]["user"]
            if (user["name"], user["password"]) != ("nova", "secret"):
                return httpx.Response(401)
            self.tokens += 1
            return httpx.Response(201, headers={"X-Subject-Token": f"t{self.tokens}"},
                                  json={"token": {"catalog": catalog()}})
        if token in self.stale:
            return httpx.Response(401)
        if self.status != 200:
            return httpx.Response(self.status, text="no")
        if request.url.path == f"/image/v2/images/{IMAGE}/file":
            if request.method == "PUT":
                self.bodies.append(request.read())
                return httpx.Response(204)
            return httpx.Response(200, content=self.data)
        if request.url.path == f"/image/v2/images/{IMAGE}":
            if request.method == "PATCH":
                self.bodies.append(request.read())
                assert request.headers["Content-Type"] == PATCH_TYPE
            return httpx.Response(200, json={"id": IMAGE, "status": "active",
                                             "os_hash_algo": "sha512", "kernel_id": "k",
                                             "os_command_line": "console=ttyS0"})
        return httpx.Response(404)


def client(cloud: FakeCloud, creds: ServiceCredentials = CREDS) -> ImageClient:
    return ImageClient(creds, httpx.MockTransport(cloud.handler))


async def read(c: ImageClient) -> bytes:
    async with c.download(IMAGE) as chunks:
        return b"".join([chunk async for chunk in chunks])


async def test_one_token_serves_many_requests() -> None:
    cloud = FakeCloud()
    c = client(cloud)
    assert await read(c) == cloud.data
    meta = await c.show(IMAGE)
    await c.close()
    assert cloud.tokens == 1
    assert [s[2] for s in cloud.seen[1:]] == ["t1", "t1"]
    assert meta["properties"] == {"kernel_id": "k", "os_command_line": "console=ttyS0"}
    assert meta["os_hash_algo"] == "sha512"


async def test_a_refused_token_is_renewed_once() -> None:
    cloud = FakeCloud(stale={"t1"})
    c = client(cloud)
    assert await read(c) == cloud.data
    await c.close()
    assert [(m, t) for m, _, t in cloud.seen] == [
        ("POST", None), ("GET", "t1"), ("POST", None), ("GET", "t2")]


@pytest.mark.parametrize("status, error", [
    (404, cexc.ImageNotFound), (500, cexc.GlanceConnectionFailed),
    (403, cexc.GlanceConnectionFailed)])
async def test_errors_are_mapped(status: int, error: type[Exception]) -> None:
    c = client(FakeCloud(status=status))
    with pytest.raises(error):
        await read(c)
    with pytest.raises(error):
        await c.show(IMAGE)
    await c.close()


async def test_a_token_refused_twice_is_an_error() -> None:
    cloud = FakeCloud(stale={"t1", "t2"})
    c = client(cloud)
    with pytest.raises(cexc.GlanceConnectionFailed, match="401"):
        await c.show(IMAGE)
    await c.close()


async def test_wrong_credentials_say_whose() -> None:
    c = client(FakeCloud(), ServiceCredentials(
        auth_url="http://ctl:8774/identity/v3", username="nova", password="wrong",
        project_name="service", region="RegionOne"))
    with pytest.raises(cexc.GlanceConnectionFailed, match="credentials of nova"):
        await c.show(IMAGE)
    await c.close()


async def test_an_unreachable_service_is_unavailable() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)
    c = ImageClient(CREDS, httpx.MockTransport(refuse))
    with pytest.raises(cexc.GlanceConnectionFailed, match="connection refused"):
        await c.show(IMAGE)
    await c.close()


async def test_a_snapshot_upload_sets_the_formats_then_streams_the_data() -> None:
    cloud = FakeCloud()
    c = client(cloud)

    async def chunks() -> AsyncIterator[bytes]:
        yield b"disk "
        yield b"data"
    await c.upload(IMAGE, chunks(), "qcow2", "bare")
    await c.close()
    assert [(m, p) for m, p, _ in cloud.seen[1:]] == [
        ("PATCH", f"/image/v2/images/{IMAGE}"), ("PUT", f"/image/v2/images/{IMAGE}/file")]
    assert json.loads(cloud.bodies[0]) == [
        {"op": "replace", "path": "/disk_format", "value": "qcow2"},
        {"op": "replace", "path": "/container_format", "value": "bare"}]
    assert cloud.bodies[1] == b"disk data"


def test_the_endpoint_comes_from_the_catalog_unless_overridden() -> None:
    assert image_endpoint(catalog(), "RegionOne") == "http://ctl:8774/image"
    with pytest.raises(cexc.GlanceConnectionFailed, match="no image endpoint"):
        image_endpoint(catalog(region="Elsewhere"), "RegionOne")


async def test_an_endpoint_override_is_used_as_given() -> None:
    cloud = FakeCloud()
    creds = ServiceCredentials(**{**CREDS.__dict__, "endpoint_override": "http://glance:9292/"})
    c = client(cloud, creds)
    with pytest.raises(cexc.ImageNotFound):  # the fake serves /image/… only
        await c.show(IMAGE)
    await c.close()
    assert cloud.seen[-1][1] == f"/v2/images/{IMAGE}"


@pytest.mark.parametrize("values, expected", [
    ({}, ("http://127.0.0.1:8774/identity", "admin", "admin", "admin")),
    ({"glance_auth_url": "http://ctl/identity", "glance_username": "nova",
      "glance_password": "pw", "glance_project_name": "service"},
     ("http://ctl/identity", "nova", "pw", "service")),
    ({"admin_password": "s3"}, ("http://127.0.0.1:8774/identity", "admin", "s3", "admin")),
])
def test_credentials_from_settings(values: dict[str, str],
                                   expected: tuple[str, str, str, str]) -> None:
    creds = ServiceCredentials.from_settings(Settings(bind="127.0.0.1:8774", **values))
    assert (creds.auth_url, creds.username, creds.password, creds.project_name) == expected


def test_tokens_url_with_or_without_the_version() -> None:
    base = CREDS.__dict__
    for url in ("http://k/identity", "http://k/identity/", "http://k/identity/v3"):
        creds = ServiceCredentials(**{**base, "auth_url": url})
        assert creds.tokens_url() == "http://k/identity/v3/auth/tokens"


def test_glance_json_is_split_into_attributes_and_properties() -> None:
    meta = from_glance({"id": IMAGE, "status": "active", "checksum": "c", "size": 3,
                        "ramdisk_id": "r", "hw_disk_bus": "virtio"})
    assert meta["checksum"] == "c" and meta["size"] == 3
    assert meta["properties"] == {"ramdisk_id": "r", "hw_disk_bus": "virtio"}
