"""Hostile values, and a JSON encoder that can write what Python's json won't.

A request body is a tree of dicts, lists and leaves. Besides the JSON types a
leaf may be a :class:`Raw` token (written as given: ``NaN``, ``1e999``, 100,000
nested brackets, invalid UTF-8), a :class:`Ref` (the id of a resource of the
fuzz world, filled in at send time) or a :class:`Unique` (a string made unique
per request, so that creates do not all collide on one name).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from hypothesis import strategies as st


@dataclass(frozen=True)
class Raw:
    """Bytes written verbatim into the body."""
    data: bytes

    def __repr__(self) -> str:
        text = self.data[:40].decode("utf-8", "backslashreplace")
        return f"Raw({text!r}{'…' if len(self.data) > 40 else ''} [{len(self.data)} bytes])"


@dataclass(frozen=True)
class Ref:
    """The id of the world's resource of this kind (see world.py)."""
    kind: str


@dataclass(frozen=True)
class Unique:
    """A string from ``template`` formatted with the request's serial number:
    ``{n}`` (decimal), ``{o}`` (an octet 20–219), ``{h}``/``{l}`` (hex bytes)."""
    template: str

    def render(self, n: int) -> str:
        return self.template.format(n=n, o=20 + n % 200, h=f"{(n >> 8) & 255:02x}",
                                    l=f"{n & 255:02x}", a=n % 250 + 1, b=(n // 250) % 250 + 1)


Resolver = Callable[[Any], Any]


def encode(value: Any, resolve: Resolver) -> bytes:
    """The JSON bytes of ``value``; ``resolve`` turns a Ref or Unique into its value.

    Strings are written with ``\\uXXXX`` escapes for everything outside ASCII,
    so a lone surrogate goes out as the escape ``"\\ud800"`` (what a hostile
    client sends), and huge or odd numbers as their digits.
    """
    out: list[bytes] = []
    _encode(value, resolve, out)
    return b"".join(out)


def _encode(value: Any, resolve: Resolver, out: list[bytes]) -> None:
    if isinstance(value, (Ref, Unique)):
        value = resolve(value)
    if isinstance(value, Raw):
        out.append(value.data)
    elif isinstance(value, dict):
        out.append(b"{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(b", ")
            _encode(key if isinstance(key, str) else str(key), resolve, out)
            out.append(b": ")
            _encode(item, resolve, out)
        out.append(b"}")
    elif isinstance(value, (list, tuple)):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b", ")
            _encode(item, resolve, out)
        out.append(b"]")
    elif isinstance(value, float) and value != value:
        out.append(b"NaN")
    else:
        # ensure_ascii: non-ASCII (lone surrogates included) as \u escapes.
        out.append(json.dumps(value, ensure_ascii=True).encode())


# -- leaves ------------------------------------------------------------------------
SURROGATES = ["\ud800", "\udfff", "a\ud800b", "\udc00\ud800", "x" * 10 + "\udbff"]
ADDRESS_JUNK = [
    "10.0.0.999", "::g", "1.2.3.4/33", "zz:zz:zz:zz:zz:zz", "256.256.256.256", "1.2.3.4.5",
    "10.0.0", "10.0.0.1/-1", "fe80::1%eth0", "1::/129", "[::1]", "::ffff:10.0.0.1", "0.0.0.0/0",
    "::/0", "10.0.0.0/8", "10.77.0.0", "10.77.0.1", "10.77.0.255", "10.77.0.0/24", "fd00::1",
    "224.0.0.1", "255.255.255.255", "127.0.0.1", "ff:ff:ff:ff:ff:ff", "00:00:00:00:00:00",
    "01:00:5e:00:00:01", "FA:16:3E:00:00:01", "fa-16-3e-00-00-01", "fa:16:3e:00:00",
    "fa:16:3e:00:00:00:00", "10.1.0.0/16", "192.168.0.0/33", "1.2.3.4 ", " 1.2.3.4",
    "0x0a000001", "167772161", "10.077.0.1",
]
TEXT_JUNK = [
    "", " ", "  padded  ", "\x00", "a\x00b", "\n", "\t", "\u202e", "é", "😀" * 10, "null", "true",
    "1", "-1", "0", "1e999", "NaN", "None", "' OR '1'='1", "\"", "\\", "../../etc/passwd",
    "%(name)s", "{0}", "%s%n", "<script>", "^(a+)+$", "(a|aa)+$", "[", "*", ".*", "%", "_",
    "compute:nova", "network:dhcp", "admin", "default", "ACTIVE", "SOFT", "ingress",
    "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "12345678123456781234567812345678", "{", "}", "[]", "{}",
]
INTEGERS = [2**63, 2**63 - 1, 2**64, -2**63 - 1, -2**63, 10**30, -10**30, 2**31, 2**31 - 1,
            2**32, 2**53 + 1, 65535, 65536, -1, 0, 1, 4096, 10**6]
FLOATS = [0.5, -0.0, 1e308, -1e308, 5e-324, 3.0, 1.5, 2.0**63]
RAW_NUMBERS = [Raw(b"NaN"), Raw(b"Infinity"), Raw(b"-Infinity"), Raw(b"1e999"), Raw(b"-1e999"),
               Raw(b"1E400"), Raw(b"-0"), Raw(b"1" * 5000), Raw(b"0.0000000000000000000001"),
               Raw(b"1.0e+10000")]
RAW_STRINGS = [Raw(b'"\xed\xa0\x80"'),        # a surrogate encoded as UTF-8: invalid UTF-8
               Raw(b'"\xff\xfe"'), Raw(b'"\xc3"'), Raw(b'"a\\u0000b"'), Raw(b'"\\ud800\\u0041"')]


FILLS = ["x", "é", "\ud800", "a", "1", "😀"]
LENGTHS = [256, 257, 1000, 10_000, 65_536, 100_000]
DEPTHS = [64, 1000, 10_000, 100_000]


def _deep(depth: int, kind: str) -> Raw:
    if kind == "list":
        return Raw(b"[" * depth + b"]" * depth)
    return Raw(b'{"a": ' * depth + b"1" + b"}" * depth)


BIG_CONTAINERS = [Raw(b"[" + b"0, " * 9999 + b"0]"),
                  Raw(b"{" + b", ".join(b'"k%d": "v"' % i for i in range(2000)) + b"}"),
                  Raw(b'["' + b'", "'.join(b"t%d" % i for i in range(10_000)) + b'"]')]
DEEP = [_deep(depth, kind) for depth in DEPTHS for kind in ("list", "dict")]
LONG = [fill * n for fill in FILLS for n in LENGTHS]

# Built once: strategies are values, and the big literals above cost to make.
LEAVES: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(SURROGATES), st.sampled_from(ADDRESS_JUNK), st.sampled_from(TEXT_JUNK),
    st.sampled_from(INTEGERS), st.sampled_from(FLOATS), st.sampled_from(RAW_NUMBERS),
    st.sampled_from(RAW_STRINGS), st.sampled_from([True, False, None]), st.sampled_from(LONG),
    st.text(max_size=12), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
CONTAINERS: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from([[], {}]), st.lists(LEAVES, max_size=3),
    st.dictionaries(st.sampled_from(["a", "", "name", "id", "\ud800"]), LEAVES, max_size=2),
    st.sampled_from(BIG_CONTAINERS), LEAVES.map(lambda leaf: [[[[leaf]]]]), st.sampled_from(DEEP),
)
# Values of a leaf's own type get past the type checks, into validation and storage.
STRINGS: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(SURROGATES), st.sampled_from(ADDRESS_JUNK), st.sampled_from(TEXT_JUNK),
    st.sampled_from(RAW_STRINGS), st.sampled_from(LONG), st.text(max_size=12),
)
NUMBERS: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(INTEGERS), st.sampled_from(RAW_NUMBERS), st.sampled_from(FLOATS),
    st.integers(min_value=-2**70, max_value=2**70), st.sampled_from(["1", "-1", str(2**64)]),
)
_VALUES: dict[tuple[str, ...], st.SearchStrategy[Any]] = {}


