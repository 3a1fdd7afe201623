"""The aggregate filters, Nova's extra spec operators, the filter setting and
tenant usage arithmetic, as tables."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from cirrus.api.compute.aggregates import name as aggregate_name
from cirrus.compute.usage import hours_for
from cirrus.exception import ValidationError
from cirrus.scheduler.filters import DEFAULT_FILTERS, FILTERS, enabled
from cirrus.scheduler.filters.aggregates import aggregate_requirements
from cirrus.scheduler.filters.extra_specs_ops import match
from cirrus.scheduler.host_manager import split_metadata
from tests.unit.test_scheduler_rules import host, spec


@pytest.mark.parametrize("value, requirement, matches", [
    ("1", "1", True),
    ("1", "2", False),
    ("true", "true", True),
    ("True", "true", False),          # no operator: exact text
    ("123", "= 123", True),           # '=' is at least
    ("124", "= 123", True),
    ("122", "= 123", False),
    ("123", "== 123", True),
    ("123.0", "== 123", True),
    ("124", "== 123", False),
    ("124", "!= 123", True),
    ("123", "!= 123", False),
    ("124", ">= 123", True),
    ("122", ">= 123", False),
    ("122", "<= 123", True),
    ("124", "<= 123", False),
    ("abc", "= 123", False),          # not a number: no match
    ("gpu", "s== gpu", True),
    ("gpu", "s!= gpu", False),
    ("abc", "s< abd", True),
    ("abd", "s<= abd", True),
    ("abe", "s> abd", True),
    ("abd", "s>= abe", False),
    ("12311321", "<in> 11", True),
    ("12311321", "<in> 77", False),
    ("a b c", "<all-in> a c", True),
    ("a b c", "<all-in> a d", False),
    ("12", "<or> 11 <or> 12", True),
    ("13", "<or> 11 <or> 12", False),
    ("13", "<or> 11 <or> 12 <or>", False),
    ("11", "<or> 11", True),
    (None, "= 1", False),
    ("1", "=", False),                # an operator without an operand
    ("", "", True),
])
def test_extra_specs_operators(value: str | None, requirement: str, matches: bool) -> None:
    assert match(value, requirement) is matches


@pytest.mark.parametrize("specs, checked", [
    ({}, {}),
    ({"ssd": "true"}, {"ssd": "true"}),
    ({"aggregate_instance_extra_specs:ssd": "true"}, {"ssd": "true"}),
    ({"hw:cpu_policy": "dedicated", "quota:cpu_shares": "1"}, {}),
    ({"aggregate_instance_extra_specs:a:b": "1"}, {"a:b": "1"}),
])
def test_which_extra_specs_the_filter_checks(specs: dict[str, str],
                                             checked: dict[str, str]) -> None:
    assert aggregate_requirements(specs) == checked


def md(**values: str) -> dict[str, frozenset[str]]:
    return split_metadata(values)


@pytest.mark.parametrize("metadata, extra_specs, passes", [
    ({}, {}, True),
    ({}, {"hw:cpu_policy": "dedicated"}, True),               # another scope
    ({}, {"ssd": "true"}, False),                             # key not in any aggregate
    (md(ssd="true"), {"ssd": "true"}, True),
    (md(ssd="false"), {"ssd": "true"}, False),
    (md(ssd="true"), {"aggregate_instance_extra_specs:ssd": "true"}, True),
    (md(ssd="false,true"), {"ssd": "true"}, True),           # any of the host's values
    (md(cores="16"), {"cores": ">= 8"}, True),
    (md(cores="4"), {"cores": ">= 8"}, False),
    (md(ssd="true", gpu="no"), {"ssd": "true", "gpu": "yes"}, False),  # every spec must match
])
def test_aggregate_instance_extra_specs_filter(metadata: dict[str, frozenset[str]],
                                               extra_specs: dict[str, str],
                                               passes: bool) -> None:
    flt = FILTERS["AggregateInstanceExtraSpecsFilter"]()
    result = flt.host_passes(host(aggregate_metadata=metadata), spec(extra_specs=extra_specs))
    assert result.passed is passes
    assert passes or result.reason


@pytest.mark.parametrize("metadata, project, passes", [
    ({}, "p1", True),                                         # no aggregate: anyone
    (md(ssd="true"), "p1", True),                             # no tenant keys: anyone
    (md(filter_tenant_id="p1"), "p1", True),
    (md(filter_tenant_id="p2"), "p1", False),
    (md(filter_tenant_id="p2,p1"), "p1", True),
    (md(filter_tenant_id_2="p1", filter_tenant_id="p2"), "p1", True),  # any key with the prefix
    (md(filter_tenant_id_2="p3", filter_tenant_id="p2"), "p1", False),
])
def test_aggregate_multitenancy_isolation(metadata: dict[str, frozenset[str]], project: str,
                                          passes: bool) -> None:
    flt = FILTERS["AggregateMultiTenancyIsolation"]()
    result = flt.host_passes(host(aggregate_metadata=metadata), spec(project_id=project))
    assert result.passed is passes
    assert passes or result.reason


def test_metadata_values_are_split_and_stripped() -> None:
    assert split_metadata({"k": "a, b,c", "z": "x"}) == {"k": frozenset({"a", "b", "c"}),
                                                         "z": frozenset({"x"})}


@pytest.mark.parametrize("setting, expected", [
    ("", DEFAULT_FILTERS),
    ("ComputeFilter", ("ComputeFilter",)),
    # registry order, whatever the setting's
    ("AggregateInstanceExtraSpecsFilter, ComputeFilter",
     ("ComputeFilter", "AggregateInstanceExtraSpecsFilter")),
])
def test_enabled_filters(setting: str, expected: tuple[str, ...]) -> None:
    assert enabled(setting) == expected


def test_the_aggregate_filters_are_off_by_default_and_unknown_names_refused() -> None:
    assert not [n for n in DEFAULT_FILTERS if n.startswith("Aggregate")]
    with pytest.raises(ValueError, match="NoSuchFilter"):
        enabled("ComputeFilter,NoSuchFilter")


T0 = dt.datetime(2026, 1, 1, 0, 0)


def at(hours: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


@pytest.mark.parametrize("launched, terminated, start, stop, hours", [
    (at(0), None, at(0), at(10), 10.0),
    (at(2), None, at(0), at(10), 8.0),           # launched inside the window
    (at(-5), None, at(0), at(10), 10.0),         # launched before it
    (at(2), at(4), at(0), at(10), 2.0),          # ended inside it
    (at(-5), at(4), at(0), at(10), 4.0),
    (at(2), at(20), at(0), at(10), 8.0),         # ended after it
    (at(-5), at(-1), at(0), at(10), 0),          # ended before it
    (at(11), None, at(0), at(10), 0),            # launched after it
    (None, None, at(0), at(10), 0),              # never launched
    (at(0), None, at(0), at(0.5), 0.5),
])
def test_hours_in_the_window(launched: dt.datetime | None, terminated: dt.datetime | None,
                             start: dt.datetime, stop: dt.datetime, hours: float) -> None:
    assert hours_for(launched, terminated, start, stop) == hours


@pytest.mark.parametrize("value, kw, ok", [
    ("rack", {}, True),
    ("rack 1", {}, True),
    (" rack", {}, False),
    ("rack ", {}, False),
    (" rack ", {"padded": True}, True),
    ("   ", {"padded": True}, False),
    ("", {}, False),
    ("x" * 255, {}, True),
    ("x" * 256, {}, False),
    ("tab\there", {}, False),
    ("zone:1", {"no_colon": True}, False),
    ("zone:1", {}, True),
    ("zürich", {"no_colon": True}, True),
    (5, {}, False),
    (None, {}, False),
])
def test_aggregate_and_zone_names(value: Any, kw: dict[str, bool], ok: bool) -> None:
    if ok:
        assert aggregate_name(value, "name", **kw) == value
    else:
        with pytest.raises(ValidationError):
            aggregate_name(value, "name", **kw)
