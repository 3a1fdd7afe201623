"""The API's request latency, by method, route template and status.

The route is the template a request matched (``/compute/v2.1/servers/{server_id}``),
never the raw path: a label per server id would grow without bound. A request
no route matched is counted under ``unmatched``, and a method Nova does not
route under ``OTHER``, for the same reason.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry
from starlette.routing import Route
from starlette.types import Scope

from cirrus.metrics import buckets
from cirrus.metrics.loop import Histogram, HistogramChild

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"


def route_template(scope: Scope) -> str:
    """The matched route's template with its mounts' prefixes, or ``unmatched``.

    Starlette's routers record the innermost route they matched in
    ``scope["route"]`` and each mount's prefix in ``root_path``."""
    route = scope.get("route")
    if not isinstance(route, Route):
        return UNMATCHED
    prefix = scope.get("root_path", "")[len(scope.get("app_root_path", "")):]
    return prefix + route.path


class ApiMetrics:
    """``cirrus_api_request_seconds{method, route, status}``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.request_seconds = Histogram(
            "cirrus_api_request_seconds", "HTTP API requests: seconds from the request "
            "to the end of the response, by method, route template and status.",
            ("method", "route", "status"), buckets=buckets.API_REQUEST, registry=registry)
        self._children: dict[tuple[str, str, int], HistogramChild] = {}
        # By (id of the matched route, root_path, method, status): a request
        # finds its child without rebuilding its template. The routes live as
        # long as the app, so their ids are not reused meanwhile.
        self._by_scope: dict[tuple[int, str, str, int], HistogramChild] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self._child(method, route, status).observe(seconds)

    def observe_request(self, scope: Scope, status: int, seconds: float) -> None:
        """A request of ``scope`` answered ``status`` in ``seconds``."""
        method = scope["method"]
        if method not in METHODS:  # any token is a method to HTTP: bound the label
            method = "OTHER"
        key = (id(scope.get("route")), scope.get("root_path", ""), method, status)
        child = self._by_scope.get(key)
        if child is None:
            child = self._by_scope[key] = self._child(method, route_template(scope), status)
        child.observe(seconds)

    def _child(self, method: str, route: str, status: int) -> HistogramChild:
        if method not in METHODS:
            method = "OTHER"
        key = (method, route, status)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.request_seconds.labels(method, route, str(status))
        return child

