"""Histogram buckets, by what is measured (seconds unless named otherwise)."""
from __future__ import annotations

# A boot step: a millisecond claim to a real guest's minutes of spawn.
BOOT_STEP = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
             30.0, 60.0, 120.0, 300.0, 600.0)
# An HTTP request: a cached GET in a fraction of a millisecond to a held create.
API_REQUEST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
               10.0, 30.0)
# A unit of work (submit to result) and a scheduling decision: tens of microseconds up.
SHORT = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
         0.5, 1.0, 2.5, 10.0)
# Units of work per group commit (groupcommit.MAX_BATCH is 64).
GROUP_SIZE = (1, 2, 4, 8, 16, 32, 64)
