"""Every route × every persona, built from the app's own route tables.

For each route the rule in :mod:`cirrus.policies` says the least a caller
needs; this test sends the request as each persona and checks what came
back against it:

* a persona below the route's level gets 403, before anything is read;
* project B's member asking about project A's resource gets 403 or 404 and
  learns nothing (no A id in the answer), and changes nothing;
* everyone at or above the level is let through (not 401/403);
* no answer is a 5xx.

A route the tables do not rule stops the app from starting (see
``test_a_route_without_a_rule_stops_the_app``), so a new route cannot skip this.
"""
from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from starlette.routing import Mount, Route

from cirrus import policies
from cirrus.api.app import MissingRule, guard_routes
from cirrus.network import agents
from cirrus.policy import Level, Rule
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.security.conftest import Tenants

# Who reaches each level by role and scope alone.
REACHES: dict[Level, set[str]] = {
    Level.PUBLIC: {"admin", "member", "reader", "other", "norole", "unscoped"},
    Level.AUTHENTICATED: {"admin", "member", "reader", "other", "norole", "unscoped"},
    Level.READER: {"admin", "member", "reader", "other"},
    Level.MEMBER: {"admin", "member", "other"},
    Level.ADMIN: {"admin"},
    Level.SIGNED: set(),  # the metadata API: no token, only the proxy's signature
}
# Denied personas go first: what they try must leave A's things as they were.
ORDER = ("norole", "unscoped", "reader", "other", "member", "admin")
# Writes open to callers below member, each for a reason stated in its table.
WRITES_BELOW_MEMBER = {
    ("/identity", "POST", "/v3/auth/tokens"),    # logging in
    ("/identity", "DELETE", "/v3/auth/tokens"),  # revoking one's own token
    ("/identity", "POST", "/v3/users/{id}/password"),  # takes the original password (Keystone)
    # A user's own credentials and application credentials (Keystone's owner rules).
    ("/identity", "POST", "/v3/credentials"),
    ("/identity", "PATCH", "/v3/credentials/{id}"),
    ("/identity", "DELETE", "/v3/credentials/{id}"),
    ("/identity", "POST", "/v3/users/{id}/application_credentials"),
    ("/identity", "DELETE", "/v3/users/{id}/application_credentials/{cid}"),
    ("/compute", "POST", "/v2.1/os-keypairs"),   # key pairs are the user's own (Nova)
    ("/compute", "DELETE", "/v2.1/os-keypairs/{name}"),
}


def app_routes(app: Any) -> list[tuple[str, str, str]]:
    """(prefix, method, path) of every route the app serves."""
    out = []
    for mount in app.routes:
        if isinstance(mount, Mount):
            for route in mount.routes:
                assert isinstance(route, Route)
                for method in sorted(route.methods or ()):
                    if method != "HEAD":
                        out.append((mount.path, method, route.path))
    return out


