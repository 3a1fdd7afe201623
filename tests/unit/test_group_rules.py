"""Which requests read their server group and host hints before scheduling
(cirrus/scheduler/groups.py): those that name a group, by the request spec
(a move, an unshelve, a boot) or by the ``group`` hint, or a host hint."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.scheduler.groups import needs_group_and_hints


@pytest.mark.parametrize("request_spec, needed", [
    ({}, False),
    ({"instance_group": None, "scheduler_hints": {}}, False),
    ({"instance_group": {"uuid": "g", "policy": "anti-affinity"}}, True),
    ({"scheduler_hints": {"group": "g"}}, True),
    ({"scheduler_hints": {"same_host": ["i"]}}, True),
    ({"scheduler_hints": {"different_host": "i"}}, True),
    ({"scheduler_hints": {"build_near_host_ip": "10.0.0.1"}}, False),
])
def test_which_requests_read_their_group_and_hints(request_spec: dict[str, Any],
                                                   needed: bool) -> None:
    assert needs_group_and_hints(request_spec) is needed
