"""Key pairs: generated or imported OpenSSH public keys, per user."""
from __future__ import annotations

import base64
import hashlib
from typing import Any

import sqlalchemy as sa
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from cirrus.compute import quotas
from cirrus.compute.exception import InvalidKeypair, KeyPairExists, KeyPairMissing
from cirrus.compute.models import key_pairs
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.db.rows import PreparedRead
from cirrus.exception import QuotaExceeded


def fingerprint(public_key: str) -> str:
    """MD5 colon-hex of the key blob, as ``ssh-keygen -l -E md5`` and Nova show it."""
    try:
        blob = base64.b64decode(public_key.split()[1])
    except (IndexError, ValueError):
        raise InvalidKeypair(reason="the public key is not in OpenSSH format") from None
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, 32, 2))


def check_public_key(public_key: str) -> str:
    """The key, stripped, if it parses as an OpenSSH public key."""
    key = public_key.strip()
    try:
        serialization.load_ssh_public_key(key.encode())
    except (ValueError, TypeError, Exception):  # noqa: BLE001 - any parse failure is a 400
        raise InvalidKeypair(reason="failed to parse the public key") from None
    return key


def generate(key_type: str = "ssh") -> tuple[str, str]:
    """(private key PEM/OpenSSH, public key OpenSSH) for a new pair."""
    private: rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey
    if key_type == "x509":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    else:
        private = ed25519.Ed25519PrivateKey.generate()
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                    serialization.NoEncryption()).decode()
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                               serialization.PublicFormat.OpenSSH).decode()
    return pem, public


def create(conn: sa.Connection, settings: Any, user_id: str, project_id: str, name: str,
           public_key: str, key_type: str) -> dict[str, Any]:
    limit = quotas.limits(conn, settings, project_id)["key_pairs"]
    used = conn.execute(sa.select(sa.func.count()).select_from(key_pairs).where(
        key_pairs.c.user_id == user_id)).scalar_one()
    if limit >= 0 and used >= limit:
        raise QuotaExceeded("Quota exceeded, too many key pairs.", resource="key_pairs")
    if conn.execute(sa.select(key_pairs.c.id).where(key_pairs.c.user_id == user_id,
                                                    key_pairs.c.name == name)).first():
        raise KeyPairExists(key_name=name)
    row = {"name": name, "user_id": user_id, "public_key": public_key, "type": key_type,
           "fingerprint": fingerprint(public_key), "created_at": utcnow()}
    conn.execute(key_pairs.insert().values(**row))
    return get(conn, user_id, name)


# A create naming a key pair reads it: built once.
_KEY_PAIR = PreparedRead(sa.select(key_pairs).where(key_pairs.c.user_id == sa.bindparam("user_id"),
                                                    key_pairs.c.name == sa.bindparam("name")))


def get(conn: sa.Connection, user_id: str, name: str) -> dict[str, Any]:
    """The key pair ``name`` of ``user_id``; KeyPairMissing if there is none."""
    row = _KEY_PAIR.first(conn, user_id=user_id, name=name)
    if row is None:
        raise KeyPairMissing(name=name, user_id=user_id)
    return row


def list_for(conn: sa.Connection, user_id: str) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(key_pairs).where(key_pairs.c.user_id == user_id)
                     .order_by(key_pairs.c.name))


def delete(conn: sa.Connection, user_id: str, name: str) -> None:
    if not conn.execute(key_pairs.delete().where(key_pairs.c.user_id == user_id,
                                                 key_pairs.c.name == name)).rowcount:
        raise KeyPairMissing(name=name, user_id=user_id)
