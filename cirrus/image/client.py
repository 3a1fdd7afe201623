"""The image service as a compute host reaches it: Glance's v2 HTTP API,
authenticated with the host's service credentials (Nova's ``image/glance.py``).

A compute host needs nothing of the API host but the identity URL and the
credentials (``glance_*`` settings): the image endpoint comes from the token's
catalog unless ``glance_endpoint_override`` names it. The token is kept and
fetched again when the service answers 401. Errors are mapped here, at the
boundary, into compute's (Nova's ``_translate_image_exception``): 404 is
ImageNotFound, an image without data ImageUnacceptable, anything else that is
not an answer the caller can use GlanceConnectionFailed.
"""
from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, AsyncIterator, cast

from cirrus import log
from cirrus.compute import exception as exc
from cirrus.compute.image_service import ImageMeta
from cirrus.config import Settings

if TYPE_CHECKING:
    import httpx

PATCH_TYPE = "application/openstack-images-v2.1-json-patch"
TIMEOUT = 60.0
# Glance's base attributes; the rest of an image's JSON are its properties.
BASE_ATTRIBUTES = frozenset((
    "id", "name", "status", "visibility", "protected", "checksum", "os_hash_algo",
    "os_hash_value", "size", "virtual_size", "min_disk", "min_ram", "disk_format",
    "container_format", "owner", "created_at", "updated_at", "tags", "os_hidden", "self",
    "file", "schema", "direct_url", "locations", "stores"))


@dataclass(frozen=True)
class ServiceCredentials:
    """Where and as whom a compute host authenticates (Nova's ``[glance]``
    keystoneauth options)."""

    auth_url: str
    username: str
    password: str
    project_name: str
    region: str
    endpoint_override: str = ""
    user_domain_name: str = "Default"
    project_domain_name: str = "Default"

    @classmethod
    def from_settings(cls, settings: Settings) -> "ServiceCredentials":
        """Defaults: the cloud's own identity URL and its admin account."""
        return cls(auth_url=settings.glance_auth_url or settings.public_url.rstrip("/") + "/identity",
                   username=settings.glance_username,
                   password=settings.glance_password or settings.admin_password,
                   project_name=settings.glance_project_name, region=settings.region,
                   endpoint_override=settings.glance_endpoint_override)

    def auth_body(self) -> dict[str, Any]:
        user = {"name": self.username, "password": self.password,
                "domain": {"name": self.user_domain_name}}
        return {"auth": {"identity": {"methods": ["password"], "password": {"user": user}},
                         "scope": {"project": {"name": self.project_name,
                                               "domain": {"name": self.project_domain_name}}}}}

    def tokens_url(self) -> str:
        url = self.auth_url.rstrip("/")
        return url + ("/auth/tokens" if url.endswith("/v3") else "/v3/auth/tokens")


def _httpx() -> ModuleType:
    """httpx, imported on first use: it costs a process 7 MB and 120 modules,
    and a compute host of the fake driver never downloads (nor does a process
    running no compute at all)."""
    import httpx
    return httpx


def image_endpoint(catalog: list[dict[str, Any]], region: str) -> str:
    """The public image endpoint of ``region`` in a token's catalog."""
    for service in catalog:
        if service.get("type") != "image":
            continue
        for ep in service.get("endpoints") or []:
            if ep.get("interface") == "public" and ep.get("region") in (region, None):
                return str(ep["url"]).rstrip("/")
    raise exc.GlanceConnectionFailed(server=region, reason="the catalog has no image endpoint")


def from_glance(body: dict[str, Any]) -> ImageMeta:
    """Glance's flat image JSON as compute's record (properties apart)."""
    meta: dict[str, Any] = {k: v for k, v in body.items() if k in BASE_ATTRIBUTES}
    meta["properties"] = {k: v for k, v in body.items() if k not in BASE_ATTRIBUTES}
    return cast(ImageMeta, meta)


