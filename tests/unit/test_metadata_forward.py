"""The metadata proxy's hop to the API, against scripted servers on loopback:
keep-alive reuse, framings, a connection the server closed while idle,
garbage and silence; and the proxy's own answers (who asks, 404, 502)."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from cirrus.metadata.signature import sign
from cirrus.network.backends.guest_http import GuestRequest, GuestResponse
from cirrus.network.backends.metadata_forward import AsgiForwarder, ForwardError, HttpForwarder
from cirrus.network.backends.metadata_proxy import MetadataProxy


class Scripted:
    """A loopback server answering each request with the next scripted reply
    (bytes; None: close without answering); it records requests and
    connections."""

    def __init__(self, replies: list[bytes | None], close_after: bool = False) -> None:
        self.replies = replies
        self.close_after = close_after
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> "Scripted":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/metadata"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                self.requests.append(head + await reader.readexactly(length))
                reply = self.replies.pop(0)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if self.close_after:
                    break
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


def ok(body: bytes, extra: str = "") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


@pytest.fixture
async def forwarders() -> AsyncIterator[list[HttpForwarder]]:
    made: list[HttpForwarder] = []
    yield made
    for f in made:
        await f.close()


def forwarder(made: list[HttpForwarder], url: str, **kw: Any) -> HttpForwarder:
    made.append(HttpForwarder(url, **kw))
    return made[-1]


@pytest.mark.parametrize(("reply", "status", "body"), [
    (ok(b'{"a": 1}'), 200, b'{"a": 1}'),
    (b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno", 404, b"no"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
     200, b"abcde"),
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b""),
])
async def test_framings(forwarders: list[HttpForwarder], reply: bytes, status: int,
                        body: bytes) -> None:
    async with Scripted([reply, ok(b"next")]) as server:
        f = forwarder(forwarders, server.url)
        resp = await f.forward("GET", "/openstack", {"X-Instance-ID": "i"}, b"")
        assert (resp.status, resp.body) == (status, body)
        assert (await f.forward("GET", "/x", {}, b"")).body == b"next"
        assert server.connections == 1  # kept alive between the two
    assert server.requests[0].startswith(b"GET /metadata/openstack HTTP/1.1\r\n")
    assert b"\r\nX-Instance-ID: i\r\n" in server.requests[0]


async def test_a_body_ended_by_close_is_read_and_not_kept(forwarders: list[HttpForwarder]) -> None:
    async with Scripted([b"HTTP/1.1 200 OK\r\n\r\nall of it", ok(b"2")], close_after=True) as server:
        f = forwarder(forwarders, server.url)
        assert (await f.forward("GET", "/a", {}, b"")).body == b"all of it"
        assert (await f.forward("GET", "/b", {}, b"")).body == b"2"
        assert server.connections == 2


async def test_a_connection_closed_while_idle_is_retried_once(
        forwarders: list[HttpForwarder]) -> None:
    async with Scripted([ok(b"1", "Connection: keep-alive\r\n"), None, ok(b"2")]) as server:
        f = forwarder(forwarders, server.url)
        assert (await f.forward("GET", "/a", {}, b"")).body == b"1"
        # The server drops the kept connection without answering: a new one asks again.
        assert (await f.forward("POST", "/p", {}, b"pw")).body == b"2"
        assert server.connections == 2
    assert server.requests[-1].endswith(b"\r\n\r\npw")


@pytest.mark.parametrize("reply", [
    b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 2xx OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    None,
])
async def test_garbage_is_a_forward_error(forwarders: list[HttpForwarder],
                                          reply: bytes | None) -> None:
    async with Scripted([reply]) as server:
        with pytest.raises(ForwardError):
            await forwarder(forwarders, server.url).forward("GET", "/a", {}, b"")


async def test_silence_and_refusal_are_forward_errors(forwarders: list[HttpForwarder]) -> None:
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ForwardError):
            await forwarder(forwarders, f"http://127.0.0.1:{port}", timeout=0.2).forward(
                "GET", "/a", {}, b"")
    finally:
        silent.close()
        await silent.wait_closed()
    with pytest.raises(ForwardError):  # nothing listens there any more
        await forwarder(forwarders, f"http://127.0.0.1:{port}").forward("GET", "/a", {}, b"")


@pytest.mark.parametrize("url", ["ftp://api/metadata", "api:8774/metadata", "http:///x"])
def test_only_http_urls(url: str) -> None:
    with pytest.raises(ValueError):
        HttpForwarder(url)


async def test_asgi_forwarder_calls_the_app_under_its_prefix() -> None:
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.update(path=scope["path"], query=scope["query_string"],
                    headers=dict(scope["headers"]), body=(await receive())["body"])
        await send({"type": "http.response.start", "status": 409,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"taken"})
    resp = await AsgiForwarder(app).forward("POST", "/openstack/latest/password?x=1",
                                            {"X-Tenant-ID": "p"}, b"pw")
    assert (resp.status, resp.body, resp.content_type) == (409, b"taken", "text/plain")
    assert seen == {"path": "/metadata/openstack/latest/password", "query": b"x=1",
                    "headers": {b"x-tenant-id": b"p"}, "body": b"pw"}


class Recorder:
    """A forwarder that records what the proxy sends (or fails)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.sent: list[tuple[str, str, dict[str, str], bytes]] = []

    async def forward(self, method: str, target: str, headers: dict[str, str],
                      body: bytes) -> GuestResponse:
        if self.fail:
            raise ForwardError("down")
        self.sent.append((method, target, headers, body))
        return GuestResponse(200, b"ok")

    async def close(self) -> None:
        pass


def proxy(tmp_path: Any, forwarder: Recorder) -> MetadataProxy:
    settings = SimpleNamespace(state_dir=tmp_path, metadata_proxy_shared_secret="k",
                               enable_isolated_metadata=True)
    p = MetadataProxy(settings, forwarder)
    p.set_ports("net", [{"device_id": "vm-1", "device_owner": "compute:nova",
                         "project_id": "proj", "fixed_ips": [{"ip_address": "10.0.0.5"}]}])
    return p


@pytest.mark.parametrize(("network", "peer", "status"), [
    ("net", "10.0.0.5", 200), ("net", "10.0.0.6", 404), ("other", "10.0.0.5", 404),
])
async def test_the_proxy_signs_for_whoever_holds_the_address(
        tmp_path: Any, network: str, peer: str, status: int) -> None:
    rec = Recorder()
    req = GuestRequest("GET", "/latest/meta-data/", peer, b"", "", True)
    assert (await proxy(tmp_path, rec)._forward(network, req)).status == status
    if status == 200:
        [(method, target, headers, _)] = rec.sent
        assert (method, target) == ("GET", "/latest/meta-data/")
        assert headers == {"X-Forwarded-For": "10.0.0.5", "X-Instance-ID": "vm-1",
                           "X-Tenant-ID": "proj", "X-Instance-ID-Signature": sign("k", "vm-1")}


async def test_an_unreachable_api_is_a_502(tmp_path: Any) -> None:
    req = GuestRequest("GET", "/", "10.0.0.5")
    assert (await proxy(tmp_path, Recorder(fail=True))._forward("net", req)).status == 502


async def test_a_posted_body_and_its_type_are_passed_on(tmp_path: Any) -> None:
    rec = Recorder()
    req = GuestRequest("POST", "/openstack/latest/password", "10.0.0.5", b"pw", "text/plain")
    await proxy(tmp_path, rec)._forward("net", req)
    assert rec.sent[0][2]["Content-Type"] == "text/plain" and rec.sent[0][3] == b"pw"