async def _a_resources(t: Tenants) -> dict[str, str]:
    """Project A's things, made by its member (and a flavor by the admin)."""
    m, ids = t.member, {}
    ids["image"] = await upload_image(m, name="a-image")
    net = (await m.post("/network/v2.0/networks", json={"network": {"name": "a-net"}})).json()
    ids["network"] = net["network"]["id"]
    sub = await m.post("/network/v2.0/subnets", json={"subnet": {
        "network_id": ids["network"], "cidr": "10.9.0.0/24", "ip_version": 4}})
    ids["subnet"] = sub.json()["subnet"]["id"]
    port = await m.post("/network/v2.0/ports", json={"port": {"network_id": ids["network"]}})
    ids["port"] = port.json()["port"]["id"]
    sg = await m.post("/network/v2.0/security-groups", json={"security_group": {"name": "a-sg"}})
    ids["sg"] = sg.json()["security_group"]["id"]
    rule = await m.post("/network/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": ids["sg"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 22, "port_range_max": 22}})
    ids["sg_rule"] = rule.json()["security_group_rule"]["id"]
    router = await m.post("/network/v2.0/routers", json={"router": {"name": "a-router"}})
    ids["router"] = router.json()["router"]["id"]
    ext = await t.admin.post("/network/v2.0/networks", json={"network": {
        "name": "matrix-ext", "router:external": True}})
    ids["external"] = ext.json()["network"]["id"]
    await t.admin.post("/network/v2.0/subnets", json={"subnet": {
        "network_id": ids["external"], "cidr": "172.29.0.0/24", "ip_version": 4}})
    fip = await m.post("/network/v2.0/floatingips", json={"floatingip": {
        "floating_network_id": ids["external"]}})
    ids["floatingip"] = fip.json()["floatingip"]["id"]
    pool = await m.post("/network/v2.0/subnetpools", json={"subnetpool": {
        "name": "a-pool", "prefixes": ["10.110.0.0/16"]}})
    ids["subnetpool"] = pool.json()["subnetpool"]["id"]
    group = await m.post("/compute/v2.1/os-server-groups", json={"server_group": {
        "name": "a-group", "policies": ["anti-affinity"]}})
    ids["group"] = group.json()["server_group"]["id"]
    kp = await m.post("/compute/v2.1/os-keypairs", json={"keypair": {"name": "a-key"}})
    assert kp.status_code == 200, kp.text
    server = await create_server(m, server_body(ids["image"], name="a-vm", networks=[
        {"uuid": ids["network"]}], metadata={"k": "v"}))
    ids["server"] = server["id"]
    await wait_for_status(m, ids["server"], {"ACTIVE"})
    ifaces = (await m.get(f"/compute/v2.1/servers/{ids['server']}/os-interface")).json()
    ids["server_port"] = ifaces["interfaceAttachments"][0]["port_id"]
    actions = (await m.get(f"/compute/v2.1/servers/{ids['server']}/os-instance-actions")).json()
    ids["request"] = actions["instanceActions"][0]["request_id"]
    a = t.admin
    flavor = await a.post("/compute/v2.1/flavors", json={"flavor": {
        "name": "matrix", "ram": 64, "vcpus": 1, "disk": 1, "id": "matrix"}})
    assert flavor.status_code == 200, flavor.text
    await a.post("/compute/v2.1/flavors/matrix/os-extra_specs", json={"extra_specs": {"k": "v"}})
    ids["flavor"] = "matrix"
    agg = await a.post("/compute/v2.1/os-aggregates", json={"aggregate": {"name": "matrix-agg"}})
    assert agg.status_code == 200, agg.text
    ids["aggregate"] = str(agg.json()["aggregate"]["id"])
    services = (await a.get("/compute/v2.1/os-services")).json()["services"]
    ids["service"] = str(next(s["id"] for s in services if s["binary"] == "nova-compute"))
    ids["host"] = next(s["host"] for s in services if s["binary"] == "nova-compute")
    ids["hypervisor"] = str((await a.get("/compute/v2.1/os-hypervisors")).json()["hypervisors"][0]["id"])
    roles = (await a.get("/identity/v3/roles")).json()["roles"]
    ids["reader_role"] = next(r["id"] for r in roles if r["name"] == "reader")
    ids.update(await _a_identity(t))
    ids.update(await _a_volumes(t, ids["server"]))
    # A public metadefs namespace (only admins make them), with an item of each kind.
    ns = await a.post("/image/v2/metadefs/namespaces", json={
        "namespace": "a-ns", "visibility": "public", "tags": [{"name": "a-key"}],
        "objects": [{"name": "a-key"}], "properties": {"a-key": {"title": "k", "type": "string"}},
        "resource_type_associations": [{"name": "a-key"}]})
    assert ns.status_code == 201, ns.text
    return ids


async def _a_identity(t: Tenants) -> dict[str, str]:
    """The admin's group, regions, catalog entries, policy and inference
    roles (``id_…``); the demo user's credential and application credential
    (``own_…``: the user's, whichever project their token names)."""
    a, ids = t.admin, {}
    for kind, body in (("group", {"name": "a-group"}), ("region", {"id": "a-region"}),
                       ("service", {"type": "a-type"}), ("policy", {"type": "t", "blob": "{}"}),
                       ("prior", {"name": "a-prior"}), ("implied", {"name": "a-implied"})):
        noun = kind if kind in ("group", "region", "service", "policy") else "role"
        resp = await a.post(f"/identity/v3/{noun}s" if noun != "policy" else
                            "/identity/v3/policies", json={noun: body})
        assert resp.status_code == 201, resp.text
        ids[f"id_{kind}"] = resp.json()[noun]["id"]
    ep = await a.post("/identity/v3/endpoints", json={"endpoint": {
        "service_id": ids["id_service"], "interface": "public", "url": "http://a.example"}})
    ids["id_endpoint"] = ep.json()["endpoint"]["id"]
    cred = await t.member.post("/identity/v3/credentials", json={"credential": {
        "user_id": t.user["demo"], "type": "totp", "blob": "a-secret"}})
    assert cred.status_code == 201, cred.text
    ids["own_credential"] = cred.json()["credential"]["id"]
    app = await t.member.post(f"/identity/v3/users/{t.user['demo']}/application_credentials",
                              json={"application_credential": {"name": "a-app"}})
    assert app.status_code == 201, app.text
    ids["own_app_cred"] = app.json()["application_credential"]["id"]
    return ids


# A volume nobody has: an allowed attach is a 400, and no persona's call
# changes what the next one sees.
NO_SUCH_VOLUME = "00000000-0000-4000-8000-00000000f00d"


