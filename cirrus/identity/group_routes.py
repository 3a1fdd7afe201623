"""Group membership routes (``/v3/groups/{id}/users…``, ``/v3/users/{id}/groups``).
Admins only, but for a user listing their own groups, as Keystone's
``identity:list_groups_for_user``."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, no_content, reply
from cirrus.identity import groups
from cirrus.identity.exception import GroupNotFound, UserNotFound
from cirrus.identity.http import lifetime, listing, path_id, require_admin
from cirrus.identity.views import view


def _ids(request: Request) -> tuple[str, str]:
    return (path_id(request, "id", GroupNotFound, "group_id"),
            path_id(request, "uid", UserNotFound, "user_id"))


async def list_users(request: Request) -> Response:
    require_admin(request)
    group_id = path_id(request, "id", GroupNotFound, "group_id")
    rows = await request.app.state.db.read(groups.users_in, group_id)
    return reply(listing(request, "users", [view(request, "user", r) for r in rows]))


async def add_user(request: Request) -> Response:
    require_admin(request)
    await request.app.state.db.run(groups.add_user, *_ids(request))
    return no_content()


async def check_user(request: Request) -> Response:
    require_admin(request)
    await request.app.state.db.read(groups.check_user, *_ids(request))
    return no_content()


async def remove_user(request: Request) -> Response:
    require_admin(request)
    await request.app.state.db.run(groups.remove_user, *_ids(request),
                                   lifetime=lifetime(request))
    return no_content()


async def user_groups(request: Request) -> Response:
    ctx = context(request)
    user_id = path_id(request, "id", UserNotFound, "user_id")
    if user_id != ctx.user_id:
        policy.enforce(ctx, "identity:admin")
    rows = await request.app.state.db.read(groups.groups_of, user_id)
    return reply(listing(request, "groups", [view(request, "group", r) for r in rows]))


ROUTES = [
    Route("/v3/groups/{id}/users", list_users, methods=["GET"]),
    Route("/v3/groups/{id}/users/{uid}", add_user, methods=["PUT"]),
    Route("/v3/groups/{id}/users/{uid}", check_user, methods=["HEAD", "GET"]),
    Route("/v3/groups/{id}/users/{uid}", remove_user, methods=["DELETE"]),
    Route("/v3/users/{id}/groups", user_groups, methods=["GET"]),
]
