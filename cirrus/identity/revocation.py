"""Keystone's revocation events: withdrawn access ends existing tokens at once.

Fernet tokens are self-contained, so removing a role, disabling or deleting a
user or project, or changing a password would leave the tokens already issued
working until they expire. Each of those changes records, in its own
transaction, a :class:`RevokeEvent` naming what it ends (a user, a project, a
user's role on a project or domain, a role, one token by audit id, or a chain
of rescoped tokens); token validation refuses a token that an event matches
(every field the event sets equals the token's) and that was issued before it.

"Before" is not read from clocks. Every recording bumps the one
``revocation_generation`` row in the same transaction, and stores the new value
on its events; a token carries the generation read in the same snapshot as its
user, scope and roles (:func:`cirrus.identity.auth.resolve_auth`). A token with
generation g saw every change of an event <= g and none of a later one: exactly
those later events can revoke it, whatever the clocks of the API processes say.
The row also serialises revocations (its UPDATE locks it), so the generations
commit in order and "nothing above g" holds for a reader that has seen g.

Each API process keeps the events in a :class:`RevocationList` and checks the
row on every validation (``cirrus.identity.generation``): a revocation through
one process is refused by every other process's next request. Events are
pruned a token lifetime after they were recorded: no token issued before them
is still alive then.
"""
from __future__ import annotations

import datetime as dt
import operator
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, NamedTuple

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.identity import models as m
from cirrus.identity.tokens import TokenData

FIELDS = ("user_id", "project_id", "domain_id", "role", "audit_id", "audit_chain_id")
_EVENTS = m.revocation_events
_GENERATION = m.revocation_generation


@dataclass(frozen=True)
class RevokeEvent:
    """What a revocation ends: the tokens whose values equal every field set."""

    user_id: str | None = None
    project_id: str | None = None
    domain_id: str | None = None  # of a domain-scoped token
    role: str | None = None       # a role's name: among the token's roles
    audit_id: str | None = None
    audit_chain_id: str | None = None


# -- the database -----------------------------------------------------------------

def read_generation(conn: sa.Connection) -> int:
    """The number of revocations recorded so far (0 before the first)."""
    value = conn.execute(sa.select(_GENERATION.c.generation)
                         .where(_GENERATION.c.id == 1)).scalar()
    return int(value or 0)


def record(conn: sa.Connection, events: Iterable[RevokeEvent], lifetime: float) -> int:
    """Store ``events`` as one new generation (in the caller's transaction, beside
    the change they stand for); drop events older than ``lifetime`` seconds (the
    longest a token lives). Returns the new generation (0: ``events`` was
    empty, nothing recorded)."""
    events = list(events)
    if not events:
        return 0
    bumped = conn.execute(_GENERATION.update().where(_GENERATION.c.id == 1)
                          .values(generation=_GENERATION.c.generation + 1))
    if bumped.rowcount == 0:  # a database made without migration 0009's row
        conn.execute(_GENERATION.insert().values(id=1, generation=1))
    generation = read_generation(conn)
    now = utcnow()
    conn.execute(_EVENTS.insert(), [{"generation": generation, "issued_before": now,
                                     **asdict(e)} for e in events])
    conn.execute(_EVENTS.delete().where(
        _EVENTS.c.issued_before < now - dt.timedelta(seconds=lifetime)))
    return generation


def events_since(conn: sa.Connection, generation: int
                 ) -> tuple[int, list[tuple[RevokeEvent, int, dt.datetime]]]:
    """The current generation, then the events newer than ``generation`` as
    (event, its generation, recorded at). The generation is read first: on a
    database whose statements each see the latest commit (PostgreSQL's read
    committed) the events may be newer still, never older."""
    current = read_generation(conn)
    rows = conn.execute(sa.select(_EVENTS).where(_EVENTS.c.generation > generation)
                        .order_by(_EVENTS.c.generation)).mappings()
    return current, [(RevokeEvent(**{f: r[f] for f in FIELDS}), r["generation"],
                      r["issued_before"]) for r in rows]


# -- one process's copy -------------------------------------------------------------

class Shape(NamedTuple):
    """The fields a kind of event sets: ``names`` (read alike from an event
    and a token, by ``get``), and whether a role (a token has several)."""

    names: tuple[str, ...]
    role: bool
    get: Callable[[Any], Any]


def shape_of(event: RevokeEvent) -> Shape:
    names = tuple(n for n in FIELDS if n != "role" and getattr(event, n) is not None)
    return Shape(names, event.role is not None,
                 operator.attrgetter(*names) if names else lambda _x: None)


class RevocationList:
    """The events an API process knows, indexed to match a token in a few
    dictionary lookups: per shape, the newest generation of each key
    ``(names, values[, role])``. A token's value that is None (no project
    on an unscoped token) makes a key no event has."""

    def __init__(self) -> None:
        self.generation = 0  # every event up to this one is here
        self._newest: dict[tuple[Any, ...], tuple[int, dt.datetime]] = {}
        self._shapes: dict[tuple[tuple[str, ...], bool], Shape] = {}

    def add(self, event: RevokeEvent, generation: int, issued_before: dt.datetime) -> None:
        shape = self._shapes.setdefault(*_entry(shape_of(event)))
        key = (shape.names, shape.get(event), event.role) if shape.role else \
            (shape.names, shape.get(event))
        known = self._newest.get(key)
        if known is None or known[0] < generation:
            self._newest[key] = (generation, issued_before)

    def prune(self, before: dt.datetime) -> None:
        """Forget events recorded before ``before`` (their tokens have expired)."""
        self._newest = {k: v for k, v in self._newest.items() if v[1] >= before}
        kept = {(k[0], len(k) == 3) for k in self._newest}
        self._shapes = {k: s for k, s in self._shapes.items() if k in kept}

    def revokes(self, token: TokenData) -> bool:
        """Whether an event newer than ``token`` matches it."""
        if not self._newest:
            return False
        newest, issued = self._newest, token.generation
        for names, role, get in self._shapes.values():
            values = get(token)
            for key in ([(names, values, r) for r in token.roles] if role else
                        [(names, values)]):
                hit = newest.get(key)
                if hit is not None and hit[0] > issued:
                    return True
        return False

    def __len__(self) -> int:
        return len(self._newest)


def _entry(shape: Shape) -> tuple[tuple[tuple[str, ...], bool], Shape]:
    return (shape.names, shape.role), shape
