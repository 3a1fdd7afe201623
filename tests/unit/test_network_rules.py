"""Rules of the network stage: IP allocation order, ports of up-at-once backends."""
from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.network import exception as exc
from cirrus.network import ipam
from cirrus.network import ports as port_db
from cirrus.network.backends.noop import NoopBackend
from cirrus.network.binding import Binder
from cirrus.network.networks import create_network, create_subnet, network_by_id, subnets_of

POOLS = [{"start": "10.0.0.2", "end": "10.0.0.4"}, {"start": "10.0.0.6", "end": "10.0.0.7"}]


@pytest.mark.parametrize("n, address", [
    (0, "10.0.0.2"), (2, "10.0.0.4"), (3, "10.0.0.6"), (4, "10.0.0.7"), (5, None),
])
def test_nth_in_pools_walks_the_pools_in_order(n: int, address: str | None) -> None:
    assert ipam.nth_in_pools(POOLS, n) == address


def test_nth_in_pools_keeps_the_ip_version() -> None:
    assert ipam.nth_in_pools([{"start": "::2", "end": "::ff"}], 3) == "::5"


WHOLE = [{"start": "10.0.0.1", "end": "10.0.0.6"}]


@pytest.mark.parametrize("gateway, pools", [
    ("10.0.0.1", [{"start": "10.0.0.2", "end": "10.0.0.6"}]),
    ("10.0.0.4", [{"start": "10.0.0.1", "end": "10.0.0.3"}, {"start": "10.0.0.5", "end": "10.0.0.6"}]),
    ("10.0.0.6", [{"start": "10.0.0.1", "end": "10.0.0.5"}]),
    ("192.168.0.1", WHOLE),  # outside the subnet
    ("::1", WHOLE),  # another IP version is outside too, not a TypeError
    (None, WHOLE),
])
def test_default_pools_leave_out_the_gateway(gateway: str | None,
                                             pools: list[dict[str, str]]) -> None:
    assert ipam.default_pools("10.0.0.0/29", gateway) == pools


@pytest.mark.parametrize("address, inside", [
    ("10.0.0.2", True), ("10.0.0.5", False), ("10.0.0.7", True), ("10.0.0.8", False),
    ("::a00:2", False),  # the same number in IPv6 is another address
])
def test_in_pools(address: str, inside: bool) -> None:
    assert ipam.in_pools(address, POOLS) is inside


@pytest.mark.parametrize("pool, addresses", [
    ({"start": "10.0.0.1", "end": "10.0.0.3"}, ["10.0.0.1", "10.0.0.2", "10.0.0.3"]),
    ({"start": "::fe", "end": "::100"}, ["::fe", "::ff", "::100"]),
    ({"start": "10.0.0.3", "end": "10.0.0.1"}, []),
    ({"start": "0.0.0.1", "end": "::3"}, []),  # a pool across IP versions holds nothing
])
def test_pool_addresses_walk_one_pool(pool: dict[str, str], addresses: list[str]) -> None:
    assert list(ipam._free_in_pools([pool], set())) == addresses


@pytest.mark.parametrize("address", ["10.0.0.2", "0.0.0.0", "255.255.255.255", "::1",
                                     "2001:db8::a:1", "2001:DB8::A:1", "fe80::1%eth0"])
def test_an_address_value_is_its_integer(address: str) -> None:
    """The walk reads every used address by ``inet_pton``; any spelling
    ``ipaddress`` reads gives the same integer (a scope: the slow way)."""
    import ipaddress
    assert ipam._address_value(address) == int(ipaddress.ip_address(address))


def test_an_unreadable_used_address_matches_no_pool_address() -> None:
    assert ipam._address_value("not-an-address") == -1
    assert list(ipam._free_in_pools([{"start": "10.0.0.1", "end": "10.0.0.2"}],
                                    {ipam._address_value("junk")})) == ["10.0.0.1", "10.0.0.2"]


def test_nth_in_pools_skips_a_pool_across_ip_versions() -> None:
    pools = [{"start": "0.0.0.1", "end": "::3"}, {"start": "::fe", "end": "::100"}]
    assert [ipam.nth_in_pools(pools, n) for n in range(4)] == ["::fe", "::ff", "::100", None]


