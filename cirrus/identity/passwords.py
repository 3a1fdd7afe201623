"""Salted, deliberately slow password hashes (scrypt from the standard library)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os

# log2 of scrypt's cost N (Keystone's password_hash_rounds): 2**14 is the
# interactive-login figure of the scrypt paper, tens of ms of CPU per hash.
DEFAULT_ROUNDS = 14
R, P = 8, 1


def hash_password(password: str, rounds: int = DEFAULT_ROUNDS) -> str:
    """``scrypt$N$r$p$salt$hash`` with N = 2**rounds and a fresh 16-byte salt.
    :func:`verify_password` reads N from the string, so hashes of any cost verify."""
    n = 2 ** rounds
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=R, p=P, dklen=32)
    return "$".join(["scrypt", str(n), str(R), str(P),
                     base64.b64encode(salt).decode(), base64.b64encode(digest).decode()])


def verify_password(password: str, stored: str | None) -> bool:
    """Constant-time check of ``password`` against a :func:`hash_password` string."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    candidate = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt),
                               n=int(n), r=int(r), p=int(p), dklen=32)
    return hmac.compare_digest(candidate, base64.b64decode(digest))