async def _a_volumes(t: Tenants, server_id: str) -> dict[str, str]:
    """Project A's volume (with metadata and a snapshot), a second one
    reserved by an attachment, and a volume type made by the admin."""
    base, ids = f"/volume/v3/{t.project['demo']}", {}
    for name in ("volume", "att_volume", "transfer_volume"):
        vol = await t.member.post(f"{base}/volumes", json={"volume": {
            "size": 1, "name": f"a-{name}", "metadata": {"k": "v"}}})
        assert vol.status_code == 202, vol.text
        ids[name] = vol.json()["volume"]["id"]
    snap = await t.member.post(f"{base}/snapshots", json={"snapshot": {
        "volume_id": ids["volume"], "metadata": {"k": "v"}}})
    ids["snapshot"] = snap.json()["snapshot"]["id"]
    att = await t.member.post(f"{base}/attachments", headers=VOLUME_344, json={"attachment": {
        "volume_uuid": ids["att_volume"], "instance_uuid": server_id}})
    assert att.status_code == 200, att.text
    ids["attachment"] = att.json()["attachment"]["id"]
    transfer = await t.member.post(f"{base}/os-volume-transfer", json={"transfer": {
        "volume_id": ids["transfer_volume"]}})
    assert transfer.status_code == 202, transfer.text
    ids["transfer"] = transfer.json()["transfer"]["id"]
    vtype = await t.admin.post(f"{base}/types", json={"volume_type": {
        "name": "a-type", "extra_specs": {"k": "v"}}})
    ids["volume_type"] = vtype.json()["volume_type"]["id"]
    group_type = await t.admin.post(f"{base}/group_types", headers=VOLUME_344, json={
        "group_type": {"name": "a-group-type", "group_specs": {"k": "v"}}})
    assert group_type.status_code == 202, group_type.text
    ids["group_type"] = group_type.json()["group_type"]["id"]
    qos = await t.admin.post(f"{base}/qos-specs", json={"qos_specs": {"name": "a-qos"}})
    ids["qos"] = qos.json()["qos_specs"]["id"]
    return ids


VOLUME_344 = {"OpenStack-API-Version": "volume 3.57"}  # attachments (3.44), transfers (3.55)


# Routes whose answer is 501 when allowed: no cirrus driver has the feature.
NOT_IMPLEMENTED = {f"/v2.1/os-hosts/{{host_name}}/{action}"
                   for action in ("reboot", "shutdown", "startup")}

# Paths that name the demo user's own things (not project A's): the personas
# holding the demo user's tokens own them.
USER_OWNED = ("/v3/users/{id}", "/v3/users/{id}/projects", "/v2.1/os-keypairs/{name}",
              "/v3/users/{id}/groups", "/v3/users/{id}/application_credentials",
              "/v3/users/{id}/application_credentials/{cid}", "/v3/users/{id}/password",
              "/v3/credentials/{id}")
# Answered 401 to everyone: the request proves who it is by a password (a
# wrong one, here) rather than a token.
PASSWORD_CHECKED = {("POST", "/v3/users/{id}/password")}
# A 403 to everyone, admins too: what the resource's state forbids (Keystone's
# ForbiddenAction), not a rule: the default domain is never deleted.
STATE_FORBIDDEN = {("DELETE", "/v3/domains/{id}")}
# Routes whose owners are not the path's kind's: a domain is read by whoever
# holds a token on one of its projects (all but the unscoped); an application
# credential is made only by its user, from a token on a project (Keystone's:
# not even an admin makes one for another user).
ROUTE_OWNERS = {("GET", "/v3/domains/{id}"): {"admin", "member", "reader", "other"},
                ("POST", "/v3/users/{id}/application_credentials"): {"member", "unscoped"}}
OWNERS = {"project": {"admin", "member", "reader"}, "user": {"admin", "member", "unscoped"}}