def _subnet(conn: sa.Connection) -> dict[str, Any]:
    ctx = RequestContext(project_id="p", roles=["admin"])
    net = create_network(conn, ctx, {"name": "n", "project_id": "p"})
    create_subnet(conn, ctx, {"network_id": net["id"], "cidr": "10.9.0.0/29", "ip_version": 4,
                              "project_id": "p"})
    return subnets_of(conn, [net["id"]])[0]


def _port(conn: sa.Connection, subnet: dict[str, Any]) -> dict[str, Any]:
    ctx = RequestContext(project_id="p", roles=["admin"])
    return port_db.create_port(conn, ctx, {"network_id": subnet["network_id"],
                                           "fixed_ips": []}, "fa:16:3e:00:00:00")


def test_allocation_takes_the_next_address_then_fills_holes(conn: sa.Connection) -> None:
    subnet = _subnet(conn)  # pool 10.9.0.2-10.9.0.6 (gateway .1)
    ports = [_port(conn, subnet) for _ in range(4)]
    got = [ipam.allocate_ip(conn, subnet, p["id"]) for p in ports]
    assert got == ["10.9.0.2", "10.9.0.3", "10.9.0.4", "10.9.0.5"]
    port_db.delete_port(conn, RequestContext(roles=["admin"]), ports[0]["id"])
    # The count-th address (.5) is taken: the walk finds the hole.
    assert ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"]) == "10.9.0.2"
    assert ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"]) == "10.9.0.6"
    with pytest.raises(exc.IpAddressGenerationFailure):
        ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"])