class ImageClient:
    """Image records and data over HTTP; implements ``cirrus.compute.image_service.ImageService``."""

    def __init__(self, credentials: ServiceCredentials,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.credentials = credentials
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._token: str | None = None
        self._endpoint: str | None = None
        self._auth_lock = asyncio.Lock()

    @property
    def _http(self) -> httpx.AsyncClient:
        # Made on first use: a host of the fake driver never needs one.
        if self._client is None:
            self._client = _httpx().AsyncClient(transport=self._transport, timeout=TIMEOUT)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def show(self, image_id: str) -> ImageMeta:
        reply = await self._send("GET", f"/v2/images/{image_id}", image_id)
        return from_glance(reply.json())

    @contextlib.asynccontextmanager
    async def download(self, image_id: str) -> AsyncIterator[AsyncIterator[bytes]]:
        reply = await self._send("GET", f"/v2/images/{image_id}/file", image_id, stream=True)
        try:
            if reply.status_code == 204:
                raise exc.ImageUnacceptable(image_id=image_id, reason="the image has no data")
            yield _chunks(reply)
        finally:
            await reply.aclose()

    async def upload(self, image_id: str, chunks: AsyncIterator[bytes], disk_format: str,
                     container_format: str) -> None:
        changes = [{"op": "replace", "path": "/disk_format", "value": disk_format},
                   {"op": "replace", "path": "/container_format", "value": container_format}]
        await self._send("PATCH", f"/v2/images/{image_id}", image_id, json=changes,
                         headers={"Content-Type": PATCH_TYPE})
        # The data is streamed once: a 401 here cannot be retried with it.
        await self._send("PUT", f"/v2/images/{image_id}/file", image_id, content=chunks,
                         headers={"Content-Type": "application/octet-stream"}, retry=False)

    # -- transport ---------------------------------------------------------------------
    async def _send(self, method: str, path: str, image_id: str, *,
                    headers: dict[str, str] | None = None, stream: bool = False,
                    retry: bool = True, **kwargs: Any) -> httpx.Response:
        """The reply to ``method path`` (2xx only), authenticated; a 401 is
        answered by a new token and one more try (when ``retry``)."""
        for attempt in (1, 2):
            token, endpoint = await self._auth(renew=attempt == 2)
            request = self._http.build_request(
                method, endpoint + path, headers={**(headers or {}), "X-Auth-Token": token,
                                                  **_request_id_header()},
                **kwargs)
            try:
                reply = await self._http.send(request, stream=stream)
            except _httpx().HTTPError as e:
                raise exc.GlanceConnectionFailed(server=endpoint,
                                                 reason=f"{method} {path}: {e!r}") from e
            if reply.status_code == 401 and attempt == 1 and retry:
                await reply.aclose()
                continue
            return await _checked(reply, f"{method} {endpoint}{path}")
        raise AssertionError("unreachable")  # pragma: no cover

    async def _auth(self, renew: bool) -> tuple[str, str]:
        """The token and image endpoint, fetched once (again when ``renew``)."""
        async with self._auth_lock:
            if renew or self._token is None or self._endpoint is None:
                self._token, self._endpoint = await self._authenticate()
            return self._token, self._endpoint

    async def _authenticate(self) -> tuple[str, str]:
        creds = self.credentials
        try:
            reply = await self._http.post(creds.tokens_url(), json=creds.auth_body())
        except _httpx().HTTPError as e:
            raise exc.GlanceConnectionFailed(server=creds.auth_url, reason=repr(e)) from e
        if reply.status_code != 201:
            raise exc.GlanceConnectionFailed(
                server=creds.auth_url, reason=f"identity refused the service credentials of "
                                              f"{creds.username}: {reply.status_code}")
        endpoint = creds.endpoint_override.rstrip("/") or image_endpoint(
            reply.json()["token"].get("catalog") or [], creds.region)
        return reply.headers["X-Subject-Token"], endpoint


def _request_id_header() -> dict[str, str]:
    """The request's global id for the image service's logs (as keystoneauth
    sends a context's ``global_request_id``); none outside a request."""
    global_id = log.global_id()
    return {"X-OpenStack-Request-ID": global_id} if global_id else {}


async def _checked(reply: httpx.Response, what: str) -> httpx.Response:
    """``reply`` if it is a success; else closed, and its error raised."""
    if reply.is_success:
        return reply
    body = (await reply.aread())[:200].decode(errors="replace")
    await reply.aclose()
    if reply.status_code == 404:
        raise exc.ImageNotFound()
    raise exc.GlanceConnectionFailed(server=reply.url.host,
                                     reason=f"{what}: {reply.status_code} {body}")


async def _chunks(reply: httpx.Response) -> AsyncIterator[bytes]:
    """The body as it arrives; a broken stream is GlanceConnectionFailed."""
    try:
        async for chunk in reply.aiter_bytes():
            yield chunk
    except _httpx().HTTPError as e:
        raise exc.GlanceConnectionFailed(server=reply.url.host,
                                         reason=f"the download broke off: {e!r}") from e
