"""Fresh resources of each kind, made through the API for one request (the
resource a DELETE removes, a free port to boot on, a token to revoke)."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from cirrus.network import agents as network_agents
from tests.fuzz.bodies import PUBLIC_KEY

if TYPE_CHECKING:
    from tests.fuzz.world import World

Factory = Callable[["World"], Awaitable[str]]


class SetupError(RuntimeError):
    """A resource the fuzz needs could not be made: not a finding (an earlier
    request changed the world, or the world could not be built)."""


async def _project(w: World) -> str:
    n = w.next_serial()
    body = {"project": {"name": f"fz-project-{n}", "domain_id": "default"}}
    return (await w.call("admin", "POST", "/identity/v3/projects", body))["project"]["id"]


async def _user(w: World) -> str:
    n = w.next_serial()
    body = {"user": {"name": f"fz-user-{n}", "password": "fz", "domain_id": "default"}}
    return (await w.call("admin", "POST", "/identity/v3/users", body))["user"]["id"]


async def _role(w: World) -> str:
    body = {"role": {"name": f"fz-role-{w.next_serial()}"}}
    return (await w.call("admin", "POST", "/identity/v3/roles", body))["role"]["id"]


async def _granted_role(w: World) -> str:
    role = await _role(w)
    await w.grant(role)
    return role


async def _server(w: World) -> str:
    body = {"server": {"name": f"fz-del-{w.next_serial()}", "imageRef": w.seeds["boot_image"],
                       "flavorRef": "1", "networks": "none"}}
    return (await w.call("member", "POST", "/compute/v2.1/servers", body))["server"]["id"]


async def _flavor(w: World) -> str:
    n = w.next_serial()
    body = {"flavor": {"name": f"fz-flavor-{n}", "id": f"fz-seed-{n}", "ram": 512, "vcpus": 1,
                       "disk": 1}}
    return (await w.call("admin", "POST", "/compute/v2.1/flavors", body))["flavor"]["id"]


async def _aggregate(w: World) -> str:
    # No zone: its hosts may then come and go whatever instances they hold.
    body = {"aggregate": {"name": f"fz-agg-{w.next_serial()}"}}
    return str((await w.call("admin", "POST", "/compute/v2.1/os-aggregates", body))["aggregate"]["id"])


async def _extra_spec(w: World) -> str:
    key = f"fz:spec{w.next_serial()}"
    await w.call("admin", "PUT", f"/compute/v2.1/flavors/{w.seeds['flavor']}/os-extra_specs/{key}",
                 {key: "1"})
    return key


async def _image_meta_key(w: World) -> str:
    key = f"fz-{w.next_serial()}"
    await w.call("member", "POST", f"/compute/v2.1/images/{w.seeds['image']}/metadata",
                 {"metadata": {key: "v"}})
    return key


async def _keypair(w: World) -> str:
    body = {"keypair": {"name": f"fz-key-{w.next_serial()}", "public_key": PUBLIC_KEY}}
    return (await w.call("member", "POST", "/compute/v2.1/os-keypairs", body))["keypair"]["name"]


async def _server_group(w: World) -> str:
    body = {"server_group": {"name": "fz-group", "policies": ["anti-affinity"]}}
    return (await w.call("member", "POST", "/compute/v2.1/os-server-groups", body))["server_group"]["id"]


async def _meta_key(w: World) -> str:
    key = f"fz-{w.next_serial()}"
    await w.call("member", "POST", f"/compute/v2.1/servers/{w.seeds['server']}/metadata",
                 {"metadata": {key: "v"}})
    return key


async def _server_tag(w: World) -> str:
    tag = f"fz-stag-{w.next_serial()}"
    await w.call("member", "PUT", f"/compute/v2.1/servers/{w.seeds['server']}/tags/{tag}",
                 headers={"OpenStack-API-Version": "compute 2.26"})
    return tag


async def _attached_port(w: World) -> str:
    body = {"interfaceAttachment": {"net_id": w.seeds["network"]}}
    made = await w.call("member", "POST", f"/compute/v2.1/servers/{w.seeds['server']}/os-interface",
                        body)
    return made["interfaceAttachment"]["port_id"]


async def _available_volume(w: World) -> str:
    """A new volume of the member's, once ``available`` (a new volume is
    ``creating`` until its file exists): one a server can attach."""
    volume_id = await _volume(w)
    for _ in range(500):
        shown = await w.call("member", "GET", f"{_volume_base(w)}/volumes/{volume_id}")
        if shown["volume"]["status"] == "available":
            return volume_id
        await asyncio.sleep(0.01)
    raise SetupError(f"volume {volume_id} did not become available")


async def _attached_volume(w: World) -> str:
    """A volume attached to the seed server (the attach is cast: its mapping
    exists when the POST answers)."""
    volume_id = await _available_volume(w)
    await w.call("member", "POST",
                 f"/compute/v2.1/servers/{w.seeds['server']}/os-volume_attachments",
                 {"volumeAttachment": {"volumeId": volume_id}})
    return volume_id


async def _network(w: World) -> str:
    body = {"network": {"name": f"fz-net-{w.next_serial()}"}}
    return (await w.call("member", "POST", "/network/v2.0/networks", body))["network"]["id"]


async def _subnet(w: World) -> str:
    n = w.next_serial()
    body = {"subnet": {"network_id": w.seeds["network"], "ip_version": 4,
                       "cidr": f"172.{n % 250 + 1}.{(n // 250) % 250 + 1}.0/24"}}
    return (await w.call("member", "POST", "/network/v2.0/subnets", body))["subnet"]["id"]


async def _port(w: World) -> str:
    body = {"port": {"network_id": w.seeds["network"], "name": f"fz-port-{w.next_serial()}"}}
    return (await w.call("member", "POST", "/network/v2.0/ports", body))["port"]["id"]


async def _security_group(w: World) -> str:
    body = {"security_group": {"name": f"fz-sg-{w.next_serial()}"}}
    made = await w.call("member", "POST", "/network/v2.0/security-groups", body)
    return made["security_group"]["id"]


async def _security_group_rule(w: World) -> str:
    n = w.next_serial()
    body = {"security_group_rule": {
        "security_group_id": w.seeds["security_group"], "direction": "ingress",
        "protocol": "tcp", "port_range_min": 22, "port_range_max": 22,
        "remote_ip_prefix": f"192.{n % 250 + 1}.{(n // 250) % 250 + 1}.0/24"}}
    made = await w.call("member", "POST", "/network/v2.0/security-group-rules", body)
    return made["security_group_rule"]["id"]


async def _router(w: World) -> str:
    body = {"router": {"name": f"fz-router-{w.next_serial()}"}}
    return (await w.call("member", "POST", "/network/v2.0/routers", body))["router"]["id"]


async def _floatingip(w: World) -> str:
    body = {"floatingip": {"floating_network_id": w.seeds["external_network"]}}
    made = await w.call("member", "POST", "/network/v2.0/floatingips", body)
    return made["floatingip"]["id"]


async def _subnetpool(w: World) -> str:
    n = w.next_serial()
    body = {"subnetpool": {"name": f"fz-pool-{n}", "default_prefixlen": 24,
                           "prefixes": [f"10.{128 + n % 100}.0.0/16"]}}
    return (await w.call("member", "POST", "/network/v2.0/subnetpools", body))["subnetpool"]["id"]


async def _agent(w: World) -> str:
    """A network agent: with the fake driver no host reports any, so one
    reports here as a host's network service would."""
    agents = (await w.call("admin", "GET", "/network/v2.0/agents"))["agents"]
    if not agents:
        assert w.cloud is not None and w.cloud.db is not None
        await w.cloud.db.run(network_agents.report, network_agents.Agent(host="fz-net-host"))
        agents = (await w.call("admin", "GET", "/network/v2.0/agents"))["agents"]
    if not agents:
        raise SetupError("no network agent listed after a host reported")
    return str(agents[0]["id"])


