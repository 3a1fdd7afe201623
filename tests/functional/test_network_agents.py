"""The agents API (Neutron's ``agent`` extension): each registered host's L2,
L3 and DHCP agents, their liveness from the heartbeat, ``admin_state_up``
taking an agent out of scheduling, deletion until the next report, and
admins only."""
from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.network.agents import Agent, report
from cirrus.network.models import network_agents
from cirrus.network.l3.scheduler import choose_host
from tests.functional.test_network import NET

AGENTS = f"{NET}/agents"


async def _register(cloud: Any, *agents: Agent) -> None:
    for agent in agents:
        await cloud.db.run(report, agent)


async def _age(cloud: Any, host: str, seconds: float) -> None:
    """Make ``host``'s last report ``seconds`` old."""
    def unit(conn: sa.Connection) -> None:
        conn.execute(network_agents.update().where(network_agents.c.host == host).values(
            updated_at=utcnow() - dt.timedelta(seconds=seconds)))
    await cloud.db.run(unit)


def _by_host_type(agents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(a["host"], a["agent_type"]): a for a in agents}


async def test_each_host_shows_its_agents(cloud: Any, admin: httpx.AsyncClient) -> None:
    await _register(cloud, Agent("h1", "192.0.2.1"), Agent("h2", dhcp=False))
    listed = (await admin.get(AGENTS)).json()["agents"]
    found = _by_host_type(listed)
    assert set(found) == {("h1", "Linux bridge agent"), ("h1", "DHCP agent"),
                          ("h1", "L3 agent"), ("h2", "Linux bridge agent"), ("h2", "L3 agent")}
    l2 = found[("h1", "Linux bridge agent")]
    assert l2["binary"] == "neutron-linuxbridge-agent" and l2["alive"] is True
    assert l2["admin_state_up"] is True and l2["configurations"]["tunneling_ip"] == "192.0.2.1"
    assert found[("h1", "DHCP agent")]["topic"] == "dhcp_agent"
    assert found[("h2", "L3 agent")]["availability_zone"] == "nova"
    assert len({a["id"] for a in listed}) == 5
    shown = (await admin.get(f"{AGENTS}/{l2['id']}")).json()["agent"]
    assert shown == l2
    again = (await admin.get(AGENTS)).json()["agents"]
    assert [a["id"] for a in again] == [a["id"] for a in listed]  # ids are stable


async def test_listing_filters(cloud: Any, admin: httpx.AsyncClient) -> None:
    await _register(cloud, Agent("h1"), Agent("h2", dhcp=False))
    dhcp = (await admin.get(AGENTS, params={"agent_type": "DHCP agent"})).json()["agents"]
    assert [(a["host"], a["agent_type"]) for a in dhcp] == [("h1", "DHCP agent")]
    h2 = (await admin.get(AGENTS, params={"host": "h2"})).json()["agents"]
    assert {a["agent_type"] for a in h2} == {"Linux bridge agent", "L3 agent"}
    only_ids = (await admin.get(AGENTS, params={"fields": "id"})).json()["agents"]
    assert all(set(a) == {"id"} for a in only_ids)


async def test_alive_follows_the_heartbeat(cloud: Any, admin: httpx.AsyncClient) -> None:
    await _register(cloud, Agent("h1"))
    await _age(cloud, "h1", 3600)
    assert {a["alive"] for a in (await admin.get(AGENTS)).json()["agents"]} == {False}
    await _register(cloud, Agent("h1"))
    assert {a["alive"] for a in (await admin.get(AGENTS)).json()["agents"]} == {True}


