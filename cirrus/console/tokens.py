"""Console auth tokens (Nova's ``ConsoleAuthToken``): a random token handed to
the user in the console URL, its hash kept with where the console is; the
proxy exchanges a token for that place once it is checked."""
from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa

from cirrus.compute.models import instances
from cirrus.console.models import console_auth_tokens as t
from cirrus.db.base import utcnow


@dataclass(frozen=True)
class ConnectInfo:
    """Where a console is, as a token names it."""

    instance_uuid: str
    console_type: str
    host: str
    port: int
    access_url_base: str
    netns: str = ""  # the namespace the port listens in on its host


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def authorize(conn: sa.Connection, info: ConnectInfo, ttl: int) -> str:
    """A new token for ``info``, valid ``ttl`` seconds; expired tokens go."""
    now = int(time.time())
    conn.execute(t.delete().where(t.c.expires < now))
    token = secrets.token_urlsafe(24)
    conn.execute(t.insert().values(
        token_hash=_hash(token), console_type=info.console_type, host=info.host, port=info.port,
        netns=info.netns, instance_uuid=info.instance_uuid, access_url_base=info.access_url_base,
        expires=now + ttl, created_at=utcnow()))
    return token


def validate(conn: sa.Connection, token: str) -> ConnectInfo | None:
    """What ``token`` opens, if it is known, unexpired and its server not deleted."""
    if not token or len(token) > 255:
        return None
    row = conn.execute(sa.select(t).join(instances, instances.c.uuid == t.c.instance_uuid).where(
        t.c.token_hash == _hash(token), t.c.expires >= int(time.time()),
        instances.c.deleted.is_(False))).first()
    if row is None:
        return None
    return ConnectInfo(instance_uuid=row.instance_uuid, console_type=row.console_type,
                       host=row.host, port=row.port, access_url_base=row.access_url_base,
                       netns=row.netns)


def delete_for_instance(conn: sa.Connection, instance_uuid: str) -> None:
    """Every token of a server (deleted, moved: its consoles are elsewhere)."""
    conn.execute(t.delete().where(t.c.instance_uuid == instance_uuid))