async def _free_subnet(w: World) -> str:
    """A subnet on a network of its own, in a range no other fuzz subnet has
    (the seed router takes each as an interface, and refuses overlaps)."""
    n = w.next_serial()
    net = await _network(w)
    body = {"subnet": {"network_id": net, "ip_version": 4,
                       "cidr": f"100.{64 + (n // 250) % 64}.{n % 250}.0/24"}}
    return (await w.call("member", "POST", "/network/v2.0/subnets", body))["subnet"]["id"]


async def _attached_subnet(w: World) -> str:
    """A free subnet the seed router has an interface on."""
    subnet = await _free_subnet(w)
    await w.call("member", "PUT", f"/network/v2.0/routers/{w.seeds['router']}/"
                 "add_router_interface", {"subnet_id": subnet})
    return subnet


async def _image(w: World) -> str:
    return await w.make_image(f"fz-image-{w.next_serial()}", upload=False)


async def _tag(w: World) -> str:
    tag = f"fz-tag-{w.next_serial()}"
    await w.call("member", "PUT", f"/image/v2/images/{w.seeds['image']}/tags/{tag}")
    return tag


def _network_tag(kind: str, collection: str) -> Factory:
    """A new tag on the seed resource of ``kind`` (its tags' routes use the seed)."""
    async def make(w: World) -> str:
        tag = f"fz-ntag-{w.next_serial()}"
        await w.call("member", "PUT", f"/network/v2.0/{collection}/{w.seeds[kind]}/tags/{tag}")
        return tag
    return make


