"""The fuzz world: an in-process cloud on SQLite with one real resource of each
kind to aim at, and a way to make fresh ones.

Path parameters and ``Ref`` leaves name a *kind* (``network``, ``meta_key``…);
:meth:`World.value` answers the seed resource of that kind, or a fresh one
for the resource a DELETE removes (so that deletes do not eat the seeds).
``PARAM_KINDS`` maps each path parameter to its kind: a new route whose
parameter is in neither table fails ``test_every_path_parameter_has_a_kind``.
"""
from __future__ import annotations

import asyncio
import logging
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import httpx

from cirrus.bootstrap import Cloud
from cirrus.config import Settings
from tests.conftest import TEST_DEFAULTS, Api, AppTransport, make_settings
from tests.databases import SQLiteDatabases
from tests.fuzz.factories import FACTORIES, FRESH_ONLY, SetupError
from tests.fuzz.routes import Target
from tests.tenants import make_tenants

BASE_URL = "http://127.0.0.1:8774"
PERSONAS = ("member", "admin", "reader", "other")

# The kind of a path parameter, by the collection segment before it …
COLLECTION_KINDS = {
    "servers": "server", "flavors": "flavor", "os-extra_specs": "extra_spec",
    "os-keypairs": "keypair", "os-server-groups": "server_group", "metadata": "meta_key",
    "os-services": "service", "os-quota-sets": "quota_project", "os-interface": "attached_port",
    "networks": "network", "subnets": "subnet", "ports": "port",
    "security-groups": "security_group", "security-group-rules": "security_group_rule",
    "images": "image", "tags": "tag", "members": "member",
    "projects": "project", "users": "user", "roles": "role", "domains": "domain",
    "quotas": "quota_project", "auto-allocated-topology": "demo_project",
    "os-hypervisors": "hypervisor", "os-aggregates": "aggregate",
    "os-volume_attachments": "attached_volume",
    "routers": "router", "floatingips": "floatingip", "subnetpools": "subnetpool",
    "agents": "agent",
    "volumes": "volume", "snapshots": "volume_snapshot", "types": "volume_type",
    "os-volumes": "volume", "os-snapshots": "volume_snapshot",
    "attachments": "volume_attachment", "messages": "volume_message",
    "os-volume-transfer": "volume_transfer", "volume-transfers": "volume_transfer",
    "qos-specs": "volume_qos", "group_types": "volume_group_type",
    "namespaces": "metadef_namespace",
    "groups": "group", "regions": "region", "services": "catalog_service",
    "endpoints": "catalog_endpoint", "policies": "policy_blob", "credentials": "credential",
    "implies": "implied_role",
}
# … or by its own name, which wins.
NAMED_KINDS = {"target": "assignment_target", "tid": "project", "uid": "user",
               "rid": "granted_role", "security_group_id": "security_group",
               "rule_id": "security_group_rule", "host_name": "compute_host",
               "migration_id": "migration", "class_name": "quota_class",
               "alias": "extension", "network_id": "network",
               "target_project_id": "volume_quota_project", "action": "volume_service_action",
               "encryption_id": "volume_encryption"}
# … or, first of all, by the two collections before it (a server's tag is not an image's).
NESTED_KINDS = {("servers", "tags"): "server_tag", ("servers", "ips"): "network_label",
                ("images", "metadata"): "image_meta_key", ("networks", "tags"): "network_tag",
                ("subnets", "tags"): "subnet_tag", ("ports", "tags"): "port_tag",
                ("volumes", "metadata"): "volume_meta_key",
                ("snapshots", "metadata"): "volume_meta_key",
                ("types", "extra_specs"): "volume_type_spec",
                ("group_types", "group_specs"): "volume_type_spec",
                ("security-groups", "tags"): "security_group_tag",
                ("routers", "tags"): "router_tag", ("floatingips", "tags"): "floatingip_tag",
                ("subnetpools", "tags"): "subnetpool_tag",
                ("namespaces", "tags"): "metadef_tag", ("namespaces", "objects"): "metadef_object",
                ("namespaces", "properties"): "metadef_property",
                ("namespaces", "resource_types"): "metadef_association",
                ("projects", "tags"): "project_tag", ("groups", "users"): "group_member",
                ("users", "application_credentials"): "app_credential"}
