"""Role inference rules (Keystone's implied roles): holding the prior role
confers the implied one too (:func:`cirrus.identity.assignments.effective`).

As Keystone: a global role may not imply a domain-specific one (403), nor
may a role imply itself or ``admin`` (Keystone's ``prohibited_implied_role``).
A new or removed rule changes what tokens carry: the tokens holding the prior
role are revoked.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.identity import admin, revocation
from cirrus.identity import models as m
from cirrus.identity.exception import ForbiddenAction, ImpliedRoleNotFound
from cirrus.identity.revocation import RevokeEvent

IR = m.implied_roles
PROHIBITED = frozenset({"admin"})


def _exists(conn: sa.Connection, prior_id: str, implied_id: str) -> bool:
    return conn.execute(sa.select(IR.c.prior_role_id).where(
        IR.c.prior_role_id == prior_id, IR.c.implied_role_id == implied_id)).first() is not None


def create(conn: sa.Connection, prior_id: str, implied_id: str, *, lifetime: float
           ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rule (idempotent); the two roles' rows."""
    prior, implied = admin.get(conn, "role", prior_id), admin.get(conn, "role", implied_id)
    if prior_id == implied_id or implied["name"] in PROHIBITED:
        raise ForbiddenAction(reason=f"{implied['name']} may not be implied by {prior['name']}")
    if prior["domain_id"] is None and implied["domain_id"] is not None:
        raise ForbiddenAction(reason="a global role cannot imply a domain-specific role")
    if not _exists(conn, prior_id, implied_id):
        conn.execute(IR.insert().values(prior_role_id=prior_id, implied_role_id=implied_id))
        revocation.record(conn, [RevokeEvent(role=prior["name"])], lifetime)
    return prior, implied


def get(conn: sa.Connection, prior_id: str, implied_id: str
        ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two roles of an existing rule; 404 for a role or a rule not there."""
    prior, implied = admin.get(conn, "role", prior_id), admin.get(conn, "role", implied_id)
    if not _exists(conn, prior_id, implied_id):
        raise ImpliedRoleNotFound(prior_role_id=prior_id, implied_role_id=implied_id)
    return prior, implied


def delete(conn: sa.Connection, prior_id: str, implied_id: str, *, lifetime: float) -> None:
    prior, _ = get(conn, prior_id, implied_id)
    conn.execute(IR.delete().where(IR.c.prior_role_id == prior_id,
                                   IR.c.implied_role_id == implied_id))
    revocation.record(conn, [RevokeEvent(role=prior["name"])], lifetime)


def implied_by(conn: sa.Connection, prior_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The prior role and the roles it implies directly."""
    prior = admin.get(conn, "role", prior_id)
    return prior, [admin.get(conn, "role", r.implied_role_id) for r in conn.execute(
        sa.select(IR.c.implied_role_id).where(IR.c.prior_role_id == prior_id))]


def every(conn: sa.Connection) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each prior role with the roles it implies directly."""
    priors = [r.prior_role_id for r in conn.execute(
        sa.select(IR.c.prior_role_id).distinct().order_by(IR.c.prior_role_id))]
    return [implied_by(conn, p) for p in priors]
