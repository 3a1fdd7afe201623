"""Image v2 route rules, under Glance's policy names and secure-RBAC defaults
(``glance/policies``): project readers read, project members create and change
their project's images; a shared image's member project answers its own
membership (``PUT …/members/{member}``), which the image service checks."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, R, M = Level.PUBLIC, Level.READER, Level.MEMBER
I = "/v2/images/{image_id}"

ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/"): Rule("versions", P),
    ("GET", "/versions"): Rule("versions", P),
    ("GET", "/v2/schemas/image"): Rule("get_schema", R),
    ("GET", "/v2/schemas/images"): Rule("get_schema", R),
    ("POST", "/v2/images"): Rule("add_image", M),
    ("GET", "/v2/images"): Rule("get_images", R),
    ("GET", I): Rule("get_image", R),
    ("GET", f"{I}/tasks"): Rule("get_task_info", R),
    ("PATCH", I): Rule("modify_image", M),
    ("DELETE", I): Rule("delete_image", M),
    ("PUT", f"{I}/file"): Rule("upload_image", M),
    ("GET", f"{I}/file"): Rule("download_image", M),  # Glance: members download
    ("PUT", f"{I}/tags/{{tag}}"): Rule("modify_image", M),
    ("DELETE", f"{I}/tags/{{tag}}"): Rule("modify_image", M),
    ("GET", f"{I}/members"): Rule("get_members", R),
    ("POST", f"{I}/members"): Rule("add_member", M),
    ("GET", f"{I}/members/{{member}}"): Rule("get_member", R),
    ("PUT", f"{I}/members/{{member}}"): Rule("modify_member", M),
    ("DELETE", f"{I}/members/{{member}}"): Rule("delete_member", M),
}
