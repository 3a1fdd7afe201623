"""Identity v3 route rules, under Keystone's policy names and secure-RBAC
defaults (``keystone/common/policies``): issuing a token and changing one's
password (which takes the original one) are public; what a user may do for
themself (their token, their projects, groups and scopes, their own user
record, their domain, their project's tags, their credentials and application
credentials, the catalog) needs only a valid token, scoped or not, and the
identity service checks that the subject is the caller's; the rest is the
admin's."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, U, A = Level.PUBLIC, Level.AUTHENTICATED, Level.ADMIN
G = "/v3/{target:str}/{tid}"
AC = "/v3/users/{id}/application_credentials"

ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/"): Rule("versions", P),
    ("GET", "/v3"): Rule("versions", P),
    ("GET", "/v3/"): Rule("versions", P),
    ("POST", "/v3/auth/tokens"): Rule("identity:issue_token", P),
    ("GET", "/v3/auth/tokens"): Rule("identity:validate_token", U),
    ("DELETE", "/v3/auth/tokens"): Rule("identity:revoke_token", U),
    ("GET", "/v3/auth/catalog"): Rule("identity:get_auth_catalog", U),
    ("GET", "/v3/auth/projects"): Rule("identity:get_auth_projects", U),
    ("GET", "/v3/auth/domains"): Rule("identity:get_auth_domains", U),
    ("GET", "/v3/auth/system"): Rule("identity:get_auth_system", U),
    ("POST", "/v3/users/{id}/password"): Rule("identity:change_password", P),
    ("GET", "/v3/users/{id}"): Rule("identity:get_user", U),
    ("GET", "/v3/users/{id}/projects"): Rule("identity:list_user_projects", U),
    ("GET", "/v3/users/{id}/groups"): Rule("identity:list_groups_for_user", U),
    ("GET", "/v3/projects/{id}"): Rule("identity:get_project", U),
    ("GET", "/v3/domains/{id}"): Rule("identity:get_domain", U),
    ("GET", "/v3/projects/{id}/tags"): Rule("identity:list_project_tags", U),
    ("GET", "/v3/projects/{id}/tags/{tag}"): Rule("identity:get_project_tag", U),
    ("PUT", "/v3/projects/{id}/tags"): Rule("identity:update_project_tags", A),
    ("DELETE", "/v3/projects/{id}/tags"): Rule("identity:delete_project_tags", A),
    ("PUT", "/v3/projects/{id}/tags/{tag}"): Rule("identity:create_project_tag", A),
    ("DELETE", "/v3/projects/{id}/tags/{tag}"): Rule("identity:delete_project_tag", A),
    ("GET", "/v3/role_assignments"): Rule("identity:list_role_assignments", A),
    ("GET", "/v3/role_inferences"): Rule("identity:list_role_inference_rules", A),
    ("GET", "/v3/roles/{prior}/implies"): Rule("identity:list_implied_roles", A),
    ("PUT", "/v3/roles/{prior}/implies/{implied}"): Rule("identity:create_implied_role", A),
    ("GET", "/v3/roles/{prior}/implies/{implied}"): Rule("identity:get_implied_role", A),
    ("DELETE", "/v3/roles/{prior}/implies/{implied}"): Rule("identity:delete_implied_role", A),
    ("GET", "/v3/groups/{id}/users"): Rule("identity:list_users_in_group", A),
    ("PUT", "/v3/groups/{id}/users/{uid}"): Rule("identity:add_user_to_group", A),
    ("GET", "/v3/groups/{id}/users/{uid}"): Rule("identity:check_user_in_group", A),
    ("DELETE", "/v3/groups/{id}/users/{uid}"): Rule("identity:remove_user_from_group", A),
    ("GET", "/v3/credentials"): Rule("identity:list_credentials", U),
    ("POST", "/v3/credentials"): Rule("identity:create_credential", U),
    ("GET", "/v3/credentials/{id}"): Rule("identity:get_credential", U),
    ("PATCH", "/v3/credentials/{id}"): Rule("identity:update_credential", U),
    ("DELETE", "/v3/credentials/{id}"): Rule("identity:delete_credential", U),
    ("GET", AC): Rule("identity:list_application_credentials", U),
    ("POST", AC): Rule("identity:create_application_credential", U),
    ("GET", AC + "/{cid}"): Rule("identity:get_application_credential", U),
    ("DELETE", AC + "/{cid}"): Rule("identity:delete_application_credential", U),
    ("PUT", "/v3/regions/{id}"): Rule("identity:create_region", A),
}
for _who in ("users/{uid}", "groups/{gid}"):
    for _where in (G, "/v3/system"):
        _scope = "system_" if _where == "/v3/system" else ""
        _path = f"{_where}/{_who}/roles"
        ROUTES[("GET", _path)] = Rule(f"identity:{_scope}list_grants", A)
        ROUTES[("PUT", _path + "/{rid}")] = Rule(f"identity:{_scope}create_grant", A)
        ROUTES[("GET", _path + "/{rid}")] = Rule(f"identity:{_scope}check_grant", A)
        ROUTES[("DELETE", _path + "/{rid}")] = Rule(f"identity:{_scope}revoke_grant", A)
for _noun, _plural in (("project", "projects"), ("user", "users"), ("role", "roles"),
                       ("domain", "domains"), ("group", "groups"), ("region", "regions"),
                       ("service", "services"), ("endpoint", "endpoints"),
                       ("policy", "policies")):
    ROUTES.setdefault(("GET", f"/v3/{_plural}"), Rule(f"identity:list_{_plural}", A))
    ROUTES.setdefault(("GET", f"/v3/{_plural}/{{id}}"), Rule(f"identity:get_{_noun}", A))
    ROUTES[("POST", f"/v3/{_plural}")] = Rule(f"identity:create_{_noun}", A)
    ROUTES[("PATCH", f"/v3/{_plural}/{{id}}")] = Rule(f"identity:update_{_noun}", A)
    ROUTES[("DELETE", f"/v3/{_plural}/{{id}}")] = Rule(f"identity:delete_{_noun}", A)
