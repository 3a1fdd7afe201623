"""Network v2.0 route rules, under Neutron's policy names and secure-RBAC
defaults (``neutron/conf/policies``): project readers read, project members
create and change their project's resources; who owns what (and the
admin-only attributes: another ``project_id``, provider and external network
fields, port bindings) is checked by the network service on the row."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, R, M, A = Level.PUBLIC, Level.READER, Level.MEMBER, Level.ADMIN

ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/"): Rule("versions", P),
    ("GET", "/v2.0"): Rule("versions", P),
    ("GET", "/v2.0/"): Rule("versions", P),
    ("GET", "/v2.0/extensions"): Rule("get_extension", R),
    ("GET", "/v2.0/extensions/{alias}"): Rule("get_extension", R),
    # Neutron's quota policies: a project reads its own; only admins list
    # every project's, set limits or reset them.
    ("GET", "/v2.0/quotas"): Rule("get_quota", A),
    ("GET", "/v2.0/quotas/{project_id}"): Rule("get_quota", R),
    ("GET", "/v2.0/quotas/{project_id}/details"): Rule("get_quota", R),
    ("GET", "/v2.0/quotas/{project_id}/default"): Rule("get_quota", R),
    ("PUT", "/v2.0/quotas/{project_id}"): Rule("update_quota", A),
    ("DELETE", "/v2.0/quotas/{project_id}"): Rule("delete_quota", A),
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
# L3 (neutron/conf/policies/router.py, floatingip.py) and subnet pools
# (subnetpool.py: ``shared`` and ``is_default`` are checked by the service
# as admin-only fields): router interfaces are
# changed by the router's project members; the admin-only gateway fields
# (``external_fixed_ips``, ``enable_snat``) and a chosen floating address are
# checked by the L3 service on the body.
for _noun, _plural in (("router", "routers"), ("floatingip", "floatingips"),
                       ("subnetpool", "subnetpools")):
    ROUTES[("GET", f"/v2.0/{_plural}")] = Rule(f"get_{_noun}", R)
    ROUTES[("GET", f"/v2.0/{_plural}/{{id}}")] = Rule(f"get_{_noun}", R)
    ROUTES[("POST", f"/v2.0/{_plural}")] = Rule(f"create_{_noun}", M)
    ROUTES[("PUT", f"/v2.0/{_plural}/{{id}}")] = Rule(f"update_{_noun}", M)
    ROUTES[("DELETE", f"/v2.0/{_plural}/{{id}}")] = Rule(f"delete_{_noun}", M)
for _action in ("add_router_interface", "remove_router_interface", "add_extraroutes",
                "remove_extraroutes"):
    ROUTES[("PUT", f"/v2.0/routers/{{id}}/{_action}")] = Rule(_action, M)
# Tags (standard-attr-tag, tag-creation): reading them is reading the
# resource, changing them an update of it (Neutron's ``<verb>_<noun>:tags``).
for _noun, _plural in (("network", "networks"), ("subnet", "subnets"), ("port", "ports"),
                       ("security_group", "security-groups"), ("router", "routers"),
                       ("floatingip", "floatingips"), ("subnetpool", "subnetpools")):
    _tags = f"/v2.0/{_plural}/{{id}}/tags"
    ROUTES[("GET", _tags)] = Rule(f"get_{_noun}:tags", R)
    ROUTES[("GET", _tags + "/{tag}")] = Rule(f"get_{_noun}:tags", R)
    ROUTES[("POST", _tags)] = Rule(f"create_{_noun}:tags", M)
    ROUTES[("PUT", _tags)] = Rule(f"update_{_noun}:tags", M)
    ROUTES[("PUT", _tags + "/{tag}")] = Rule(f"update_{_noun}:tags", M)
    ROUTES[("DELETE", _tags)] = Rule(f"delete_{_noun}:tags", M)
    ROUTES[("DELETE", _tags + "/{tag}")] = Rule(f"delete_{_noun}:tags", M)
# Agents (neutron/conf/policies/agent.py): admin only; a listing by anyone
# else is empty, as Neutron filters out what its policy hides.
ROUTES[("GET", "/v2.0/agents")] = Rule("get_agent", R)
ROUTES[("GET", "/v2.0/agents/{id}")] = Rule("get_agent", A)
ROUTES[("PUT", "/v2.0/agents/{id}")] = Rule("update_agent", A)
ROUTES[("DELETE", "/v2.0/agents/{id}")] = Rule("delete_agent", A)
