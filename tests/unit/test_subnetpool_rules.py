"""Subnet pool rules as tables: prefixes merged, the prefix-length bounds and
their defaults, and the free blocks left around allocated subnets."""
from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from cirrus.network import exception as exc
from cirrus.network.subnetpools import _bounds, _free_blocks, compact


@pytest.mark.parametrize("prefixes, merged", [
    (["10.0.0.0/24", "10.0.1.0/24"], ["10.0.0.0/23"]),
    (["10.0.0.0/16", "10.0.5.0/24"], ["10.0.0.0/16"]),
    (["10.0.0.7/24"], ["10.0.0.0/24"]),  # host bits dropped
    (["1.0.0.0/16", "2.0.0.0/16"], ["1.0.0.0/16", "2.0.0.0/16"]),
    (["fd00::/64", "fd00:0:0:1::/64"], ["fd00::/63"]),
])
def test_compact(prefixes: list[str], merged: list[str]) -> None:
    assert [str(n) for n in compact(prefixes)] == merged


@pytest.mark.parametrize("prefixes", [[], ["10.0.0.0/8", "fd00::/8"]])
def test_compact_refuses(prefixes: list[str]) -> None:
    with pytest.raises(exc.BadRequest):
        compact(prefixes)


@pytest.mark.parametrize("version, values, current, expected", [
    (4, {}, {}, (8, 32, 8)),
    (6, {}, {}, (64, 128, 64)),
    (4, {"min_prefixlen": 24}, {}, (24, 32, 24)),
    (4, {"default_prefixlen": 26}, {"min_prefixlen": 24, "max_prefixlen": 28,
                                    "default_prefixlen": 24}, (24, 28, 26)),
    (4, {}, {"min_prefixlen": 20, "max_prefixlen": 30, "default_prefixlen": 22}, (20, 30, 22)),
])
def test_bounds(version: int, values: dict[str, Any], current: dict[str, Any],
                expected: tuple[int, int, int]) -> None:
    out = _bounds(version, values, current)
    assert (out["min_prefixlen"], out["max_prefixlen"], out["default_prefixlen"]) == expected


@pytest.mark.parametrize("version, values, field", [
    (4, {"max_prefixlen": 33}, "max_prefixlen"),
    (6, {"max_prefixlen": 129}, "max_prefixlen"),
    (4, {"min_prefixlen": 30, "max_prefixlen": 24}, "min_prefixlen"),
    (4, {"min_prefixlen": 24, "default_prefixlen": 16}, "default_prefixlen"),
    (4, {"max_prefixlen": 24, "default_prefixlen": 28, "min_prefixlen": 16}, "default_prefixlen"),
])
def test_bounds_refused(version: int, values: dict[str, Any], field: str) -> None:
    with pytest.raises(exc.BadRequest, match=field):
        _bounds(version, values, {})


def _nets(cidrs: list[str]) -> list[Any]:
    return [ipaddress.ip_network(c) for c in cidrs]


@pytest.mark.parametrize("prefixes, used, free", [
    (["10.0.0.0/24"], [], ["10.0.0.0/24"]),
    (["10.0.0.0/24"], ["10.0.0.0/25"], ["10.0.0.128/25"]),
    (["10.0.0.0/24"], ["10.0.0.64/26"], ["10.0.0.0/26", "10.0.0.128/25"]),
    (["10.0.0.0/24", "10.1.0.0/24"], ["10.0.0.0/24"], ["10.1.0.0/24"]),
    (["10.0.0.0/24"], ["10.0.0.0/16"], []),  # a subnet wider than the prefix (pool grew later)
])
def test_free_blocks(prefixes: list[str], used: list[str], free: list[str]) -> None:
    assert [str(n) for n in _free_blocks(_nets(prefixes), _nets(used))] == free