def test_counts_read_with_the_subnets_follow_the_transactions_allocations(
        conn: sa.Connection) -> None:
    """The count read with the subnets is kept up to date by each allocation
    of the unit; one that is stale (another writer's address) only costs the
    walk: the unique key still decides."""
    from cirrus.network.networks import subnets_to_allocate

    subnet = _subnet(conn)
    rows, taken = subnets_to_allocate(conn, subnet["network_id"])
    assert rows == [subnet] and taken == {subnet["id"]: 0}
    got = [ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"], taken=taken) for _ in range(2)]
    assert got == ["10.9.0.2", "10.9.0.3"] and taken == {subnet["id"]: 2}
    ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"])  # .4, by another writer
    assert ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"], taken=taken) == "10.9.0.5"
    assert subnets_to_allocate(conn, subnet["network_id"])[1] == {subnet["id"]: 4}


def test_a_guess_lost_to_another_writer_counts_again_instead_of_walking(
        conn: sa.Connection) -> None:
    """PostgreSQL, computes side by side: a count read before another
    transaction committed points at that transaction's address. The fresh
    count is tried next — not the walk, which reads every address of the
    subnet (and would here find the lower hole, .3)."""
    subnet = _subnet(conn)  # pool 10.9.0.2-10.9.0.6
    for address in ("10.9.0.2", "10.9.0.4", "10.9.0.6"):
        ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"], address=address)
    stale = {subnet["id"]: 2}  # read before "another writer" committed its third
    assert ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"], taken=stale) == "10.9.0.5"
    # The count-th (.6) is taken and the count does not move: the walk finds .3.
    assert ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"]) == "10.9.0.3"


def test_a_racing_walk_spreads_over_the_first_free_addresses(conn: sa.Connection) -> None:
    """Allocations that kept losing (``contended``) take one of the first free
    addresses at random, never a taken one; alone, the walk takes the first."""
    subnet = _subnet(conn)  # pool 10.9.0.2-10.9.0.6
    for address in ("10.9.0.2", "10.9.0.4"):
        ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"], address=address)
    pools = subnet["allocation_pools"]
    got = set()
    for _ in range(40):
        with conn.begin_nested() as savepoint:
            got.add(ipam._walk(conn, subnet, _port(conn, subnet)["id"], pools, contended=True))
            savepoint.rollback()
    assert got == {"10.9.0.3", "10.9.0.5", "10.9.0.6"}
    assert ipam._walk(conn, subnet, _port(conn, subnet)["id"], pools, contended=False) == \
        "10.9.0.3"


@pytest.mark.parametrize("held, asked, got", [
    ({}, ("s", 4), 4),  # nothing in flight: the count's guess
    ({"s": {4}}, ("s", 4), 5),
    ({"s": {4, 5, 7}}, ("s", 4), 6),
    ({"s": {4, 5}}, ("s", 6), 6),  # held below the guess: not in its way
    ({"t": {4}}, ("s", 4), 4),  # another subnet's
])
def test_a_claim_skips_the_indices_in_flight(held: dict[str, set[int]], asked: tuple[str, int],
                                             got: int) -> None:
    in_flight = ipam.InFlight()
    for subnet_id, indices in held.items():
        for index in indices:
            in_flight.claim(subnet_id, index)
    claims = ipam.Claims(in_flight)
    assert claims.claim(*asked) == got
    assert got in in_flight.held(asked[0])
    claims.release()
    assert in_flight.held(asked[0]) == held.get(asked[0], set())


def test_a_walk_passes_the_addresses_in_flight(conn: sa.Connection) -> None:
    """Where the counter cannot guess (a hole), the walk leaves the free
    addresses another allocation of the process is trying to it."""
    subnet = _subnet(conn)  # pool 10.9.0.2-10.9.0.6
    ipam.allocate_ip(conn, subnet, _port(conn, subnet)["id"], address="10.9.0.3")
    pools = subnet["allocation_pools"]
    assert ipam._walk(conn, subnet, _port(conn, subnet)["id"], pools, False, {0, 2}) == \
        "10.9.0.5"


def test_generated_macs_keep_the_prefix() -> None:
    macs = {ipam.generate_mac("fa:16:3e:00:00:00") for _ in range(200)}
    assert len(macs) > 190
    assert all(len(m) == 17 and m.startswith("fa:16:3e:") and int(m[9:].replace(":", ""), 16) >= 0
               for m in macs)


class _Database:
    """Records the units a Binder runs; answers ``_activate`` with an ACTIVE port."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    async def run(self, fn: Any, *args: Any) -> dict[str, Any]:
        self.runs.append(fn.__name__)
        return {**PORT, "status": "ACTIVE"}

    async def read(self, fn: Any, *args: Any) -> Any:
        return {}, []


PORT = {"id": "port-1", "binding_host_id": "h1", "device_owner": "compute:nova",
        "device_id": "vm-1", "network_id": "n1"}


@pytest.mark.parametrize("status, writes", [("ACTIVE", []), ("DOWN", ["_activate"])])
def test_up_on_bind_backend_reports_plugged_without_a_second_write(status: str,
                                                                   writes: list[str]) -> None:
    """A port the binding write marked ACTIVE is only reported plugged; one
    bound elsewhere (DOWN) is activated first, as before."""
    events: list[dict[str, Any]] = []

    async def sink(_ctx: RequestContext, batch: list[dict[str, Any]]) -> None:
        events.extend(batch)
    db = _Database()
    binder = Binder(db, NoopBackend(), sink)  # type: ignore[arg-type]
    assert binder.up_on_bind
    asyncio.run(binder.bound({**PORT, "status": status}))
    assert db.runs == writes
    assert events == [{"name": "network-vif-plugged", "server_uuid": "vm-1", "tag": "port-1",
                       "status": "completed"}]


class _Reads(_Database):
    """Records the reads a Binder makes; a port's network is ``{"id": "n1"}``."""

    async def read(self, fn: Any, *args: Any) -> Any:
        self.runs.append(fn.__name__)
        return {"id": "n1"}


@pytest.mark.parametrize("needs, given, told, reads", [
    (False, None, {}, []),                       # noop, linuxbridge: no network, no read
    (False, {"id": "n1"}, {}, []),
    (True, None, {"id": "n1"}, ["_network_of"]),  # a backend that uses it: read if not given
    (True, {"id": "n1"}, {"id": "n1"}, []),
])
def test_an_unbind_reads_the_network_only_for_a_backend_that_uses_it(
        needs: bool, given: dict[str, Any] | None, told: dict[str, Any], reads: list[str]) -> None:
    backend = NoopBackend()
    backend.unbind_needs_network = needs
    calls: list[dict[str, Any]] = []

    async def port_unbound(_port: dict[str, Any], network: dict[str, Any]) -> None:
        calls.append(network)
    backend.port_unbound = port_unbound  # type: ignore[method-assign, assignment]
    db = _Reads()
    binder = Binder(db, backend)  # type: ignore[arg-type]
    assert binder.unbind_needs_network is needs
    asyncio.run(binder.unbound(PORT, given))
    assert (calls, db.runs) == ([told], reads)


def test_a_clashing_generated_mac_is_replaced_a_requested_one_refused(
        conn: sa.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """No MAC SELECT before the INSERT: the unique key catches a clash, a
    generated MAC is then drawn again; each port's seq follows the last."""
    subnet = _subnet(conn)
    first = _port(conn, subnet)
    macs = iter([first["mac_address"], "fa:16:3e:aa:bb:cc"])
    monkeypatch.setattr(ipam, "generate_mac", lambda _base: next(macs))
    second = _port(conn, subnet)
    assert second["mac_address"] == "fa:16:3e:aa:bb:cc"
    stored = dict(conn.execute(sa.select(port_db.ports.c.id, port_db.ports.c.seq)).all())
    assert stored == {first["id"]: first["seq"], second["id"]: first["seq"] + 1}
    ctx = RequestContext(project_id="p", roles=["admin"])
    with pytest.raises(exc.MacAddressInUse):
        port_db.create_port(conn, ctx, {"network_id": subnet["network_id"], "fixed_ips": [],
                                        "mac_address": first["mac_address"].upper()},
                            "fa:16:3e:00:00:00")
    assert len(stored) == conn.execute(sa.select(sa.func.count()).select_from(port_db.ports)).scalar()


def test_available_networks_are_the_own_then_the_shared(conn: sa.Connection) -> None:
    """One read for both, in the order two reads gave: own by creation, then shared."""
    from cirrus.network.allocate import available_networks as _available_networks

    admin = RequestContext(project_id="other", roles=["admin"])
    shared = create_network(conn, admin, {"name": "shared", "shared": True})
    create_network(conn, admin, {"name": "theirs"})
    mine = [create_network(conn, admin, {"name": n, "project_id": "p"}) for n in ("a", "b")]
    ctx = RequestContext(project_id="p", roles=["member"])
    got = _available_networks(conn, ctx, "p", None)
    assert [n["name"] for n in got] == ["a", "b", "shared"]
    assert [n["id"] for n in got] == [mine[0]["id"], mine[1]["id"], shared["id"]]
    assert _available_networks(conn, ctx, "p", [shared["id"]])[0]["name"] == "shared"
    with pytest.raises(exc.NetworkNotFound):
        _available_networks(conn, ctx, "p", [create_network(conn, admin, {"name": "x"})["id"]])


def test_resolve_creates_the_default_group_on_first_use_only(conn: sa.Connection) -> None:
    from cirrus.network import security_groups as sg_db

    [default] = sg_db.resolve(conn, "p", ["default"])
    assert sg_db.resolve(conn, "p", ["default", default]) == [default]
    assert sg_db.ensure_default_id(conn, "p") == default
    assert sg_db.resolve(conn, "q", ["default"]) != [default]
    with pytest.raises(exc.SecurityGroupNotFound):
        sg_db.resolve(conn, "p", ["nope"])


def _rename_default(conn: sa.Connection, name: str) -> None:
    from cirrus.network.models import security_groups

    conn.execute(security_groups.update().where(security_groups.c.project_id == "p",
                                                 security_groups.c.name == "default")
                 .values(name=name))


def _second_default(conn: sa.Connection) -> None:
    from cirrus.network import security_groups as sg_db

    sg_db.create_group(conn, RequestContext(project_id="p", roles=["admin"]), "default")


@pytest.mark.parametrize("change, outcome", [
    (None, "id"),  # the one default group
    (_second_default, exc.NoUniqueMatch),  # two named default (not through the API)
    (lambda conn: _rename_default(conn, "other"), exc.SecurityGroupNotFound),
])
def test_the_auto_read_resolves_the_default_group_as_resolve_does(
        conn: sa.Connection, change: Any, outcome: Any) -> None:
    """The default group read with the auto network (security_groups.
    DEFAULT_GROUP_COLUMNS) gives what resolve(["default"]) gives, or its error;
    before the project has one, nothing (resolve makes it)."""
    from cirrus.network import security_groups as sg_db
    from cirrus.network.auto_allocate import (find_auto_network_and_subnets,
                                              get_or_create_auto_network)
    from cirrus.network.segments import SegmentConfig

    net = get_or_create_auto_network(conn, SimpleNamespace(auto_allocate_cidr="10.5.0.0/24"), "p",
                                     SegmentConfig())
    auto = find_auto_network_and_subnets(conn, "p")
    assert auto is not None and auto.default_groups is None
    assert auto.network == network_by_id(conn, net["id"])
    assert auto.subnets == subnets_of(conn, [net["id"]])
    expected = sg_db.resolve(conn, "p", ["default"])
    if change is not None:
        change(conn)
    if outcome == "id":
        assert find_auto_network_and_subnets(conn, "p").default_groups == expected  # type: ignore[union-attr]
        return
    with pytest.raises(outcome):
        sg_db.resolve(conn, "p", ["default"])
    auto = find_auto_network_and_subnets(conn, "p")
    assert auto is not None
    with pytest.raises(outcome):  # asked for, not read: as resolve would raise
        auto.default_groups  # noqa: B018


def test_a_network_read_by_id_for_a_boot_is_its_rows_and_the_default_group(
        conn: sa.Connection) -> None:
    """networks.network_for_boot: the network's row and its subnets as their
    own reads give them (none yet: no subnet), and the asking project's
    default group as resolve gives it; None for a network that is not there."""
    from cirrus.network import security_groups as sg_db
    from cirrus.network.networks import network_for_boot
    ctx = RequestContext(project_id="owner", roles=["admin"])
    net = create_network(conn, ctx, {"name": "n", "project_id": "owner"})
    read = network_for_boot(conn, "p", net["id"])
    assert read is not None and read.network == network_by_id(conn, net["id"])
    assert read.subnets == [] and read.default_groups is None
    for cidr in ("10.6.0.0/24", "10.7.0.0/24"):
        create_subnet(conn, ctx, {"network_id": net["id"], "cidr": cidr, "ip_version": 4,
                                  "project_id": "owner"})
    expected = sg_db.resolve(conn, "p", ["default"])
    read = network_for_boot(conn, "p", net["id"])
    assert read is not None and read.subnets == subnets_of(conn, [net["id"]])
    assert len(read.subnets) == 2 and read.default_groups == expected
    assert network_for_boot(conn, "p", "no-such-network") is None


def _instance_row(conn: sa.Connection, name: str) -> dict[str, Any]:
    from cirrus.compute.models import instance_info_caches, instances
    from cirrus.db.base import utcnow

    uuid_ = f"00000000-0000-4000-8000-{name:0>12}"
    conn.execute(instances.insert().values(
        uuid=uuid_, project_id="p", user_id="u", display_name=name, hostname=name, flavor={},
        vcpus=1, memory_mb=64, root_gb=0, vm_state="building", task_state="networking",
        reservation_id="r", created_at=utcnow()))
    conn.execute(instance_info_caches.insert().values(instance_uuid=uuid_, network_info=[],
                                                      created_at=utcnow()))
    return {"uuid": uuid_, "project_id": "p", "hostname": name, "availability_zone": "nova"}


def _progress() -> Any:
    from cirrus.network.allocate import Progress as _Progress

    return _Progress(ipam.Claims(ipam.InFlight()))


def _traced_allocation(conn: sa.Connection, api: Any, ctx: RequestContext,
                       instance: dict[str, Any]) -> tuple[list[str], Any]:
    statements: list[str] = []
    conn.connection.driver_connection.set_trace_callback(statements.append)  # type: ignore[union-attr]
    try:
        _, info = api._allocate(conn, ctx, instance, [{"network_id": "auto"}], ["default"], "h1",
                                _progress())
    finally:
        conn.connection.driver_connection.set_trace_callback(None)  # type: ignore[union-attr]
    # sqlite3 traces a statement again as each trigger program of it starts
    # (the subnet's allocation counter): one statement, traced in a row.
    return [s for i, s in enumerate(statements) if i == 0 or s != statements[i - 1]], info


def test_an_auto_allocation_runs_five_statements(conn: sa.Connection, tmp_path: Path) -> None:
    """Once the project has its network and default group: the network with
    its subnets, their counts and the default group (one read), the port, its
    address and the info cache — and the next boot gets the next address —
    and the read of the project's port limit and counter (one statement; read
    when the default is unlimited too, since an admin may have set the
    project's own)."""
    from cirrus.config import Settings
    from cirrus.network.api import API

    ctx = RequestContext(project_id="p", user_id="u", roles=["member"])
    unlimited = API(Settings(state_dir=tmp_path, quota_ports=-1), None,  # type: ignore[arg-type]
                    Binder(None, NoopBackend()))
    _, first = unlimited._allocate(conn, ctx, _instance_row(conn, "1"), [{"network_id": "auto"}],
                                   ["default"], "h1", _progress())
    statements, second = _traced_allocation(conn, unlimited, ctx, _instance_row(conn, "2"))
    assert len(statements) == 5, statements
    assert [s for s in statements if "FROM network_quotas" in s], statements
    limited = API(Settings(state_dir=tmp_path, quota_ports=10), None,  # type: ignore[arg-type]
                  Binder(None, NoopBackend()))
    counted, third = _traced_allocation(conn, limited, ctx, _instance_row(conn, "3"))
    assert len(counted) == 5, counted
    assert [s for s in counted if "FROM port_usages" in s], counted  # one row, any size
    assert [vif["network"]["subnets"][0]["ips"][0]["address"]
            for vif in (first + second + third)] == ["10.0.0.2", "10.0.0.3", "10.0.0.4"]


@pytest.mark.parametrize("requested, each", [
    ([{"network_id": "auto"}], 1),
    ([{"network_id": "n1", "port_id": None, "fixed_ip": None}], 1),
    ([{"network_id": "n1", "port_id": None, "fixed_ip": "10.0.0.5"}], 1),
    ([{"network_id": "n1", "port_id": None}, {"network_id": "n2", "port_id": None}], 2),
    ([{"network_id": "n1", "port_id": None}, {"network_id": None, "port_id": "p1"}], 0),
    ([{"network_id": "none"}], 0),
    ([], 0),
    (None, 0),
])
def test_the_ports_a_create_can_check_in_its_statement(requested: Any, each: int) -> None:
    """Networks asked for (``auto`` or by id): a new port each per server, the
    create's statement can count them; a port asked for (Nova counts a
    create's ports differently then), nothing, or no request: the read."""
    from cirrus.network.api import API
    assert API.ports_a_create_can_check(requested) == each


def test_a_network_asked_for_is_read_once_with_its_subnets_and_groups(
        conn: sa.Connection) -> None:
    """The allocation's transaction (SQLite's, PostgreSQL's fallback) reads a
    network asked for by id, its subnets and the project's default group in
    one statement (networks.network_for_boot), not three; the port gets the
    network's one subnet and the default group."""
    from cirrus.compute.models import instance_info_caches
    from cirrus.config import Settings
    from cirrus.db.base import utcnow
    from cirrus.network import security_groups as sg_db
    from cirrus.network.allocate import PortAllocator, Progress
    from cirrus.network.segments import SegmentConfig
    from tests.unit.test_compute_rules import insert_instance

    subnet = _subnet(conn)
    default = sg_db.resolve(conn, "p", ["default"])
    insert_instance(conn, "i-1", project="p")
    conn.execute(instance_info_caches.insert().values(instance_uuid="i-1", network_info=[],
                                                      created_at=utcnow()))
    allocator = PortAllocator(Settings(), SegmentConfig(), Binder(None, NoopBackend()))
    seen: list[str] = []
    driver = conn.connection.driver_connection
    driver.set_trace_callback(seen.append)
    try:
        bound, info = allocator.allocate(
            conn, RequestContext(project_id="p", user_id="u", roles=["member"]),
            {"uuid": "i-1", "project_id": "p", "hostname": "vm", "availability_zone": "nova"},
            [{"network_id": subnet["network_id"], "port_id": None, "fixed_ip": None}],
            ["default"], "h1", Progress(ipam.Claims(ipam.InFlight())))
    finally:
        driver.set_trace_callback(None)
    reads = [s for s in seen if s.lstrip().upper().startswith("SELECT")
             and ("FROM networks" in s or "FROM subnets" in s or "security_group" in s)]
    assert len(reads) == 1, reads
    [(port, network, subnets)] = bound
    assert network["id"] == subnet["network_id"] and subnets == [subnet]
    assert port["security_groups"] == default
    assert info[0]["network"]["subnets"][0]["ips"][0]["address"] == "10.9.0.2"
