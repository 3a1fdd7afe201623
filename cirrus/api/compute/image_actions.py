"""Server actions that touch images: ``rebuild``, ``createImage``,
``createBackup``, ``shelve``, ``shelveOffload``, ``unshelve``.

Each body is checked against Nova's schema for the request's microversion
(``schemas/servers.py`` rebuild…rebuild_v290, create_image,
``schemas/create_backup.py``, ``schemas/shelve.py``): unknown keys, keys of a
later microversion and wrong types are 400 naming the field. Their replies
depend on the microversion too, so these handlers get the request.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute import server_schema as ss
from cirrus.api.compute import views
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import bad, integer, metadata, text
from cirrus.api.wsgi import reply
from cirrus.compute import queries
from cirrus.compute.exception import MetadataLimitExceeded
from cirrus.compute.image_requests import RebuildRequest, UnshelveRequest
from cirrus.context import RequestContext

Version = tuple[int, int]
RequestHandler = Callable[[Request, RequestContext, str, Any], Awaitable[Response]]

REBUILD_KEYS = frozenset({"name", "imageRef", "adminPass", "metadata", "preserve_ephemeral",
                          "OS-DCF:diskConfig", "accessIPv4", "accessIPv6", "personality"})
REBUILD_ADDED: tuple[tuple[Version, str], ...] = (
    ((2, 19), "description"), ((2, 54), "key_name"), ((2, 57), "user_data"),
    ((2, 63), "trusted_image_certificates"), ((2, 90), "hostname"))
# The server keys of a rebuild's reply below 2.75 (Nova shows a short view
# there), and those later microversions add to it.
REBUILD_VIEW_KEYS = frozenset({
    "id", "name", "status", "tenant_id", "user_id", "metadata", "hostId", "image", "flavor",
    "created", "updated", "addresses", "accessIPv4", "accessIPv6", "links",
    "OS-DCF:diskConfig", "progress", "fault", "locked", "description", "tags",
    "locked_reason"})
IMAGE_METADATA_PROXY_MAX = (2, 38)  # Nova checks the image properties quota up to here
METADATA_ITEMS = 128


def rebuild_keys(version: Version) -> frozenset[str]:
    """The keys a ``rebuild`` body may hold at ``version``."""
    keys = set(REBUILD_KEYS) | {key for since, key in REBUILD_ADDED if version >= since}
    if version >= (2, 57):
        keys.discard("personality")
    return frozenset(keys)


def _object(arg: Any, action: str, allowed: frozenset[str], required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(arg, dict):
        raise bad(action, "must be an object")
    for key in arg:
        if key not in allowed:
            raise bad(f"{action}/{key}", "is not allowed (additional properties are not allowed)")
    for key in required:
        if key not in arg:
            raise bad(f"{action}/{key}", "is a required property")
    return arg


def parse_rebuild(arg: Any, version: Version) -> RebuildRequest:
    """A ``rebuild`` body → :class:`RebuildRequest`; 400 naming the field."""
    body = _object(arg, "rebuild", rebuild_keys(version), ("imageRef",))
    ss._check_unused_keys(body)
    password = body.get("adminPass")
    req = RebuildRequest(image_ref=ss._ref(body["imageRef"], "imageRef"),
                         admin_password=text(password, "adminPass") if password is not None
                         else ss.generate_password())
    changes = req.changes
    if "name" in body:
        changes["display_name"] = ss._name(body["name"])
    if "metadata" in body:
        changes["metadata"] = metadata(body["metadata"])
    if "description" in body:
        description = body["description"]
        changes["display_description"] = None if description is None else \
            text(description, "description", max_len=255)
    for key, column, ip_version in (("accessIPv4", "access_ip_v4", 4),
                                    ("accessIPv6", "access_ip_v6", 6)):
        if key in body:
            changes[column] = ss._ip(body[key], key, ip_version)
    if "user_data" in body:
        user_data = body["user_data"]
        changes["user_data"] = None if user_data is None else \
            text(user_data, "user_data", max_len=65535)
    if "hostname" in body:
        changes["hostname"] = ss._pattern(body["hostname"], "hostname", ss.HOSTNAME, 2, 63)
    if "key_name" in body:
        key_name = body["key_name"]
        req.key_name_given = True
        req.key_name = None if key_name is None else text(key_name, "key_name", min_len=1)
    if "personality" in body:
        req.injected_files = ss._personality(body["personality"])
    disk = ss._disk_config(body, "rebuild/OS-DCF:diskConfig")
    if disk is not None:
        changes["auto_disk_config"] = disk
    if "preserve_ephemeral" in body:
        req.preserve_ephemeral = ss._bool(body["preserve_ephemeral"], "preserve_ephemeral")
    req.trusted_image_certificates = body.get("trusted_image_certificates")
    return req


def _load_view(conn: sa.Connection, uuid: str) -> tuple[dict[str, Any], Any, list[str]]:
    row = queries.get_for_view(conn, uuid)
    return row, queries.latest_fault(conn, row), queries.server_groups_of(conn, uuid)


async def _rebuild(request: Request, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    version = api_version(request)
    req = parse_rebuild(arg, version)
    state = request.app.state
    await state.compute_api.rebuild(ctx, uuid, req)
    row, fault, groups = await state.db.read(_load_view, uuid)
    base = state.settings.public_url.rstrip("/")
    server = views.DetailView(base, version, is_admin=ctx.is_admin)(row, row["network_info"], fault)
    if version < (2, 75):  # Nova's short rebuild view: plain addresses, no extensions
        server = {k: v for k, v in server.items() if k in REBUILD_VIEW_KEYS}
        server["addresses"] = {net: [{"addr": a["addr"], "version": a["version"]} for a in addrs]
                               for net, addrs in server["addresses"].items()}
    if version >= (2, 54):
        server["key_name"] = row["key_name"]
    if version >= (2, 57):
        # Shown as its own key; Nova's rebuild view leaves out the extended
        # attribute an admin's GET carries.
        server.pop("OS-EXT-SRV-ATTR:user_data", None)
        server["user_data"] = row["user_data"]
    if version >= (2, 63):
        server["trusted_image_certificates"] = None  # cirrus keeps none (as at create)
    if version >= (2, 71):
        server["server_groups"] = groups
    if state.settings.enable_instance_password:
        server["adminPass"] = req.admin_password
    return views.reply_stored({"server": server}, status=202,
                              headers={"Location": f"{base}/compute/v2.1/servers/{uuid}"})


def _image_reply(image_id: str, version: Version, location: str) -> Response:
    """2.45+: the image's id in the body; before: a Location header."""
    if version >= (2, 45):
        return reply({"image_id": image_id}, status=202)
    return Response(status_code=202, headers={"Location": location})


