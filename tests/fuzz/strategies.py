"""Hypothesis strategies for fuzz cases: a route, a persona, path parameters,
a body mutated from the route's valid example, headers and a query string.

A :class:`Case` is symbolic (``SEED``/``FRESH`` parameters, ``Ref`` leaves):
the world fills in real ids when it is sent, so generation does not depend
on the state of the cloud. Each dice roll draws 0 as its simplest outcome, so
shrinking heads for the valid example, as the seed sent it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.fuzz import hostile
from tests.fuzz.bodies import BODIES, Example
from tests.fuzz.routes import Target
from tests.fuzz.world import KINDS, PERSONAS

SEED = "<seed>"
FRESH = "<fresh>"
Path = tuple[Any, ...]

JUNK_PARAMS = ["junk", "0", "-1", "00000000-0000-0000-0000-000000000000", "x" * 300, "x" * 5000,
               "é", "\ud800", "..", "%", "a b", "1e999", "null", "default", "compute2", "enable",
               "disable", "force-down", "disable-log-reason", "domains", "{id}", "2" * 30,
               "detail", "10.0.0.999", "fa:16:3e:zz:00:01", "2" * 400]
UNKNOWN_KEYS = ["bogus", "", "\ud800", "id", "project_id", "tenant_id", "host", "status",
                "links", "x" * 300, "created_at", "owner", "is_admin", "user_id", "location",
                "hypervisor_hostname", "shared", "deleted"]
QUERY_KEYS = ["name", "ip", "ip6", "limit", "marker", "sort_key", "sort_dir", "fields",
              "all_tenants", "all_projects", "changes-since", "status", "image", "flavor",
              "host", "deleted", "tags", "reservation_id", "project_id", "tenant_id",
              "is_public", "minRam", "minDisk", "user_id", "offset", "fixed_ips", "device_id",
              "network_id", "id", "sort", "tag", "visibility", "owner", "member_status",
              "enabled", "domain_id", "page_reverse", "cidr", "mac_address", "user.id",
              "scope.project.id", "include_names", "binary", "bogus", "detailed"]
QUERY_WORDS = ["true", "false", "1", "0", "asc", "desc", "name", "id", "created_at",
               "ip_address=10.77.0.5", "ip_address=[", "2024-01-01T00:00:00Z", "2024-13-45",
               "not-a-date", "name:asc,id:desc", "bogus:sideways", "x" * 10_000]
QUERY_NUMBERS = [str(2**64), str(2**63), str(-2**63 - 1), str(10**30), "-1", "1e3", "0x10",
                 "1" * 5000, "NaN", "١٢٣"]
REGEX_JUNK = ["^(a+)+$", "(a*)*b", "((a+)+)+!", "[", "(", "*", "a{99999}", "\\", "(?P<", ".*" * 50]


@dataclass(frozen=True)
class Case:
    """One request, before the world fills in ids and serial numbers."""
    target: Target
    persona: str
    params: tuple[tuple[str, str], ...]
    body: Any                       # a JSON tree, raw bytes, or None
    content_type: str | None
    headers: tuple[tuple[str, Any], ...]
    query: tuple[tuple[str, Any], ...]  # a value: text, or a JSON tree (bodies.Example)
    mutations: tuple[str, ...]      # what was changed from the valid example

    def __repr__(self) -> str:
        notes = "; ".join(self.mutations) or "valid example"
        return f"<{self.target} as {self.persona}: {_short(notes, 300)}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints a falsifying example: one line per case."""
        printer.text(repr(self))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text)} chars]"


def _show(value: Any) -> str:
    return _short(repr(value), 80)


def dice(draw: st.DrawFn) -> int:
    """A roll of 0–99 (0 is where shrinking goes)."""
    return draw(st.integers(0, 99))


# -- the parts of a case -----------------------------------------------------------------
def persona(draw: st.DrawFn, usual: str) -> str:
    """Mostly ``usual``; else the admin, a reader or another project's member."""
    roll = dice(draw)
    if usual != "member":
        others = [p for p in PERSONAS if p != usual]
        return usual if roll < 80 else others[roll % len(others)]
    return "member" if roll < 70 else "admin" if roll < 85 else "reader" if roll < 95 else "other"