async def _member(w: World) -> str:
    await w.call("member", "POST", f"/image/v2/images/{w.seeds['image']}/members",
                 {"member": w.seeds["other_project"]}, ok=(409,))
    return w.seeds["other_project"]


async def _spare_service(w: World) -> str:
    return w.seeds["spare_service"]  # a compute service can only be deleted once


async def _token(w: World) -> str:
    assert w.client is not None
    body = {"auth": {"identity": {"methods": ["token"], "token": {"id": w.tokens["member"]}},
                     "scope": {"project": {"id": w.seeds["demo_project"]}}}}
    resp = await w.client.post("/identity/v3/auth/tokens", json=body)
    if resp.status_code != 201:
        raise SetupError(f"token: {resp.status_code} {resp.text[:500]}")
    return resp.headers["X-Subject-Token"]


async def _admin_made(w: World, collection: str, key: str, body: dict[str, object]) -> str:
    return (await w.call("admin", "POST", f"/identity/v3/{collection}", {key: body}))[key]["id"]


async def _domain(w: World) -> str:
    """A disabled domain: one that may be deleted."""
    body = {"name": f"fz-domain-{w.next_serial()}", "enabled": False}
    return await _admin_made(w, "domains", "domain", body)


async def _group(w: World) -> str:
    return await _admin_made(w, "groups", "group", {"name": f"fz-group-{w.next_serial()}"})


async def _group_member(w: World) -> str:
    user = await _user(w)
    await w.call("admin", "PUT", f"/identity/v3/groups/{w.seeds['group']}/users/{user}")
    return user


async def _region(w: World) -> str:
    return await _admin_made(w, "regions", "region", {"id": f"fz-region-{w.next_serial()}"})


async def _new_region_id(w: World) -> str:
    return f"fz-new-region-{w.next_serial()}"


async def _catalog_service(w: World) -> str:
    return await _admin_made(w, "services", "service", {"type": "fz-type", "name": "fz"})


async def _catalog_endpoint(w: World) -> str:
    return await _admin_made(w, "endpoints", "endpoint", {
        "service_id": w.seeds["catalog_service"], "interface": "public",
        "url": "http://fz.example"})


async def _policy_blob(w: World) -> str:
    return await _admin_made(w, "policies", "policy", {"type": "application/json", "blob": "{}"})


async def _credential(w: World) -> str:
    body = {"credential": {"user_id": w.seeds["demo_user"], "type": "totp", "blob": "fz"}}
    return (await w.call("member", "POST", "/identity/v3/credentials", body))["credential"]["id"]