def like(node: Any) -> st.SearchStrategy[Any]:
    """A hostile value of ``node``'s own JSON type."""
    if isinstance(node, bool) or node is None:
        return st.sampled_from([0, 1, "true", "yes", "", None, not node, [True]])
    if isinstance(node, (int, float)):
        return NUMBERS
    if isinstance(node, (str, Unique)):
        return STRINGS
    if isinstance(node, list):
        return st.one_of(st.lists(STRINGS, min_size=1, max_size=3), CONTAINERS)
    return CONTAINERS


def values(refs: list[str]) -> st.SearchStrategy[Any]:
    """A hostile value for any place in a body: a scalar, a container, or a
    well-formed id of the wrong resource."""
    key = tuple(refs)
    if key not in _VALUES:
        _VALUES[key] = st.one_of(LEAVES, CONTAINERS, st.sampled_from(refs).map(Ref))
    return _VALUES[key]


# -- whole bodies and headers --------------------------------------------------------
NOT_JSON = [b"{nope", b"{'a': 1}", b"[1, 2", b"\xff\xfe\x00\x00", b"\x00", b"null", b"1", b'"s"',
            b"[]", b"{}", b"NaN", b"true", b"<xml/>", b"a=1&b=2", b"{" + b" " * 100 + b"}",
            b'{"a": 1} trailing', b"\xef\xbb\xbf{}", b"{\"a\": \"\xff\"}"]


