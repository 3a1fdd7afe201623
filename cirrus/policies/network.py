"""Network v2.0 route rules, under Neutron's policy names and secure-RBAC
defaults (``neutron/conf/policies``): project readers read, project members
create and change their project's resources; who owns what (and the
admin-only attributes: another ``project_id``, provider and external network
fields, port bindings) is checked by the network service on the row."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, R, M = Level.PUBLIC, Level.READER, Level.MEMBER

ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/"): Rule("versions", P),
    ("GET", "/v2.0"): Rule("versions", P),
    ("GET", "/v2.0/"): Rule("versions", P),
    ("GET", "/v2.0/extensions"): Rule("get_extension", R),
    ("GET", "/v2.0/quotas/{project_id}"): Rule("get_quota", R),
    ("GET", "/v2.0/quotas/{project_id}/details"): Rule("get_quota", R),
    # GET creates the topology when there is none: a member's act
    ("GET", "/v2.0/auto-allocated-topology/{project_id}"): Rule("get_auto_allocated_topology", M),
}
for _noun, _plural in (("network", "networks"), ("subnet", "subnets"), ("port", "ports"),
                       ("security_group", "security-groups"),
                       ("security_group_rule", "security-group-rules")):
    ROUTES[("GET", f"/v2.0/{_plural}")] = Rule(f"get_{_noun}", R)
    ROUTES[("GET", f"/v2.0/{_plural}/{{id}}")] = Rule(f"get_{_noun}", R)
    ROUTES[("POST", f"/v2.0/{_plural}")] = Rule(f"create_{_noun}", M)
    ROUTES[("DELETE", f"/v2.0/{_plural}/{{id}}")] = Rule(f"delete_{_noun}", M)
    if _noun != "security_group_rule":  # rules are immutable in Neutron
        ROUTES[("PUT", f"/v2.0/{_plural}/{{id}}")] = Rule(f"update_{_noun}", M)
