"""Ports: creation with fixed IPs and a MAC, updates (binding), deletion."""
from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.db.prepared import Prepared, statement_savepoint
from cirrus.db.rows import PreparedRead
from cirrus.network import exception as exc
from cirrus.network import dns, ipam, tags
from cirrus.network.common import new_id, owned, timestamps_view
from cirrus.network.models import floatingips, ip_allocations, port_usages, ports, subnets
from cirrus.network.networks import get_network, subnets_of
from cirrus.network.validators import parse_ip, shown

PORT_COLUMNS = {"id": "id", "name": "name", "network_id": "network_id", "project_id": "project_id",
                "tenant_id": "project_id", "device_id": "device_id", "device_owner": "device_owner",
                "mac_address": "mac_address", "status": "status",
                "binding:host_id": "binding_host_id", "admin_state_up": "admin_state_up"}
# API attribute → column, for updates.
UPDATABLE = {"name": "name", "device_id": "device_id", "device_owner": "device_owner",
             "admin_state_up": "admin_state_up", "binding:host_id": "binding_host_id",
             "binding:vnic_type": "binding_vnic_type", "binding:profile": "binding_profile",
             "security_groups": "security_groups", "extra_dhcp_opts": "extra_dhcp_opts",
             "dns_name": "dns_name", "port_security_enabled": "port_security_enabled",
             "description": "description", "allowed_address_pairs": "allowed_address_pairs",
             "mac_address": "mac_address", "dns_domain": "dns_domain"}

# Built once: every boot creates a port. The port's ``seq`` (creation order) is
# the next after the highest, taken in the INSERT itself (an index lookup) and
# returned, instead of a SELECT of its own.
_LATER = ports.alias("later")
_VALUES = {c.name: (sa.select(sa.func.coalesce(sa.func.max(_LATER.c.seq), 0) + 1).scalar_subquery()
                    if c.name == "seq" else sa.bindparam(f"v_{c.name}")) for c in ports.columns}
_INSERT = Prepared(ports.insert().values(_VALUES).returning(ports.c.seq))
# PostgreSQL: a MAC taken on the network is no row, not an error, so no
# savepoint around the insert (SAVEPOINT and RELEASE: two round trips per
# port), as the IPAM's address inserts.
_INSERT_IF_MAC_FREE = Prepared(postgresql.insert(ports).values(_VALUES).on_conflict_do_nothing(
    index_elements=[ports.c.network_id, ports.c.mac_address]).returning(ports.c.seq))
# PostgreSQL, a compute's port in the common case: the port and its first
# address guess (ipam.first_guess) in one statement, each skipped on its
# unique key. Its row: the port's seq (NULL: its MAC is taken, nothing went
# in) and the address (NULL: taken; the IPAM goes on from there).
_NEW_PORT = postgresql.insert(ports).values(_VALUES).on_conflict_do_nothing(
    index_elements=[ports.c.network_id, ports.c.mac_address]).returning(
    ports.c.id, ports.c.network_id, ports.c.seq).cte("new_port")
# The guess only if no other transaction is trying it (``ipam.guess_lock``):
# a busy one is skipped at once instead of waited on.
_ADDRESS_LOCK = ipam.guess_lock(sa.bindparam("a_subnet", type_=sa.String),
                                sa.bindparam("a_address", type_=sa.String), "address_lock")
_NEW_ADDRESS = postgresql.insert(ip_allocations).from_select(
    ["network_id", "ip_address", "subnet_id", "port_id"],
    sa.select(_NEW_PORT.c.network_id, sa.bindparam("a_address", type_=sa.String),
              sa.bindparam("a_subnet", type_=sa.String), _NEW_PORT.c.id
              ).select_from(_NEW_PORT).join(_ADDRESS_LOCK, _ADDRESS_LOCK.c.held)
).on_conflict_do_nothing().returning(ip_allocations.c.ip_address).cte("new_address")
_INSERT_WITH_ADDRESS = Prepared(sa.select(sa.select(_NEW_PORT.c.seq).scalar_subquery(),
                                          sa.select(_NEW_ADDRESS.c.ip_address).scalar_subquery()))