RAW_BODIES: st.SearchStrategy[bytes] = st.one_of(
    st.sampled_from(NOT_JSON), st.just(b""), st.binary(max_size=48),
    st.sampled_from([d.data for d in DEEP]),
    st.just(b" " * ((1 << 20) + 16)),                          # over max_body_bytes
)


CONTENT_TYPES = ["text/plain", "application/xml", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x", "application/json; charset=utf-16",
                 "application/json-patch+json", "application/octet-stream",
                 "application/openstack-images-v2.1-json-patch", "", "junk/\u00e9", "*/*",
                 "application/json;;;", "application/json; charset=\"\ud800\""]
COMPUTE_VERSIONS = ["compute 2.1", "compute 2.2", "compute 2.10", "compute 2.37",
                    "compute 2.53", "compute 2.55", "compute 2.64", "compute 2.74",
                    "compute 2.90", "compute latest", "compute 2.91", "compute 3.0",
                    "compute 2.0", "compute 2.abc", "compute -2.1", "compute 02.01", "compute",
                    "compute 2." + "9" * 5000, "compute " + "1" * 5000 + ".1",
                    "volume 3.0, compute 2.60", "compute 2.1, compute 2.90", "COMPUTE 2.47",
                    "compute 2.1\u00e9", "compute 2.1 ", "compute\t2.1"]


VERSION_HEADERS: st.SearchStrategy[tuple[str, str | bytes]] = st.one_of(
    st.tuples(st.just("OpenStack-API-Version"), st.sampled_from(COMPUTE_VERSIONS)),
    st.tuples(st.just("OpenStack-API-Version"), st.integers(1, 99).map(lambda m: f"compute 2.{m}")),
    st.tuples(st.just("X-OpenStack-Nova-API-Version"),
              st.sampled_from(["2.1", "2.90", "latest", "2." + "1" * 5000, "junk", "2.", "",
                               "2.1.1"])),
)
# A header a hostile client might send besides the API version.
JUNK_HEADERS: st.SearchStrategy[tuple[str, str | bytes]] = st.one_of(
    VERSION_HEADERS,
    st.tuples(st.just("X-Auth-Token"),
              st.sampled_from([b"\xff\xfe", b"junk", b"x" * 10_000, b"", b"\xc3\x28",
                               b"gAAAAA" + b"A" * 200])),
    st.tuples(st.just("Accept"), st.sampled_from(["application/xml", "text/html", "*/*",
                                                  "application/json;q=0"])),
    st.tuples(st.just("X-Subject-Token"), st.sampled_from([b"junk", b"\xff", b""])),
    st.tuples(st.just("Accept-Encoding"), st.just("gzip, br, zstd, \u00e9".encode("utf-8"))),
)
