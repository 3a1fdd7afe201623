"""Identity v3 route rules, under Keystone's policy names and secure-RBAC
defaults (``keystone/common/policies``): issuing a token is public; what a
user may do for themself (their token, their projects, their own user record,
the catalog) needs only a valid token, scoped or not, and the identity
service checks that the subject is the caller; the rest is the admin's."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, U, A = Level.PUBLIC, Level.AUTHENTICATED, Level.ADMIN
G = "/v3/{target:str}/{tid}/users/{uid}/roles"

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
    ("GET", "/v3/users/{id}"): Rule("identity:get_user", U),
    ("GET", "/v3/users/{id}/projects"): Rule("identity:list_user_projects", U),
    ("GET", "/v3/projects/{id}"): Rule("identity:get_project", U),
    ("GET", "/v3/domains"): Rule("identity:list_domains", A),
    ("GET", "/v3/domains/{id}"): Rule("identity:get_domain", A),
    ("GET", "/v3/services"): Rule("identity:list_services", A),
    ("GET", "/v3/endpoints"): Rule("identity:list_endpoints", A),
    ("GET", "/v3/role_assignments"): Rule("identity:list_role_assignments", A),
    ("GET", G): Rule("identity:list_grants", A),
    ("PUT", f"{G}/{{rid}}"): Rule("identity:create_grant", A),
    ("GET", f"{G}/{{rid}}"): Rule("identity:check_grant", A),
    ("DELETE", f"{G}/{{rid}}"): Rule("identity:revoke_grant", A),
}
for _noun, _plural in (("project", "projects"), ("user", "users"), ("role", "roles")):
    ROUTES.setdefault(("GET", f"/v3/{_plural}"), Rule(f"identity:list_{_plural}", A))
    ROUTES.setdefault(("GET", f"/v3/{_plural}/{{id}}"), Rule(f"identity:get_{_noun}", A))
    ROUTES[("POST", f"/v3/{_plural}")] = Rule(f"identity:create_{_noun}", A)
    ROUTES[("PATCH", f"/v3/{_plural}/{{id}}")] = Rule(f"identity:update_{_noun}", A)
    ROUTES[("DELETE", f"/v3/{_plural}/{{id}}")] = Rule(f"identity:delete_{_noun}", A)
