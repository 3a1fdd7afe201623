"""Which host's L3 agent serves a router (Neutron's L3 scheduler, its
``LeastRoutersScheduler``): a live network agent with the fewest routers,
chosen once, when the router first has a port to serve; an L3 agent an admin
took down (``admin_state_up`` false) is given none."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.network.agents import L3, alive_agents, disabled_hosts
from cirrus.network.models import routers


def choose_host(conn: sa.Connection, down_time: float) -> str:
    """The live, enabled agent's host with the fewest routers (ties: by
    name); "" if there is none (the router waits for the next change to be placed)."""
    hosts = sorted(set(alive_agents(conn, down_time)) - disabled_hosts(conn, L3))
    if not hosts:
        return ""
    load: dict[str, int] = {host: count for host, count in conn.execute(
        sa.select(routers.c.host, sa.func.count()).where(routers.c.host.in_(hosts))
        .group_by(routers.c.host))}
    return min(hosts, key=lambda h: (load.get(h, 0), h))


def schedule_router(conn: sa.Connection, router_id: str, down_time: float) -> str:
    """Place the router on a host unless it has one; the host it is on."""
    current = conn.execute(sa.select(routers.c.host).where(routers.c.id == router_id)).scalar()
    if current:
        return str(current)
    host = choose_host(conn, down_time)
    if host:
        conn.execute(routers.update().where(routers.c.id == router_id, routers.c.host == "")
                     .values(host=host))
    return host
