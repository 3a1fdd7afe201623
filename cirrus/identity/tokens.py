"""Fernet tokens: authenticated, encrypted, self-contained, expiring.

The payload carries the scope and role names so validation needs no database
round trip but for the revocation generation (see :mod:`cirrus.identity.revocation`);
it also carries the generation its user, scope and roles were read at, which is
what decides whether a revocation event is newer than the token.
"""
from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from cirrus.identity.exception import Unauthorized


@dataclass
class TokenData:
    user_id: str
    expires_at: float
    issued_at: float
    audit_id: str
    methods: list[str]
    project_id: str | None = None
    domain_id: str | None = None  # set for domain-scoped tokens
    roles: list[str] = field(default_factory=list)
    # The revocation generation its user, scope and roles were read at: events
    # of a later generation may revoke it (tokens from before 0009: 0).
    generation: int = 0
    # The audit id of the token it was rescoped from (the chain's first).
    parent_audit_id: str | None = None
    # The application credential it was made from (its audit chain is named
    # after it: deleting the credential revokes the chain).
    app_cred_id: str | None = None
    # Scoped to the system (Keystone's ``{"system": {"all": true}}``).
    system: bool = False

    @property
    def audit_chain_id(self) -> str:
        """The audit id of the first token of its chain (Keystone's audit_ids[-1])."""
        return self.parent_audit_id or self.audit_id

    def to_payload(self) -> dict:
        payload = {"u": self.user_id, "e": self.expires_at, "i": self.issued_at,
                   "a": self.audit_id, "m": self.methods, "p": self.project_id,
                   "d": self.domain_id, "r": self.roles, "g": self.generation}
        if self.parent_audit_id:
            payload["pa"] = self.parent_audit_id
        if self.app_cred_id:
            payload["ac"] = self.app_cred_id
        if self.system:
            payload["s"] = True
        return payload

    @classmethod
    def from_payload(cls, d: dict) -> "TokenData":
        return cls(user_id=d["u"], expires_at=d["e"], issued_at=d["i"], audit_id=d["a"],
                   methods=d["m"], project_id=d.get("p"), domain_id=d.get("d"),
                   roles=list(d.get("r") or []), generation=d.get("g") or 0,
                   parent_audit_id=d.get("pa"), app_cred_id=d.get("ac"),
                   system=bool(d.get("s")))


def new_key() -> str:
    return Fernet.generate_key().decode()


def new_audit_id() -> str:
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


class TokenProvider:
    """Issues and opens tokens with the given keys (newest first)."""

    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ValueError("at least one token key is needed")
        self._fernet = MultiFernet([Fernet(k.encode()) for k in keys])

    def issue(self, data: TokenData) -> str:
        raw = self._fernet.encrypt(json.dumps(data.to_payload(), separators=(",", ":")).encode())
        return raw.decode()

    def open(self, token: str, now: float | None = None) -> TokenData:
        """The token's data; :class:`Unauthorized` if forged, malformed or expired."""
        try:
            data = TokenData.from_payload(json.loads(self._fernet.decrypt(token.encode())))
        except (InvalidToken, ValueError, KeyError, TypeError):
            raise Unauthorized("The request you have made requires authentication.") from None
        if data.expires_at <= (time.time() if now is None else now):
            raise Unauthorized("The token has expired.")
        return data
