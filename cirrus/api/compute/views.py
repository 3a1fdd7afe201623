"""Server views: the JSON a client sees for an instance, per microversion."""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
from typing import Any

from starlette.responses import Response

from cirrus import text
from cirrus.api.wsgi import fast_reply
from cirrus.compute.states import status_of
from cirrus.db.base import isotime
from cirrus.db.rows import json_loads

Version = tuple[int, int]


def links(base: str, kind: str, ident: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/{kind}/{ident}"},
            {"rel": "bookmark", "href": f"{base}/compute/{kind}/{ident}"}]


def host_id(project_id: str, host: str | None) -> str:
    """Nova's obfuscated host id: same host + project → same value."""
    if not host:
        return ""
    return hashlib.sha224((project_id + host).encode()).hexdigest()


def addresses(network_info: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for vif in network_info or []:
        net = vif.get("network") or {}
        label = net.get("label") or net.get("id") or "network"
        entries = out.setdefault(label, [])
        for subnet in net.get("subnets", []):
            for ip in subnet.get("ips", []):
                entries.append({"version": ip.get("version", 4), "addr": ip["address"],
                                "OS-EXT-IPS:type": ip.get("type", "fixed"),
                                "OS-EXT-IPS-MAC:mac_addr": vif.get("address")})
                for fip in ip.get("floating_ips", []):
                    entries.append({"version": 4, "addr": fip["address"],
                                    "OS-EXT-IPS:type": "floating",
                                    "OS-EXT-IPS-MAC:mac_addr": vif.get("address")})
    return out


def basic_addresses(by_label: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """:func:`addresses` without each address's type and MAC (Nova's view
    without ``extend_address``: ``/ips``, and PUT below 2.75)."""
    return {label: [{"version": a["version"], "addr": a["addr"]} for a in found]
            for label, found in by_label.items()}


def iso_of(stored: Any) -> str | None:
    """:func:`isotime` of a timestamp column as read: a datetime, None, or on
    SQLite the text SQLAlchemy stores (``2026-01-02 03:04:05.678901``), cut
    to the same ``2026-01-02T03:04:05Z`` without parsing it (a fifth of the
    cost: a listing formats four per server)."""
    if stored.__class__ is str:
        if len(stored) >= 19 and stored[10] in " T" and stored[4] == "-":
            return f"{stored[:10]}T{stored[11:19]}Z"
        return isotime(_dt.datetime.fromisoformat(stored))
    return isotime(stored)


@functools.lru_cache(maxsize=4096)
def _addresses_of_text(text: str) -> dict[str, list[dict[str, Any]]]:
    return addresses(json_loads(text))


def addresses_of(network_info: Any) -> dict[str, list[dict[str, Any]]]:
    """:func:`addresses` of an info cache's network info as read from the
    database: parsed, None, or JSON text (SQLite). The addresses of a text are
    remembered (shared: read-only): a listing shows the same caches again and
    again, and parsing and walking them was a third of its cost."""
    if isinstance(network_info, str):
        return _addresses_of_text(network_info)
    return addresses(network_info)


def flavor_view(base: str, flavor: dict[str, Any], version: Version) -> dict[str, Any]:
    if version >= (2, 47):
        return {"vcpus": flavor["vcpus"], "ram": flavor["memory_mb"], "disk": flavor["root_gb"],
                "ephemeral": flavor.get("ephemeral_gb", 0), "swap": flavor.get("swap", 0),
                "original_name": flavor["name"], "extra_specs": flavor.get("extra_specs") or {}}
    return {"id": flavor["flavorid"], "links": [{"rel": "bookmark",
                                                "href": f"{base}/compute/flavors/{flavor['flavorid']}"}]}


def image_view(base: str, image_ref: str | None) -> Any:
    if not image_ref:
        return ""  # booted from volume
    return {"id": image_ref, "links": [{"rel": "bookmark", "href": f"{base}/compute/images/{image_ref}"}]}


def fault_view(fault: dict[str, Any] | None, is_admin: bool) -> dict[str, Any] | None:
    if not fault:
        return None
    out = {"code": fault["code"], "created": isotime(fault["created_at"]), "message": fault["message"]}
    if is_admin or fault["code"] != 500:
        out["details"] = fault.get("details") or fault["message"]
    return out


def basic(base: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["uuid"], "name": row["display_name"],
            "links": links(base, "servers", row["uuid"])}


# Pure functions of a few distinct values (a project's hosts, the states), called
# for every server of a listing: remembered rather than recomputed per row.
_host_id = functools.lru_cache(maxsize=4096)(host_id)
_status_of = functools.lru_cache(maxsize=256)(status_of)


def _groups_view(names: list[str] | None) -> list[dict[str, str]]:
    return [{"name": n} for n in (names or [])]


# The statuses whose view carries ``progress`` (Nova's ``_progress_statuses``).
PROGRESS_STATUSES = frozenset({"ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE",
                               "MIGRATING"})

class DetailView:
    """The full server body of GET /servers/{id} and /servers/detail.

    Built once per request: what depends only on the request (base URL,
    microversion, admin or not) is worked out here, not for each of a listing's
    rows. The keys come in the order clients have always seen.
    """

    def __init__(self, base: str, version: Version, *, is_admin: bool) -> None:
        self.base = base
        self.version = version
        self.is_admin = is_admin
        self._self = f"{base}/compute/v2.1/servers/"
        self._bookmark = f"{base}/compute/servers/"
        self._admin_23 = is_admin and version >= (2, 3)
        self._volumes_23 = version >= (2, 3)
        self._hostname_290 = not is_admin and version >= (2, 90)
        # A listing's servers mostly share an image, a flavor (rows of one read
        # share equal JSON values, see cirrus/db/rows.py) and security groups:
        # their parts of the body are built once and shared (read-only).
        self._images: dict[Any, Any] = {}
        self._shared: dict[tuple[str, int], tuple[Any, Any]] = {}

    def _once(self, kind: str, value: Any, build: Any) -> Any:
        """``build(value)``, once per distinct object ``value``."""
        key = (kind, id(value))
        hit = self._shared.get(key)
        if hit is None or hit[0] is not value:
            hit = self._shared[key] = (value, build(value))
        return hit[1]

    def _image(self, image_ref: str | None) -> Any:
        try:
            return self._images[image_ref]
        except KeyError:
            view = self._images[image_ref] = image_view(self.base, image_ref)
            return view

    def _flavor(self, flavor: dict[str, Any]) -> dict[str, Any]:
        return flavor_view(self.base, flavor, self.version)

    def __call__(self, row: dict[str, Any], network_info: Any,
                 fault: dict[str, Any] | None) -> dict[str, Any]:
        """``row``'s body; ``network_info`` as :func:`addresses_of` takes it."""
        uuid, host, version = row["uuid"], row["host"], self.version
        status = _status_of(row["vm_state"], row["task_state"])
        server: dict[str, Any] = {
            "id": uuid, "name": row["display_name"], "status": status,
            "tenant_id": row["project_id"], "user_id": row["user_id"],
            "metadata": row["metadata"] or {}, "hostId": _host_id(row["project_id"], host),
            "image": self._image(row["image_ref"]),
            "flavor": self._once("flavor", row["flavor"], self._flavor),
            "created": iso_of(row["created_at"]),
            "updated": iso_of(row["updated_at"] or row["created_at"]),
            "addresses": addresses_of(network_info),
            "accessIPv4": row["access_ip_v4"] or "", "accessIPv6": row["access_ip_v6"] or "",
            "links": [{"rel": "self", "href": self._self + uuid},
                      {"rel": "bookmark", "href": self._bookmark + uuid}],
            "OS-DCF:diskConfig": "AUTO" if row.get("auto_disk_config") else "MANUAL",
            "progress": row["progress"] or 0,
            "OS-EXT-AZ:availability_zone": row["availability_zone"] or "",
            "config_drive": "True" if row["config_drive"] else "",
            "key_name": row["key_name"],
            "OS-SRV-USG:launched_at": iso_of(row["launched_at"]),
            "OS-SRV-USG:terminated_at": iso_of(row["terminated_at"]),
            "OS-EXT-STS:task_state": row["task_state"],
            "OS-EXT-STS:vm_state": row["vm_state"],
            "OS-EXT-STS:power_state": row["power_state"],
            "os-extended-volumes:volumes_attached": [
                {"id": v, "delete_on_termination": d} if self._volumes_23 else {"id": v}
                for v, d in row.get("volumes_attached") or ()],
        }
        if row["security_groups"]:  # Nova leaves the key out of a server in no group
            server["security_groups"] = self._once("groups", row["security_groups"], _groups_view)
        if status not in PROGRESS_STATUSES:
            del server["progress"]  # Nova shows it only while something progresses
        if fault and (status == "ERROR" or status == "DELETED"):
            server["fault"] = fault_view(fault, self.is_admin)
        if self.is_admin:
            server["OS-EXT-SRV-ATTR:host"] = host
            server["OS-EXT-SRV-ATTR:hypervisor_hostname"] = row["node"]
            server["OS-EXT-SRV-ATTR:instance_name"] = f"instance-{row['id']:08x}"
            if self._admin_23:
                system_metadata = row["system_metadata"] or {}
                server["OS-EXT-SRV-ATTR:reservation_id"] = row["reservation_id"]
                server["OS-EXT-SRV-ATTR:launch_index"] = row["launch_index"]
                server["OS-EXT-SRV-ATTR:hostname"] = row["hostname"]
                server["OS-EXT-SRV-ATTR:kernel_id"] = system_metadata.get("image_kernel_id", "")
                server["OS-EXT-SRV-ATTR:ramdisk_id"] = system_metadata.get("image_ramdisk_id", "")
                server["OS-EXT-SRV-ATTR:root_device_name"] = "/dev/vda"
                server["OS-EXT-SRV-ATTR:user_data"] = row["user_data"]
        elif self._hostname_290:
            server["OS-EXT-SRV-ATTR:hostname"] = row["hostname"]
        if version >= (2, 9):
            server["locked"] = bool(row["locked"])
        if version >= (2, 16) and host:
            server["host_status"] = "UP" if self.is_admin else ""
        if version >= (2, 19):
            server["description"] = row["display_description"]
        if version >= (2, 26):  # loaded by the caller (cirrus/compute/tags.py)
            server["tags"] = row.get("tags") or []
        if version >= (2, 63):
            server["trusted_image_certificates"] = None  # cirrus verifies no certificates
        if version >= (2, 73):
            server["locked_reason"] = row.get("locked_reason")
        if version >= (2, 96):
            server["pinned_availability_zone"] = None
        return server


def detail(base: str, row: dict[str, Any], version: Version, *, is_admin: bool,
           network_info: list[dict[str, Any]], fault: dict[str, Any] | None) -> dict[str, Any]:
    """The full server body of GET /servers/{id} and /servers/detail."""
    return DetailView(base, version, is_admin=is_admin)(row, network_info, fault)


# What PUT /servers/{id} shows of a server below 2.75 (Nova's view with the
# extended attributes, zone, key, usage, groups, states and volumes off).
UPDATE_KEYS = frozenset({
    "id", "name", "status", "tenant_id", "user_id", "metadata", "hostId", "image", "flavor",
    "created", "updated", "addresses", "accessIPv4", "accessIPv6", "links", "OS-DCF:diskConfig",
    "fault", "progress", "locked", "locked_reason", "description", "tags",
    "trusted_image_certificates"})


def update_view(server: dict[str, Any], version: Version,
                server_groups: list[str]) -> dict[str, Any]:
    """The body of PUT /servers/{id} from the server's detail body: every
    attribute from 2.75, before that the basic ones and addresses without
    their type and MAC; the server's groups from 2.71."""
    if version < (2, 75):
        server = {k: v for k, v in server.items() if k in UPDATE_KEYS}
        server["addresses"] = basic_addresses(server["addresses"])
    if version >= (2, 71):
        server["server_groups"] = server_groups
    return server


def scrub(value: Any) -> Any:
    """``value`` with every lone surrogate in its texts replaced by U+FFFD."""
    if isinstance(value, str):
        return text.presentable(value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def reply_stored(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """:func:`fast_reply` of a body holding what clients stored. Text JSON
    cannot carry (lone surrogates kept before the API refused them) must not
    make a listing fail for everyone: it is shown as U+FFFD. Costs nothing
    when there is none (the encoder finds it)."""
    try:
        return fast_reply(body, status=status, headers=headers)
    except UnicodeEncodeError:
        return fast_reply(scrub(body), status=status, headers=headers)