def _fill(prefix: str, path: str, ids: dict[str, str], t: Tenants) -> tuple[str, bool]:
    """``path`` with A's resources in its parameters; and whether it names one
    of A's own (private) resources."""
    by_collection = {"networks": "network", "subnets": "subnet", "ports": "port",
                     "security-groups": "sg", "security-group-rules": "sg_rule",
                     "routers": "router", "floatingips": "floatingip",
                     "subnetpools": "subnetpool", "agents": "agent"}
    private = False

    def value(match: re.Match[str]) -> str:
        nonlocal private
        name = match.group(1).split(":")[0]
        collection = path.split("/")[2] if prefix in ("/network", "/identity") else ""
        shared = {"flavor_id", "service_id", "hypervisor_id", "pattern", "target", "rid",
                  "aggregate_id", "host_name", "before_timestamp", "class_name", "alias",
                  "path", "version", "host", "action", "namespace", "task_id"}
        if name == "id" and collection in ("roles", "groups", "regions", "services",
                                           "endpoints", "policies"):
            shared.add("id")
        shared.update({"gid", "prior", "implied"})
        if path.startswith("/v2.1/flavors/"):
            shared.add("key")  # a public flavor's extra spec
        if path.endswith("/defaults"):
            shared.add("project_id")  # the cloud's defaults, whoever asks
        if path.startswith("/v2/metadefs/"):
            shared.add("name")  # an item of the public namespace a-ns
        private = private or name not in shared
        if name == "id":
            return {"projects": t.project["demo"], "users": t.user["demo"],
                    "roles": ids["reader_role"], "domains": "default", "groups": ids["id_group"],
                    "regions": ids["id_region"], "services": ids["id_service"],
                    "endpoints": ids["id_endpoint"], "policies": ids["id_policy"],
                    "credentials": ids["own_credential"]}.get(
                collection) or ids[by_collection[collection]]
        return {"server_id": ids["server"], "flavor_id": ids["flavor"], "key": "k",
                "name": "a-key", "group_id": ids["group"], "service_id": ids["service"],
                "hypervisor_id": ids["hypervisor"], "pattern": "compute", "project_id": t.project["demo"],
                "request_id": ids["request"], "port_id": ids["server_port"],
                "image_id": ids["image"], "tag": "t", "member": t.project["other"],
                "network_label": "a-net",
                "target": "projects", "tid": t.project["demo"], "uid": t.user["alice"],
                "rid": ids["reader_role"], "aggregate_id": ids["aggregate"],
                "tenant_id": t.project["demo"], "console_token": "no-such-token",
                "migration_id": "1", "host_name": ids["host"],
                "before_timestamp": "2026-01-02 03:04:05", "security_group_id": ids["sg"],
                "rule_id": ids["sg_rule"], "network_id": ids["network"],
                "class_name": "matrix-class", "volume_id": ids.get("volume", ""),
                "snapshot_id": ids.get("snapshot", ""), "type_id": ids.get("volume_type", ""),
                "attachment_id": ids.get("attachment", ""), "encryption_id": "e",
                "target_project_id": t.project["demo"], "message_id": "no-such-message",
                "host": "cirrus@file", "action": "enable", "transfer_id": ids.get("transfer", ""),
                "qos_id": ids.get("qos", ""), "group_type_id": ids.get("group_type", ""),
                "alias": "quotas" if prefix == "/network" else "os-consoles",
                "path": "openstack/latest/meta_data.json", "version": "latest",
                "namespace": "a-ns", "task_id": "00000000-0000-4000-8000-00000000fa5c",
                "gid": ids["id_group"], "cid": ids["own_app_cred"], "prior": ids["id_prior"],
                "implied": ids["id_implied"]}[name]
    return re.sub(r"\{([^}]+)\}", value, path), private


