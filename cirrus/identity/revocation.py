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
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator

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

    def key(self) -> tuple[str, ...]:
        """The fields it sets and their values, flat, in :data:`FIELDS` order."""
        out: list[str] = []
        for name, value in zip(FIELDS, (self.user_id, self.project_id, self.domain_id,
                                        self.role, self.audit_id, self.audit_chain_id)):
            if value is not None:
                out += (name, value)
        return tuple(out)


# -- the database -----------------------------------------------------------------

def read_generation(conn: sa.Connection) -> int:
    """The number of revocations recorded so far (0 before the first)."""
    value = conn.execute(sa.select(_GENERATION.c.generation)
                         .where(_GENERATION.c.id == 1)).scalar()
    return int(value or 0)


def record(conn: sa.Connection, events: Iterable[RevokeEvent], lifetime: float) -> int:
    """Store ``events`` as one new generation (in the caller's transaction, beside
    the change they stand for); drop events older than ``lifetime`` seconds (the
    longest a token lives). Returns the new generation; nothing when ``events``
    is empty."""
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

class RevocationList:
    """The events an API process knows, indexed to match a token in a few
    dictionary lookups: per shape (the set of fields events set), the newest
    generation of each key."""

    def __init__(self) -> None:
        self.generation = 0  # every event up to this one is here
        self._newest: dict[tuple[str, ...], tuple[int, dt.datetime]] = {}
        self._shapes: tuple[tuple[str, ...], ...] = ()

    def add(self, event: RevokeEvent, generation: int, issued_before: dt.datetime) -> None:
        key = event.key()
        known = self._newest.get(key)
        if known is None or known[0] < generation:
            self._newest[key] = (generation, issued_before)
        shape = key[0::2]
        if shape not in self._shapes:
            self._shapes += (shape,)

    def prune(self, before: dt.datetime) -> None:
        """Forget events recorded before ``before`` (their tokens have expired)."""
        self._newest = {k: v for k, v in self._newest.items() if v[1] >= before}
        self._shapes = tuple(dict.fromkeys(k[0::2] for k in self._newest))

    def revokes(self, token: TokenData) -> bool:
        """Whether an event newer than ``token`` matches it."""
        if not self._newest:
            return False
        newest = self._newest
        values = {"user_id": token.user_id, "project_id": token.project_id,
                  "domain_id": token.domain_id, "audit_id": token.audit_id,
                  "audit_chain_id": token.audit_chain_id}
        for shape in self._shapes:
            for key in _keys(shape, values, token.roles):
                hit = newest.get(key)
                if hit is not None and hit[0] > token.generation:
                    return True
        return False

    def __len__(self) -> int:
        return len(self._newest)


def _keys(shape: tuple[str, ...], values: dict[str, str | None],
          roles: list[str]) -> Iterator[tuple[str, ...]]:
    """The keys of ``shape`` an event matching these token values has: one, or
    one per role of the token when the shape names a role."""
    if "role" not in shape:
        key = _key(shape, values)
        if key is not None:
            yield key
        return
    for role in roles:
        key = _key(shape, {**values, "role": role})
        if key is not None:
            yield key


def _key(shape: tuple[str, ...], values: dict[str, str | None]) -> tuple[str, ...] | None:
    key: list[str] = []
    for name in shape:
        value = values[name]
        if value is None:
            return None  # the token has no such value: no event of this shape matches
        key += (name, value)
    return tuple(key)
