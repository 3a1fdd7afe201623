"""The hosts that run the linuxbridge backend (Neutron's agents table and its
``ml2_vxlan_endpoints``): each registers its tunnel address and whether it may
serve DHCP, and reports in while it runs; the others read who is alive to
point their VXLAN entries at it and to agree on each network's DHCP host."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.network.models import network_agents


@dataclass(frozen=True)
class Agent:
    host: str
    tunneling_ip: str = ""  # empty: the host has no VXLAN endpoint
    dhcp: bool = True


def report(conn: sa.Connection, agent: Agent) -> None:
    """Register ``agent`` or refresh its row (its address may have changed)."""
    values = {"tunneling_ip": agent.tunneling_ip, "dhcp": agent.dhcp, "updated_at": utcnow()}
    done = conn.execute(network_agents.update().where(network_agents.c.host == agent.host)
                        .values(**values))
    if done.rowcount:
        return
    try:
        with conn.begin_nested():
            conn.execute(network_agents.insert().values(host=agent.host, **values))
    except sa.exc.IntegrityError:  # registered meanwhile by a second process of the host
        conn.execute(network_agents.update().where(network_agents.c.host == agent.host)
                     .values(**values))


def alive_agents(conn: sa.Connection, down_time: float) -> dict[str, Agent]:
    """Agents that reported within ``down_time`` seconds, by host."""
    since = utcnow() - dt.timedelta(seconds=down_time)
    rows = conn.execute(sa.select(network_agents).where(network_agents.c.updated_at >= since))
    return {r.host: Agent(r.host, r.tunneling_ip, bool(r.dhcp)) for r in rows}
