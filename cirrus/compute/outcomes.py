"""What a failure on a compute host leads to: one table per kind of work.

Nova decides this in ladders of ``except`` clauses, each also recording a
fault and sending a notification. Here the exception's type is looked up in
a table (first match wins, so subclasses go before their bases) and one
place acts on the outcome (``action.ActionRunner``, ``build_failure``).
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Sequence

from cirrus.compute import exception as exc
from cirrus.network import exception as nexc

ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]


class Outcome(enum.Enum):
    DELETED = "deleted"        # the instance went away meanwhile: clean up quietly
    RESCHEDULE = "reschedule"  # another host may succeed (builds only)
    ABORT = "abort"            # no host would: ERROR with a fault, no retry
    FAULT = "fault"            # an action failed: a fault, the task state cleared


class Rule(NamedTuple):
    """A row: errors of ``types`` lead to ``outcome``. ``reason``: for an abort,
    the BuildAbortException's reason (``{error}`` is the error's message);
    None keeps the error's own message."""

    types: ExceptionTypes
    outcome: Outcome
    reason: str | None = None


OutcomeTable = Sequence[Rule]

# An action (start, stop, reboot, rebuild, …) on an existing instance.
ACTION_OUTCOMES: OutcomeTable = (
    Rule((exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError), Outcome.DELETED),
    Rule(Exception, Outcome.FAULT),
)

# Network failures that no other host would fix (seed 004's list, with
# Neutron's name for no more addresses and the port quota).
NO_MORE_NETWORK: tuple[type[BaseException], ...] = (
    nexc.IpAddressGenerationFailure, nexc.NoMoreFixedIps, nexc.FixedIpLimitExceeded,
    nexc.NoMoreNetworks, nexc.PortLimitExceeded)

# A build (seed 004's ``_build_and_run_instance`` and ``_do_build_and_run_instance``).
# What no row names takes the default of the phase it failed in: reschedule
# while the guest is being built, abort once it runs (``Builder``).
BUILD_OUTCOMES: OutcomeTable = (
    Rule((exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError), Outcome.DELETED),
    Rule((exc.RescheduledException, exc.ComputeResourcesUnavailable), Outcome.RESCHEDULE),
    Rule(exc.BuildAbortException, Outcome.ABORT),
    Rule(NO_MORE_NETWORK, Outcome.ABORT,
         "Failed to allocate the network(s) with error {error}, not rescheduling."),
    Rule(exc.VirtualInterfaceCreateException, Outcome.ABORT,
         "Failed to allocate the network(s), not rescheduling."),
    Rule((exc.FlavorDiskTooSmall, exc.FlavorMemoryTooSmall, exc.ImageNotActive,
          exc.ImageUnacceptable, exc.ImageNotFound, exc.ImageChecksumMismatch), Outcome.ABORT),
    # After the row naming its subclass ImageChecksumMismatch (first match wins).
    Rule(exc.ImageDownloadFailed, Outcome.RESCHEDULE),
)


def rule_of(error: BaseException, table: OutcomeTable) -> Rule | None:
    """The first row of ``table`` whose types ``error`` is one of."""
    for rule in table:
        if isinstance(error, rule.types):
            return rule
    return None


def outcome_of(error: BaseException, table: OutcomeTable, default: Outcome) -> Outcome:
    """The outcome of the first row of ``table`` that ``error`` matches, else ``default``."""
    rule = rule_of(error, table)
    return default if rule is None else rule.outcome