def insert_port_from(source: Any) -> Any:
    """INSERT of the port given as ``v_<column>`` binds (``seq`` the next, as
    :data:`_VALUES`), once for each row of ``source`` (a CTE: none, nothing
    goes in); RETURNING its ``seq``. No ON CONFLICT: a MAC taken on the
    network fails the statement."""
    values = [_VALUES["seq"] if c.name == "seq" else sa.bindparam(f"v_{c.name}", type_=c.type)
              for c in ports.columns]
    return ports.insert().from_select([c.name for c in ports.columns],
                                      sa.select(*values).select_from(source)
                                      ).returning(ports.c.seq)


_GET = PreparedRead(sa.select(ports).where(ports.c.id == sa.bindparam("w_id")))
_DELETE = Prepared(ports.delete().where(ports.c.id == sa.bindparam("w_id")))
_DISASSOCIATE = Prepared(floatingips.update().where(
    floatingips.c.fixed_port_id == sa.bindparam("w_port")).values(
    fixed_port_id=None, fixed_ip_address=None, router_id=None, status="DOWN"))


_FIXED_IPS_OF_PORT = Prepared(sa.select(ip_allocations.c.subnet_id, ip_allocations.c.ip_address)
                              .where(ip_allocations.c.port_id == sa.bindparam("w_port")))


