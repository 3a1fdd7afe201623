"""Each server action has its own rule, checked before its body is read."""
from __future__ import annotations

import pytest

from cirrus.api.compute.move_actions import MOVE_ACTIONS
from cirrus.api.compute.server_actions import ACTIONS
from cirrus.policies.compute import SERVER_ACTIONS
from cirrus.policy import Level
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants


def test_every_action_has_a_rule_and_every_rule_an_action() -> None:
    assert set(ACTIONS) | set(MOVE_ACTIONS) == set(SERVER_ACTIONS)
    assert not set(ACTIONS) & set(MOVE_ACTIONS)


def test_no_action_needs_less_than_the_route() -> None:
    # The route's own rule (member) is checked first; an action below it
    # would be unreachable for the callers its rule names.
    assert all(rule.level >= Level.MEMBER for rule in SERVER_ACTIONS.values())


async def test_callers_below_an_actions_level_are_refused_before_its_body(
        tenants: Tenants) -> None:
    image = await upload_image(tenants.member, name="acted-on")
    server = (await create_server(tenants.member, server_body(image, "acted-on")))["id"]
    await wait_for_status(tenants.member, server, {"ACTIVE"})
    for name, rule in sorted(SERVER_ACTIONS.items()):
        # A body no action accepts: a caller who got past the rule would get 400.
        below = tenants.reader if rule.level is Level.MEMBER else tenants.member
        answer = await below.post(f"/compute/v2.1/servers/{server}/action",
                                  json={name: {"no such field": object.__name__}})
        assert answer.status_code == 403, (name, answer.text)
        # A reader is stopped by the route's rule already; a member below an
        # admin action by the action's own.
        assert rule.level is Level.MEMBER or rule.name in answer.text
    answer = await tenants.member.post(f"/compute/v2.1/servers/{server}/action",
                                       json={"reboot": {"no such field": 1}})
    assert answer.status_code == 400


@pytest.mark.parametrize("name", sorted(SERVER_ACTIONS))
def test_action_rules_carry_novas_names(name: str) -> None:
    assert SERVER_ACTIONS[name].name.startswith("os_compute_api:")
