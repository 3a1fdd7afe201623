"""Who may call which route: one table per API, OpenStack's secure-RBAC defaults.

Each API family has a module here (``compute``, ``network``, ``image``,
``identity``) with one table, ``ROUTES``, from ``(method, path)`` — the path as
written in that family's route table, under its mount prefix — to a
:class:`~cirrus.policy.Rule`: the rule's OpenStack name and the least a caller
needs (see :class:`~cirrus.policy.Level`). The app refuses to start when a route
has no rule (:func:`cirrus.api.app.build_app`), and ``tests/security`` sends every
route as every persona and checks the answer against its rule.

The route rule is the first check and needs no data: the caller's role and
scope. Whose resource it is — project A's member asking for project B's server —
is checked where the resource is read (``policy.enforce(ctx, name, row)``), and
answers 404 as OpenStack does for things a caller may not see.
"""
from __future__ import annotations

from cirrus.policies import compute, identity, image, metadata, network, volume
from cirrus.policy import Rule

# Mount prefix → that family's route rules.
TABLES: dict[str, dict[tuple[str, str], Rule]] = {
    "/compute": compute.ROUTES,
    "/network": network.ROUTES,
    "/image": image.ROUTES,
    "/identity": identity.ROUTES,
    "/metadata": metadata.ROUTES,
    "/volume": volume.ROUTES,
}


def rule_for(prefix: str, method: str, path: str) -> Rule | None:
    """The rule of ``method path`` in the family mounted at ``prefix``
    (``HEAD`` is ruled as ``GET``)."""
    return TABLES.get(prefix, {}).get(("GET" if method == "HEAD" else method, path))
