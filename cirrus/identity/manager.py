"""The identity service: authenticate, issue, validate and revoke tokens.

Lives in the API process (identity is part of the one HTTP endpoint). Token
validation is a decrypt (kept per token string) plus a revocation check: one
read of the revocation generation, and the events only when it moved
(:mod:`cirrus.identity.revocation`, :mod:`cirrus.identity.generation`).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

from cryptography.fernet import MultiFernet

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.exception import CirrusException
from cirrus.identity import app_credentials, catalog, credentials, revocation, store
from cirrus.identity.exception import TokenNotFound, Unauthorized
from cirrus.identity.generation import GenerationReader
from cirrus.identity.passwords import verify_password
from cirrus.identity.revocation import RevocationList, RevokeEvent
from cirrus.identity.tokens import TokenData, TokenProvider, new_audit_id, new_key

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
        self.blob_cipher: MultiFernet | None = None  # credentials' blobs
        self.revocations = RevocationList()
        self._generation = GenerationReader(db)
        self._loading: asyncio.Future[None] | None = None
        self._opened: dict[str, tuple[TokenData, float]] = {}  # token → (data, kept until)

    def catalog_generation(self) -> int | None:
        """The catalog's generation as this process's latest token check read
        it (``cirrus/compute/catalog_cache.py``); None before the first."""
        return self._generation.catalog

    async def start(self) -> None:
        keys = await self.db.run(store.load_token_keys, True, new_key())
        self.provider = TokenProvider(keys)
        self.blob_cipher = credentials.blob_cipher(keys)

    # -- tokens ---------------------------------------------------------------
    async def authenticate(self, auth: Any) -> tuple[str, dict[str, Any]]:
        """Check credentials in a Keystone ``auth`` body; return (token, body)."""
        from cirrus.identity.auth import resolve_auth  # keystone body parsing

        data = await resolve_auth(self, auth)
        assert self.provider is not None
        token = self.provider.issue(data)
        return token, await self.token_body(data)

    async def check_password(self, user: dict[str, Any], password: str) -> None:
        await self.check_secret(user.get("password_hash"), password)
        if not user.get("enabled", True):
            raise Unauthorized("The request you have made requires authentication.")

    async def check_secret(self, stored_hash: str | None, secret: str) -> None:
        """401 unless ``secret`` matches the hash (scrypt, off the event loop)."""
        ok = await asyncio.get_running_loop().run_in_executor(
            None, verify_password, secret, stored_hash)
        if not ok:
            raise Unauthorized("The request you have made requires authentication.")

    def new_token_data(self, user_id: str, methods: list[str], *, project_id: str | None,
                       domain_id: str | None, roles: list[str], generation: int,
                       expires_at: float | None = None,
                       parent_audit_id: str | None = None,
                       app_cred_id: str | None = None, system: bool = False) -> TokenData:
        now = time.time()
        return TokenData(user_id=user_id, issued_at=now,
                         expires_at=expires_at or now + self.settings.token_expiration,
                         audit_id=new_audit_id(), methods=methods,
                         project_id=project_id, domain_id=domain_id, roles=roles,
                         generation=generation, parent_audit_id=parent_audit_id,
                         app_cred_id=app_cred_id, system=system)

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
        """Open ``token``; :class:`Unauthorized` if bad, expired or revoked
        (by a revocation committed before this call, through any process)."""
        data = self._open(token)
        generation = await self._generation.current()
        if generation > self.revocations.generation:
            await self._catch_up(generation)
        if self.revocations.revokes(data):
            raise Unauthorized("The token has been revoked.")
        return data

    async def validate_subject(self, token: str | None) -> TokenData:
        """``X-Subject-Token`` of ``GET/HEAD/DELETE /v3/auth/tokens``: as
        :meth:`validate`, but a missing, bad, expired or revoked one is Keystone's
        404 :class:`TokenNotFound` (401 is for the caller's own token)."""
        if not token:
            raise TokenNotFound("No token in the request.")
        try:
            return await self.validate(token)
        except CirrusException as exc:
            if exc.code != 401:
                raise
            raise TokenNotFound("Failed to validate token.") from None

    async def _catch_up(self, generation: int) -> None:
        """Load events until the copy holds ``generation``: one load at a time,
        shared by the requests that found the copy behind."""
        while self.revocations.generation < generation:
            if self._loading is None:
                self._loading = asyncio.ensure_future(self._load_events())
            await asyncio.shield(self._loading)

    async def _load_events(self) -> None:
        try:
            known = self.revocations.generation
            current, events = await self.db.read(revocation.events_since, known)
            for event, generation, issued_before in events:
                self.revocations.add(event, generation, issued_before)
            self.revocations.generation = max(current, known)
            self.revocations.prune(utcnow() - dt.timedelta(seconds=self.settings.token_expiration))
        finally:
            self._loading = None

    async def revoke(self, data: TokenData, cascade: bool = True) -> None:
        """Revoke the token ``data`` came from and, with ``cascade`` (Keystone's
        default), the tokens rescoped from it."""
        events = [RevokeEvent(audit_id=data.audit_id)]
        if cascade:
            events.append(RevokeEvent(audit_chain_id=data.audit_id))
        await self.db.run(revocation.record, events, self.settings.token_expiration)

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
        if user is None:  # deleted since the validation: that revoked it
            raise TokenNotFound("Failed to validate token.")
        udom = store.get_domain(conn, id=user["domain_id"]) or {"id": user["domain_id"], "name": ""}
        body: dict[str, Any] = {
            "methods": data.methods,
            "user": {"id": user["id"], "name": user["name"], "password_expires_at": None,
                     "domain": {"id": udom["id"], "name": udom["name"]}},
            "audit_ids": [data.audit_id] + ([data.parent_audit_id] if data.parent_audit_id
                                            else []),
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
        elif data.system:
            body["system"] = {"all": True}
            roles = store.role_names_for(conn, data.user_id, system="all")
        else:
            roles = []
        if data.project_id or data.domain_id or data.system:
            body["roles"] = [{"id": r["id"], "name": r["name"]} for r in roles]
            body["catalog"] = self.catalog(data.project_id) + catalog.entries(conn)
            if not data.system:
                body["is_domain"] = False
        if data.app_cred_id:
            body["application_credential"] = self._app_cred_ref(conn, data)
            body["roles"] = [r for r in body["roles"] if r["name"] in data.roles]
        return {"token": body}

    @staticmethod
    def _app_cred_ref(conn: Any, data: TokenData) -> dict[str, Any]:
        assert data.app_cred_id is not None
        row = app_credentials.get(conn, None, data.app_cred_id)
        return {"id": row["id"], "name": row["name"], "restricted": not row["unrestricted"]}

    def catalog(self, project_id: str | None = None) -> list[dict[str, Any]]:
        """The service catalog: identity, compute, network, image and block
        storage (``block-storage`` and, for older clients, ``volumev3``; Cinder's
        endpoint names the project: ``project_id`` in a token's catalog, the
        ``$(project_id)s`` template in the endpoint list, as Keystone)."""
        base = self.settings.public_url.rstrip("/")
        region = self.settings.region
        services = (("identity", "keystone", "/identity"),
                    ("compute", "nova", "/compute/v2.1"),
                    ("network", "neutron", "/network"),
                    ("image", "glance", "/image"),
                    ("block-storage", "cinder", "/volume/v3/$(project_id)s"),
                    ("volumev3", "cinderv3", "/volume/v3/$(project_id)s"))
        catalog = []
        for idx, (kind, name, path) in enumerate(services):
            endpoints = [{"id": f"{idx:02d}{n:02d}" + "0" * 28, "interface": iface,
                          "region": region, "region_id": region,
                          "url": base + (path.replace("$(project_id)s", project_id)
                                         if project_id else path)}
                         for n, iface in enumerate(("public", "internal", "admin"))]
            catalog.append({"id": f"{idx:032d}", "type": kind, "name": name,
                            "endpoints": endpoints})
        return catalog