async def test_admin_state_down_takes_an_l3_agent_out_of_scheduling(
        cloud: Any, admin: httpx.AsyncClient) -> None:
    await _register(cloud, Agent("h1"), Agent("h2"))
    found = _by_host_type((await admin.get(AGENTS)).json()["agents"])
    assert await cloud.db.read(choose_host, 60.0) == "h1"  # ties: by name
    l3 = found[("h1", "L3 agent")]
    resp = await admin.put(f"{AGENTS}/{l3['id']}", json={"agent": {
        "admin_state_up": False, "description": "maintenance"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["agent"]["admin_state_up"] is False
    assert resp.json()["agent"]["description"] == "maintenance"
    assert await cloud.db.read(choose_host, 60.0) == "h2"
    # the host's other agents are untouched
    other = (await admin.get(f"{AGENTS}/{found[('h1', 'DHCP agent')]['id']}")).json()["agent"]
    assert other["admin_state_up"] is True
    await admin.put(f"{AGENTS}/{l3['id']}", json={"agent": {"admin_state_up": True}})
    assert await cloud.db.read(choose_host, 60.0) == "h1"


async def test_a_deleted_agent_comes_back_when_its_host_reports(
        cloud: Any, admin: httpx.AsyncClient) -> None:
    await _register(cloud, Agent("h1"))
    found = _by_host_type((await admin.get(AGENTS)).json()["agents"])
    dhcp = found[("h1", "DHCP agent")]
    await admin.put(f"{AGENTS}/{dhcp['id']}", json={"agent": {"admin_state_up": False}})
    await _age(cloud, "h1", 5)  # its last report came before the delete
    assert (await admin.delete(f"{AGENTS}/{dhcp['id']}")).status_code == 204
    assert (await admin.get(f"{AGENTS}/{dhcp['id']}")).status_code == 404
    assert (await admin.delete(f"{AGENTS}/{dhcp['id']}")).status_code == 404
    left = {a["agent_type"] for a in (await admin.get(AGENTS)).json()["agents"]}
    assert left == {"Linux bridge agent", "L3 agent"}
    await _register(cloud, Agent("h1"))
    back = (await admin.get(f"{AGENTS}/{dhcp['id']}")).json()["agent"]
    assert back["admin_state_up"] is True  # registered anew, as Neutron's


@pytest.mark.parametrize("body, field", [
    ({"agent": {"host": "h9"}}, "host"),
    ({"agent": {"admin_state_up": "maybe"}}, "admin_state_up"),
    ({"agent": {"description": "x" * 256}}, "description"),
    ({"agents": {}}, "agent"),
])
async def test_bad_updates_are_400(cloud: Any, admin: httpx.AsyncClient,
                                   body: dict[str, Any], field: str) -> None:
    await _register(cloud, Agent("h1"))
    agent = (await admin.get(AGENTS)).json()["agents"][0]
    resp = await admin.put(f"{AGENTS}/{agent['id']}", json=body)
    assert resp.status_code == 400 and field in resp.text


async def test_only_admins_see_agents(cloud: Any, admin: httpx.AsyncClient,
                                      demo: httpx.AsyncClient) -> None:
    await _register(cloud, Agent("h1"))
    agent = (await admin.get(AGENTS)).json()["agents"][0]
    listed = await demo.get(AGENTS)
    assert listed.status_code == 200 and listed.json() == {"agents": []}
    assert (await demo.get(f"{AGENTS}/{agent['id']}")).status_code == 403
    assert (await demo.put(f"{AGENTS}/{agent['id']}", json={
        "agent": {"admin_state_up": False}})).status_code == 403
    assert (await demo.delete(f"{AGENTS}/{agent['id']}")).status_code == 403
    assert (await admin.get(f"{AGENTS}/{agent['id']}")).json()["agent"]["admin_state_up"]


async def test_unknown_agent_is_404(admin: httpx.AsyncClient) -> None:
    missing = await admin.get(f"{AGENTS}/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404
    assert missing.json()["NeutronError"]["type"] == "AgentNotFound"
    assert (await admin.get(f"{AGENTS}/{'x' * 300}")).status_code == 404


async def test_the_agent_extension_is_listed(demo: httpx.AsyncClient) -> None:
    shown = await demo.get(f"{NET}/extensions/agent")
    assert shown.status_code == 200 and shown.json()["extension"]["alias"] == "agent"
