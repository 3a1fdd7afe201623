"""The identity service: authenticate, issue, validate and revoke tokens.

Lives in the API process (identity is part of the one HTTP endpoint). Token
validation is a decrypt plus a revocation check, no database round trip.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.identity import store
from cirrus.identity.exception import Unauthorized
from cirrus.identity.passwords import verify_password
from cirrus.identity.tokens import TokenData, TokenProvider, new_audit_id, new_key

# How long a process trusts its copy of the revocation list (multi-process APIs).
REVOCATION_TTL = 2.0
# Opening a token (HMAC, AES, JSON) is most of what authenticating a request
# costs (~0.1 ms). What a token string opens to never changes, so opened tokens
# are kept this long (and at most this many); whether one still holds — expiry,
# revocation — is checked on every use all the same.
OPENED_TTL = 30.0
OPENED_MAX = 4096


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


class IdentityService:
    """Tokens and the service catalog for one cloud."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.provider: TokenProvider | None = None
        self._revoked: set[str] = set()
        self._revoked_at = 0.0
        self._revoked_here: set[str] = set()  # by this process, since the last reload began
        self._reloading: asyncio.Future[None] | None = None
        self._opened: dict[str, tuple[TokenData, float]] = {}  # token → (data, kept until)

    async def start(self) -> None:
        keys = await self.db.run(store.load_token_keys, True, new_key())
        self.provider = TokenProvider(keys)

    # -- tokens ---------------------------------------------------------------
    async def authenticate(self, auth: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Check credentials in a Keystone ``auth`` body; return (token, body)."""
        from cirrus.identity.auth import resolve_auth  # keystone body parsing

        data = await resolve_auth(self, auth)
        assert self.provider is not None
        token = self.provider.issue(data)
        return token, await self.token_body(data)

    async def check_password(self, user: dict[str, Any], password: str) -> None:
        ok = await asyncio.get_running_loop().run_in_executor(
            None, verify_password, password, user.get("password_hash"))
        if not ok or not user.get("enabled", True):
            raise Unauthorized("The request you have made requires authentication.")

    def new_token_data(self, user_id: str, methods: list[str], *, project_id: str | None,
                       domain_id: str | None, roles: list[str],
                       expires_at: float | None = None, audit_id: str | None = None) -> TokenData:
        now = time.time()
        return TokenData(user_id=user_id, issued_at=now,
                         expires_at=expires_at or now + self.settings.token_expiration,
                         audit_id=audit_id or new_audit_id(), methods=methods,
                         project_id=project_id, domain_id=domain_id, roles=roles)

    async def _refresh_revocations(self) -> None:
        if time.monotonic() - self._revoked_at <= REVOCATION_TTL:
            return
        # One reload for all the requests that find the copy stale at once
        # (each would otherwise queue its own write: the reload purges).
        if self._reloading is None:
            self._reloading = asyncio.ensure_future(self._reload_revocations())
        await asyncio.shield(self._reloading)

    async def _reload_revocations(self) -> None:
        try:
            self._revoked_here = set()
            revoked = await self.db.run(store.revoked_audit_ids)
            # A revocation of this process committed while the list was read
            # may be missing from it: keep it.
            self._revoked = revoked | self._revoked_here
            self._revoked_at = time.monotonic()
        finally:
            self._reloading = None

    def _open(self, token: str) -> TokenData:
        """The token's data; :class:`Unauthorized` if forged, malformed or expired."""
        assert self.provider is not None
        now = time.monotonic()
        kept = self._opened.get(token)
        if kept is not None and kept[1] > now:
            data = kept[0]
            if data.expires_at <= time.time():
                raise Unauthorized("The token has expired.")
            return data
        data = self.provider.open(token)
        if len(self._opened) >= OPENED_MAX:
            self._opened = {t: k for t, k in self._opened.items() if k[1] > now}
            if len(self._opened) >= OPENED_MAX:
                self._opened.clear()
        self._opened[token] = (data, now + OPENED_TTL)
        return data

    async def validate(self, token: str) -> TokenData:
        """Open ``token``; :class:`Unauthorized` if bad, expired or revoked."""
        data = self._open(token)
        await self._refresh_revocations()
        if data.audit_id in self._revoked:
            raise Unauthorized("The token has been revoked.")
        return data

    async def revoke(self, token: str) -> None:
        data = await self.validate(token)
        expires = dt.datetime.fromtimestamp(data.expires_at, dt.timezone.utc).replace(tzinfo=None)
        await self.db.run(store.revoke, data.audit_id, expires)
        self._revoked.add(data.audit_id)
        self._revoked_here.add(data.audit_id)

    def context_for(self, data: TokenData, token: str) -> RequestContext:
        return RequestContext(user_id=data.user_id, project_id=data.project_id,
                              domain_id=data.domain_id, roles=list(data.roles),
                              auth_token=token)

    # -- bodies ---------------------------------------------------------------
    async def token_body(self, data: TokenData) -> dict[str, Any]:
        """The Keystone v3 ``{"token": …}`` body for ``data``."""
        return await self.db.read(self._token_body, data)

    def _token_body(self, conn: Any, data: TokenData) -> dict[str, Any]:
        user = store.get_user(conn, id=data.user_id)
        if user is None:
            raise Unauthorized("The user of this token no longer exists.")
        udom = store.get_domain(conn, id=user["domain_id"]) or {"id": user["domain_id"], "name": ""}
        body: dict[str, Any] = {
            "methods": data.methods,
            "user": {"id": user["id"], "name": user["name"], "password_expires_at": None,
                     "domain": {"id": udom["id"], "name": udom["name"]}},
            "audit_ids": [data.audit_id],
            "expires_at": _iso(data.expires_at),
            "issued_at": _iso(data.issued_at),
        }
        if data.project_id:
            project = store.get_project(conn, id=data.project_id) or {}
            pdom = store.get_domain(conn, id=project.get("domain_id")) or {}
            body["project"] = {"id": data.project_id, "name": project.get("name"),
                               "domain": {"id": pdom.get("id"), "name": pdom.get("name")}}
            roles = store.role_names_for(conn, data.user_id, project_id=data.project_id)
        elif data.domain_id:
            dom = store.get_domain(conn, id=data.domain_id) or {}
            body["domain"] = {"id": data.domain_id, "name": dom.get("name")}
            roles = store.role_names_for(conn, data.user_id, domain_id=data.domain_id)
        else:
            roles = []
        if data.project_id or data.domain_id:
            body["roles"] = [{"id": r["id"], "name": r["name"]} for r in roles]
            body["catalog"] = self.catalog()
            body["is_domain"] = False
        return {"token": body}

    def catalog(self) -> list[dict[str, Any]]:
        """The service catalog: identity, compute, network and image."""
        base = self.settings.public_url.rstrip("/")
        region = self.settings.region
        services = (("identity", "keystone", "/identity"),
                    ("compute", "nova", "/compute/v2.1"),
                    ("network", "neutron", "/network"),
                    ("image", "glance", "/image"))
        catalog = []
        for idx, (kind, name, path) in enumerate(services):
            endpoints = [{"id": f"{idx:02d}{n:02d}" + "0" * 28, "interface": iface,
                          "region": region, "region_id": region, "url": base + path}
                         for n, iface in enumerate(("public", "internal", "admin"))]
            catalog.append({"id": f"{idx:032d}", "type": kind, "name": name,
                            "endpoints": endpoints})
        return catalog
