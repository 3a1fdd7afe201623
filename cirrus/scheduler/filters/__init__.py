"""The filter registry: name → class, run in this order (cheap and selective first)."""
from __future__ import annotations

from cirrus.scheduler.filters.affinity import (DifferentHostFilter, SameHostFilter,
                                               ServerGroupAffinityFilter,
                                               ServerGroupAntiAffinityFilter)
from cirrus.scheduler.filters.base import BaseHostFilter, FilterResult
from cirrus.scheduler.filters.host import (AvailabilityZoneFilter, ComputeFilter,
                                           ImagePropertiesFilter, RequestedDestinationFilter,
                                           RetryFilter)
from cirrus.scheduler.filters.resources import CoreFilter, DiskFilter, RamFilter

FILTERS: dict[str, type[BaseHostFilter]] = {cls.name: cls for cls in (
    RetryFilter, RequestedDestinationFilter, ComputeFilter, AvailabilityZoneFilter, RamFilter, CoreFilter, DiskFilter,
    ImagePropertiesFilter, ServerGroupAffinityFilter, ServerGroupAntiAffinityFilter,
    SameHostFilter, DifferentHostFilter)}

DEFAULT_FILTERS = tuple(FILTERS)

__all__ = ["FILTERS", "DEFAULT_FILTERS", "BaseHostFilter", "FilterResult"]