def fixed_ips_of(conn: sa.Connection, port_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    """The fixed IPs of each of ``port_ids``."""
    out: dict[str, list[dict[str, str]]] = {p: [] for p in port_ids}
    if not port_ids:
        return out
    if len(port_ids) == 1:
        # One port, as for most servers: a statement built once (an IN list is
        # compiled on every call; this ran on every boot's info cache write).
        out[port_ids[0]] = [{"subnet_id": subnet_id, "ip_address": address} for subnet_id, address
                            in _FIXED_IPS_OF_PORT.execute(conn, w_port=port_ids[0]).fetchall()]
        return out
    for row in conn.execute(sa.select(ip_allocations).where(ip_allocations.c.port_id.in_(port_ids))):
        out[row.port_id].append({"subnet_id": row.subnet_id, "ip_address": row.ip_address})
    return out


def port_view(row: dict[str, Any], fixed_ips: list[dict[str, str]],
              dns_domain: str = dns.DEFAULT_DOMAIN) -> dict[str, Any]:
    """The API's port; ``dns_domain``: the cloud's, for ``dns_assignment``."""
    bound = bool(row["binding_host_id"])
    return {"id": row["id"], "name": row["name"], "network_id": row["network_id"],
            "tenant_id": row["project_id"], "project_id": row["project_id"],
            "mac_address": row["mac_address"], "fixed_ips": fixed_ips,
            "device_id": row["device_id"], "device_owner": row["device_owner"],
            "admin_state_up": row["admin_state_up"], "status": row["status"],
            "binding:host_id": row["binding_host_id"],
            "binding:vif_type": row["binding_vif_type"] if bound else "unbound",
            "binding:vnic_type": row["binding_vnic_type"],
            "binding:profile": row["binding_profile"], "binding:vif_details": row["binding_vif_details"],
            "security_groups": row["security_groups"], "extra_dhcp_opts": row["extra_dhcp_opts"],
            "allowed_address_pairs": _pairs_view(row), "dns_name": row["dns_name"],
            "dns_assignment": dns.dns_assignment(row["dns_name"], fixed_ips, dns_domain),
            "dns_domain": row.get("dns_domain") or "",
            "port_security_enabled": row["port_security_enabled"],
            "description": row["description"], "propagate_uplink_status": False,
            **timestamps_view(row)}


def _pairs_view(row: dict[str, Any]) -> list[dict[str, str]]:
    """Allowed address pairs as Neutron shows them: each with its MAC (the
    port's own when none was given)."""
    return [{"ip_address": p["ip_address"], "mac_address": p.get("mac_address") or row["mac_address"]}
            for p in row["allowed_address_pairs"] or []]


def port_by_id(conn: sa.Connection, port_id: str) -> dict[str, Any] | None:
    """The port row ``port_id``, or None (no visibility check)."""
    return _GET.first(conn, w_id=port_id)


def get_port(conn: sa.Connection, ctx: RequestContext, port_id: str) -> dict[str, Any]:
    row = _GET.first(conn, w_id=port_id)
    if row is None or not owned(ctx, row):
        raise exc.PortNotFound(port_id=port_id)
    return row


def _insert_port(conn: sa.Connection, row: dict[str, Any], base_mac: str,
                 requested_mac: str | None, address: tuple[str, str] | None = None) -> bool:
    """INSERT ``row`` (its ``seq`` set from the database); with ``address``
    (subnet id, address; PostgreSQL) that address of the port in the same
    statement: whether it went in (False: taken by another port).

    The (network, MAC) unique key is the MAC check: a generated MAC that
    clashes is replaced by another and the INSERT tried again, so the common
    case costs no SELECT. A requested MAC that clashes, or a clash that is not
    the MAC's, is ``MacAddressInUse`` as before."""
    for _ in range(ipam.MAC_ATTEMPTS):
        seq, got = _insert_if_mac_free(conn, row, requested_mac, address)
        if seq is not None:
            row["seq"] = seq
            return got
        if requested_mac is not None:
            raise exc.MacAddressInUse(net_id=row["network_id"], mac=requested_mac)
        row["mac_address"] = ipam.generate_mac(base_mac)
    raise exc.NetworkError(reason="Unable to generate a unique mac address")


def _insert_if_mac_free(conn: sa.Connection, row: dict[str, Any], requested_mac: str | None,
                        address: tuple[str, str] | None) -> tuple[int | None, bool]:
    """The inserted port's ``seq`` (None if its MAC is taken on its network),
    and whether ``address`` went in with it. Any other clash (the network
    gone meanwhile) is ``MacAddressInUse``."""
    values = {f"v_{k}": v for k, v in row.items() if k != "seq"}
    try:
        if address is not None:
            seq, got = _INSERT_WITH_ADDRESS.execute(conn, **values, a_subnet=address[0],
                                                    a_address=address[1]).fetchone()
            return (None if seq is None else int(seq)), got is not None
        if conn.dialect.name == "postgresql":
            found = _INSERT_IF_MAC_FREE.execute(conn, **values).fetchone()
            return (None if found is None else int(found[0])), False
        # SQLite backs out the failed statement alone, the transaction goes on
        return int(_INSERT.execute(conn, **values).fetchone()[0]), False
    except sa.exc.IntegrityError:
        if conn.dialect.name == "postgresql" or requested_mac is not None \
                or not ipam.mac_in_use(conn, row["network_id"], row["mac_address"]):
            raise exc.MacAddressInUse(net_id=row["network_id"],
                                      mac=requested_mac or row["mac_address"]) from None
        return None, False


def _with_first_address(conn: sa.Connection, row: dict[str, Any], base_mac: str,
                        requested_mac: str | None, subnet: dict[str, Any],
                        taken: dict[str, int], claims: ipam.Claims) -> list[dict[str, str]] | None:
    """:func:`_insert_port` with the first address guess on ``subnet`` in the
    same statement: the port's fixed IPs if it went in, None if it was taken
    (or the subnet is full: the IPAM's walk or refusal follows)."""
    address = ipam.first_guess(subnet, taken, claims)
    if not _insert_port(conn, row, base_mac, requested_mac,
                        (subnet["id"], address) if address is not None else None):
        return None
    assert address is not None
    ipam.took_guess(conn, subnet, taken)
    return [{"subnet_id": subnet["id"], "ip_address": address}]


def _guessed_subnet(conn: sa.Connection, values: dict[str, Any],
                    subnets: list[dict[str, Any]] | None, taken: dict[str, int] | None,
                    claims: ipam.Claims | None) -> dict[str, Any] | None:
    """PostgreSQL: the one subnet a port without requested fixed IPs gets an
    address on, if its first guess can go with the port's insert: the
    subnet's count read already (``taken``), no automatic-address subnet."""
    if conn.dialect.name != "postgresql" or values.get("fixed_ips") is not None \
            or not subnets or len(subnets) != 1 or taken is None or claims is None:
        return None
    subnet = subnets[0]
    return subnet if subnet["id"] in taken and not ipam.is_auto_address(subnet) else None


def _allocate_fixed_ips(conn: sa.Connection, network: dict[str, Any], port: dict[str, Any],
                        requested: list[dict[str, Any]] | None,
                        nets: list[dict[str, Any]] | None = None,
                        taken: dict[str, int] | None = None,
                        claims: ipam.Claims | None = None) -> list[dict[str, str]]:
    """The fixed IPs of ``port`` (its row: id and MAC) as allocated
    (``subnet_id``, ``ip_address``), in order: the requested ones, or one of
    the first IPv4 subnet and one of the first IPv6 subnet whose addresses
    are not automatic; then its EUI-64 address on every automatic-address
    (SLAAC, DHCPv6-stateless) subnet not requested already, as Neutron gives
    them. ``nets``: the network's subnets, when the caller read them
    already; ``taken``, ``claims``: see ``ipam.allocate_ip``."""
    if nets is None:
        nets = subnets_of(conn, [network["id"]])
    by_id = {s["id"]: s for s in nets}
    if requested is None:
        chosen: dict[int, dict[str, Any]] = {}
        for subnet in nets:
            if not ipam.is_auto_address(subnet):
                chosen.setdefault(subnet["ip_version"], subnet)
        requested = [{"subnet_id": subnet["id"]} for subnet in chosen.values()]
    fixed = [_allocate_one(conn, network, port, item, nets, by_id, taken, claims)
             for item in requested]
    asked = {ip["subnet_id"] for ip in fixed}
    for subnet in nets:
        if ipam.is_auto_address(subnet) and subnet["id"] not in asked:
            fixed.append({"subnet_id": subnet["id"], "ip_address": ipam.allocate_eui64(
                conn, subnet, port["id"], port["mac_address"])})
    return fixed


def _allocate_one(conn: sa.Connection, network: dict[str, Any], port: dict[str, Any],
                  item: dict[str, Any], nets: list[dict[str, Any]],
                  by_id: dict[str, dict[str, Any]], taken: dict[str, int] | None,
                  claims: ipam.Claims | None = None) -> dict[str, str]:
    """One requested fixed IP: an address, a subnet, or both."""
    subnet_id, address = item.get("subnet_id"), item.get("ip_address")
    if subnet_id is None and address is not None:
        subnet_id = subnet_for_address(nets, address)
        if subnet_id is None:
            raise exc.InvalidInput(reason=f"IP address {shown(address)} is not a valid IP "
                                          f"for any subnet on network {network['id']}.")
    if not isinstance(subnet_id, str) or subnet_id not in by_id:
        raise exc.InvalidInput(reason=f"Subnet {shown(subnet_id)} is not on network "
                                      f"{network['id']}")
    subnet = by_id[subnet_id]
    if ipam.is_auto_address(subnet):
        if address is not None:
            raise exc.InvalidInput(reason=f"IPv6 address {shown(address)} cannot be directly "
                                          f"assigned to a port on subnet {subnet_id} as the "
                                          f"subnet is configured for automatic addresses")
        return {"subnet_id": subnet_id, "ip_address": ipam.allocate_eui64(
            conn, subnet, port["id"], port["mac_address"])}
    return {"subnet_id": subnet_id,
            "ip_address": ipam.allocate_ip(conn, subnet, port["id"], address, taken, claims)}


def subnet_for_address(nets: list[dict[str, Any]], address: Any) -> str | None:
    """The id of the subnet among ``nets`` whose CIDR holds ``address`` (None if
    none does, or if ``address`` is no IP address)."""
    ip = parse_ip(address)
    if ip is None:
        return None
    return next((s["id"] for s in nets
                 if ip.version == s["ip_version"] and ip in ipaddress.ip_network(s["cidr"])), None)


def new_port_row(ctx: RequestContext, values: dict[str, Any], network: dict[str, Any],
                 base_mac: str, default_sg: str | None = None, status: str = "DOWN"
                 ) -> dict[str, Any]:
    """The row a port of ``values`` on ``network`` is inserted as (a new id, a
    generated MAC unless one is requested; ``seq`` 0 until the insert sets
    it), after the create's checks: an external network only for its owner or
    an admin, security groups and address pairs only with port security."""
    if network["router_external"] and not network["shared"] and not ctx.is_admin \
            and network["project_id"] != ctx.project_id:
        raise exc.ExternalNetworkAttachForbidden(network_uuid=network["id"])
    port_id = new_id()
    psec = values.get("port_security_enabled", network["port_security_enabled"])
    groups = values.get("security_groups")
    if groups is None:
        groups = [default_sg] if (psec and default_sg) else []
    if groups and not psec:
        raise exc.SecurityGroupCannotBeApplied()
    if values.get("allowed_address_pairs") and not psec:
        raise exc.AddressPairAndPortSecurityRequired()
    mac = values.get("mac_address")
    return {"id": port_id, "seq": 0, "network_id": network["id"],
            "project_id": values.get("project_id") or ctx.project_id,
            "name": values.get("name", ""),
            "mac_address": mac.lower() if mac is not None else ipam.generate_mac(base_mac),
            "device_id": values.get("device_id", ""),
            "device_owner": values.get("device_owner", ""),
            "admin_state_up": values.get("admin_state_up", True), "status": status,
            "binding_host_id": values.get("binding_host_id", ""),
            "binding_vif_type": "bridge" if values.get("binding_host_id") else "unbound",
            "binding_vnic_type": values.get("binding_vnic_type", "normal"),
            "binding_profile": values.get("binding_profile", {}),
            "binding_vif_details": {"port_filter": True} if values.get("binding_host_id") else {},
            "security_groups": groups, "extra_dhcp_opts": values.get("extra_dhcp_opts", []),
            "allowed_address_pairs": values.get("allowed_address_pairs", []),
            "dns_name": values.get("dns_name", ""), "dns_domain": values.get("dns_domain", ""),
            "port_security_enabled": psec,
            "description": values.get("description", ""), "created_at": utcnow(),
            "updated_at": None}


def create_port(conn: sa.Connection, ctx: RequestContext, values: dict[str, Any],
                base_mac: str, default_sg: str | None = None, *, status: str = "DOWN",
                network: dict[str, Any] | None = None,
                subnets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A port with its MAC and fixed IPs, in the caller's transaction.

    ``status``: ACTIVE for a port bound on a host whose backend has it up at
    once. ``network``/``subnets``: the port's network and its subnets, when
    the caller read them already (compute's allocation does)."""
    return create_port_with_ips(conn, ctx, values, base_mac, default_sg, status=status,
                                network=network, subnets=subnets)[0]


def create_port_with_ips(conn: sa.Connection, ctx: RequestContext, values: dict[str, Any],
                         base_mac: str, default_sg: str | None = None, *, status: str = "DOWN",
                         network: dict[str, Any] | None = None,
                         subnets: list[dict[str, Any]] | None = None,
                         taken: dict[str, int] | None = None,
                         claims: ipam.Claims | None = None
                         ) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """:func:`create_port`, and the fixed IPs it allocated (as ``fixed_ips_of``
    would read them back). ``taken``, ``claims``: see ``ipam.allocate_ip``."""
    if network is None or network["id"] != values["network_id"]:
        network = get_network(conn, ctx, values["network_id"])
    row = new_port_row(ctx, values, network, base_mac, default_sg, status)
    mac = values.get("mac_address")
    subnet = _guessed_subnet(conn, values, subnets, taken, claims)
    if subnet is not None:
        assert taken is not None and claims is not None
        fixed = _with_first_address(conn, row, base_mac, mac, subnet, taken, claims)
        if fixed is not None:
            return row, fixed
    else:
        _insert_port(conn, row, base_mac, mac)
    return row, _allocate_fixed_ips(conn, network, row, values.get("fixed_ips"), subnets, taken,
                                    claims)


def update_port(conn: sa.Connection, ctx: RequestContext, port_id: str,
                values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply ``values`` (column names); returns (before, after)."""
    before = get_port(conn, ctx, port_id)
    values = dict(values)
    if "binding_host_id" in values:
        bound = bool(values["binding_host_id"])
        values["binding_vif_type"] = "bridge" if bound else "unbound"
        values["binding_vif_details"] = {"port_filter": True} if bound else {}
        if not bound:
            values["status"] = "DOWN"
    _check_port_security(before, values)
    if values.get("mac_address", before["mac_address"]) != before["mac_address"] \
            and "fixed_ips" not in values:
        values["fixed_ips"] = _kept_on_new_mac(conn, port_id)
    if "fixed_ips" in values:
        requested = values.pop("fixed_ips")
        conn.execute(ip_allocations.delete().where(ip_allocations.c.port_id == port_id))
        _allocate_fixed_ips(conn, get_network(conn, ctx.elevated(), before["network_id"]),
                            {**before, **values}, requested)
    if values:
        try:
            with statement_savepoint(conn):
                conn.execute(ports.update().where(ports.c.id == port_id).values(
                    updated_at=utcnow(), **values))
        except sa.exc.IntegrityError:
            # the one unique key a port update can break: (network, MAC)
            raise exc.MacAddressInUse(net_id=before["network_id"],
                                      mac=values.get("mac_address")) from None
    return before, _GET.first(conn, w_id=port_id) or {}


def _kept_on_new_mac(conn: sa.Connection, port_id: str) -> list[dict[str, Any]]:
    """The fixed IPs a port keeps when its MAC changes: all but its EUI-64
    ones, which are derived again from the new MAC."""
    fixed = fixed_ips_of(conn, [port_id])[port_id]
    auto = {sid for sid, row in subnets_by_id(conn, [ip["subnet_id"] for ip in fixed]).items()
            if ipam.is_auto_address(row)}
    return [ip for ip in fixed if ip["subnet_id"] not in auto]


def _check_port_security(before: dict[str, Any], values: dict[str, Any]) -> None:
    """A port without port security has no security groups and no allowed
    address pairs: asking for them is 400, leaving them on when turning it
    off 409 (Neutron's ``PortSecurityPortHasSecurityGroup``)."""
    enabled = values.get("port_security_enabled", before["port_security_enabled"])
    if enabled:
        return
    if values.get("security_groups"):
        raise exc.SecurityGroupCannotBeApplied()
    if values.get("security_groups", before["security_groups"]):
        raise exc.PortSecurityPortHasSecurityGroup()
    if values.get("allowed_address_pairs", before["allowed_address_pairs"]):
        raise exc.AddressPairAndPortSecurityRequired()


def delete_port(conn: sa.Connection, ctx: RequestContext, port_id: str) -> dict[str, Any]:
    return delete_port_row(conn, get_port(conn, ctx, port_id))


def delete_port_row(conn: sa.Connection, row: dict[str, Any]) -> dict[str, Any]:
    """Delete the port ``row`` (read in this transaction), its addresses and
    tags; its floating IPs stay, associated with nothing (as Neutron's)."""
    _DISASSOCIATE.execute(conn, w_port=row["id"])
    tags.delete_tags(conn, [row["id"]])
    # Its addresses go by the foreign key's cascade, after the port: the
    # counters' triggers then fire port count first, subnets after, in the
    # order an allocation takes them (at COMMIT on PostgreSQL, migration
    # 0032), so a release and an allocation never wait on each other's rows.
    _DELETE.execute(conn, w_id=row["id"])
    return row


# A project's ports, for its port quota: its counter (migration 0008), one
# row however many ports it has; read through an aggregate so that a project
# without a row gives 0.
_PORTS_OF_PROJECT = Prepared(sa.select(sa.func.coalesce(sa.func.max(port_usages.c.ports), 0))
                             .where(port_usages.c.project_id == sa.bindparam("w_project")))


def ports_of_project(conn: sa.Connection, project_id: str) -> int:
    """How many ports ``project_id`` has (what its port quota counts)."""
    return int(_PORTS_OF_PROJECT.execute(conn, w_project=project_id).fetchone()[0])


def owned_by(column: Any, project: Any) -> Any:
    """``column == project`` that no index is used for: beside ``device_id`` (a
    handful of rows) SQLite, without statistics, may take the project index and
    read every port of the project, once per boot (measured: a fifth of the
    engine's time at 2,000 servers of one project)."""
    return sa.func.coalesce(column, "") == project


# A server's ports are those naming it that belong to its project: a port of
# another project naming it (only an admin can make one) is not the server's.
_PORTS_OF_DEVICE = PreparedRead(sa.select(ports).where(
    ports.c.device_id == sa.bindparam("w_device"),
    owned_by(ports.c.project_id, sa.bindparam("w_project"))).order_by(ports.c.seq))


def ports_of_device(conn: sa.Connection, device_id: str, project_id: str) -> list[dict[str, Any]]:
    """The ports of ``project_id`` whose device is ``device_id``, in creation order."""
    return _PORTS_OF_DEVICE.all(conn, w_device=device_id, w_project=project_id)


def subnets_by_id(conn: sa.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    return {r["id"]: r for r in fetch_all(conn, sa.select(subnets).where(subnets.c.id.in_(ids)))}
