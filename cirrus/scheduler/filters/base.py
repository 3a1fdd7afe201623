"""A filter answers one question about one host and says why when it says no."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec


@dataclass(frozen=True, slots=True)
class FilterResult:
    passed: bool
    reason: str = ""

    @classmethod
    def reject(cls, reason: str) -> "FilterResult":
        return cls(False, reason)


PASS = FilterResult(True)


class BaseHostFilter:
    """Subclasses implement :meth:`host_passes`; ``name`` appears in faults."""

    name = "BaseHostFilter"
    # Forced hosts bypass filters that set this (as Nova does for most).
    run_for_forced = False

    def applies(self, spec: Spec) -> bool:
        """Whether this filter has anything to say for ``spec`` (saves a loop)."""
        return True

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        raise NotImplementedError
