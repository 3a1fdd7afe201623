"""Route lookup by a precomputed table instead of a walk over every route.

Starlette's router tries each route's regular expression in order (~1.5 µs
each; a 404 under ``/compute`` tried all 140). A route whose parameters are
each one path segment (``{server_id}``, not ``{path:path}``) can only match
a path with as many segments and the same literal text where it has text;
:class:`RouteIndex` keys the routes by segment count and their first two
segments, so a lookup tries only the few routes that could match, still in
the table's order (the first full match wins, as in Starlette).
``tests/unit/test_route_index.py`` checks it against Starlette's own walk.
"""
from __future__ import annotations

from itertools import product
from typing import Any, Sequence

from starlette.routing import Route

# A path segment that is no route's literal text at that position.
_OTHER = "\x00other"
_KEYED = 2  # how many leading segments key the table


def _shape(route: Route) -> tuple[int, tuple[str | None, ...]] | None:
    """(segment count, literal text of the first segments or None where a
    parameter is), or None for a route whose parameters may span segments."""
    if any(c.regex != "[^/]+" for c in route.param_convertors.values()):
        return None  # a path convertor (or a custom one): tried for every path
    segments = route.path.split("/")[1:]
    return len(segments), tuple(s if "{" not in s else None for s in segments[:_KEYED])


class RouteIndex:
    """The routes of one router, looked up by the shape of a path."""

    def __init__(self, routes: Sequence[Route]) -> None:
        shapes = [(_shape(route), route) for route in routes]
        self._literals: dict[tuple[int, int], frozenset[str]] = {}
        for shape, _ in shapes:
            if shape is not None:
                for pos, text in enumerate(shape[1]):
                    if text is not None:
                        at = (shape[0], pos)
                        self._literals[at] = self._literals.get(at, frozenset()) | {text}
        # (count, first segment, second or None): every combination of the
        # literals at each position and _OTHER, so a lookup always finds its key.
        self._table: dict[tuple[int, str, str | None], tuple[Route, ...]] = {}
        for count in {shape[0] for shape, _ in shapes if shape is not None}:
            choices: list[list[str | None]] = [
                [*sorted(self._literals.get((count, pos), ())), _OTHER] if pos < count else [None]
                for pos in range(_KEYED)]
            for first, second in product(*choices):
                key = (first or "", second)
                self._table[(count, key[0], key[1])] = tuple(
                    route for shape, route in shapes if _may_match(shape, count, key))
        self._spanning = tuple(route for shape, route in shapes if shape is None)

    def candidates(self, path: str) -> tuple[Route, ...]:
        """The routes that may match ``path`` (a route path, from ``/``), in order."""
        count = path.count("/")
        if not count:
            return self._spanning  # not a route path; every route's starts with /
        parts = path.split("/", _KEYED + 1)
        first, second = parts[1], parts[2] if count > 1 else None
        found = self._table.get((count, first, second))  # the path's own literals
        if found is not None:
            return found
        literals = self._literals
        if first not in literals.get((count, 0), ()):
            first = _OTHER
        if second is not None and second not in literals.get((count, 1), ()):
            second = _OTHER
        return self._table.get((count, first, second), self._spanning)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, Any]] | None:
        """The first route matching ``path`` and ``method`` with its path
        parameters (a table has a Route per method of a path, so the first
        to match the path may not take the method), as Starlette's router
        picks it; None if none does: the router answers those, with its 405,
        redirect or 404."""
        for route in self.candidates(path):
            found = route.path_regex.match(path)
            if found is None or (route.methods and method not in route.methods):
                continue
            params = found.groupdict()
            for name, value in params.items():
                params[name] = route.param_convertors[name].convert(value)
            return route, params
        return None


def _may_match(shape: tuple[int, tuple[str | None, ...]] | None, count: int,
               key: tuple[str, str | None]) -> bool:
    if shape is None:
        return True
    if shape[0] != count:
        return False
    return all(text is None or text == seg for text, seg in zip(shape[1], key))
