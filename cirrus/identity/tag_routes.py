"""A project's tags (``/v3/projects/{id}/tags``): anyone with a token on the
project may read them (Keystone's ``identity:get_project_tag``), only admins
change them."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.exception import ValidationError
from cirrus.identity import project_tags, schema
from cirrus.identity.exception import ProjectNotFound
from cirrus.identity.http import base, path_id, require_admin


def _project(request: Request, writing: bool) -> str:
    ident = path_id(request, "id", ProjectNotFound, "project_id")
    if writing:
        require_admin(request)
    else:
        ctx = context(request)
        if ctx.project_id != ident:
            policy.enforce(ctx, "identity:admin")
    return ident


def _tag(request: Request) -> str:
    return schema.tag(request.path_params["tag"], "tag")


async def list_tags(request: Request) -> Response:
    ident = _project(request, False)
    tags = await request.app.state.db.read(project_tags.of, [ident])
    if not tags[ident]:
        await request.app.state.db.read(project_tags.check_project, ident)
    return reply({"tags": tags[ident],
                  "links": {"self": f"{base(request)}/projects/{ident}/tags"}})


async def replace_tags(request: Request) -> Response:
    ident = _project(request, True)
    body = await json_body(request)
    if not isinstance(body, dict) or "tags" not in body:
        raise ValidationError(field="tags", reason="'tags' is required")
    tags = schema.FIELDS["project"]["tags"](body["tags"], "tags")
    saved = await request.app.state.db.run(project_tags.replace, ident, tags)
    return reply({"tags": saved, "links": {"self": f"{base(request)}/projects/{ident}/tags"}})


async def clear_tags(request: Request) -> Response:
    ident = _project(request, True)
    await request.app.state.db.run(project_tags.replace, ident, [])
    return no_content()


async def add_tag(request: Request) -> Response:
    ident = _project(request, True)
    tag = _tag(request)
    await request.app.state.db.run(project_tags.add, ident, tag)
    return Response(status_code=201, headers={
        "Location": f"{base(request)}/projects/{ident}/tags/{tag}"})


async def check_tag(request: Request) -> Response:
    ident = _project(request, False)
    await request.app.state.db.read(project_tags.check, ident, _tag(request))
    return no_content()


async def remove_tag(request: Request) -> Response:
    ident = _project(request, True)
    await request.app.state.db.run(project_tags.remove, ident, _tag(request))
    return no_content()


ROUTES = [
    Route("/v3/projects/{id}/tags", list_tags, methods=["GET"]),
    Route("/v3/projects/{id}/tags", replace_tags, methods=["PUT"]),
    Route("/v3/projects/{id}/tags", clear_tags, methods=["DELETE"]),
    Route("/v3/projects/{id}/tags/{tag}", add_tag, methods=["PUT"]),
    Route("/v3/projects/{id}/tags/{tag}", check_tag, methods=["GET", "HEAD"]),
    Route("/v3/projects/{id}/tags/{tag}", remove_tag, methods=["DELETE"]),
]