def _image_metadata(body: dict[str, Any], action: str, version: Version) -> dict[str, str]:
    props = metadata(body.get("metadata", {}), f"{action}/metadata")
    if version <= IMAGE_METADATA_PROXY_MAX and len(props) > METADATA_ITEMS:
        raise MetadataLimitExceeded(allowed=METADATA_ITEMS)
    return props


async def _create_image(request: Request, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    version = api_version(request)
    body = _object(arg, "createImage", frozenset({"name", "metadata"}), ("name",))
    name = ss._name(body["name"])
    props = _image_metadata(body, "createImage", version)
    image_id = await request.app.state.compute_api.snapshot(ctx, uuid, name, props)
    base = request.app.state.settings.public_url.rstrip("/")
    return _image_reply(image_id, version, f"{base}/image/v2/images/{image_id}")


async def _create_backup(request: Request, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    version = api_version(request)
    body = _object(arg, "createBackup", frozenset({"name", "backup_type", "rotation", "metadata"}),
                   ("name", "backup_type", "rotation"))
    name = ss._name(body["name"])
    backup_type = text(body["backup_type"], "createBackup/backup_type")
    rotation = integer(body["rotation"], "createBackup/rotation", minimum=0)
    props = _image_metadata(body, "createBackup", version)
    image_id = await request.app.state.compute_api.backup(ctx, uuid, name, backup_type,
                                                          rotation, props)
    base = request.app.state.settings.public_url.rstrip("/")
    return _image_reply(image_id, version, f"{base}/compute/v2.1/images/{image_id}")


async def _shelve(request: Request, ctx: RequestContext, uuid: str, _arg: Any) -> Response:
    await request.app.state.compute_api.shelve(ctx, uuid)
    return Response(status_code=202)


async def _shelve_offload(request: Request, ctx: RequestContext, uuid: str, _arg: Any) -> Response:
    await request.app.state.compute_api.shelve_offload(ctx, uuid)
    return Response(status_code=202)


def parse_unshelve(arg: Any, version: Version) -> UnshelveRequest:
    """Where an unshelve asks to go: before 2.77 any value, ignored; 2.77 null
    or exactly an ``availability_zone``; from 2.91 null or an object with
    ``availability_zone`` (null: unpinned) and/or ``host`` (Nova's
    ``unshelve_v291``)."""
    if version < (2, 77) or arg is None:
        return UnshelveRequest()
    if version < (2, 91):
        body = _object(arg, "unshelve", frozenset({"availability_zone"}), ("availability_zone",))
        return UnshelveRequest(zone_given=True, zone=ss._name(body["availability_zone"]))
    body = _object(arg, "unshelve", frozenset({"availability_zone", "host"}), ())
    if not body:
        raise bad("unshelve", "must be null or name an availability_zone or a host")
    zone = body.get("availability_zone")
    return UnshelveRequest(
        zone_given="availability_zone" in body,
        zone=None if zone is None else text(zone, "unshelve/availability_zone", max_len=255),
        host=text(body["host"], "unshelve/host", min_len=1) if "host" in body else None)


async def _unshelve(request: Request, ctx: RequestContext, uuid: str, arg: Any) -> Response:
    await request.app.state.compute_api.unshelve(ctx, uuid,
                                                 parse_unshelve(arg, api_version(request)))
    return Response(status_code=202)


IMAGE_ACTIONS: dict[str, RequestHandler] = {
    "rebuild": _rebuild,
    "createImage": _create_image,
    "createBackup": _create_backup,
    "shelve": _shelve,
    "shelveOffload": _shelve_offload,
    "unshelve": _unshelve,
}
