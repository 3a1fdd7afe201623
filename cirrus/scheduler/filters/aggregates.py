"""Filters on the metadata of the host's aggregates (Nova's
``aggregate_instance_extra_specs`` and ``aggregate_multitenancy_isolation``).

A host's ``aggregate_metadata`` maps each key of its aggregates to every
value it has there (comma-separated values split), loaded with the host
(cirrus/scheduler/host_manager.py).
"""
from __future__ import annotations

from cirrus.scheduler.filters import extra_specs_ops
from cirrus.scheduler.filters.base import PASS, BaseHostFilter, FilterResult
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec

SCOPE = "aggregate_instance_extra_specs"
TENANT_KEY = "filter_tenant_id"


def aggregate_requirements(extra_specs: dict[str, str]) -> dict[str, str]:
    """The flavor's extra specs this filter checks: bare keys and those of
    its scope (scope removed); other scopes (``hw:``, ``quota:``…) are not its."""
    out = {}
    for key, wanted in extra_specs.items():
        scope, sep, rest = key.partition(":")
        if not sep:
            out[key] = wanted
        elif scope == SCOPE:
            out[rest] = wanted
    return out


class AggregateInstanceExtraSpecsFilter(BaseHostFilter):
    """The flavor's extra specs must be matched by the host's aggregates'
    metadata (a key missing there fails the host)."""

    name = "AggregateInstanceExtraSpecsFilter"

    def applies(self, spec: Spec) -> bool:
        return bool(aggregate_requirements(spec.extra_specs))

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        for key, wanted in aggregate_requirements(spec.extra_specs).items():
            offered = host.aggregate_metadata.get(key)
            if not offered:
                return FilterResult.reject(f"extra spec {key} is not in the host's aggregates")
            if not any(extra_specs_ops.match(value, wanted) for value in offered):
                return FilterResult.reject(
                    f"aggregate {key}={','.join(sorted(offered))} does not match {wanted!r}")
        return PASS


class AggregateMultiTenancyIsolation(BaseHostFilter):
    """A host in an aggregate with ``filter_tenant_id*`` keys takes only
    those projects' instances; other hosts take anyone's."""

    name = "AggregateMultiTenancyIsolation"

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        allowed: set[str] = set()
        for key, values in host.aggregate_metadata.items():
            if key.startswith(TENANT_KEY):
                allowed |= values
        if allowed and spec.project_id not in allowed:
            return FilterResult.reject("the host's aggregates are kept for other projects")
        return PASS