async def _app_credential(w: World) -> str:
    body = {"application_credential": {"name": f"fz-app-{w.next_serial()}"}}
    path = f"/identity/v3/users/{w.seeds['demo_user']}/application_credentials"
    return (await w.call("member", "POST", path, body))["application_credential"]["id"]


async def _password_user(w: World) -> str:
    return await _user(w)  # its password is "fz"


async def _implied_role(w: World) -> str:
    """A role the seed role implies."""
    role = await _role(w)
    await w.call("admin", "PUT", f"/identity/v3/roles/{w.seeds['role']}/implies/{role}")
    return role


async def _project_tag(w: World) -> str:
    tag = f"fz-tag-{w.next_serial()}"
    await w.call("admin", "PUT", f"/identity/v3/projects/{w.seeds['project']}/tags/{tag}")
    return tag


def _granted(path: Callable[[World], str]) -> Factory:
    """A new role granted at ``path(w)`` (…/roles)."""
    async def make(w: World) -> str:
        role = await _role(w)
        await w.call("admin", "PUT", f"{path(w)}/{role}")
        return role
    return make


GRANTS = {
    "group_granted_role": lambda w: f"/identity/v3/projects/{w.seeds['project']}/groups/"
                                    f"{w.seeds['group']}/roles",
    "system_granted_role": lambda w: f"/identity/v3/system/users/{w.seeds['user']}/roles",
    "system_group_granted_role": lambda w: f"/identity/v3/system/groups/{w.seeds['group']}/roles",
}


def _volume_base(w: World) -> str:
    return f"/volume/v3/{w.seeds['demo_project']}"


async def _volume(w: World) -> str:
    body = {"volume": {"size": 1, "name": f"fz-vol-{w.next_serial()}", "metadata": {"k": "v"}}}
    return (await w.call("member", "POST", f"{_volume_base(w)}/volumes", body))["volume"]["id"]


async def _volume_snapshot(w: World) -> str:
    body = {"snapshot": {"volume_id": await _volume(w), "metadata": {"k": "v"}}}
    return (await w.call("member", "POST", f"{_volume_base(w)}/snapshots", body))["snapshot"]["id"]


async def _volume_type(w: World) -> str:
    body = {"volume_type": {"name": f"fz-type-{w.next_serial()}", "extra_specs": {"k": "v"}}}
    return (await w.call("admin", "POST", f"{_volume_base(w)}/types", body))["volume_type"]["id"]


async def _volume_attachment(w: World) -> str:
    body = {"attachment": {"volume_uuid": await _volume(w), "instance_uuid": w.seeds["server"],
                           "connector": {"host": "fz-host"}}}
    return (await w.call("member", "POST", f"{_volume_base(w)}/attachments", body,
                         headers={"OpenStack-API-Version": "volume 3.44"}))["attachment"]["id"]


async def _volume_transfer(w: World) -> str:
    body = {"transfer": {"volume_id": await _volume(w)}}
    return (await w.call("member", "POST", f"{_volume_base(w)}/os-volume-transfer",
                         body))["transfer"]["id"]


async def _volume_qos(w: World) -> str:
    body = {"qos_specs": {"name": f"fz-qos-{w.next_serial()}", "iops": "10"}}
    return (await w.call("admin", "POST", f"{_volume_base(w)}/qos-specs", body))["qos_specs"]["id"]


async def _volume_group_type(w: World) -> str:
    body = {"group_type": {"name": f"fz-gtype-{w.next_serial()}", "group_specs": {"k": "v"}}}
    return (await w.call("admin", "POST", f"{_volume_base(w)}/group_types", body, headers={
        "OpenStack-API-Version": "volume 3.11"}))["group_type"]["id"]


async def _volume_encryption(w: World) -> str:
    return "fz-encryption"  # any id: Cinder finds a type's encryption specs by the type


async def _queued_image(w: World) -> str:
    return await w.make_image(f"fz-queued-{w.next_serial()}", upload=False)


