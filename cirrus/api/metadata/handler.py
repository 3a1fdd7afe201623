"""The metadata API's routes (Nova's ``MetadataRequestHandler``): every GET
path through :func:`~cirrus.api.metadata.lookup.lookup`, and the guest's one
password POST (Nova's ``api/metadata/password.py``)."""
from __future__ import annotations

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.metadata import exception as mexc
from cirrus.api.metadata.instance import InstanceMetadata
from cirrus.api.metadata.lookup import known_openstack_version, lookup
from cirrus.api.metadata.service import MetadataService
from cirrus.api.wsgi import context
from cirrus.compute import instance as inst
from cirrus.compute import password


def _service(request: Request) -> MetadataService:
    service: MetadataService = request.app.state.metadata
    return service


async def _instance(request: Request) -> InstanceMetadata:
    """The signed-for instance; 404 when it is gone or not the signed
    project's (the proxy's tenant must own it)."""
    ctx = context(request)
    assert ctx.instance_id is not None  # the route rule lets only signed requests in
    md = await _service(request).cache.get(ctx.instance_id)
    if md is None or md.instance.get("project_id") != ctx.project_id:
        raise mexc.MetadataInstanceNotFound(instance_id=ctx.instance_id)
    return md


async def show(request: Request) -> Response:
    md = await _instance(request)
    found = lookup(md, request.path_params["path"])
    return Response(found.body, media_type=found.content_type)


def save_once(conn: sa.Connection, uuid: str, value: str) -> None:
    """Store the guest's password unless one is stored (409 then)."""
    if password.extract_password(inst.get(conn, uuid)["system_metadata"]):
        raise mexc.PasswordAlreadySet()
    password.save_password(conn, uuid, value)


async def set_password(request: Request) -> Response:
    """The guest posts its encrypted password once; the API clears it."""
    md = await _instance(request)
    if not known_openstack_version(request.path_params["version"]):
        raise mexc.MetadataNotFound(path=request.url.path)
    body = await request.body()
    if len(body) > password.MAX_SIZE:
        raise mexc.PasswordInvalid(reason=f"longer than {password.MAX_SIZE} bytes")
    try:
        value = body.decode()
    except UnicodeDecodeError:
        raise mexc.PasswordInvalid(reason="not UTF-8 text") from None
    service = _service(request)
    uuid = md.instance["uuid"]
    try:
        await service.db.run(save_once, uuid, value)
    finally:
        service.cache.invalidate(uuid)
    return Response(b"", media_type="text/plain")


ROUTES = [
    Route("/openstack/{version}/password", set_password, methods=["POST"]),
    Route("/{path:path}", show, methods=["GET"]),
]
