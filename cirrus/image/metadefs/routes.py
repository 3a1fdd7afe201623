"""``/v2/metadefs`` over HTTP: thin handlers over :class:`MetadefAPI`.

Objects, properties, tags and resource type associations share one shape
(:class:`ItemType`): a collection under the namespace, one item by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.image import exception as exc
from cirrus.image.metadefs import schemas, views
from cirrus.image.metadefs.api import Kind, MetadefAPI, NamespaceQuery, SORT_KEYS, split_item
from cirrus.image.query import DEFAULT_LIMIT, MAX_LIMIT

NS = "/v2/metadefs/namespaces/{namespace}"


def _api(request: Request) -> MetadefAPI:
    return MetadefAPI(request.app.state.images.db)


def _ns(request: Request) -> str:
    return str(request.path_params["namespace"])


@dataclass(frozen=True)
class ItemType:
    """How one kind of a namespace's items is checked, shown and listed."""

    kind: Kind
    collection: str
    doc: dict[str, Any]
    view: Callable[[dict[str, Any]], dict[str, Any]]
    listed: Callable[[list[dict[str, Any]]], Any]


def _listed(view: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[list[Any]], Any]:
    return lambda rows: [view(r) for r in rows]


OBJECTS = ItemType(Kind.OBJECT, "objects", schemas.OBJECT_DOC, views.object_view,
                   _listed(views.object_view))
PROPERTIES = ItemType(Kind.PROPERTY, "properties", schemas.PROPERTY_DOC, views.property_view,
                      views.properties_map)
TAGS = ItemType(Kind.TAG, "tags", schemas.TAG_DOC, views.tag_view, _listed(views.tag_view))
ASSOCIATIONS = ItemType(Kind.RESOURCE_TYPE, "resource_type_associations",
                        schemas.ASSOCIATION_DOC, views.association_view,
                        _listed(views.association_view))


# -- namespaces ---------------------------------------------------------------------
def namespace_query(request: Request) -> NamespaceQuery:
    """The listing's parameters; 400 for anything malformed."""
    params = request.query_params
    try:
        limit = int(params.get("limit", DEFAULT_LIMIT))
    except ValueError:
        raise exc.InvalidImage(reason="limit param must be an integer") from None
    if limit < 0:
        raise exc.InvalidImage(reason="limit param must be positive")
    sort_key, sort_dir = params.get("sort_key", "created_at"), params.get("sort_dir", "desc")
    if sort_key not in SORT_KEYS:
        raise exc.InvalidImage(reason=f"Invalid sort key: {sort_key[:80]}")
    if sort_dir not in ("asc", "desc"):
        raise exc.InvalidImage(reason=f"Invalid sort direction: {sort_dir[:80]}")
    visibility = params.get("visibility")
    if visibility not in (None, "public", "private"):
        raise exc.InvalidImage(reason=f"Invalid visibility value: {visibility[:80]}")
    types = tuple(t.strip() for t in params.get("resource_types", "").split(",") if t.strip())
    return NamespaceQuery(visibility=visibility, resource_types=types,
                          limit=min(limit, MAX_LIMIT) or DEFAULT_LIMIT,
                          marker=params.get("marker"), sort_key=sort_key, sort_dir=sort_dir)


async def list_namespaces(request: Request) -> Response:
    query = namespace_query(request)
    found = await _api(request).namespaces(context(request), query)
    body: dict[str, Any] = {"namespaces": [views.namespace_view(d) for d in found],
                            "first": views.NAMESPACES, "schema": "/v2/schemas/metadefs/namespaces"}
    if found and len(found) == query.limit:
        rest = [(k, v) for k, v in request.query_params.multi_items() if k != "marker"]
        body["next"] = f"{views.NAMESPACES}?" + urlencode(
            [*rest, ("marker", found[-1].row["namespace"])])
    return reply(body)


async def create_namespace(request: Request) -> Response:
    detail = await _api(request).create_namespace(context(request), await json_body(request))
    return reply(views.namespace_view(detail), status=201)


async def show_namespace(request: Request) -> Response:
    return reply(views.namespace_view(await _api(request).namespace(context(request),
                                                                    _ns(request))))