async def _staged_image(w: World) -> str:
    image = await _queued_image(w)
    assert w.client is not None
    resp = await w.client.put(f"/image/v2/images/{image}/stage", content=b"s" * 512, headers={
        "X-Auth-Token": w.tokens["member"], "Content-Type": "application/octet-stream"})
    if resp.status_code != 204:
        raise SetupError(f"image stage: {resp.status_code} {resp.text[:500]}")
    return image


METADEFS = "/image/v2/metadefs/namespaces"


async def _metadef_namespace(w: World) -> str:
    name = f"fz-ns-{w.next_serial()}"
    await w.call("admin", "POST", METADEFS, {"namespace": name, "visibility": "public"})
    return name


def _metadef_item(collection: str, body: Callable[[str], dict[str, object]]) -> Factory:
    """A new item of the seed namespace, named by the factory."""
    async def make(w: World) -> str:
        name = f"fz-{collection}-{w.next_serial()}"
        await w.call("admin", "POST", f"{METADEFS}/{w.seeds['metadef_namespace']}/{collection}",
                     body(name))
        return name
    return make


async def _metadef_tag(w: World) -> str:
    name = f"fz-tags-{w.next_serial()}"
    await w.call("admin", "POST", f"{METADEFS}/{w.seeds['metadef_namespace']}/tags/{name}")
    return name


FACTORIES: dict[str, Factory] = {
    "volume_encryption": _volume_encryption, "plain_volume_type": _volume_type,
    "volume": _volume, "volume_snapshot": _volume_snapshot, "volume_type": _volume_type,
    "volume_attachment": _volume_attachment, "fresh_volume": _volume,
    "volume_transfer": _volume_transfer, "volume_qos": _volume_qos,
    "volume_group_type": _volume_group_type,
    "project": _project, "user": _user, "role": _role, "granted_role": _granted_role,
    "server": _server, "flavor": _flavor, "extra_spec": _extra_spec, "keypair": _keypair,
    "server_group": _server_group, "meta_key": _meta_key, "server_tag": _server_tag,
    "image_meta_key": _image_meta_key, "attached_port": _attached_port,
    "network": _network, "subnet": _subnet, "port": _port, "security_group": _security_group,
    "security_group_rule": _security_group_rule, "image": _image, "tag": _tag,
    "member": _member, "free_port": _port, "fresh_token": _token, "service": _spare_service,
    "aggregate": _aggregate, "attached_volume": _attached_volume,
    "available_volume": _available_volume,
    "router": _router, "floatingip": _floatingip, "subnetpool": _subnetpool, "agent": _agent,
    "free_subnet": _free_subnet, "attached_subnet": _attached_subnet,
    "queued_image": _queued_image, "staged_image": _staged_image,
    "metadef_namespace": _metadef_namespace,
    "metadef_tag": _metadef_tag,
    "metadef_object": _metadef_item("objects", lambda n: {"name": n}),
    "metadef_property": _metadef_item("properties", lambda n: {
        "name": n, "title": n, "type": "string"}),
    "metadef_association": _metadef_item("resource_types", lambda n: {"name": n}),
    "domain": _domain, "group": _group, "group_member": _group_member, "region": _region,
    "new_region_id": _new_region_id, "catalog_service": _catalog_service,
    "catalog_endpoint": _catalog_endpoint, "policy_blob": _policy_blob,
    "credential": _credential, "app_credential": _app_credential,
    "password_user": _password_user, "implied_role": _implied_role, "project_tag": _project_tag,
    **{kind: _granted(path) for kind, path in GRANTS.items()},
    **{f"{kind}_tag": _network_tag(kind, collection) for kind, collection in {
        "network": "networks", "subnet": "subnets", "port": "ports",
        "security_group": "security-groups", "router": "routers", "floatingip": "floatingips",
        "subnetpool": "subnetpools"}.items()},
}
# Kinds that are always made fresh: a free port is used up by the request.
# plain_volume_type: a retype's target, never the seed type the encryption examples encrypt.
FRESH_ONLY = {"free_port", "fresh_token", "fresh_volume", "available_volume", "free_subnet",
              "attached_subnet", "plain_volume_type", "queued_image", "staged_image",
              "new_region_id", "password_user"}
