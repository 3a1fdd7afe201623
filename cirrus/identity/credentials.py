"""Keystone's credentials: a blob kept for a user (an EC2 key pair, a TOTP
secret…), shown only to its owner and to admins.

Blobs are encrypted at rest (Fernet) with keys derived from the identity
service's token keys (:func:`blob_cipher`), every key kept, so a key added
later still reads what an older one sealed. An ``ec2`` credential's id is the
SHA-256 of its access key, as Keystone makes it, so a client can find it by
the key alone.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from typing import Any

import sqlalchemy as sa
from cryptography.fernet import Fernet, MultiFernet

from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import ValidationError
from cirrus.identity import admin
from cirrus.identity import models as m
from cirrus.identity.exception import CredentialNotFound, DuplicateEntry

C = m.credentials


def blob_cipher(token_keys: list[str]) -> MultiFernet:
    """A cipher for blobs, its keys derived from the token keys (newest first):
    a token key is never used as is for anything but tokens."""
    derived = [base64.urlsafe_b64encode(hmac.new(k.encode(), b"cirrus credential blob",
                                                 hashlib.sha256).digest())
               for k in token_keys]
    return MultiFernet([Fernet(k) for k in derived])


def _ec2_id(blob: str) -> str:
    try:
        access = json.loads(blob)["access"]
    except (ValueError, KeyError, TypeError):
        raise ValidationError(field="credential/blob",
                              reason="an ec2 blob is a JSON object with 'access'") from None
    if not isinstance(access, str):
        raise ValidationError(field="credential/blob", reason="'access' must be a string")
    return hashlib.sha256(access.encode()).hexdigest()


def _row(conn: sa.Connection, ident: str, cipher: MultiFernet) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(C).where(C.c.id == ident))
    if row is None:
        raise CredentialNotFound(credential_id=ident)
    return _opened(row, cipher)


def _opened(row: dict[str, Any], cipher: MultiFernet) -> dict[str, Any]:
    blob = cipher.decrypt(row.pop("encrypted_blob").encode()).decode()
    return {**row, "blob": blob}


def get(conn: sa.Connection, ident: str, cipher: MultiFernet) -> dict[str, Any]:
    return _row(conn, ident, cipher)


def listing(conn: sa.Connection, cipher: MultiFernet, user_id: str | None,
            kind: str | None) -> list[dict[str, Any]]:
    q = sa.select(C).order_by(C.c.created_at, C.c.id)
    if user_id is not None:
        q = q.where(C.c.user_id == user_id)
    if kind is not None:
        q = q.where(C.c.type == kind)
    return [_opened(r, cipher) for r in fetch_all(conn, q)]


def _checked(conn: sa.Connection, values: dict[str, Any]) -> None:
    admin.get(conn, "user", values["user_id"])
    if values.get("project_id"):
        admin.get(conn, "project", values["project_id"])
    if values["type"] == "ec2" and not values.get("project_id"):
        raise ValidationError(field="credential/project_id", reason="is required for ec2")


def create(conn: sa.Connection, values: dict[str, Any], cipher: MultiFernet) -> dict[str, Any]:
    _checked(conn, values)
    ident = _ec2_id(values["blob"]) if values["type"] == "ec2" else uuid.uuid4().hex
    sealed = cipher.encrypt(values["blob"].encode()).decode()
    try:
        with conn.begin_nested():
            conn.execute(C.insert().values(id=ident, user_id=values["user_id"],
                                           project_id=values.get("project_id"),
                                           type=values["type"], encrypted_blob=sealed,
                                           created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise DuplicateEntry(kind="credential") from None
    return _row(conn, ident, cipher)


def update(conn: sa.Connection, ident: str, values: dict[str, Any], cipher: MultiFernet
           ) -> dict[str, Any]:
    merged = {**_row(conn, ident, cipher), **values}
    _checked(conn, merged)
    if merged["type"] == "ec2":
        _ec2_id(merged["blob"])  # still an ec2 blob; its id stays the first key's
    conn.execute(C.update().where(C.c.id == ident).values(
        user_id=merged["user_id"], project_id=merged.get("project_id"), type=merged["type"],
        encrypted_blob=cipher.encrypt(merged["blob"].encode()).decode(), updated_at=utcnow()))
    return _row(conn, ident, cipher)


def delete(conn: sa.Connection, ident: str) -> None:
    if not conn.execute(C.delete().where(C.c.id == ident)).rowcount:
        raise CredentialNotFound(credential_id=ident)