def _body(prefix: str, method: str, path: str, ids: dict[str, str]) -> dict[str, Any]:
    """Request arguments a well-formed call would carry."""
    json_bodies: dict[tuple[str, str], Any] = {
        ("POST", "/v2.1/servers"): server_body(ids["image"], networks=[{"uuid": ids["network"]}]),
        ("POST", "/v2.1/servers/{server_id}/action"): {"os-getConsoleOutput": {"length": 5}},
        ("POST", "/v2.1/servers/{server_id}/migrations/{migration_id}/action"): {
            "force_complete": None},
        ("POST", "/v2.1/servers/{server_id}/metadata"): {"metadata": {"k2": "v"}},
        ("POST", "/v2.1/servers/{server_id}/remote-consoles"): {"remote_console": {
            "protocol": "serial", "type": "serial"}},
        ("PUT", "/v2.1/servers/{server_id}/metadata"): {"metadata": {"k": "v"}},
        ("PUT", "/v2.1/servers/{server_id}/metadata/{key}"): {"meta": {"k": "v2"}},
        ("PUT", "/v2.1/servers/{server_id}"): {"server": {"name": "a-vm-renamed"}},
        ("POST", "/v2.1/servers/{server_id}/os-interface"): {"interfaceAttachment": {
            "net_id": ids["network"]}},
        ("POST", "/v2.1/servers/{server_id}/os-volume_attachments"): {"volumeAttachment": {
            "volumeId": NO_SUCH_VOLUME}},
        ("POST", "/v2.1/os-volumes"): {"volume": {"size": 1}},
        ("POST", "/v2.1/os-assisted-volume-snapshots"): {"snapshot": {
            "volume_id": ids["volume"], "create_info": {"snapshot_id": ids["snapshot"],
                                                        "type": "qcow2", "new_file": "f"}}},
        ("POST", "/v2.1/os-snapshots"): {"snapshot": {"volume_id": ids["volume"], "force": True}},
        ("POST", "/v2.1/flavors"): {"flavor": {"name": "f2", "ram": 64, "vcpus": 1, "disk": 1}},
        ("PUT", "/v2.1/flavors/{flavor_id}"): {"flavor": {"description": "d"}},
        ("POST", "/v2.1/flavors/{flavor_id}/os-extra_specs"): {"extra_specs": {"k": "v"}},
        ("PUT", "/v2.1/flavors/{flavor_id}/os-extra_specs/{key}"): {"k": "v"},
        ("POST", "/v2.1/flavors/{flavor_id}/action"): {"addTenantAccess": {"tenant": "p"}},
        ("POST", "/v2.1/os-aggregates"): {"aggregate": {"name": "agg2"}},
        ("PUT", "/v2.1/os-aggregates/{aggregate_id}"): {"aggregate": {"name": "agg3"}},
        ("POST", "/v2.1/os-aggregates/{aggregate_id}/action"): {"set_metadata": {
            "metadata": {"k": "v"}}},
        ("POST", "/v2.1/os-keypairs"): {"keypair": {"name": "k2"}},
        ("POST", "/v2.1/images/{image_id}/metadata"): {"metadata": {"k": "v"}},
        ("PUT", "/v2.1/images/{image_id}/metadata"): {"metadata": {"k": "v"}},
        ("PUT", "/v2.1/images/{image_id}/metadata/{key}"): {"meta": {"k": "v"}},
        ("POST", "/v2.1/os-server-groups"): {"server_group": {"name": "g", "policies": ["affinity"]}},
        ("POST", "/v2.1/os-security-groups"): {"security_group": {"name": "sg4", "description": ""}},
        ("PUT", "/v2.1/os-security-groups/{security_group_id}"): {"security_group": {
            "name": "a-sg", "description": "d"}},
        ("POST", "/v2.1/os-security-group-rules"): {"security_group_rule": {
            "parent_group_id": ids["sg"], "ip_protocol": "tcp", "from_port": 80, "to_port": 80}},
        ("PUT", "/v2.1/os-services/{service_id}"): {"status": "enabled"},
        ("PUT", "/v2.1/os-hosts/{host_name}"): {"status": "enable"},
        ("PUT", "/v2.1/os-quota-sets/{project_id}"): {"quota_set": {"instances": 20}},
        ("PUT", "/v2.1/os-quota-class-sets/{class_name}"): {"quota_class_set": {"instances": 20}},
        ("POST", "/v2.1/os-server-external-events"): {"events": [{
            "name": "network-changed", "server_uuid": ids["server"]}]},
        ("POST", "/v2.0/networks"): {"network": {"name": "n2"}},
        ("PUT", "/v2.0/networks/{id}"): {"network": {"name": "n3"}},
        ("POST", "/v2.0/subnets"): {"subnet": {"network_id": ids["network"],
                                               "cidr": "10.10.0.0/24", "ip_version": 4}},
        ("PUT", "/v2.0/subnets/{id}"): {"subnet": {"name": "s3"}},
        ("POST", "/v2.0/ports"): {"port": {"network_id": ids["network"]}},
        ("PUT", "/v2.0/ports/{id}"): {"port": {"name": "p3"}},
        ("POST", "/v2.0/security-groups"): {"security_group": {"name": "sg2"}},
        ("PUT", "/v2.0/security-groups/{id}"): {"security_group": {"name": "sg3"}},
        ("POST", "/v2.0/security-group-rules"): {"security_group_rule": {
            "security_group_id": ids["sg"], "direction": "egress"}},
        ("PUT", "/v2.0/quotas/{project_id}"): {"quota": {"port": 600}},
        ("POST", "/v2.0/routers"): {"router": {"name": "r2"}},
        ("PUT", "/v2.0/routers/{id}"): {"router": {"name": "r3"}},
        ("PUT", "/v2.0/routers/{id}/add_router_interface"): {"subnet_id": ids["subnet"]},
        ("PUT", "/v2.0/routers/{id}/remove_router_interface"): {"subnet_id": ids["subnet"]},
        ("PUT", "/v2.0/routers/{id}/add_extraroutes"): {"router": {"routes": []}},
        ("PUT", "/v2.0/routers/{id}/remove_extraroutes"): {"router": {"routes": []}},
        ("POST", "/v2.0/floatingips"): {"floatingip": {"floating_network_id": ids["external"]}},
        ("PUT", "/v2.0/floatingips/{id}"): {"floatingip": {"description": "f3"}},
        ("POST", "/v2.0/subnetpools"): {"subnetpool": {"name": "sp2", "prefixes": ["10.111.0.0/16"]}},
        ("PUT", "/v2.0/subnetpools/{id}"): {"subnetpool": {"name": "sp3"}},
        ("PUT", "/v2.0/agents/{id}"): {"agent": {"description": "d"}},
        ("POST", "/v2/images"): {"name": "i2", "disk_format": "raw", "container_format": "bare"},
        ("POST", "/v2/images/{image_id}/members"): {"member": "0" * 32},
        ("PUT", "/v2/images/{image_id}/members/{member}"): {"status": "accepted"},
        **_image_bodies(),
        ("POST", "/v3/projects"): {"project": {"name": "p2", "domain_id": "default"}},
        ("PATCH", "/v3/projects/{id}"): {"project": {"description": "d"}},
        ("POST", "/v3/users"): {"user": {"name": "u2", "password": "u2"}},
        ("PATCH", "/v3/users/{id}"): {"user": {"email": "a@b.c"}},
        ("POST", "/v3/roles"): {"role": {"name": "r2"}},
        **_volume_bodies(ids),
        ("PATCH", "/v3/roles/{id}"): {"role": {"name": "reader"}},
        **_identity_bodies(ids),
    }
    if prefix == "/compute" and path.startswith("/v2.1/servers/{server_id}/tags"):
        tagged = {"headers": {"OpenStack-API-Version": "compute 2.26"}}  # tags are 2.26's
        return {**tagged, "json": {"tags": ["t"]}} if path.endswith("/tags") and method == "PUT" \
            else tagged
    if prefix == "/volume" and any(part in path for part in (
            "/attachments", "/volume-transfers", "/group_types")):
        args = {"json": json_bodies[(method, path)]} if (method, path) in json_bodies else {}
        return {**args, "headers": VOLUME_344}
    if prefix == "/network" and path.endswith("/{id}/tags") and method in ("PUT", "POST"):
        return {"json": {"tags": ["t"]}}  # a resource's whole tag list
    if (method, path) == ("PATCH", "/v2/images/{image_id}"):
        return {"json": [{"op": "replace", "path": "/name", "value": "x"}],
                "headers": {"Content-Type": "application/openstack-images-v2.1-json-patch"}}
    if (method, path) in (("PUT", "/v2/images/{image_id}/file"),
                          ("PUT", "/v2/images/{image_id}/stage")):
        return {"content": b"y" * 16, "headers": {"Content-Type": "application/octet-stream"}}
    if (method, path) == ("POST", "/openstack/{version}/password"):  # the guest's, raw
        return {"content": b"encrypted"}
    if (method, path) == ("POST", "/v3/auth/tokens"):
        return {"json": {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "alice", "domain": {"id": "default"}, "password": "alice"}}}}}}
    if (method, path) in json_bodies:
        return {"json": json_bodies[(method, path)]}
    assert method in ("GET", "DELETE", "PUT"), f"no body for {method} {prefix}{path}"
    return {}


