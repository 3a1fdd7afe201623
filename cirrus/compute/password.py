"""A server's encrypted password (``os-server-password``), kept where Nova
keeps it: system metadata ``password_0`` … ``password_3``, 255 characters each
(``nova/api/metadata/password.py``). The guest posts it, encrypted with the
server's key, through the metadata service; the API reads and clears it.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst

CHUNKS = 4
CHUNK_LENGTH = 255
MAX_SIZE = CHUNKS * CHUNK_LENGTH


def extract_password(system_metadata: dict[str, Any] | None) -> str | None:
    """The stored password (its chunks in order), or None if there is none."""
    meta = system_metadata or {}
    found = "".join(str(meta[k]) for k in sorted(meta) if k.startswith("password_"))
    return found or None


def convert_password(password: str | None) -> dict[str, str]:
    """``password`` (None: no password) as the system metadata that keeps it."""
    rest = password or ""
    meta = {}
    for i in range(CHUNKS):
        meta[f"password_{i}"], rest = rest[:CHUNK_LENGTH], rest[CHUNK_LENGTH:]
    return meta


def save_password(conn: sa.Connection, uuid: str, password: str | None) -> None:
    """Store ``password`` (None clears it), keeping the rest of the server's
    system metadata; :class:`InvalidRequest` if it is over :data:`MAX_SIZE`."""
    if password is not None and len(password) > MAX_SIZE:
        raise exc.InvalidRequest(reason=f"a server password is at most {MAX_SIZE} characters")
    meta = dict(inst.get(conn, uuid)["system_metadata"] or {})
    meta.update(convert_password(password))
    inst.save(conn, uuid, {"system_metadata": meta})