# … or, where a route needs its resource in one state, by the route itself.
ROUTE_KINDS = {("/image/v2/images/{image_id}/actions/deactivate", "image_id"): "active_image",
               ("/image/v2/images/{image_id}/actions/reactivate", "image_id"): "active_image",
               ("/image/v2/images/{image_id}/stage", "image_id"): "queued_image",
               ("/image/v2/images/{image_id}/import", "image_id"): "staged_image",
               ("/compute/v2.1/os-assisted-volume-snapshots/{snapshot_id}", "snapshot_id"):
                   "volume_snapshot"}
# … or by the segment after it: a user's own things are the demo user's (the
# member persona's); a password is changed on a user made for it.
OWNER_KINDS = {"application_credentials": "demo_user", "password": "password_user"}

# Network resources with tags: kind → collection.
NETWORK_TAGGED = {"network": "networks", "subnet": "subnets", "port": "ports",
                  "security_group": "security-groups", "router": "routers",
                  "floatingip": "floatingips", "subnetpool": "subnetpools"}

# Who creates a fresh resource of a kind.
ADMIN_KINDS = {"flavor", "extra_spec", "project", "user", "role", "granted_role", "aggregate",
               "volume_type", "volume_qos", "volume_group_type", "metadef_namespace",
               "metadef_tag", "metadef_object", "metadef_property", "metadef_association"}

# The cloud's settings for the fuzz: the suite's defaults, room for servers.
# compute3 is there to be deleted (DELETE /os-services/{id}).
SETTINGS = {"computes": 3, "quota_instances": 30, "quota_cores": 60, "quota_ram": 1 << 20,
            "quota_server_groups": 100, "quota_volumes": 10000, "quota_snapshots": 10000,
            "quota_gigabytes": 100000}

# Where a request's unexpected errors are logged: the API's handler, and the
# RPC server's for an error raised in a service the API called.
ERROR_LOGGERS = ("cirrus.api.errors", "cirrus.rpc.client")

# A server name on which a backtracking regex (``?name=^(a+)+$``) takes seconds.
REDOS_NAME = "a" * 26 + "!"


def param_kind(target: Target, param: str) -> str | None:
    """The kind of resource ``param`` of ``target`` names, or None if unknown."""
    if (target.path, param) in ROUTE_KINDS:
        return ROUTE_KINDS[(target.path, param)]
    segments = target.path.split("/")
    index = segments.index("{" + param + "}")
    if segments[1] == "volume" and param == "project_id":
        return "demo_project"  # Cinder's URLs name the caller's project
    if index + 1 < len(segments) and segments[index + 1] in OWNER_KINDS:
        return OWNER_KINDS[segments[index + 1]]
    if target.method == "PUT" and segments[index - 1] == "regions":
        return "new_region_id"  # PUT makes the region of that id
    if param == "rid":  # a role granted to whom, where
        system = "system_" if "system" in segments else ""
        return f"{system}{'group_' if segments[index - 3] == 'groups' else ''}granted_role"
    nested = NESTED_KINDS.get((segments[index - 3], segments[index - 1])) if index >= 3 else None
    if nested is not None:
        return nested
    if param in NAMED_KINDS:
        return NAMED_KINDS[param]
    return COLLECTION_KINDS.get(segments[index - 1])


