"""What every response carries, whichever layer answers it (the middleware of
cirrus/api/app.py): request ids, microversion headers, OpenStack error bodies,
never a traceback."""
from __future__ import annotations

import re
import uuid

import httpx
import pytest
from starlette.requests import Request
from starlette.routing import Mount, Route

from cirrus.bootstrap import Cloud
from cirrus.context import new_request_id
from tests.conftest import Api

SERVERS = "/compute/v2.1/servers"
VERSION_HEADERS = ("openstack-api-version", "x-openstack-nova-api-version", "vary")
REQUEST_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def request_id(resp: httpx.Response) -> str:
    rid = resp.headers["x-openstack-request-id"]
    assert REQUEST_ID.match(rid), rid
    assert resp.headers["x-compute-request-id"] == rid
    return rid


def test_request_ids_are_uuid4_text() -> None:
    for _ in range(200):
        rid = new_request_id()
        assert REQUEST_ID.match(rid)
        parsed = uuid.UUID(rid[4:])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == rid[4:]


async def test_handler_answers_carry_ids_and_version(api: Api) -> None:
    async with await api.as_user("demo") as c:
        ok = await c.get(SERVERS, headers={"OpenStack-API-Version": "compute 2.37"})
        missing = await c.get(f"{SERVERS}/nope")
        bad_query = await c.get(SERVERS, params={"limit": "abc"})
    assert ok.status_code == 200
    assert ok.headers["openstack-api-version"] == "compute 2.37"
    assert ok.headers["x-openstack-nova-api-version"] == "2.37"
    assert ok.headers["vary"] == "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
    assert missing.status_code == 404 and "itemNotFound" in missing.json()
    assert bad_query.status_code == 400 and "badRequest" in bad_query.json()
    for resp in (missing, bad_query):
        assert resp.headers["openstack-api-version"] == "compute 2.1"
    assert len({request_id(r) for r in (ok, missing, bad_query)}) == 3


async def test_answers_outside_handlers_carry_ids_only(api: Api) -> None:
    async with await api.as_user("demo") as c:
        no_route = await c.get("/compute/v2.1/nothing")
        bad_version = await c.get(SERVERS, headers={"OpenStack-API-Version": "compute 3.0"})
        bad_method = await c.put(SERVERS, json={})
    async with api.client() as c:
        no_token = await c.get(SERVERS)
    assert no_route.json() == {"itemNotFound": {"code": 404, "message": "Not Found"}}
    assert bad_version.status_code == 406 and "notAcceptable" in bad_version.json()
    assert bad_method.json() == {"badMethod": {"code": 405, "message": "Method Not Allowed"}}
    assert no_token.json()["unauthorized"]["code"] == 401
    assert no_token.headers["www-authenticate"].startswith('Keystone uri="http')
    for resp in (no_route, bad_version, bad_method, no_token):
        request_id(resp)
        assert not any(h in resp.headers for h in VERSION_HEADERS)


# Nova's routes match a path exactly: a trailing slash names no route (404),
# where a redirect to the collection would have answered 405 or the index.
@pytest.mark.parametrize("method, path", [
    ("DELETE", "/compute/v2.1/images/"), ("DELETE", "/compute/v2.1/os-security-groups/"),
    ("GET", "/compute/v2.1/os-simple-tenant-usage/"), ("GET", f"{SERVERS}/"),
    ("POST", f"{SERVERS}/"), ("PUT", "/compute/v2.1/os-keypairs/")])
async def test_a_compute_path_with_a_trailing_slash_is_404(api: Api, method: str,
                                                           path: str) -> None:
    async with await api.as_user("admin") as c:
        resp = await c.request(method, path, params={"start": "2026-01-01T00:00:00"})
        collection = await c.request("GET", path.rstrip("/"))
    assert resp.status_code == 404, resp.text
    assert resp.json() == {"itemNotFound": {"code": 404, "message": "Not Found"}}
    assert collection.status_code in (200, 405)  # the path without the slash is a route
    request_id(resp)


@pytest.mark.parametrize("path, key", [("/identity/v3/auth/catalog", "error"),
                                       ("/network/v2.0/networks", "NeutronError"),
                                       (SERVERS, "unauthorized")])
async def test_bad_token_is_401_in_each_api_format(api: Api, path: str, key: str) -> None:
    async with api.client("not-a-token") as c:
        resp = await c.get(path)
    assert resp.status_code == 401 and key in resp.json()
    request_id(resp)


async def test_unexpected_error_is_500_body_without_traceback(cloud: Cloud) -> None:
    async def boom(request: Request) -> None:
        raise KeyError("a bug")
    compute = next(r for r in cloud.app.routes if isinstance(r, Mount) and r.path == "/compute")
    compute.routes.append(Route("/v2.1/boom", boom))
    api = Api(cloud)
    api.transport = httpx.ASGITransport(app=cloud.app, raise_app_exceptions=False)
    async with await api.as_user("demo") as c:
        resp = await c.get("/compute/v2.1/boom")
        after = await c.get(SERVERS)
    assert resp.status_code == 500
    assert resp.json() == {"computeFault": {"code": 500, "message": (
        "Unexpected API Error. Please report this at the cirrus issue tracker and attach "
        f"the cirrus log if possible (request {resp.headers['x-openstack-request-id']}).")}}
    assert "Traceback" not in resp.text
    assert after.status_code == 200  # the app serves on


async def test_head_and_a_slash_redirect_carry_ids(api: Api) -> None:
    async with await api.as_user("demo") as c:
        head = await c.head(SERVERS, headers={"OpenStack-API-Version": "compute 2.37"})
        get = await c.get(SERVERS, headers={"OpenStack-API-Version": "compute 2.37"})
        redirect = await c.get("/identity/v3/projects/", follow_redirects=False)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    assert head.headers["openstack-api-version"] == "compute 2.37"
    assert redirect.status_code == 307
    assert redirect.headers["location"].endswith("/identity/v3/projects")
    for resp in (head, redirect):
        request_id(resp)


async def test_a_repeated_header_counts_as_before(api: Api) -> None:
    # The first microversion header and request id, the last token: a client
    # sending one twice gets what it got from the middleware layers.
    token = await api.token("demo")
    async with api.client() as c:
        resp = await c.get(SERVERS, headers=[
            ("X-Auth-Token", "not-a-token"), ("X-Auth-Token", token),
            ("OpenStack-API-Version", "compute 2.37"), ("OpenStack-API-Version", "compute 2.50"),
            ("X-OpenStack-Request-ID", "req-11111111-2222-4333-8444-555555555555"),
            ("X-OpenStack-Request-ID", "bogus")])
    assert resp.status_code == 200, resp.text
    assert resp.headers["openstack-api-version"] == "compute 2.37"
