"""What a failure on a compute host leads to: one table per kind of work.

Nova decides this in ladders of ``except`` clauses, each also recording a
fault and sending a notification. Here the exception's type is looked up in
a table (first match wins, so subclasses go before their bases) and one
place acts on the outcome.
"""
from __future__ import annotations

import enum
from typing import Sequence

from cirrus.compute import exception as exc

ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]


class Outcome(enum.Enum):
    DELETED = "deleted"        # the instance went away meanwhile: clean up quietly
    RESCHEDULE = "reschedule"  # another host may succeed (builds only)
    ABORT = "abort"            # no host would: ERROR with a fault, no retry
    FAULT = "fault"            # an action failed: a fault, the task state cleared


OutcomeTable = Sequence[tuple[ExceptionTypes, Outcome]]

# An action (start, stop, reboot, rebuild, …) on an existing instance.
ACTION_OUTCOMES: OutcomeTable = (
    ((exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError), Outcome.DELETED),
    (Exception, Outcome.FAULT),
)


def outcome_of(error: BaseException, table: OutcomeTable, default: Outcome) -> Outcome:
    """The outcome of the first row of ``table`` whose types ``error`` is one of."""
    for types, outcome in table:
        if isinstance(error, types):
            return outcome
    return default