async def update_namespace(request: Request) -> Response:
    api, ctx = _api(request), context(request)
    row = await api.update_namespace(ctx, _ns(request), await json_body(request))
    return reply(views.namespace_view(await api.namespace(ctx, row["namespace"])))


async def delete_namespace(request: Request) -> Response:
    await _api(request).delete_namespace(context(request), _ns(request))
    return no_content()


# -- items --------------------------------------------------------------------------
def _collection(t: ItemType) -> tuple[Any, Any, Any]:
    async def index(request: Request) -> Response:
        rows = await _api(request).items(context(request), _ns(request), t.kind)
        body = {t.collection: t.listed(rows)}
        if t.kind != Kind.RESOURCE_TYPE:
            body["schema"] = f"/v2/schemas/metadefs/{t.collection}"
        return reply(body)

    async def create(request: Request) -> Response:
        name, rest = split_item(t.kind, schemas.body(t.doc, await json_body(request)))
        row = await _api(request).add_item(context(request), _ns(request), t.kind, name, rest)
        return reply(t.view(row), status=201)

    async def delete_all(request: Request) -> Response:
        await _api(request).delete_items(context(request), _ns(request), t.kind)
        return no_content()
    return index, create, delete_all


def _member(t: ItemType) -> tuple[Any, Any, Any]:
    async def show(request: Request) -> Response:
        row = await _api(request).item(context(request), _ns(request), t.kind,
                                       request.path_params["name"])
        return reply(t.view(row))

    async def update(request: Request) -> Response:
        new_name, rest = split_item(t.kind, schemas.body(t.doc, await json_body(request)))
        row = await _api(request).replace_item(context(request), _ns(request), t.kind,
                                               request.path_params["name"], new_name, rest)
        return reply(t.view(row))

    async def delete(request: Request) -> Response:
        await _api(request).delete_items(context(request), _ns(request), t.kind,
                                         request.path_params["name"])
        return no_content()
    return show, update, delete


async def create_tags(request: Request) -> Response:
    body = schemas.body(schemas.TAGS_DOC, await json_body(request))
    append = request.headers.get("x-openstack-append", "").lower() == "true"
    names = [str(t["name"]) for t in body.get("tags", []) if "name" in t]
    rows = await _api(request).set_tags(context(request), _ns(request), names, append)
    return reply({"tags": [{"name": r["name"]} for r in rows]}, status=201)


async def create_tag(request: Request) -> Response:
    name = request.path_params["name"]
    schemas.check(schemas.TAG["name"], name, "name")
    row = await _api(request).add_item(context(request), _ns(request), Kind.TAG, name, {})
    return reply(views.tag_view(row), status=201)


async def resource_types(request: Request) -> Response:
    rows = await _api(request).resource_types()
    return reply({"resource_types": [views.resource_type_view(r) for r in rows]})


def _routes() -> list[Route]:
    out = [
        Route("/v2/metadefs/resource_types", resource_types, methods=["GET"]),
        Route(views.NAMESPACES, list_namespaces, methods=["GET"]),
        Route(views.NAMESPACES, create_namespace, methods=["POST"]),
        Route(NS, show_namespace, methods=["GET"]),
        Route(NS, update_namespace, methods=["PUT"]),
        Route(NS, delete_namespace, methods=["DELETE"]),
        Route(f"{NS}/tags", create_tags, methods=["POST"]),
        Route(f"{NS}/tags/{{name}}", create_tag, methods=["POST"]),
    ]
    for t, path in ((OBJECTS, "objects"), (PROPERTIES, "properties"), (TAGS, "tags"),
                    (ASSOCIATIONS, "resource_types")):
        index, create, delete_all = _collection(t)
        show, update, delete = _member(t)
        out.append(Route(f"{NS}/{path}", index, methods=["GET"]))
        if t.kind != Kind.TAG:
            out.append(Route(f"{NS}/{path}", create, methods=["POST"]))
        if t.kind != Kind.RESOURCE_TYPE:
            out += [Route(f"{NS}/{path}", delete_all, methods=["DELETE"]),
                    Route(f"{NS}/{path}/{{name}}", show, methods=["GET"]),
                    Route(f"{NS}/{path}/{{name}}", update, methods=["PUT"])]
        out.append(Route(f"{NS}/{path}/{{name}}", delete, methods=["DELETE"]))
    return out


ROUTES = _routes()
