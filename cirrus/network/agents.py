"""The hosts that run the linuxbridge backend (Neutron's agents table and its
``ml2_vxlan_endpoints``): each registers its tunnel address and whether it may
serve DHCP, and reports in while it runs; the others read who is alive to
point their VXLAN entries at it and to agree on each network's DHCP host.

The agents API (Neutron's ``agent`` extension) shows each host as the agents
it runs: its Linux bridge (L2) agent and its L3 agent always, its DHCP agent
when it serves DHCP. An agent's id is derived from its host and type, so it
needs no row until an admin changes it (``network_agent_states``): an agent
taken down (``admin_state_up`` false) is given no new router or network, and
a deleted one is hidden until its host reports again, as Neutron's agent
registers anew at its next report.
"""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.network import exception as exc
from cirrus.network.models import network_agent_states, network_agents


@dataclass(frozen=True)
class Agent:
    host: str
    tunneling_ip: str = ""  # empty: the host has no VXLAN endpoint
    dhcp: bool = True


# Neutron's agent types (neutron_lib.constants.AGENT_TYPE_*) → (binary, topic).
L2, DHCP, L3 = "Linux bridge agent", "DHCP agent", "L3 agent"
TYPES: dict[str, tuple[str, str]] = {L2: ("neutron-linuxbridge-agent", "N/A"),
                                     DHCP: ("neutron-dhcp-agent", "dhcp_agent"),
                                     L3: ("neutron-l3-agent", "l3_agent")}
_NAMESPACE = uuid.UUID("6f1c3d0e-5b8a-4e7c-9a51-0c2b7d4e8f13")


def report(conn: sa.Connection, agent: Agent) -> None:
    """Register ``agent`` or refresh its row (its address may have changed)."""
    now = utcnow()
    values = {"tunneling_ip": agent.tunneling_ip, "dhcp": agent.dhcp, "updated_at": now}
    done = conn.execute(network_agents.update().where(network_agents.c.host == agent.host)
                        .values(**values))
    if done.rowcount:
        return
    try:
        with conn.begin_nested():
            conn.execute(network_agents.insert().values(host=agent.host, created_at=now, **values))
    except sa.exc.IntegrityError:  # registered meanwhile by a second process of the host
        conn.execute(network_agents.update().where(network_agents.c.host == agent.host)
                     .values(**values))


def alive_agents(conn: sa.Connection, down_time: float) -> dict[str, Agent]:
    """Agents that reported within ``down_time`` seconds, by host."""
    since = utcnow() - dt.timedelta(seconds=down_time)
    rows = conn.execute(sa.select(network_agents).where(network_agents.c.updated_at >= since))
    return {r.host: Agent(r.host, r.tunneling_ip, bool(r.dhcp)) for r in rows}


def disabled_hosts(conn: sa.Connection, agent_type: str) -> set[str]:
    """Hosts whose agent of ``agent_type`` an admin took down: the schedulers
    give it nothing new."""
    return set(conn.execute(sa.select(network_agent_states.c.host).where(
        network_agent_states.c.agent_type == agent_type,
        network_agent_states.c.admin_state_up.is_(False))).scalars())


# -- the agents API ---------------------------------------------------------------------
def agent_id(host: str, agent_type: str) -> str:
    """The id of ``host``'s agent of ``agent_type``: the same on every read."""
    return str(uuid.uuid5(_NAMESPACE, f"{host}/{agent_type}"))


def _timestamp(value: dt.datetime | None) -> str | None:
    """Neutron's agent timestamps: ``2026-01-01 00:00:00``."""
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else None


def _configurations(agent_type: str, row: Any) -> dict[str, Any]:
    if agent_type == L2:
        return {"tunneling_ip": row.tunneling_ip,
                "tunnel_types": ["vxlan"] if row.tunneling_ip else [], "l2_population": True}
    if agent_type == DHCP:
        return {"dhcp_driver": "dnsmasq"}
    return {"agent_mode": "legacy"}


def _view(row: Any, agent_type: str, state: dict[str, Any], down_time: float) -> dict[str, Any]:
    binary, topic = TYPES[agent_type]
    created = row.created_at or row.updated_at
    alive = (utcnow() - row.updated_at).total_seconds() <= down_time
    return {"id": agent_id(row.host, agent_type), "agent_type": agent_type, "binary": binary,
            "topic": topic, "host": row.host,
            "admin_state_up": state.get("admin_state_up", True),
            "description": state.get("description", ""), "alive": alive,
            "created_at": _timestamp(created), "started_at": _timestamp(created),
            "heartbeat_timestamp": _timestamp(row.updated_at),
            "configurations": _configurations(agent_type, row),
            "availability_zone": None if agent_type == L2 else "nova", "resources_synced": None}


def list_agents(conn: sa.Connection, down_time: float) -> list[dict[str, Any]]:
    """The views of every agent of every registered host (deleted ones
    excepted until their host reports again), by host and type."""
    states = {r["id"]: dict(r) for r in conn.execute(sa.select(network_agent_states)).mappings()}
    out = []
    for row in conn.execute(sa.select(network_agents).order_by(network_agents.c.host)):
        for agent_type in TYPES:
            if agent_type == DHCP and not row.dhcp:
                continue
            state = states.get(agent_id(row.host, agent_type), {})
            deleted = state.get("deleted_at")
            if deleted is None or row.updated_at > deleted:
                out.append(_view(row, agent_type, state, down_time))
    return out


def get_agent(conn: sa.Connection, agent: str, down_time: float) -> dict[str, Any]:
    """The view of agent ``agent``; 404 if there is none."""
    for view in list_agents(conn, down_time):
        if view["id"] == agent:
            return view
    raise exc.AgentNotFound(id=agent)


def _set_state(conn: sa.Connection, view: dict[str, Any], values: dict[str, Any]) -> None:
    """Write ``values`` into the agent's state row, made on its first change."""
    done = conn.execute(network_agent_states.update().where(
        network_agent_states.c.id == view["id"]).values(**values))
    if not done.rowcount:
        conn.execute(network_agent_states.insert().values(
            id=view["id"], host=view["host"], agent_type=view["agent_type"],
            **{"admin_state_up": True, "description": "", **values}))


def update_agent(conn: sa.Connection, agent: str, values: dict[str, Any],
                 down_time: float) -> dict[str, Any]:
    """Set ``admin_state_up`` and/or ``description``; the agent's view after."""
    view = get_agent(conn, agent, down_time)
    if values:
        _set_state(conn, view, values)
    return get_agent(conn, agent, down_time)


def delete_agent(conn: sa.Connection, agent: str, down_time: float) -> None:
    """Forget what the API set on the agent and hide it until its host next
    reports (an agent still running comes back, as Neutron's re-registers)."""
    view = get_agent(conn, agent, down_time)
    _set_state(conn, view, {"admin_state_up": True, "description": "", "deleted_at": utcnow()})