def _image_bodies() -> dict[tuple[str, str], Any]:
    """Image actions, import, tasks and metadefs (the namespace ``a-ns``)."""
    i, ns = "/v2/images/{image_id}", "/v2/metadefs/namespaces/{namespace}"
    prop = {"name": "a-key", "title": "k", "type": "string"}
    return {
        ("POST", f"{i}/actions/deactivate"): {}, ("POST", f"{i}/actions/reactivate"): {},
        ("POST", f"{i}/import"): {"method": {"name": "glance-direct"}},
        ("POST", "/v2/tasks"): {"type": "import", "input": {"import_from": "http://x/y"}},
        ("POST", "/v2/metadefs/namespaces"): {"namespace": "a-ns2"},
        ("PUT", ns): {"namespace": "a-ns", "visibility": "public"},
        ("POST", f"{ns}/tags"): {"tags": [{"name": "a-key"}]},
        ("POST", f"{ns}/tags/{{name}}"): {}, ("PUT", f"{ns}/tags/{{name}}"): {"name": "a-key"},
        ("POST", f"{ns}/objects"): {"name": "o2"},
        ("PUT", f"{ns}/objects/{{name}}"): {"name": "a-key"},
        ("POST", f"{ns}/properties"): {**prop, "name": "p2"},
        ("PUT", f"{ns}/properties/{{name}}"): prop,
        ("POST", f"{ns}/resource_types"): {"name": "OS::Nova::Flavor"},
    }


def _identity_bodies(ids: dict[str, str]) -> dict[tuple[str, str], Any]:
    """Well-formed identity bodies; a credential's names no user (a 400 for
    everyone: whose it is is the owner rules' business, tested in
    tests/functional/test_identity_credentials.py)."""
    return {
        ("POST", "/v3/domains"): {"domain": {"name": "d2"}},
        ("PATCH", "/v3/domains/{id}"): {"domain": {"description": "d"}},
        ("POST", "/v3/groups"): {"group": {"name": "g2"}},
        ("PATCH", "/v3/groups/{id}"): {"group": {"description": "d"}},
        ("POST", "/v3/regions"): {"region": {"description": "r2"}},
        ("PUT", "/v3/regions/{id}"): {"region": {"description": "r3"}},
        ("PATCH", "/v3/regions/{id}"): {"region": {"description": "d"}},
        ("POST", "/v3/services"): {"service": {"type": "t2"}},
        ("PATCH", "/v3/services/{id}"): {"service": {"description": "d"}},
        ("POST", "/v3/endpoints"): {"endpoint": {"service_id": ids["id_service"],
                                                 "interface": "admin", "url": "http://e2"}},
        ("PATCH", "/v3/endpoints/{id}"): {"endpoint": {"enabled": False}},
        ("POST", "/v3/policies"): {"policy": {"type": "t2", "blob": "{}"}},
        ("PATCH", "/v3/policies/{id}"): {"policy": {"blob": "{}"}},
        ("PUT", "/v3/projects/{id}/tags"): {"tags": ["t"]},
        ("POST", "/v3/credentials"): {"credential": {"type": "totp", "blob": "b"}},
        ("PATCH", "/v3/credentials/{id}"): {"credential": {"blob": "b2"}},
        ("POST", "/v3/users/{id}/application_credentials"): {"application_credential": {
            "name": "a-app2"}},
        ("POST", "/v3/users/{id}/password"): {"user": {"original_password": "wrong",
                                                        "password": "new"}},
    }


