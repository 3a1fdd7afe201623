"""RouteIndex against Starlette's own walk over every route of the app.

The index may only narrow which routes are tried: for every path a route's
pattern matches, that route must be among the candidates, in table order,
and ``match`` must name the route Starlette's router would serve, or None
where the router has to decide (405, redirect, 404).
"""
from __future__ import annotations

from typing import Any

import pytest
from starlette.routing import Match, Mount, Route

from cirrus.api.app import build_app
from cirrus.api.routing import RouteIndex

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
VALUES = ("abc", "0f2c6a3e-5b1e-4c4e-9d43-6c1e2f0b7a10", "1", "v2.1", "servers", "os-keypairs")


def _families() -> list[tuple[str, list[Route]]]:
    app = build_app({})
    out = []
    for mount in app.routes:
        routes = [r for r in getattr(mount, "routes", ()) if isinstance(r, Route)]
        if isinstance(mount, Mount) and routes:
            out.append((mount.path, routes))
    return out


FAMILIES = _families()


def _paths(routes: list[Route]) -> set[str]:
    """Each route's path with its parameters filled in several ways, and the
    near misses: a trailing slash, a segment more or less, empty segments."""
    paths = {"/", "", "//", "/nothing", "/v2.1", "/v2.1/", "/v3/", "/v2.0/x/y/z/w/v"}
    for route in routes:
        for value in VALUES:
            path = route.path_format
            for name in route.param_convertors:
                path = path.replace("{" + name + "}", value)
            paths |= {path, path + "/", path + "/extra", path.rsplit("/", 1)[0],
                      path.replace("/", "//", 1), path + "/" + value}
    return paths


def _walk(routes: list[Route], method: str, path: str) -> tuple[Route, dict[str, Any]] | None:
    """What ``RouteIndex.match`` must answer: the route Starlette's router
    serves (its first full match, by ``Route.matches``), or None."""
    scope = {"type": "http", "path": path, "root_path": "", "method": method}
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return route, child["path_params"]
    return None


@pytest.mark.parametrize("prefix, routes", FAMILIES, ids=[f for f, _ in FAMILIES])
def test_the_index_answers_as_the_walk(prefix: str, routes: list[Route]) -> None:
    index = RouteIndex(routes)
    checked = 0
    for path in sorted(_paths(routes)):
        candidates = index.candidates(path) if path.startswith("/") else ()
        matching = [r for r in routes if r.path_regex.match(path)]
        assert [r for r in candidates if r in matching] == matching, path
        assert list(candidates) == [r for r in routes if r in candidates], path  # order kept
        for method in METHODS:
            assert index.match(method, path) == _walk(routes, method, path), (method, path)
            checked += 1
    assert checked > len(routes) * len(METHODS)


def test_a_method_served_by_a_later_route_of_the_same_path_is_found() -> None:
    # The tables have one Route per method: POST /servers is the second route
    # of its path, after the listing's GET.
    routes = dict(FAMILIES)["/compute"]
    index = RouteIndex(routes)
    listing = index.match("GET", "/v2.1/servers")
    create = index.match("POST", "/v2.1/servers")
    assert listing is not None and create is not None and listing[0] is not create[0]
    assert create[0].methods == {"POST"}
    assert index.match("PATCH", "/v2.1/servers") is None  # the router's 405


def test_the_index_tries_few_routes() -> None:
    routes = dict(FAMILIES)["/compute"]
    index = RouteIndex(routes)
    assert len(routes) > 100
    for path in ("/v2.1/servers/abc", "/v2.1/servers", "/v2.1/flavors/1", "/v2.1/nothing"):
        assert len(index.candidates(path)) <= 4, path


def test_a_route_spanning_segments_is_tried_for_every_path() -> None:
    async def endpoint(request: Any) -> None: ...
    files = Route("/files/{rest:path}", endpoint, methods=["GET"])
    one = Route("/files/{name}", endpoint, methods=["GET"])
    index = RouteIndex([files, one])
    assert index.match("GET", "/files/a/b/c") == (files, {"rest": "a/b/c"})
    assert index.match("GET", "/files/a") == (files, {"rest": "a"})  # first in the table
    assert index.candidates("/other/x/y") == (files,)
