"""Compute v2.1 route rules, under Nova's policy names and secure-RBAC defaults
(``nova/policies``): project readers read, project members act, admins run
the cloud (flavors, services, hypervisors, quotas, external events)."""
from __future__ import annotations

from cirrus.policy import Level, Rule

P, R, M, A = Level.PUBLIC, Level.READER, Level.MEMBER, Level.ADMIN
S = "/v2.1/servers/{server_id}"
F = "/v2.1/flavors/{flavor_id}"
Q = "/v2.1/os-quota-sets/{project_id}"
AG = "/v2.1/os-aggregates/{aggregate_id}"
SG = "/v2.1/os-security-groups/{security_group_id}"


def _r(name: str, level: Level) -> Rule:
    return Rule(f"os_compute_api:{name}", level)


ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/"): _r("versions", P),
    ("GET", "/v2.1"): _r("versions", P),
    ("GET", "/v2.1/"): _r("versions", P),
    ("GET", "/v2"): _r("versions", P),
    ("GET", "/v2/"): _r("versions", P),
    # servers
    ("POST", "/v2.1/servers"): _r("servers:create", M),
    ("GET", "/v2.1/servers"): _r("servers:index", R),
    ("GET", "/v2.1/servers/detail"): _r("servers:detail", R),
    ("GET", S): _r("servers:show", R),
    ("PUT", S): _r("servers:update", M),
    ("DELETE", S): _r("servers:delete", M),
    ("POST", f"{S}/action"): _r("servers:action", M),
    ("GET", f"{S}/metadata"): _r("server-metadata:index", R),
    ("POST", f"{S}/metadata"): _r("server-metadata:create", M),
    ("PUT", f"{S}/metadata"): _r("server-metadata:update_all", M),
    ("GET", f"{S}/metadata/{{key}}"): _r("server-metadata:show", R),
    ("PUT", f"{S}/metadata/{{key}}"): _r("server-metadata:update", M),
    ("DELETE", f"{S}/metadata/{{key}}"): _r("server-metadata:delete", M),
    ("GET", f"{S}/os-instance-actions"): _r("os-instance-actions:list", R),
    ("GET", f"{S}/os-instance-actions/{{request_id}}"): _r("os-instance-actions:show", R),
    ("GET", f"{S}/ips"): _r("ips:index", R),
    ("GET", f"{S}/ips/{{network_label}}"): _r("ips:show", R),
    ("GET", f"{S}/tags"): _r("os-server-tags:index", R),
    ("PUT", f"{S}/tags"): _r("os-server-tags:update_all", M),
    ("DELETE", f"{S}/tags"): _r("os-server-tags:delete_all", M),
    ("GET", f"{S}/tags/{{tag}}"): _r("os-server-tags:show", R),
    ("PUT", f"{S}/tags/{{tag}}"): _r("os-server-tags:update", M),
    ("DELETE", f"{S}/tags/{{tag}}"): _r("os-server-tags:delete", M),
    ("GET", f"{S}/os-server-password"): _r("os-server-password:show", R),
    ("DELETE", f"{S}/os-server-password"): _r("os-server-password:clear", M),
    ("GET", f"{S}/os-security-groups"): _r("os-security-groups:list", R),
    ("GET", f"{S}/diagnostics"): _r("os-server-diagnostics", A),
    ("GET", f"{S}/os-interface"): _r("os-attach-interfaces:list", R),
    ("POST", f"{S}/os-interface"): _r("os-attach-interfaces:create", M),
    ("GET", f"{S}/os-interface/{{port_id}}"): _r("os-attach-interfaces:show", R),
    ("DELETE", f"{S}/os-interface/{{port_id}}"): _r("os-attach-interfaces:delete", M),
    # volumes of a server (issue 20)
    ("GET", f"{S}/os-volume_attachments"): _r("os-volumes-attachments:index", R),
    ("POST", f"{S}/os-volume_attachments"): _r("os-volumes-attachments:create", M),
    ("GET", f"{S}/os-volume_attachments/{{volume_id}}"): _r("os-volumes-attachments:show", R),
    ("PUT", f"{S}/os-volume_attachments/{{volume_id}}"): _r("os-volumes-attachments:update", M),
    ("DELETE", f"{S}/os-volume_attachments/{{volume_id}}"):
        _r("os-volumes-attachments:delete", M),
    # flavors: everyone with a project reads them, admins manage them
    ("GET", "/v2.1/flavors"): _r("flavors:index", R),
    ("GET", "/v2.1/flavors/detail"): _r("flavors:detail", R),
    ("GET", F): _r("flavors:show", R),
    ("POST", "/v2.1/flavors"): _r("os-flavor-manage:create", A),
    ("PUT", F): _r("os-flavor-manage:update", A),
    ("DELETE", F): _r("os-flavor-manage:delete", A),
    ("GET", f"{F}/os-extra_specs"): _r("os-flavor-extra-specs:index", R),
    ("GET", f"{F}/os-extra_specs/{{key}}"): _r("os-flavor-extra-specs:show", R),
    ("POST", f"{F}/os-extra_specs"): _r("os-flavor-extra-specs:create", A),
    ("PUT", f"{F}/os-extra_specs/{{key}}"): _r("os-flavor-extra-specs:update", A),
    ("DELETE", f"{F}/os-extra_specs/{{key}}"): _r("os-flavor-extra-specs:delete", A),
    ("GET", f"{F}/os-flavor-access"): _r("os-flavor-access", A),
    ("POST", f"{F}/action"): _r("os-flavor-access:add_tenant_access,remove_tenant_access", A),
    # key pairs are the caller's own (a user's, not a project's)
    # Nova lets any user of a project keep their own (the owner is the user)
    ("GET", "/v2.1/os-keypairs"): _r("os-keypairs:index", R),
    ("POST", "/v2.1/os-keypairs"): _r("os-keypairs:create", R),
    ("GET", "/v2.1/os-keypairs/{name}"): _r("os-keypairs:show", R),
    ("DELETE", "/v2.1/os-keypairs/{name}"): _r("os-keypairs:delete", R),
    ("GET", "/v2.1/os-availability-zone"): _r("os-availability-zone:list", R),
    ("GET", "/v2.1/os-availability-zone/detail"): _r("os-availability-zone:detail", A),
    ("GET", "/v2.1/os-server-groups"): _r("os-server-groups:index", R),
    ("POST", "/v2.1/os-server-groups"): _r("os-server-groups:create", M),
    ("GET", "/v2.1/os-server-groups/{group_id}"): _r("os-server-groups:show", R),
    ("DELETE", "/v2.1/os-server-groups/{group_id}"): _r("os-server-groups:delete", M),
    # security groups through compute, 2.1–2.35 (the network service applies its own rules)
    ("GET", "/v2.1/os-security-groups"): _r("os-security-groups:get", R),
    ("POST", "/v2.1/os-security-groups"): _r("os-security-groups:create", M),
    ("GET", SG): _r("os-security-groups:show", R),
    ("PUT", SG): _r("os-security-groups:update", M),
    ("DELETE", SG): _r("os-security-groups:delete", M),
    ("POST", "/v2.1/os-security-group-rules"): _r("os-security-groups:rule:create", M),
    ("DELETE", "/v2.1/os-security-group-rules/{rule_id}"): _r("os-security-groups:rule:delete", M),
    # the image service through compute (the image API applies its own rules)
    ("GET", "/v2.1/images"): _r("images:index", R),
    ("GET", "/v2.1/images/detail"): _r("images:detail", R),
    ("GET", "/v2.1/images/{image_id}"): _r("images:show", R),
    ("DELETE", "/v2.1/images/{image_id}"): _r("images:delete", M),
    ("GET", "/v2.1/images/{image_id}/metadata"): _r("image-metadata:index", R),
    ("POST", "/v2.1/images/{image_id}/metadata"): _r("image-metadata:create", M),
    ("PUT", "/v2.1/images/{image_id}/metadata"): _r("image-metadata:update_all", M),
    ("GET", "/v2.1/images/{image_id}/metadata/{key}"): _r("image-metadata:show", R),
    ("PUT", "/v2.1/images/{image_id}/metadata/{key}"): _r("image-metadata:update", M),
    ("DELETE", "/v2.1/images/{image_id}/metadata/{key}"): _r("image-metadata:delete", M),
    # the cloud's own machinery
    ("GET", "/v2.1/os-services"): _r("os-services:list", A),
    ("PUT", "/v2.1/os-services/{service_id}"): _r("os-services:update", A),
    ("DELETE", "/v2.1/os-services/{service_id}"): _r("os-services:delete", A),
    ("GET", "/v2.1/os-hosts"): _r("os-hosts:list", A),
    ("GET", "/v2.1/os-hosts/{host_name}"): _r("os-hosts:show", A),
    ("PUT", "/v2.1/os-hosts/{host_name}"): _r("os-hosts:update", A),
    ("GET", "/v2.1/os-hosts/{host_name}/reboot"): _r("os-hosts:reboot", A),
    ("GET", "/v2.1/os-hosts/{host_name}/shutdown"): _r("os-hosts:shutdown", A),
    ("GET", "/v2.1/os-hosts/{host_name}/startup"): _r("os-hosts:start", A),
    ("GET", "/v2.1/os-instance_usage_audit_log"): _r("os-instance-usage-audit-log:list", A),
    ("GET", "/v2.1/os-instance_usage_audit_log/{before_timestamp}"):
        _r("os-instance-usage-audit-log:show", A),
    ("GET", "/v2.1/os-hypervisors"): _r("os-hypervisors:list", A),
    ("GET", "/v2.1/os-hypervisors/detail"): _r("os-hypervisors:list-detail", A),
    ("GET", "/v2.1/os-hypervisors/statistics"): _r("os-hypervisors:statistics", A),
    ("GET", "/v2.1/os-hypervisors/{hypervisor_id}"): _r("os-hypervisors:show", A),
    ("GET", "/v2.1/os-hypervisors/{hypervisor_id}/uptime"): _r("os-hypervisors:uptime", A),
    ("GET", "/v2.1/os-hypervisors/{pattern}/search"): _r("os-hypervisors:search", A),
    ("GET", "/v2.1/os-hypervisors/{pattern}/servers"): _r("os-hypervisors:servers", A),
    ("POST", "/v2.1/os-server-external-events"): _r("os-server-external-events:create", A),
    # Block storage's service user (Nova: the service role; cirrus has none, so admin).
    ("POST", "/v2.1/os-assisted-volume-snapshots"): _r("os-assisted-volume-snapshots:create", A),
    ("DELETE", "/v2.1/os-assisted-volume-snapshots/{snapshot_id}"):
        _r("os-assisted-volume-snapshots:delete", A),
    ("GET", "/v2.1/os-aggregates"): _r("os-aggregates:index", A),
    ("POST", "/v2.1/os-aggregates"): _r("os-aggregates:create", A),
    ("GET", AG): _r("os-aggregates:show", A),
    ("PUT", AG): _r("os-aggregates:update", A),
    ("DELETE", AG): _r("os-aggregates:delete", A),
    ("POST", f"{AG}/action"): _r("os-aggregates:add_host,remove_host,set_metadata", A),
    # usage: a project reads its own, admins every project's
    ("GET", "/v2.1/os-simple-tenant-usage"): _r("os-simple-tenant-usage:list", A),
    ("GET", "/v2.1/os-simple-tenant-usage/{tenant_id}"): _r("os-simple-tenant-usage:show", R),
    # quotas: a project reads its own, admins set them
    ("GET", Q): _r("os-quota-sets:show", R),
    ("GET", f"{Q}/detail"): _r("os-quota-sets:detail", R),
    ("GET", f"{Q}/defaults"): _r("os-quota-sets:defaults", R),
    ("PUT", Q): _r("os-quota-sets:update", A),
    ("DELETE", Q): _r("os-quota-sets:delete", A),
    ("GET", "/v2.1/limits"): _r("limits", R),
    ("GET", "/v2.1/os-quota-class-sets/{class_name}"): _r("os-quota-class-sets:show", A),
    ("PUT", "/v2.1/os-quota-class-sets/{class_name}"): _r("os-quota-class-sets:update", A),
    # the network service's networks through compute, 2.1–2.35 (read-only)
    ("GET", "/v2.1/os-networks"): _r("os-networks:list", R),
    ("GET", "/v2.1/os-networks/{network_id}"): _r("os-networks:show", R),
    ("GET", "/v2.1/os-tenant-networks"): _r("os-tenant-networks:list", R),
    ("GET", "/v2.1/os-tenant-networks/{network_id}"): _r("os-tenant-networks:show", R),
    # block storage's volumes and snapshots through compute, 2.1–2.35
    ("GET", "/v2.1/os-volumes"): _r("os-volumes:list", R),
    ("POST", "/v2.1/os-volumes"): _r("os-volumes:create", M),
    ("GET", "/v2.1/os-volumes/detail"): _r("os-volumes:detail", R),
    ("GET", "/v2.1/os-volumes/{volume_id}"): _r("os-volumes:show", R),
    ("DELETE", "/v2.1/os-volumes/{volume_id}"): _r("os-volumes:delete", M),
    ("GET", "/v2.1/os-snapshots"): _r("os-volumes:snapshots:list", R),
    ("POST", "/v2.1/os-snapshots"): _r("os-volumes:snapshots:create", M),
    ("GET", "/v2.1/os-snapshots/detail"): _r("os-volumes:snapshots:detail", R),
    ("GET", "/v2.1/os-snapshots/{snapshot_id}"): _r("os-volumes:snapshots:show", R),
    ("DELETE", "/v2.1/os-snapshots/{snapshot_id}"): _r("os-volumes:snapshots:delete", M),
    # the v2.1 API's extension list, fixed since extensions became microversions
    ("GET", "/v2.1/extensions"): _r("extensions", R),
    ("GET", "/v2.1/extensions/{alias}"): _r("extensions", R),
    # consoles: a project's members open their servers' consoles
    ("POST", f"{S}/remote-consoles"): _r("remote-consoles", M),
    ("GET", "/v2.1/os-console-auth-tokens/{console_token}"): _r("console-auth-tokens", A),
    # moves: admins see and steer migrations
    ("GET", "/v2.1/os-migrations"): _r("os-migrations:index", A),
    ("GET", f"{S}/migrations"): _r("servers:migrations:index", A),
    ("GET", f"{S}/migrations/{{migration_id}}"): _r("servers:migrations:show", A),
    ("DELETE", f"{S}/migrations/{{migration_id}}"): _r("servers:migrations:delete", A),
    ("POST", f"{S}/migrations/{{migration_id}}/action"): _r("servers:migrations:force_complete", A),
}