class ErrorLog(logging.Handler):
    """Collects the unexpected errors logged by ERROR_LOGGERS."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def drain(self) -> list[logging.LogRecord]:
        records, self.records = self.records, []
        return records


class World:
    """One cloud with its personas and seed resources; rebuilt on demand."""

    def __init__(self, root: Path, databases: SQLiteDatabases) -> None:
        self.root = root
        self.databases = databases
        self.generation = 0
        self.serial = 0
        self.cloud: Cloud | None = None
        self.client: httpx.AsyncClient | None = None
        self.tokens: dict[str, str] = {}
        self.seeds: dict[str, str] = {}
        self.errors = ErrorLog()
        # The fuzz reports each logged error with the request that caused it;
        # thousands of tracebacks in pytest's captured log would bury that.
        self._propagate: dict[str, bool] = {}
        for name in ERROR_LOGGERS:
            log = logging.getLogger(name)
            log.addHandler(self.errors)
            self._propagate[name], log.propagate = log.propagate, False

    # -- life cycle ---------------------------------------------------------------
    async def start(self) -> None:
        """A world as the seeds left it: built once, then restored from a
        snapshot of its state dir (a rebuild takes a second, not five)."""
        if not (self.root / "snapshot").exists():
            await self._build()
        await self._restore()

    async def _build(self) -> None:
        state_dir = self.root / "build"
        state_dir.mkdir(parents=True)
        # make_settings copies the session's template database into state_dir.
        await self._open(make_settings(state_dir, self.databases, **SETTINGS))
        tenants = await make_tenants(Api(self.cloud))
        for c in tenants.clients.values():
            await c.aclose()
        self.tokens = {p: tenants.tokens[p] for p in PERSONAS}
        self.seeds = {"demo_project": tenants.project["demo"],
                      "other_project": tenants.project["other"],
                      "member": tenants.project["other"], "assignment_target": "projects",
                      "demo_user": tenants.user["demo"],
                      "token": tenants.tokens["member"]}
        await self._seed()
        await self.stop()
        _snapshot(state_dir, self.root / "snapshot")
        shutil.rmtree(state_dir, ignore_errors=True)

    async def _restore(self) -> None:
        self.generation += 1
        state_dir = self.root / f"cloud-{self.generation}"
        shutil.copytree(self.root / "snapshot", state_dir)
        await self._open(Settings(state_dir=state_dir, bind="127.0.0.1:8774",
                                  **{**TEST_DEFAULTS, **SETTINGS}))
        # Servers are booted in each world: the fake hosts keep their guests in memory.
        s = self.seeds
        s["server"] = await self._server("fz-seed-vm", {"role": "web"})
        s["server_tag"] = "seed-tag"
        await self.call("member", "PUT", f"/compute/v2.1/servers/{s['server']}/tags/seed-tag",
                        headers={"OpenStack-API-Version": "compute 2.26"})
        await self._server(REDOS_NAME, {})
        ports = await self.call("admin", "GET", f"/network/v2.0/ports?device_id={s['server']}")
        s["attached_port"] = ports["ports"][0]["id"]
        s["used_mac"] = ports["ports"][0]["mac_address"]
        s["attached_volume"] = await FACTORIES["attached_volume"](self)
        s["volume_attachment"] = await FACTORIES["volume_attachment"](self)  # to the new server
        self.errors.drain()

    async def _open(self, settings: Settings) -> None:
        cloud = self.cloud = Cloud(settings, http_transport=AppTransport(lambda: cloud.app))
        await self.cloud.start()
        # raise_app_exceptions=False: a 500 comes back as a response to check.
        transport = httpx.ASGITransport(app=self.cloud.app, raise_app_exceptions=False)
        self.client = httpx.AsyncClient(transport=transport, base_url=BASE_URL, timeout=None)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        if self.cloud is not None:
            state_dir = self.cloud.settings.state_dir
            await self.cloud.stop()
            self.cloud = None
            if state_dir.name.startswith("cloud-"):
                shutil.rmtree(state_dir, ignore_errors=True)

    async def rebuild(self) -> None:
        await self.stop()
        await self._restore()

    def close(self) -> None:
        for name in ERROR_LOGGERS:
            log = logging.getLogger(name)
            log.removeHandler(self.errors)
            log.propagate = self._propagate[name]

    # -- requests the world makes for itself ------------------------------------------
    def next_serial(self) -> int:
        self.serial += 1
        return self.serial

    async def call(self, persona: str, method: str, path: str, body: Any = None,
                   headers: dict[str, str] | None = None, ok: tuple[int, ...] = ()) -> Any:
        """A set-up request; its JSON (or None). Anything but 2xx (or ``ok``)
        is a SetupError: the world is not what the fuzz needs."""
        assert self.client is not None
        hdrs = {"X-Auth-Token": self.tokens[persona], **(headers or {})}
        kwargs: dict[str, Any] = {"json": body} if body is not None else {}
        resp = await self.client.request(method, path, headers=hdrs, **kwargs)
        if not (200 <= resp.status_code < 300 or resp.status_code in ok):
            raise SetupError(f"{method} {path} as {persona}: {resp.status_code} {resp.text[:500]}")
        try:
            return resp.json()
        except ValueError:
            return None

    async def value(self, kind: str, fresh: bool = False) -> str:
        """The id (or name) of the world's resource of ``kind``; with ``fresh``,
        a new one made for this request where the kind can be made."""
        if kind in FRESH_ONLY or (fresh and kind in FACTORIES):
            return await FACTORIES[kind](self)
        return self.seeds[kind]

    # -- the seeds -----------------------------------------------------------------------
    async def _seed(self) -> None:
        s = self.seeds
        for kind in ("project", "user", "role"):
            s[kind] = await FACTORIES[kind](self)
        s["granted_role"] = s["role"]
        await self.grant(s["role"])
        s["quota_project"] = s["project"]
        s["network"] = (await self.call("member", "POST", "/network/v2.0/networks",
                                        {"network": {"name": "fz-seed-net"}}))["network"]["id"]
        s["subnet"] = (await self.call("member", "POST", "/network/v2.0/subnets", {"subnet": {
            "network_id": s["network"], "cidr": "10.77.0.0/24", "ip_version": 4,
            "name": "fz-seed-sub"}}))["subnet"]["id"]
        s["external_network"] = (await self.call("admin", "POST", "/network/v2.0/networks", {
            "network": {"name": "fz-public", "router:external": True}}))["network"]["id"]
        await self.call("admin", "POST", "/network/v2.0/subnets", {"subnet": {
            "network_id": s["external_network"], "cidr": "198.18.0.0/16", "ip_version": 4}})
        for kind in ("port", "security_group", "keypair", "server_group", "flavor", "aggregate",
                     "router", "floatingip", "subnetpool", "agent"):
            s[kind] = await FACTORIES[kind](self)
        s["security_group_rule"] = await FACTORIES["security_group_rule"](self)
        s["extra_spec"] = "hw:cpu_policy"
        await self.call("admin", "POST", f"/compute/v2.1/flavors/{s['flavor']}/os-extra_specs",
                        {"extra_specs": {"hw:cpu_policy": "dedicated"}})
        s["boot_image"] = await self.make_image("fz-boot", upload=True)
        s["image"] = await self.make_image("fz-seed-image", upload=False)
        s["tag"] = "seed-tag"
        await self.call("member", "PUT", f"/image/v2/images/{s['image']}/tags/seed-tag")
        await self.call("member", "POST", f"/image/v2/images/{s['image']}/members",
                        {"member": s["other_project"]})
        for kind, collection in NETWORK_TAGGED.items():  # each seed resource has a tag
            s[f"{kind}_tag"] = "seed-tag"
            await self.call("member", "PUT", f"/network/v2.0/{collection}/{s[kind]}/tags/seed-tag")
        s["meta_key"] = "role"
        s["network_label"] = "fz-seed-net"
        s["image_meta_key"] = "os_distro"  # make_image sets it
        s["active_image"] = await self.make_image("fz-active", upload=True)
        await self._seed_metadefs()
        hypervisors = await self.call("admin", "GET", "/compute/v2.1/os-hypervisors")
        s["hypervisor"] = str(hypervisors["hypervisors"][0]["id"])
        services = await self.call("admin", "GET", "/compute/v2.1/os-services",
                                   headers={"OpenStack-API-Version": "compute 2.53"})
        computes = {x["host"]: x["id"] for x in services["services"]
                    if x["binary"] == "nova-compute"}
        s["service"], s["spare_service"] = computes["compute2"], computes["compute3"]
        s["compute_host"] = "compute1"
        s["migration"] = "1"  # none is made: the routes answer 404 for it
        # Not "default": a fuzzed default class would change every project's limits.
        s["quota_class"] = "fz-class"
        s["extension"] = "os-consoles"
        await self._seed_volumes()
        await self._seed_identity()

    async def _seed_identity(self) -> None:
        """A domain (not the default: a fuzzed PATCH may disable it), a group
        with the seed user in it and roles on the seed project and the system,
        catalog entries, a policy blob, an inference rule from the seed role,
        a tag on the seed project, the demo user's credential and application
        credential."""
        s = self.seeds
        for kind in ("domain", "group", "region", "catalog_service", "catalog_endpoint",
                     "policy_blob", "credential", "app_credential", "implied_role",
                     "project_tag", "group_member"):
            s[kind] = await FACTORIES[kind](self)
        await self.call("admin", "PATCH", f"/identity/v3/domains/{s['domain']}",
                        {"domain": {"enabled": True}})
        for kind in ("group_granted_role", "system_granted_role", "system_group_granted_role"):
            s[kind] = await FACTORIES[kind](self)

    async def _seed_metadefs(self) -> None:
        s = self.seeds
        s.update(metadef_namespace="fz-seed-ns", metadef_tag="seed-tag",
                 metadef_object="seed-object", metadef_property="seed-prop",
                 metadef_association="OS::Glance::Image")
        await self.call("admin", "POST", "/image/v2/metadefs/namespaces", {
            "namespace": "fz-seed-ns", "visibility": "public", "tags": [{"name": "seed-tag"}],
            "objects": [{"name": "seed-object"}],
            "properties": {"seed-prop": {"title": "Seed", "type": "string"}},
            "resource_type_associations": [{"name": "OS::Glance::Image"}]})

    async def _seed_volumes(self) -> None:
        s, base = self.seeds, f"/volume/v3/{self.seeds['demo_project']}"
        s["volume_quota_project"] = s["project"]
        s["volume_meta_key"] = "k"
        s["volume_type_spec"] = "k"
        s["volume_message"] = "fz-no-such-message"
        s["volume_service_action"] = "disable-log-reason"
        s["volume_encryption"] = "fz-encryption"  # Cinder names the specs by their type
        s["volume_type"] = (await self.call("admin", "POST", f"{base}/types", {"volume_type": {
            "name": "fz-seed-type", "extra_specs": {"k": "v"}}}))["volume_type"]["id"]
        await self.call("admin", "POST", f"{base}/types", {"volume_type": {
            "name": "fz-private-type", "os-volume-type-access:is_public": False}})
        for kind in ("volume", "volume_snapshot", "volume_transfer", "volume_qos",
                     "volume_group_type"):
            s[kind] = await FACTORIES[kind](self)

    async def server_story(self, uuid: str) -> str:
        """What the database says happened to a server (for a seed server
        that vanished): its row's state and its instance actions."""
        import sqlalchemy as sa

        from cirrus.compute.models import instance_actions, instances

        def read(conn: sa.Connection) -> str:
            row = conn.execute(sa.select(
                instances.c.vm_state, instances.c.task_state, instances.c.deleted,
                instances.c.deleted_at, instances.c.host).where(instances.c.uuid == uuid)).first()
            actions = conn.execute(sa.select(
                instances.c.uuid, instance_actions.c.action, instance_actions.c.request_id,
                instance_actions.c.user_id, instance_actions.c.message).where(
                instance_actions.c.instance_uuid == uuid)).all()
            return (f"row: {tuple(row) if row else None}; actions: "
                    f"{[tuple(a)[1:] for a in actions]}")
        assert self.cloud is not None and self.cloud.db is not None
        return await self.cloud.db.read(read)

    async def grant(self, role: str) -> None:
        s = self.seeds
        await self.call("admin", "PUT", f"/identity/v3/projects/{s['project']}/users/"
                                        f"{s['user']}/roles/{role}")

    async def make_image(self, name: str, upload: bool) -> str:
        image = await self.call("member", "POST", "/image/v2/images", {
            "name": name, "disk_format": "raw", "container_format": "bare",
            "os_distro": "tiny"})
        if upload:
            assert self.client is not None
            resp = await self.client.put(
                f"/image/v2/images/{image['id']}/file", content=b"x" * 1024,
                headers={"X-Auth-Token": self.tokens["member"],
                         "Content-Type": "application/octet-stream"})
            if resp.status_code != 204:
                raise SetupError(f"image upload: {resp.status_code} {resp.text[:500]}")
        return image["id"]

    async def _server(self, name: str, metadata: dict[str, str]) -> str:
        body = {"server": {"name": name, "imageRef": self.seeds["boot_image"], "flavorRef": "1",
                           "networks": [{"uuid": self.seeds["network"]}],
                           "metadata": metadata}}
        server_id = (await self.call("member", "POST", "/compute/v2.1/servers", body))["server"]["id"]
        for _ in range(500):
            shown = await self.call("member", "GET", f"/compute/v2.1/servers/{server_id}")
            if shown["server"]["status"] == "ACTIVE":
                return server_id
            if shown["server"]["status"] == "ERROR":
                raise SetupError(f"seed server {name} in ERROR: {shown['server'].get('fault')}")
            await asyncio.sleep(0.02)
        raise SetupError(f"seed server {name} never became ACTIVE")


def _snapshot(state_dir: Path, snapshot: Path) -> None:
    """A copy of a stopped cloud's state dir, its database as one consistent file."""
    shutil.copytree(state_dir, snapshot, ignore=shutil.ignore_patterns("cirrus.db*"))
    source, copy = sqlite3.connect(state_dir / "cirrus.db"), sqlite3.connect(snapshot / "cirrus.db")
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()


# Every kind a Ref or a path parameter may name.
KINDS = sorted(set(FACTORIES) | set(COLLECTION_KINDS.values()) | set(NAMED_KINDS.values())
               | set(NESTED_KINDS.values())
               | {"boot_image", "demo_project", "other_project", "token", "service",
                  "quota_project", "assignment_target", "domain", "hypervisor", "used_mac",
                  "compute_host", "migration", "quota_class", "extension",
                  "external_network",
                  "volume_quota_project", "volume_meta_key", "volume_type_spec",
                  "volume_message", "volume_service_action", "active_image",
                  "demo_user"})
