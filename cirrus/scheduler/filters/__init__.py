"""The filter registry: name → class, run in this order (cheap and selective first).

``enabled_filters`` (a setting, as Nova's ``[filter_scheduler] enabled_filters``)
names the ones a scheduler runs; :data:`DEFAULT_FILTERS` when it names none.
"""
from __future__ import annotations

from cirrus.scheduler.filters.affinity import (DifferentHostFilter, SameHostFilter,
                                               ServerGroupAffinityFilter,
                                               ServerGroupAntiAffinityFilter)
from cirrus.scheduler.filters.aggregates import (AggregateInstanceExtraSpecsFilter,
                                                 AggregateMultiTenancyIsolation)
from cirrus.scheduler.filters.base import BaseHostFilter, FilterResult
from cirrus.scheduler.filters.host import (AvailabilityZoneFilter, ComputeFilter,
                                           ImagePropertiesFilter, RequestedDestinationFilter,
                                           RetryFilter)
from cirrus.scheduler.filters.resources import CoreFilter, DiskFilter, IoOpsFilter, RamFilter

FILTERS: dict[str, type[BaseHostFilter]] = {cls.name: cls for cls in (
    RetryFilter, RequestedDestinationFilter, ComputeFilter, AvailabilityZoneFilter,
    AggregateMultiTenancyIsolation, RamFilter, CoreFilter, DiskFilter, IoOpsFilter,
    ImagePropertiesFilter, AggregateInstanceExtraSpecsFilter, ServerGroupAffinityFilter,
    ServerGroupAntiAffinityFilter, SameHostFilter, DifferentHostFilter)}

# Filters that run only when enabled_filters names them (Nova too leaves the
# aggregate filters to the operator); every other runs by default.
# IoOpsFilter too: Nova does not enable it by default either.
OPT_IN = frozenset({AggregateInstanceExtraSpecsFilter.name, AggregateMultiTenancyIsolation.name,
                    IoOpsFilter.name})
DEFAULT_FILTERS = tuple(name for name in FILTERS if name not in OPT_IN)


def enabled(setting: str) -> tuple[str, ...]:
    """The filters a comma-separated ``enabled_filters`` names, in registry
    order; :data:`DEFAULT_FILTERS` when empty. ValueError for an unknown name."""
    names = {n.strip() for n in setting.split(",") if n.strip()}
    unknown = names - set(FILTERS)
    if unknown:
        raise ValueError(f"enabled_filters: unknown filter(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(FILTERS)}")
    return tuple(n for n in FILTERS if n in names) if names else DEFAULT_FILTERS

__all__ = ["FILTERS", "DEFAULT_FILTERS", "BaseHostFilter", "FilterResult", "enabled"]
