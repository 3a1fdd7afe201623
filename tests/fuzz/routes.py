"""The fuzz targets, read from the route tables of the built app.

Nothing here lists routes by hand: a route added to any of the tables
shows up in :func:`write_targets` and, without an entry in ``bodies.py``,
fails ``test_every_write_route_has_an_example``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from starlette.routing import BaseRoute, Mount, Route

from cirrus.api.app import build_app

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SERVICES = ("/identity", "/compute", "/network", "/image", "/volume")


@dataclass(frozen=True, order=True)
class Target:
    """One method of one route: ``path`` is the full path format
    (``/compute/v2.1/servers/{server_id}``), ``params`` its parameter names."""
    method: str
    path: str
    params: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.path

    @property
    def service(self) -> str:
        return self.path.split("/")[1]

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def walk(routes: Iterable[BaseRoute], prefix: str = "") -> Iterator[Target]:
    """Every (method, path) under ``routes``, Mounts followed."""
    for route in routes:
        if isinstance(route, Mount):
            yield from walk(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            for method in sorted(route.methods or ()):
                if method != "HEAD":
                    yield Target(method, prefix + route.path_format,
                                 tuple(route.param_convertors))


def all_targets(routes: Iterable[BaseRoute] | None = None) -> list[Target]:
    """The targets of the four services (the app's own, when ``routes`` is None)."""
    table = build_app({}).routes if routes is None else routes
    return sorted({t for t in walk(table) if t.path.startswith(SERVICES)})


def write_targets(routes: Iterable[BaseRoute] | None = None) -> list[Target]:
    return [t for t in all_targets(routes) if t.method in WRITE_METHODS]


def read_targets(routes: Iterable[BaseRoute] | None = None) -> list[Target]:
    """The GET routes, whose query strings (and path parameters) are fuzzed too."""
    return [t for t in all_targets(routes) if t.method == "GET"]
