"""``/v3/{project_id}/qos-specs`` (admin)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, query_boolean, text
from cirrus.api.wsgi import json_body, reply
from cirrus.volume.api import schemas
from cirrus.volume.api.common import bs
from cirrus.volume.api.views import base_url

CONSUMERS = ("front-end", "back-end", "both")
Row = dict[str, Any]


def _id(request: Request) -> str:
    return request.path_params["qos_id"]


def _view(row: Row) -> Row:
    return {"id": row["id"], "name": row["name"], "consumer": row["consumer"],
            "specs": row["specs"] or {}}


def _links(request: Request, row: Row) -> list[dict[str, str]]:
    project = request.path_params.get("project_id", "")
    return [{"rel": "self", "href": f"{base_url(request)}/v3/{project}/qos-specs/{row['id']}"}]


async def create(request: Request) -> Response:
    body = schemas.wrapped(await json_body(request), "qos_specs")
    if "name" not in body:
        raise bad("name", "'name' is a required property")
    name = text(body["name"], "name", min_len=1, max_len=255)
    consumer = body.get("consumer", "back-end")
    if consumer not in CONSUMERS:
        raise bad("consumer", f"{str(consumer)[:20]!r} is not one of {list(CONSUMERS)}")
    specs = schemas.extra_specs({k: v for k, v in body.items() if k not in ("name", "consumer")},
                                "qos_specs")
    row = await bs(request).qos.create(name, consumer, specs)
    return reply({"qos_specs": _view(row), "links": _links(request, row)})


async def index(request: Request) -> Response:
    return reply({"qos_specs": [_view(r) for r in await bs(request).qos.list()]})


async def show(request: Request) -> Response:
    row = await bs(request).qos.get(_id(request))
    return reply({"qos_specs": _view(row), "links": _links(request, row)})


async def delete(request: Request) -> Response:
    force = query_boolean(request.query_params.get("force", "false"), "force")
    await bs(request).qos.delete(_id(request), force)
    return Response(status_code=202)


async def set_keys(request: Request) -> Response:
    body = schemas.wrapped(await json_body(request), "qos_specs")
    specs = schemas.extra_specs(body, "qos_specs")
    await bs(request).qos.set_keys(_id(request), specs, [])
    return reply({"qos_specs": specs})


async def delete_keys(request: Request) -> Response:
    body = await json_body(request)
    keys = body.get("keys") if isinstance(body, dict) else None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise bad("keys", "must be a list of strings")
    await bs(request).qos.set_keys(_id(request), {}, keys)
    return Response(status_code=202)


async def associations(request: Request) -> Response:
    return reply({"qos_associations": await bs(request).qos.associations(_id(request))})


def _type_id(request: Request) -> str:
    type_id = request.query_params.get("vol_type_id")
    if not type_id:
        raise bad("vol_type_id", "Volume Type id must not be None.")
    return type_id


async def associate(request: Request) -> Response:
    await bs(request).qos.associate(_id(request), _type_id(request), on=True)
    return Response(status_code=202)


async def disassociate(request: Request) -> Response:
    await bs(request).qos.associate(_id(request), _type_id(request), on=False)
    return Response(status_code=202)


async def disassociate_all(request: Request) -> Response:
    await bs(request).qos.associate(_id(request), None, on=False)
    return Response(status_code=202)
