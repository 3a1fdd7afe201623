"""Image v2 HTTP API: staging and import, tasks, and the ``/v2/info`` documents
(see :mod:`cirrus.image.importing` and :mod:`cirrus.image.tasks`)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.image import exception as exc
from cirrus.image.importing import ImageImport, import_info
from cirrus.image.tasks import TaskAPI, task_view


def octet_stream(request: Request) -> None:
    """Glance takes image data only as application/octet-stream (415 otherwise)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/octet-stream":
        raise exc.UnsupportedMediaType(reason=f"Content type {media[:80] or None} not supported: "
                                              "expected application/octet-stream")


def _importer(request: Request) -> ImageImport:
    return ImageImport(request.app.state.images)


def _tasks(request: Request) -> TaskAPI:
    return TaskAPI(request.app.state.images.db)


async def stage(request: Request) -> Response:
    octet_stream(request)
    await _importer(request).stage(context(request), request.path_params["image_id"],
                                   request.stream())
    return no_content()


async def image_import(request: Request) -> Response:
    body = await json_body(request)
    await _importer(request).start(context(request), request.path_params["image_id"], body)
    return Response(status_code=202)  # Glance's 202 has no body


async def image_tasks(request: Request) -> Response:
    """``GET /v2/images/{id}/tasks`` (Glance 2.12): 404 as the image's record."""
    image_id = request.path_params["image_id"]
    await request.app.state.images.get(context(request), image_id)
    rows = await _tasks(request).for_image(image_id)
    return reply({"tasks": [task_view(r) for r in rows]})


async def list_tasks(request: Request) -> Response:
    rows = await _tasks(request).list(context(request))
    return reply({"tasks": [task_view(r, full=False) for r in rows],
                  "first": "/v2/tasks", "schema": "/v2/schemas/tasks"})


async def show_task(request: Request) -> Response:
    return reply(task_view(await _tasks(request).get(context(request),
                                                      request.path_params["task_id"])))


async def create_task(request: Request) -> Response:
    await _tasks(request).create(context(request), await json_body(request))  # always raises


async def info_import(request: Request) -> Response:
    return reply(import_info())


async def info_stores(request: Request) -> Response:
    raise exc.MultiStoreNotSupported()


async def info_usage(request: Request) -> Response:
    return reply(await _importer(request).usage(context(request)))


ROUTES: list[Any] = [
    Route("/v2/images/{image_id}/stage", stage, methods=["PUT"]),
    Route("/v2/images/{image_id}/import", image_import, methods=["POST"]),
    Route("/v2/images/{image_id}/tasks", image_tasks, methods=["GET"]),
    Route("/v2/tasks", list_tasks, methods=["GET"]),
    Route("/v2/tasks", create_task, methods=["POST"]),
    Route("/v2/tasks/{task_id}", show_task, methods=["GET"]),
    Route("/v2/info/import", info_import, methods=["GET"]),
    Route("/v2/info/stores", info_stores, methods=["GET"]),
    Route("/v2/info/usage", info_usage, methods=["GET"]),
]