# ``POST /servers/{id}/action`` carries one of a closed set of actions, each
# with its own rule (Nova's names and defaults): the route's rule above is the
# least any action needs, this one is checked before the action's body is read.
SERVER_ACTIONS: dict[str, Rule] = {
    "os-start": _r("servers:start", M),
    "os-stop": _r("servers:stop", M),
    "reboot": _r("servers:reboot", M),
    "os-getConsoleOutput": _r("os-console-output", M),
    "os-getSerialConsole": _r("remote-consoles", M),
    "os-resetState": _r("os-admin-actions:reset_state", A),
    "injectNetworkInfo": _r("os-admin-actions:inject_network_info", A),
    # issue #19: the guest-state actions
    "lock": _r("os-lock-server:lock", M),
    "unlock": _r("os-lock-server:unlock", M),
    "pause": _r("os-pause-server:pause", M),
    "unpause": _r("os-pause-server:unpause", M),
    "suspend": _r("os-suspend-server:suspend", M),
    "resume": _r("os-suspend-server:resume", M),
    "rescue": _r("os-rescue", M),
    "unrescue": _r("os-unrescue", M),
    "addSecurityGroup": _r("os-security-groups:add", M),
    "removeSecurityGroup": _r("os-security-groups:remove", M),
    "changePassword": _r("os-admin-password", M),
    "restore": _r("os-deferred-delete:restore", M),
    "forceDelete": _r("os-deferred-delete:force", M),
    # images (cirrus/api/compute/image_actions.py)
    "rebuild": _r("servers:rebuild", M),
    "createImage": _r("servers:create_image", M),
    "createBackup": _r("os-create-backup", M),
    "shelve": _r("os-shelve:shelve", M),
    "shelveOffload": _r("os-shelve:shelve_offload", A),
    "unshelve": _r("os-shelve:unshelve", M),
    # moves: a member resizes its server, admins move servers between hosts
    "resize": _r("servers:resize", M),
    "confirmResize": _r("servers:confirm_resize", M),
    "revertResize": _r("servers:revert_resize", M),
    "migrate": _r("os-migrate-server:migrate", A),
    "os-migrateLive": _r("os-migrate-server:migrate_live", A),
    "evacuate": _r("os-evacuate", A),
}

# Rules an option of a move action needs beyond the action's own.
MOVE_OPTION_RULES: dict[str, Rule] = {
    "migrate:host": _r("os-migrate-server:migrate:host", A),
}

# Unlocking a server someone else locked (an owner's lock by an admin of
# another project, an admin's by the owner): Nova's rule and default.
UNLOCK_OVERRIDE = _r("os-lock-server:unlock:unlock_override", A)

