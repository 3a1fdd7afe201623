"""A filter answers one question about one host and says why when it says no."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    # True when the answer depends on the host alone, never on the request
    # (the spec argument may then be None). The host index holds only the
    # hosts that pass every static filter, so a search never visits the rest.
    static = False

    @classmethod
    def from_settings(cls, settings: Any) -> "BaseHostFilter":
        """The filter as the scheduler builds it; one with an option of its
        own (``IoOpsFilter``'s ``max_io_ops_per_host``) reads it here."""
        return cls()

    def applies(self, spec: Spec) -> bool:
        """Whether this filter has anything to say for ``spec`` (saves a loop)."""
        return True

    def fit(self, spec: Spec) -> tuple[str, float] | None:
        """``(attribute, least)`` when a passing host always has
        ``getattr(host, attribute) >= least``: the index then skips whole
        groups of hosts below it. The filter itself still decides."""
        return None

    def candidates(self, spec: Spec) -> set[str] | None:
        """The host names that can pass, when this filter can name them
        (e.g. the hosts of an affinity group); None when any host may."""
        return None

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        raise NotImplementedError
