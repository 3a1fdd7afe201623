"""Creating networks, subnets and ports one at a time or in bulk (Neutron's
native bulk: ``POST /v2.0/networks`` with ``{"networks": [...]}``).

A bulk create is all or nothing: every resource is checked for the caller
first, then all are created in one unit of work, each counted against the
quota as the ones before it were; any failure rolls back the lot.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.network.schema import parse_many
from cirrus.network.service import Creator, NetworkService


def _creator(svc: NetworkService, ctx: RequestContext, resource: str,
             values: dict[str, Any]) -> Creator:
    if resource == "network":
        return svc.network_creator(ctx, values)
    if resource == "subnet":
        return svc.subnet_creator(ctx, values)
    return svc.port_creator(ctx, values)


async def create(svc: NetworkService, ctx: RequestContext, resource: str,
                 body: Any) -> tuple[list[dict[str, Any]], bool]:
    """The rows created from a create ``body`` of ``resource``, in request
    order, and whether it was a bulk create. New ports are then told to the
    binder, as a single create does."""
    items, many = parse_many(resource, body)
    units = [_creator(svc, ctx, resource, values) for values in items]

    def create_all(conn: sa.Connection) -> list[dict[str, Any]]:
        return [unit(conn) for unit in units]
    rows = await svc.db.run(create_all)
    if resource == "port":
        for row in rows:
            await svc.binder.bound(row)
    return rows, many
