"""Claims: the resources each consumer holds on a compute node ("placement").

A lower package beside ``db``: the scheduler claims when it picks a host, the
conductor and the API release what a failed or local-deleted build held, and
compute checks, moves and releases claims as instances build, move and go
away. All of them call these functions (in their own transaction) or the
:class:`ClaimsClient` (one transaction each); none writes the allocations
table itself.
"""
from __future__ import annotations

from cirrus.claims.allocations import (Allocation, AlreadyClaimed, Attempt, claim,
                                       claim_unless_held, held, move, of, release)
from cirrus.claims.client import ClaimsClient

__all__ = ["Allocation", "AlreadyClaimed", "Attempt", "ClaimsClient", "claim",
           "claim_unless_held", "held", "move", "of", "release"]
