"""No single request may cost without bound (issue #18): the name and
address filters of ``GET /servers`` run on a linear-time engine (RE2), and a
``POST /servers`` far over the quota or ``max_instances_per_request`` is
refused before any record is built."""
from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from cirrus.compute.models import instances
from cirrus.compute.regex import MAX_PATTERN_LENGTH, compile_filter
from cirrus.exception import ValidationError
from tests.functional.servers import (create_server, db_count, server_body, upload_image,
                                      wait_for_status)
from tests.security.conftest import Tenants

SERVERS = "/compute/v2.1/servers"
CATASTROPHIC = "^(a+)+$"  # exponential for a backtracking engine on a…a!


@pytest.fixture
async def servers(tenants: Tenants) -> dict[str, str]:
    """Two of project A's servers by name: one built to make backtracking
    explode, one ACTIVE with an address on the auto-allocated network."""
    image = await upload_image(tenants.member)
    evil = await create_server(tenants.member, server_body(image, name="a" * 30 + "!",
                                                           networks="none"), "2.37")
    web = await create_server(tenants.member, server_body(image, name="web"))
    await wait_for_status(tenants.member, web["id"], {"ACTIVE"})
    return {"evil": evil["id"], "web": web["id"]}


async def _names(client: httpx.AsyncClient, **params: Any) -> list[str]:
    resp = await client.get(f"{SERVERS}/detail", params=params,
                            headers={"OpenStack-API-Version": "compute 2.5"})
    assert resp.status_code == 200, resp.text
    return sorted(s["name"] for s in resp.json()["servers"])


async def test_a_catastrophic_name_pattern_answers_at_once(tenants: Tenants,
                                                           servers: dict[str, str]) -> None:
    for client, params in ((tenants.member, {}), (tenants.admin, {"all_tenants": 1})):
        for path in (SERVERS, f"{SERVERS}/detail"):
            started = time.perf_counter()
            resp = await client.get(path, params={"name": CATASTROPHIC, **params})
            elapsed = time.perf_counter() - started
            assert resp.status_code == 200, resp.text
            assert resp.json()["servers"] == []
            assert elapsed < 1.0, f"{path}: {elapsed:.2f} s"  # ~37 s on a backtracking engine
    assert await _names(tenants.member, name="^a+!$") == ["a" * 30 + "!"]


@pytest.mark.parametrize("params, expected", [
    ({"name": "we"}, ["web"]),  # re.search: anywhere in the name
    ({"name": "^w.b$"}, ["web"]),
    ({"name": "!$"}, ["a" * 30 + "!"]),
    ({"name": "A"}, []),  # case-sensitive, as Python's re
    ({"ip": r"10\.0\.0\."}, ["web"]),  # re.match on IPv4 addresses, as Nova's _ip_filter
    ({"ip": r"0\.0\."}, []),
    ({"ip": "10"}, ["web"]),
    ({"ip6": "."}, []),  # no IPv6 address anywhere
])
async def test_filters_keep_novas_regex_semantics(tenants: Tenants, servers: dict[str, str],
                                                  params: dict[str, str],
                                                  expected: list[str]) -> None:
    assert await _names(tenants.member, **params) == expected


@pytest.mark.parametrize("param, value, fragment", [
    ("ip", "[", "missing ]"),
    ("ip6", "[", "missing ]"),
    ("name", "(", "missing )"),
    ("name", r"(a)\1", "back-references"),
    ("name", "(?=a)", "look-around"),
    ("name", "a" * (MAX_PATTERN_LENGTH + 1), "longer than"),
    ("name", "((a{1000}){1000}){1000}", "name"),
])
async def test_a_bad_pattern_is_400(tenants: Tenants, servers: dict[str, str], param: str,
                                    value: str, fragment: str) -> None:
    for client, extra in ((tenants.member, {}), (tenants.admin, {"all_tenants": "1"})):
        for path in (SERVERS, f"{SERVERS}/detail"):
            resp = await client.get(path, params={param: value, **extra},
                                    headers={"OpenStack-API-Version": "compute 2.5"})
            assert resp.status_code == 400, resp.text
            assert fragment in resp.json()["badRequest"]["message"]
    assert len(await _names(tenants.member)) == 2


@pytest.mark.parametrize("pattern, text, anchored, found", [
    ("web", "my-web-1", False, True), ("web", "my-web-1", True, False),
    ("^my", "my-web-1", False, True), ("1$", "my-web-1", False, True),
    (r"\d", "vm", False, False), ("é+", "café", False, True),
])
def test_compiled_filters_match_as_python_re(pattern: str, text: str, anchored: bool,
                                             found: bool) -> None:
    assert compile_filter("name", pattern, anchored=anchored)(text) is found


def test_an_invalid_pattern_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="name"):
        compile_filter("name", "[")


async def _no_servers_anywhere(tenants: Tenants) -> None:
    assert await db_count(tenants.api.cloud, instances) == 0
    assert (await tenants.member.get(f"{SERVERS}/detail")).status_code == 200
    everyone = await tenants.admin.get(f"{SERVERS}/detail", params={"all_tenants": 1})
    assert everyone.status_code == 200 and everyone.json()["servers"] == []


@pytest.fixture
async def image(tenants: Tenants) -> str:
    return await upload_image(tenants.member)


@pytest.mark.parametrize("count, status, fragment", [
    (1_000_000, 400, "more than the 1000 servers one request may create"),
    (1001, 400, "1000 servers"),
    (1000, 403, "Quota exceeded for instances"),
    (11, 403, "Quota exceeded for instances"),
])
async def test_too_many_servers_are_refused_before_anything_is_built(
        tenants: Tenants, image: str, count: int, status: int, fragment: str) -> None:
    body = server_body(image, min_count=count, max_count=count)
    started = time.perf_counter()
    resp = await tenants.member.post(SERVERS, json=body)
    elapsed = time.perf_counter() - started
    assert resp.status_code == status, resp.text
    assert fragment in resp.text
    assert elapsed < 1.0, f"{elapsed:.2f} s"  # 9 s and +1.2 GB RSS when rows came first
    await _no_servers_anywhere(tenants)


async def test_max_count_is_cut_to_what_the_quota_allows(tenants: Tenants, image: str) -> None:
    demo = tenants.project["demo"]
    resp = await tenants.admin.put(f"/compute/v2.1/os-quota-sets/{demo}",
                                   json={"quota_set": {"instances": 2}})
    assert resp.status_code == 200, resp.text
    body = server_body(image, name="many", min_count=1, max_count=1_000_000, networks="none")
    resp = await tenants.member.post(SERVERS, json=body,
                                     headers={"OpenStack-API-Version": "compute 2.37"})
    assert resp.status_code == 202, resp.text
    assert await _names(tenants.member) == ["many-1", "many-2"]
    body["server"]["min_count"] = 1
    resp = await tenants.member.post(SERVERS, json=body,
                                     headers={"OpenStack-API-Version": "compute 2.37"})
    assert resp.status_code == 403, resp.text
