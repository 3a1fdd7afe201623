"""``POST /v3/{project_id}/volumes/{volume_id}/action``: one action per body
(Cinder's ``volume_actions`` and ``admin_actions``), a closed table from the
body's key to its handler, the least microversion and whether only admins
may call it. An unknown key is a 400 naming it."""
from __future__ import annotations

from typing import Any, Awaitable, Callable, NamedTuple

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, boolean, text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.context import RequestContext
from cirrus.exception import Forbidden
from cirrus.volume.api import schemas
from cirrus.volume.api.common import bs
from cirrus.volume.api.microversion import api_version
from cirrus.volume.manager import BlockStorage
from cirrus.volume.states import VolumeStatus as V

Handler = Callable[[BlockStorage, RequestContext, str, Any, tuple[int, int]],
                   Awaitable[dict[str, Any] | None]]


class Action(NamedTuple):
    handler: Handler
    admin: bool = False
    status: int = 202


def _obj(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(name, "must be an object")
    return value


async def _extend(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                  version: tuple[int, int]) -> None:
    body = _obj(arg, "os-extend")
    if "new_size" not in body:
        raise bad("new_size", "'new_size' is a required property")
    await b.volumes.extend(ctx, vid, schemas.size(body["new_size"], "new_size"),
                           in_use_allowed=version >= (3, 42))


async def _set_bootable(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                        version: tuple[int, int]) -> None:
    body = _obj(arg, "os-set_bootable")
    if "bootable" not in body:
        raise bad("bootable", "'bootable' is a required property")
    await b.volumes.set_flag(ctx, vid, "set_bootable",
                             {"bootable": boolean(body["bootable"], "bootable")})


async def _readonly(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                    version: tuple[int, int]) -> None:
    body = _obj(arg, "os-update_readonly_flag")
    if "readonly" not in body:
        raise bad("readonly", "'readonly' is a required property")
    await b.volumes.set_flag(ctx, vid, "readonly",
                             {"readonly": boolean(body["readonly"], "readonly")})


async def _retype(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                  version: tuple[int, int]) -> None:
    body = _obj(arg, "os-retype")
    if "new_type" not in body:
        raise bad("new_type", "'new_type' is a required property")
    policy = body.get("migration_policy", "never")
    if policy not in ("never", "on-demand", None):
        raise bad("migration_policy", f"{str(policy)[:20]!r} is not one of ['never', 'on-demand']")
    await b.volumes.retype(ctx, vid, text(body["new_type"], "new_type", min_len=1))


async def _reset_status(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                        version: tuple[int, int]) -> None:
    body = _obj(arg, "os-reset_status")
    values: dict[str, Any] = {}
    if "status" in body:
        values["status"] = schemas.status(body["status"])
    if "attach_status" in body:
        values["attach_status"] = schemas.status(body["attach_status"], "attach_status",
                                                 ("attached", "detached"))
    if "migration_status" in body:
        schemas.status(body["migration_status"], "migration_status",
                       ("migrating", "error", "success", "completing", "none", "starting"))
    if not values and "migration_status" not in body:
        raise bad("os-reset_status", "Must specify 'status', 'attach_status' or "
                                     "'migration_status' for update.")
    await b.volumes.reset_status(ctx, vid, values)


async def _force_delete(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                        version: tuple[int, int]) -> None:
    await b.volumes.delete(ctx, vid, force=True)


async def _reserve(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                   version: tuple[int, int]) -> None:
    await b.attachments.reserve(ctx, vid)


def _move(action: str, to: V) -> Handler:
    async def handler(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                      version: tuple[int, int]) -> None:
        await b.attachments.move(ctx, vid, action, to)
    return handler


async def _attach(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                  version: tuple[int, int]) -> None:
    body = _obj(arg, "os-attach")
    if "mountpoint" not in body:
        raise bad("mountpoint", "'mountpoint' is a required property")
    instance = body.get("instance_uuid")
    host = body.get("host_name")
    if instance is None and host is None:
        raise bad("os-attach", "Invalid request to attach volume to an invalid target")
    await b.attachments.attach(
        ctx, vid, None if instance is None else schemas.uuid_text(instance, "instance_uuid"),
        None if host is None else text(host, "host_name", max_len=255),
        text(body["mountpoint"], "mountpoint", max_len=255),
        schemas.mode(body.get("mode", "rw")))


async def _detach(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                  version: tuple[int, int]) -> None:
    body = _obj(arg, "os-detach")
    att = body.get("attachment_id")
    await b.attachments.detach(ctx, vid, None if att is None else text(att, "attachment_id",
                                                                        max_len=64))


async def _initialize(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                      version: tuple[int, int]) -> dict[str, Any]:
    body = _obj(arg, "os-initialize_connection")
    if "connector" not in body:
        raise bad("connector", "'connector' is a required property")
    info = await b.attachments.initialize_connection(ctx, vid, schemas.connector(body["connector"]))
    return {"connection_info": info}


async def _terminate(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                     version: tuple[int, int]) -> None:
    body = _obj(arg, "os-terminate_connection")
    if "connector" not in body:
        raise bad("connector", "'connector' is a required property")
    await b.attachments.terminate_connection(ctx, vid, schemas.connector(body["connector"]))


async def _force_detach(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                        version: tuple[int, int]) -> None:
    body = _obj(arg, "os-force_detach")
    att = body.get("attachment_id")
    await b.attachments.detach(ctx, vid, None if att is None else text(att, "attachment_id",
                                                                        max_len=64), force=True)


async def _set_image_metadata(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                              version: tuple[int, int]) -> dict[str, Any]:
    body = _obj(arg, "os-set_image_metadata")
    meta = schemas.metadata_body(body)
    return {"metadata": await b.volumes.set_image_metadata(ctx, vid, meta, None)}


async def _unset_image_metadata(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                                version: tuple[int, int]) -> None:
    body = _obj(arg, "os-unset_image_metadata")
    if "key" not in body:
        raise bad("key", "'key' is a required property")
    await b.volumes.set_image_metadata(ctx, vid, {}, text(body["key"], "key", max_len=255))


async def _show_image_metadata(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                               version: tuple[int, int]) -> dict[str, Any]:
    row = await b.volumes.get(ctx, vid)
    return {"metadata": row["image_metadata"] or {}}


async def _upload_to_image(b: BlockStorage, ctx: RequestContext, vid: str, arg: Any,
                           version: tuple[int, int]) -> dict[str, Any]:
    body = _obj(arg, "os-volume_upload_image")
    if "image_name" not in body:
        raise bad("image_name", "'image_name' is a required property")
    image = {"name": text(body["image_name"], "image_name", min_len=1, max_len=255),
             "disk_format": text(body.get("disk_format", "raw"), "disk_format", max_len=32),
             "container_format": text(body.get("container_format", "bare"), "container_format",
                                      max_len=32),
             "visibility": text(body.get("visibility", "private"), "visibility", max_len=16),
             "protected": boolean(body.get("protected", False), "protected")}
    volume, record = await b.uploads.upload_to_image(
        ctx, vid, image, boolean(body.get("force", False), "force"))
    return {"os-volume_upload_image": {
        "id": vid, "updated_at": None, "status": "uploading", "display_description":
        volume["description"], "size": volume["size"], "volume_type": None,
        "image_id": record["id"], "container_format": image["container_format"],
        "disk_format": image["disk_format"], "image_name": image["name"],
        "visibility": image["visibility"], "protected": image["protected"]}}


ACTIONS: dict[str, Action] = {
    "os-extend": Action(_extend),
    "os-set_bootable": Action(_set_bootable, status=200),
    "os-update_readonly_flag": Action(_readonly),
    "os-retype": Action(_retype),
    "os-reset_status": Action(_reset_status, admin=True),
    "os-force_delete": Action(_force_delete, admin=True),
    "os-force_detach": Action(_force_detach, admin=True),
    "os-set_image_metadata": Action(_set_image_metadata, status=200),
    "os-unset_image_metadata": Action(_unset_image_metadata, status=200),
    "os-show_image_metadata": Action(_show_image_metadata, status=200),
    "os-volume_upload_image": Action(_upload_to_image),
    "os-reserve": Action(_reserve),
    "os-unreserve": Action(_move("unreserve", V.AVAILABLE)),
    "os-begin_detaching": Action(_move("begin_detaching", V.DETACHING)),
    "os-roll_detaching": Action(_move("roll_detaching", V.IN_USE)),
    "os-attach": Action(_attach),
    "os-detach": Action(_detach),
    "os-initialize_connection": Action(_initialize, status=200),
    "os-terminate_connection": Action(_terminate),
}


async def action(request: Request) -> Response:
    body = await json_body(request)
    if not isinstance(body, dict) or len(body) != 1:
        raise bad("action", "the body must be an object with exactly one action")
    name, arg = next(iter(body.items()))
    entry = ACTIONS.get(name)
    if entry is None:
        raise bad("action", f"There is no such action: {name[:64]}")
    ctx = context(request)
    if entry.admin and not ctx.is_admin:
        raise Forbidden(action=f"volume_extension:volume_admin_actions:{name[3:]}")
    result = await entry.handler(bs(request), ctx, request.path_params["volume_id"], arg,
                                 api_version(request))
    if result is not None:
        return reply(result, status=entry.status)
    return Response(status_code=entry.status)