def _volume_bodies(ids: dict[str, str]) -> dict[tuple[str, str], Any]:
    p = "/v3/{project_id}"
    v, s, t = f"{p}/volumes/{{volume_id}}", f"{p}/snapshots/{{snapshot_id}}", f"{p}/types/{{type_id}}"
    return {
        ("POST", f"{p}/volumes"): {"volume": {"size": 1}},
        ("PUT", v): {"volume": {"name": "a-volume-renamed"}},
        ("POST", f"{v}/action"): {"os-set_bootable": {"bootable": True}},
        ("POST", f"{v}/metadata"): {"metadata": {"k2": "v"}},
        ("PUT", f"{v}/metadata"): {"metadata": {"k": "v"}},
        ("PUT", f"{v}/metadata/{{key}}"): {"meta": {"k": "v2"}},
        ("POST", f"{p}/snapshots"): {"snapshot": {"volume_id": ids["volume"], "force": True}},
        ("PUT", s): {"snapshot": {"name": "s2"}},
        ("POST", f"{s}/action"): {"os-update_snapshot_status": {"status": "available"}},
        ("POST", f"{s}/metadata"): {"metadata": {"k2": "v"}},
        ("PUT", f"{s}/metadata"): {"metadata": {"k": "v"}},
        ("PUT", f"{s}/metadata/{{key}}"): {"meta": {"k": "v2"}},
        ("POST", f"{p}/types"): {"volume_type": {"name": "t2"}},
        ("PUT", t): {"volume_type": {"description": "d"}},
        ("POST", f"{t}/extra_specs"): {"extra_specs": {"k": "v"}},
        ("POST", f"{t}/encryption"): {"encryption": {"provider": "luks",
                                                     "control_location": "front-end"}},
        ("PUT", f"{t}/encryption/{{encryption_id}}"): {"encryption": {"key_size": 256}},
        ("PUT", f"{t}/extra_specs/{{key}}"): {"k": "v"},
        ("POST", f"{t}/action"): {"addProjectAccess": {"project": "0" * 32}},
        ("POST", f"{p}/attachments"): {"attachment": {"volume_uuid": ids["volume"],
                                                      "instance_uuid": ids["server"]}},
        ("PUT", f"{p}/attachments/{{attachment_id}}"): {"attachment": {"connector": {
            "host": "h"}}},
        ("POST", f"{p}/attachments/{{attachment_id}}/action"): {"os-complete": None},
        ("PUT", f"{p}/os-quota-sets/{{target_project_id}}"): {"quota_set": {"volumes": 20}},
        ("PUT", f"{p}/os-services/{{action}}"): {"host": "cirrus@file", "binary": "cinder-volume"},
        ("POST", f"{p}/qos-specs"): {"qos_specs": {"name": "q2"}},
        ("POST", f"{p}/group_types"): {"group_type": {"name": "g2"}},
        ("PUT", f"{p}/group_types/{{group_type_id}}"): {"group_type": {"description": "d"}},
        ("POST", f"{p}/group_types/{{group_type_id}}/group_specs"): {"group_specs": {"k": "v"}},
        ("PUT", f"{p}/group_types/{{group_type_id}}/group_specs/{{key}}"): {"k": "v2"},
        ("PUT", f"{p}/qos-specs/{{qos_id}}"): {"qos_specs": {"k": "v"}},
        ("PUT", f"{p}/qos-specs/{{qos_id}}/delete_keys"): {"keys": ["k"]},
        **{(method, f"{p}/{coll}{tail}"): body for coll in ("os-volume-transfer", "volume-transfers")
           for method, tail, body in (
               ("POST", "", {"transfer": {"volume_id": ids["volume"]}}),
               ("POST", "/{transfer_id}/accept", {"accept": {"auth_key": "0" * 16}}))},
        ("PUT", f"{p}/os-quota-class-sets/{{class_name}}"): {"quota_class_set": {"volumes": 10}},
    }


async def _send(client: httpx.AsyncClient, method: str, url: str, token: str,
                args: dict[str, Any]) -> httpx.Response:
    headers = {"X-Subject-Token": token, **args.get("headers", {})}
    kw = {k: v for k, v in args.items() if k != "headers"}
    return await client.request(method, url, headers=headers, **kw)


async def _snapshot(t: Tenants, ids: dict[str, str]) -> dict[str, Any]:
    """What the admin sees of A's things (timestamps included: a change shows)."""
    out = {}
    for url in (f"/compute/v2.1/servers/{ids['server']}", f"/compute/v2.1/servers/{ids['server']}/metadata",
                f"/network/v2.0/networks/{ids['network']}", f"/network/v2.0/subnets/{ids['subnet']}",
                f"/network/v2.0/ports/{ids['port']}", f"/network/v2.0/security-groups/{ids['sg']}",
                f"/image/v2/images/{ids['image']}", f"/compute/v2.1/os-server-groups/{ids['group']}",
                f"/compute/v2.1/os-quota-sets/{t.project['demo']}", "/compute/v2.1/flavors/matrix",
                f"/identity/v3/users/{t.user['demo']}", f"/identity/v3/projects/{t.project['demo']}",
                f"/volume/v3/{t.project['demo']}/volumes/{ids['volume']}",
                f"/volume/v3/{t.project['demo']}/snapshots/{ids['snapshot']}"):
        resp = await t.admin.get(url, headers={"OpenStack-API-Version": "compute 2.90"})
        assert resp.status_code == 200, (url, resp.text)
        out[url] = resp.json()
    return out