def path_params(draw: st.DrawFn, target: Target, example: Example | None) -> tuple[tuple[str, str], ...]:
    out = []
    fixed = example.params if example else {}
    for i, name in enumerate(target.params):
        deleted = target.method == "DELETE" and i == len(target.params) - 1
        roll = dice(draw)
        if roll >= 88:
            value = draw(JUNK_PARAM)
        elif name in fixed:
            value = fixed[name]
        else:
            value = FRESH if deleted else SEED
        out.append((name, value))
    return tuple(out)


def _paths(tree: Any, prefix: Path = ()) -> list[Path]:
    paths = [prefix]
    if isinstance(tree, dict):
        for key, item in tree.items():
            paths += _paths(item, prefix + (key,))
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            paths += _paths(item, prefix + (index,))
    return paths


def _replace(tree: Any, path: Path, value: Any) -> Any:
    """``tree`` with the node at ``path`` replaced (a copy: examples are shared)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _replace(tree[head], rest, value)}
    copy = list(tree)
    copy[head] = _replace(tree[head], rest, value)
    return copy


def _drop(tree: Any, path: Path) -> Any:
    parent = _get(tree, path[:-1])
    if isinstance(parent, dict):
        smaller: Any = {k: v for k, v in parent.items() if k != path[-1]}
    else:
        smaller = [v for i, v in enumerate(parent) if i != path[-1]]
    return _replace(tree, path[:-1], smaller)


def _get(tree: Any, path: Path) -> Any:
    for step in path:
        tree = tree[step]
    return tree


def _label(path: Path) -> str:
    return "/" + "/".join(str(p) for p in path)


def _leaves(tree: Any, paths: list[Path]) -> list[Path]:
    return [p for p in paths if not isinstance(_get(tree, p), (dict, list)) or not _get(tree, p)]


OPS = ["like", "like", "like", "like", "any", "any", "drop", "add", "wrap"]


def mutate(draw: st.DrawFn, tree: Any) -> tuple[Any, list[str]]:
    """One to three changes to a JSON tree: most often a leaf replaced by a
    hostile value of its own type (which passes type checks and reaches
    validation and storage), else any node by any hostile value, a key dropped,
    an unknown key added, a node wrapped in a list or an object."""
    notes = []
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(tree)
        op = draw(st.sampled_from(OPS))
        leaves = _leaves(tree, paths)
        path = draw(st.sampled_from(leaves if op == "like" and leaves else paths))
        node = _get(tree, path)
        if op == "drop" and path:
            tree = _drop(tree, path)
            notes.append(f"drop {_label(path)}")
        elif op == "add" and isinstance(node, dict):
            key = draw(UNKNOWN_KEY)
            value = draw(hostile.values(KINDS))
            tree = _replace(tree, path, {**node, key: value})
            notes.append(f"add {_label(path + (key,))} = {_show(value)}")
        elif op == "wrap":
            wrapped = draw(st.sampled_from(["list", "dict"]))
            tree = _replace(tree, path, [node] if wrapped == "list" else {"x": node})
            notes.append(f"wrap {_label(path)} in a {wrapped}")
        else:
            value = draw(hostile.like(node) if op == "like" else hostile.values(KINDS))
            tree = _replace(tree, path, value)
            notes.append(f"replace {_label(path)} with {_show(value)}")
    return tree, notes


def body(draw: st.DrawFn, example: Example) -> tuple[Any, list[str]]:
    roll = dice(draw)
    if roll < 15:
        return example.body, []
    if roll < 85 and example.body is not None and not isinstance(example.body, bytes):
        return mutate(draw, example.body)
    if roll < 85 and isinstance(example.body, bytes):
        data = draw(st.binary(max_size=4096) | st.sampled_from([b"", b"x" * (1 << 20)]))
        return data, [f"raw image data of {len(data)} bytes"]
    if roll < 95:
        data = draw(hostile.RAW_BODIES)
        return data, [f"whole body {_show(data)}"]
    value = draw(hostile.values(KINDS))
    return value, [f"whole body {_show(value)}"]


def content_type(draw: st.DrawFn, usual: str | None) -> tuple[str | None, list[str]]:
    roll = dice(draw)
    if roll < 90:
        return usual, []
    chosen = draw(st.sampled_from([None, "application/json"] + hostile.CONTENT_TYPES))
    return chosen, [f"Content-Type {chosen!r}"]


def headers(draw: st.DrawFn, example: Example | None) -> tuple[tuple[tuple[str, Any], ...], list[str]]:
    fixed = tuple((example.headers if example else {}).items())
    if dice(draw) < 85:
        return fixed, []
    extra = draw(st.lists(hostile.JUNK_HEADERS, min_size=1, max_size=2,
                          unique_by=lambda h: h[0].lower()))
    replaced = {k.lower() for k, _ in extra}
    kept = tuple((k, v) for k, v in fixed if k.lower() not in replaced)
    return kept + tuple(extra), [f"header {k}: {_show(v)}" for k, v in extra]


QUERIES = st.lists(st.tuples(
    st.sampled_from(QUERY_KEYS) | st.text(max_size=6),
    st.one_of(st.sampled_from(QUERY_WORDS), st.sampled_from(QUERY_NUMBERS),
              st.sampled_from(REGEX_JUNK), st.sampled_from(hostile.TEXT_JUNK),
              st.sampled_from(hostile.ADDRESS_JUNK), st.sampled_from(hostile.SURROGATES),
              st.text(max_size=10), st.integers(-2**70, 2**70).map(str))),
    min_size=1, max_size=3)
JUNK_PARAM = st.sampled_from(JUNK_PARAMS) | st.text(min_size=1, max_size=10)
UNKNOWN_KEY = st.sampled_from(UNKNOWN_KEYS) | st.text(max_size=8)


def query(draw: st.DrawFn) -> tuple[tuple[str, str], ...]:
    return tuple(draw(QUERIES))


# -- cases --------------------------------------------------------------------------------
@st.composite
def write_case(draw: st.DrawFn, target: Target) -> Case:
    example = draw(st.sampled_from(BODIES[target.key]))
    who = persona(draw, example.persona)
    params = path_params(draw, target, example)
    tree, notes = body(draw, example)
    ctype, ct_notes = content_type(draw, example.content_type)
    hdrs, h_notes = headers(draw, example)
    junk = [f"{name}={_show(value)}" for name, value in params if value not in (SEED, FRESH)
            and value != example.params.get(name)]
    return Case(target, who, params, tree, ctype, hdrs, example.query,
                tuple(notes + ct_notes + h_notes + [f"path {j}" for j in junk]))


@st.composite
def read_case(draw: st.DrawFn, target: Target) -> Case:
    who = persona(draw, "member")
    params = path_params(draw, target, None)
    q = query(draw)
    hdrs, h_notes = headers(draw, None)
    return Case(target, who, params, None, None, hdrs, q, tuple(h_notes))


def cases(writes: list[Target], reads: list[Target]) -> st.SearchStrategy[Case]:
    """Mostly write routes; a sixth of the time a GET with a hostile query,
    most often of a listing (where the filters are)."""
    listings = [t for t in reads if not t.params] or reads

    @st.composite
    def one(draw: st.DrawFn) -> Case:
        roll = dice(draw)
        if roll < 85 or not reads:
            return draw(write_case(draw(st.sampled_from(writes))))
        return draw(read_case(draw(st.sampled_from(listings if roll < 96 else reads))))
    return one()


def batches(writes: list[Target], reads: list[Target], max_size: int) -> st.SearchStrategy[list[Case]]:
    """The requests of one example, checked together (listings after the last)."""
    # The size drawn first, uniformly (lists would favour short ones); it
    # shrinks to 1, so a failing example comes down to the request at fault.
    return st.integers(1, max_size).flatmap(
        lambda n: st.lists(cases(writes, reads), min_size=n, max_size=n))
