"""Image v2 route rules, under Glance's policy names and secure-RBAC defaults
(``glance/policies``): project readers read, project members create and change
their project's images; a shared image's member project answers its own
membership (``PUT …/members/{member}``), which the image service checks.
Metadata definitions are read by readers (a private namespace by its owner's
only, which the service checks) and written by admins (``metadef_admin``); the
tasks API is admin-only (``tasks_api_access``). Glance names no rule for
staging, import and the ``/v2/info`` documents: staging and import are image
changes (``modify_image``), the documents any reader's."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, R, M, A = Level.PUBLIC, Level.READER, Level.MEMBER, Level.ADMIN
I = "/v2/images/{image_id}"
NS = "/v2/metadefs/namespaces/{namespace}"


def _metadef_items(path: str, singular: str, plural: str) -> dict[tuple[str, str], Rule]:
    """A namespace's objects or properties: Glance's rules for each verb."""
    return {
        ("GET", f"{NS}/{path}"): Rule(f"get_metadef_{plural}", R),
        ("POST", f"{NS}/{path}"): Rule(f"add_metadef_{singular}", A),
        ("DELETE", f"{NS}/{path}"): Rule("delete_metadef_namespace", A),
        ("GET", f"{NS}/{path}/{{name}}"): Rule(f"get_metadef_{singular}", R),
        ("PUT", f"{NS}/{path}/{{name}}"): Rule(f"modify_metadef_{singular}", A),
    }


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
    ("POST", f"{I}/actions/deactivate"): Rule("deactivate", M),
    ("POST", f"{I}/actions/reactivate"): Rule("reactivate", M),
    ("PUT", f"{I}/stage"): Rule("modify_image", M),
    ("POST", f"{I}/import"): Rule("modify_image", M),
    ("GET", "/v2/info/import"): Rule("get_images", R),
    ("GET", "/v2/info/stores"): Rule("get_images", R),
    ("GET", "/v2/info/usage"): Rule("get_images", R),
    ("GET", "/v2/tasks"): Rule("tasks_api_access", A),
    ("POST", "/v2/tasks"): Rule("tasks_api_access", A),
    ("GET", "/v2/tasks/{task_id}"): Rule("tasks_api_access", A),
    **{("GET", f"/v2/schemas/{name}"): Rule("get_schema", R) for name in (
        "member", "members", "task", "tasks", "metadefs/namespace", "metadefs/namespaces",
        "metadefs/resource_type", "metadefs/resource_types", "metadefs/object",
        "metadefs/objects", "metadefs/property", "metadefs/properties", "metadefs/tag",
        "metadefs/tags")},
    ("GET", "/v2/metadefs/resource_types"): Rule("list_metadef_resource_types", R),
    ("GET", "/v2/metadefs/namespaces"): Rule("get_metadef_namespaces", R),
    ("POST", "/v2/metadefs/namespaces"): Rule("add_metadef_namespace", A),
    ("GET", NS): Rule("get_metadef_namespace", R),
    ("PUT", NS): Rule("modify_metadef_namespace", A),
    ("DELETE", NS): Rule("delete_metadef_namespace", A),
    ("GET", f"{NS}/resource_types"): Rule("get_metadef_resource_type", R),
    ("POST", f"{NS}/resource_types"): Rule("add_metadef_resource_type_association", A),
    ("DELETE", f"{NS}/resource_types/{{name}}"): Rule("remove_metadef_resource_type_association", A),
    **_metadef_items("objects", "object", "objects"),
    ("DELETE", f"{NS}/objects/{{name}}"): Rule("delete_metadef_object", A),
    **_metadef_items("properties", "property", "properties"),
    ("DELETE", f"{NS}/properties/{{name}}"): Rule("remove_metadef_property", A),
    ("GET", f"{NS}/tags"): Rule("get_metadef_tags", R),
    ("POST", f"{NS}/tags"): Rule("add_metadef_tags", A),
    ("DELETE", f"{NS}/tags"): Rule("delete_metadef_tags", A),
    ("GET", f"{NS}/tags/{{name}}"): Rule("get_metadef_tag", R),
    ("POST", f"{NS}/tags/{{name}}"): Rule("add_metadef_tag", A),
    ("PUT", f"{NS}/tags/{{name}}"): Rule("modify_metadef_tag", A),
    ("DELETE", f"{NS}/tags/{{name}}"): Rule("delete_metadef_tag", A),
}