async def test_every_route_answers_each_persona_by_its_rule(cloud: Any, tenants: Tenants) -> None:
    t = tenants
    ids = await _a_resources(t)
    await cloud.db.run(agents.report, agents.Agent("matrix-host"))  # a network host's agents
    ids["agent"] = agents.agent_id("matrix-host", agents.L3)
    private_ids = [v for k, v in ids.items() if k not in ("flavor", "service", "hypervisor",
                                                          "reader_role", "aggregate", "external",
                                                          "volume_type", "qos", "group_type")
                   and not k.startswith(("id_", "own_"))]  # the admin's, the demo user's
    routes = app_routes(cloud.app)
    assert len(routes) > 100
    failures: list[str] = []
    before = None
    for persona in ORDER:
        if persona == "member":  # every denied persona has tried everything by now
            assert await _snapshot(t, ids) == before, "a refused request changed A's resources"
        elif before is None:
            before = await _snapshot(t, ids)
        client = t.clients[persona]
        for prefix, method, path in routes:
            rule = policies.rule_for(prefix, method, path)
            assert rule is not None
            url, names_a = _fill(prefix, path, ids, t)
            args = _body(prefix, method, path, ids)
            subject = t.tokens[persona]
            if (method, path) == ("DELETE", "/v3/auth/tokens"):  # not the one in use
                subject = await t.issue(*t.creds[persona])
            resp = await _send(client, method, prefix + url, subject, args)
            where = f"{persona} {method} {prefix}{path} ({rule.name}, {rule.level.name})"
            code = resp.status_code
            if code >= 500 and not (code == 501 and path in NOT_IMPLEMENTED):
                failures.append(f"{where}: {code} {resp.text[:200]}")
            elif (method, path) in PASSWORD_CHECKED:
                if code != 401:
                    failures.append(f"{where}: a wrong password, expected 401, got {code}")
            elif (method, path) in STATE_FORBIDDEN and persona == "admin":
                if code != 403:
                    failures.append(f"{where}: expected the state's 403, got {code}")
            elif persona not in REACHES[rule.level]:
                # A server's path is located before its rule (Nova finds the
                # server first): one the caller cannot see, or that an earlier
                # request of the run deleted, is a 404 before an admin rule's 403.
                located = prefix == "/compute" and path.startswith("/v2.1/servers/{server_id}/")
                if code != 403 and not (located and code == 404):
                    failures.append(f"{where}: expected 403, got {code} {resp.text[:200]}")
            elif names_a and persona not in ROUTE_OWNERS.get((method, path), OWNERS[
                    "user" if path in USER_OWNED else "project"]):
                if code not in (403, 404):
                    failures.append(f"{where}: not theirs, expected 403/404, got {code}")
            elif code in (401, 403):
                failures.append(f"{where}: allowed by its rule, got {code} {resp.text[:200]}")
            if persona in ("other", "norole", "unscoped") and code < 300:
                leaked = [i for i in private_ids if i in resp.text]
                if leaked:
                    failures.append(f"{where}: answer shows A's ids {leaked}")
    assert not failures, "\n".join(failures)


def test_writes_need_a_member_unless_listed() -> None:
    """Reading is the most a reader may do: a write route below member must be
    one of the few listed (and justified) in WRITES_BELOW_MEMBER."""
    loose = {(prefix, method, path) for prefix, table in policies.TABLES.items()
             for (method, path), rule in table.items()
             if method != "GET" and rule.level < Level.MEMBER}
    assert loose == WRITES_BELOW_MEMBER


def test_a_route_without_a_rule_stops_the_app() -> None:
    async def handler(request: Any) -> Any:
        raise AssertionError("never served")
    with pytest.raises(MissingRule, match="PUT /compute/v2.1/servers/{server_id}/nothing"):
        guard_routes("/compute", [Route("/v2.1/servers/{server_id}/nothing", handler, methods=["PUT"])])


def test_every_ruled_route_exists(cloud: Any) -> None:
    """No stale rules: each table entry names a route the app serves."""
    served = set(app_routes(cloud.app))
    ruled = {(prefix, method, path) for prefix, table in policies.TABLES.items()
             for (method, path) in table}
    assert ruled - served == set()


def test_rule_levels_cover_the_personas() -> None:
    assert isinstance(Rule("x", Level.READER).level, Level)
    assert REACHES[Level.MEMBER] < REACHES[Level.READER] < REACHES[Level.AUTHENTICATED]
