"""A boot's one port on one network in one statement on PostgreSQL
(``cirrus.network.allocate_at_once``): what it stores is what the
transaction would, it writes all or nothing, and every case it does not
handle reaches the transaction with nothing written."""
from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.compute.models import instance_info_caches
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db import migrate
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.network import allocate_at_once as at_once
from cirrus.network import exception as exc
from cirrus.network import info_cache, ipam
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network.allocate import OnePort, Progress
from cirrus.network.api import API
from cirrus.network.auto_allocate import get_or_create_auto_network
from cirrus.network.backends.noop import NoopBackend
from cirrus.network.binding import Binder
from cirrus.network.models import ip_allocations, networks, ports, subnets
from cirrus.network.networks import create_subnet
from cirrus.network.segments import SegmentConfig
from tests.databases import scratch_postgres
from tests.unit.test_compute_rules import insert_instance

AUTO = [{"network_id": "auto"}]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with scratch_postgres("cirrus_atonce") as url:
        migrate.upgrade(url)
        yield url


@pytest.fixture
def db(url: str) -> Iterator[Database]:
    database = Database(url, check_units=True)  # the units' one statement, checked
    yield database
    database.close()


def _project(db: Database, cidr: str = "10.8.0.0/24", default_group: bool = True) -> str:
    """A new project with its auto network (one subnet of ``cidr``) and its
    default security group (made on a boot's first use: unless ``default_group``)."""
    project = f"p-{uuid.uuid4().hex[:8]}"

    def make(conn: sa.Connection) -> None:
        get_or_create_auto_network(conn, Settings(auto_allocate_cidr=cidr), project,
                                   SegmentConfig())
        if default_group:
            sg_db.resolve(conn, project, ["default"])
    db.run_sync(make)
    return project


def _instance(db: Database, project: str) -> dict[str, Any]:
    uuid_ = str(uuid.uuid4())

    def make(conn: sa.Connection) -> None:
        insert_instance(conn, uuid_, project=project)
        conn.execute(instance_info_caches.insert().values(instance_uuid=uuid_, network_info=[],
                                                          created_at=utcnow()))
    db.run_sync(make)
    return {"uuid": uuid_, "project_id": project, "hostname": "vm", "availability_zone": "nova"}


def _api(db: Database, limit: int = 50, in_flight: ipam.InFlight | None = None) -> API:
    return API(Settings(quota_ports=limit), db, Binder(db, NoopBackend()),
               in_flight or ipam.InFlight())


def _claims() -> ipam.Claims:
    return ipam.Claims(ipam.InFlight())


def _ctx(project: str) -> RequestContext:
    return RequestContext(project_id=project, user_id="u", roles=["member"])


def _plan(db: Database, api: API, instance: dict[str, Any],
          claims: ipam.Claims | None = None,
          requests: list[dict[str, Any]] | None = None) -> OnePort:
    ctx = _ctx(instance["project_id"])
    plan = db.run_sync(lambda conn: api.allocator.plan_one_port(
        conn, ctx, instance, requests or AUTO, ["default"], "h1", claims or _claims()))
    assert plan is not None
    return plan


def _write(db: Database, api: API, instance: dict[str, Any], plan: OnePort) -> at_once.Attempt:
    return db.run_sync(lambda conn: api.allocator.write_one_port(conn, instance, plan))


def _ports_of(db: Database, uuid_: str) -> list[str]:
    return db.run_sync(lambda conn: [r.id for r in conn.execute(
        sa.select(ports.c.id).where(ports.c.device_id == uuid_))])


def _addresses(db: Database, subnet_id: str) -> list[str]:
    return db.run_sync(lambda conn: sorted(r.ip_address for r in conn.execute(
        sa.select(ip_allocations.c.ip_address).where(ip_allocations.c.subnet_id == subnet_id))))


def _allocated(db: Database, subnet_id: str) -> int:
    return int(db.run_sync(lambda conn: conn.execute(
        sa.select(subnets.c.allocated).where(subnets.c.id == subnet_id)).scalar_one()))


def _cached(db: Database, uuid_: str) -> list[dict[str, Any]]:
    return db.run_sync(info_cache.cache_of, uuid_)


def _nothing_written(db: Database, instance: dict[str, Any], plan: OnePort,
                     addresses_before: list[str]) -> None:
    assert _ports_of(db, instance["uuid"]) == []
    assert _addresses(db, plan.subnet["id"]) == addresses_before
    assert _cached(db, instance["uuid"]) == []


def _by_id(db: Database, project: str) -> list[dict[str, Any]]:
    """The request of the project's (auto) network asked for by its id, as
    ``openstack server create --network`` asks."""
    net_id = db.run_sync(lambda conn: conn.execute(sa.select(subnets.c.network_id).where(
        subnets.c.project_id == project)).scalar_one())
    return [{"network_id": net_id, "port_id": None, "fixed_ip": None}]


@pytest.mark.parametrize("by_id", [False, True], ids=["auto", "by-id"])
def test_the_statement_stores_what_the_general_build_reads_back(db: Database,
                                                                 by_id: bool) -> None:
    """The port, its address and the info cache in one statement; the cache
    equals the general build from the stored rows (what the transaction's
    fallback would store), and the counters count the port and address."""
    project = _project(db)
    api, instance = _api(db), _instance(db, project)
    plan = _plan(db, api, instance, requests=_by_id(db, project) if by_id else AUTO)
    attempt = _write(db, api, instance, plan)
    assert attempt.outcome is at_once.Outcome.STORED and attempt.seq is not None
    stored = _cached(db, instance["uuid"])
    assert [vif["id"] for vif in stored] == [plan.row["id"]]
    assert stored[0]["network"]["subnets"][0]["ips"][0]["address"] == plan.address == "10.8.0.2"
    rebuilt = db.run_sync(info_cache.build_network_info_model, instance["uuid"], project, set())
    assert list(rebuilt) == stored
    assert _allocated(db, plan.subnet["id"]) == 1
    assert db.run_sync(port_db.ports_of_project, project) == 1
    row = db.run_sync(port_db.port_by_id, plan.row["id"])
    assert row["binding_host_id"] == "h1" and row["status"] == "ACTIVE"
    assert row["device_id"] == instance["uuid"] and row["seq"] == attempt.seq


@pytest.mark.parametrize("groups", [["default"], ["web", "default"]])
def test_a_network_by_id_stores_what_the_transaction_stores(db: Database,
                                                            groups: list[str]) -> None:
    """Two instances on one network asked by id, one through the one
    statement, one through the transaction (the statement not tried): the
    same port columns but id, MAC, device and address (its groups those
    asked for), the same cache but those."""
    project = _project(db)
    api = _api(db)
    ctx = _ctx(project)
    web = db.run_sync(lambda conn: sg_db.create_group(conn, ctx, "web"))["id"]
    requests = _by_id(db, project)
    fast, slow = _instance(db, project), _instance(db, project)
    assert db.run_sync(lambda conn: api.allocator.plan_one_port(
        conn, ctx, fast, requests, groups, "h1", _claims())) is not None
    fast_info = asyncio.run(api.allocate_for_instance(
        ctx, fast, requested_networks=requests, security_groups=groups, bind_host_id="h1"))
    progress = Progress(_claims())
    slow_info = db.run_sync(lambda conn: api.allocator.allocate(
        conn, ctx, slow, [dict(r) for r in requests], groups, "h1", progress))[1]
    varying = ("id", "mac_address", "device_id", "fixed_ips", "seq", "created_at",
               "updated_at", "name")

    def port_of(inst: dict[str, Any]) -> dict[str, Any]:
        row = db.run_sync(port_db.port_by_id, _ports_of(db, inst["uuid"])[0])
        return {k: v for k, v in row.items() if k not in varying}
    assert port_of(fast) == port_of(slow)
    assert (web in port_of(fast)["security_groups"]) == ("web" in groups)

    def shape(info: Any) -> Any:
        vif = dict(info[0])
        for key in ("id", "address", "devname"):  # the port's id and MAC
            vif.pop(key)
        vif["network"] = {**vif["network"], "subnets": [
            {**sub, "ips": [{**ip, "address": None} for ip in sub["ips"]]}
            for sub in vif["network"]["subnets"]]}
        return vif
    assert shape(fast_info) == shape(slow_info)
    assert _cached(db, fast["uuid"]) == list(fast_info)


def test_over_the_port_quota_the_port_is_undone(db: Database) -> None:
    """A port past the limit (a race past the API's check) goes in, the
    counter taken only after it; no cache is stored, and the allocation
    undoes it and refuses, as the transaction does."""
    project = _project(db)
    first, second = _instance(db, project), _instance(db, project)
    api = _api(db, limit=1)
    assert _write(db, api, first, _plan(db, api, first)).outcome is at_once.Outcome.STORED
    plan = _plan(db, api, second)
    attempt = _write(db, api, second, plan)
    assert attempt.outcome is at_once.Outcome.OVER_QUOTA and attempt.seq is not None
    assert _cached(db, second["uuid"]) == [] and _ports_of(db, second["uuid"]) == [plan.row["id"]]
    db.run_sync(lambda conn: port_db.delete_port_row(conn, port_db.port_by_id(
        conn, plan.row["id"])))
    with pytest.raises(exc.PortLimitExceeded):  # through the API: refused, nothing left
        asyncio.run(api.allocate_for_instance(_ctx(project), second, requested_networks=AUTO,
                                              bind_host_id="h1"))
    _nothing_written(db, second, plan, ["10.8.0.2"])
    assert db.run_sync(port_db.ports_of_project, project) == 1


def test_a_busy_guess_is_passed_for_the_next(db: Database) -> None:
    """Another allocation in flight on the guess (its advisory lock held):
    nothing written; the next guess goes in."""
    project = _project(db)
    api, instance = _api(db), _instance(db, project)
    claims = ipam.Claims(ipam.InFlight())
    plan = _plan(db, api, instance, claims)
    with db.engine.connect() as other, other.begin():
        other.execute(sa.select(sa.func.pg_advisory_xact_lock(
            sa.func.hashtext(plan.subnet["id"]), sa.func.hashtext(plan.address))))
        attempt = _write(db, api, instance, plan)
    assert attempt.outcome is at_once.Outcome.BUSY
    _nothing_written(db, instance, plan, [])
    again = plan.next_guess(attempt, claims)
    assert again is not None and again.address == "10.8.0.3"
    assert _write(db, api, instance, again).outcome is at_once.Outcome.STORED
    assert _cached(db, instance["uuid"])[0]["network"]["subnets"][0]["ips"][0]["address"] \
        == "10.8.0.3"


def test_past_its_guesses_the_transaction_allocates(db: Database) -> None:
    """Every guess the one statement may try busy: nothing written by it,
    the transaction (its busy skips) allocates past them."""
    project = _project(db)
    api, instance = _api(db), _instance(db, project)
    busy = [f"10.8.0.{i}" for i in range(2, 2 + at_once.GUESSES)]
    subnet_id = _plan(db, api, instance).subnet["id"]
    with db.engine.connect() as other, other.begin():
        for address in busy:
            other.execute(sa.select(sa.func.pg_advisory_xact_lock(
                sa.func.hashtext(subnet_id), sa.func.hashtext(address))))
        info = asyncio.run(api.allocate_for_instance(_ctx(project), instance,
                                                     requested_networks=AUTO, bind_host_id="h1"))
    address = info[0]["network"]["subnets"][0]["ips"][0]["address"]
    assert address not in busy and _addresses(db, subnet_id) == [address]
    assert _cached(db, instance["uuid"]) == list(info)


def test_a_guess_taken_since_the_count_counts_again(db: Database) -> None:
    """A concurrent allocation committed the guess: nothing written; the
    retry counts from the counter the statement read."""
    project = _project(db)
    api, racer, instance = _api(db), _instance(db, project), _instance(db, project)
    claims = ipam.Claims(ipam.InFlight())
    plan = _plan(db, api, instance, claims)
    # The racer, planned by another process (its own claims), commits first.
    assert _write(db, api, racer, _plan(db, api, racer)).outcome is at_once.Outcome.STORED
    attempt = _write(db, api, instance, plan)
    assert attempt.outcome is at_once.Outcome.TAKEN and attempt.allocated == 1
    _nothing_written(db, instance, plan, ["10.8.0.2"])
    again = plan.next_guess(attempt, claims)
    assert again is not None and again.address == "10.8.0.3"
    assert _write(db, api, instance, again).outcome is at_once.Outcome.STORED


def test_a_guess_a_racer_commits_meanwhile_is_passed_for_the_next(db: Database) -> None:
    """A racer's uncommitted address (a port created with it as a fixed IP:
    no guess lock) makes the statement wait; committed while it ran, the
    guess is taken but the counter the statement read cannot show it — not a
    hole: the next address is tried, not the transaction's walk. And the
    statement waits holding no counter row: the racer's COMMIT, which
    updates the project's port counter, goes through (with the counter
    taken first, this was a deadlock)."""
    project = _project(db)
    api, instance = _api(db), _instance(db, project)
    claims = _claims()
    plan = _plan(db, api, instance, claims)
    with db.engine.connect() as racer, ThreadPoolExecutor(1) as pool:
        racer.begin()
        port_db.create_port(racer, RequestContext(project_id=project, roles=["admin"]),
                            {"network_id": plan.network["id"],
                             "fixed_ips": [{"ip_address": plan.address}]}, "fa:16:3e:00:00:00")
        writing = pool.submit(_write, db, api, instance, plan)
        _until_waiting_on_a_lock(db)
        racer.commit()
        attempt = writing.result(timeout=30)
    assert attempt.outcome is at_once.Outcome.TAKEN and attempt.just_taken
    assert attempt.allocated == 0  # the counter as the statement saw it
    again = plan.next_guess(attempt, claims)
    assert again is not None and again.address == "10.8.0.3"
    assert _write(db, api, instance, again).outcome is at_once.Outcome.STORED


def _until_waiting_on_a_lock(db: Database) -> None:
    """Until a backend of this database waits on a lock (the statement on the
    racer's row); 30 s at most."""
    for _ in range(3000):
        with db.engine.connect() as conn:
            if conn.execute(sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'")).scalar():
                return
        time.sleep(0.01)
    raise AssertionError("the statement never waited on the racer's row")


def test_a_hole_is_left_to_the_transaction(db: Database) -> None:
    """A guess taken while the counter did not move (addresses released below
    it): the counter cannot say where to go; the transaction (its guesses,
    its walk) allocates."""
    project = _project(db)
    api = _api(db)
    first, second, third = (_instance(db, project) for _ in range(3))
    for inst in (first, second):
        assert _write(db, api, inst, _plan(db, api, inst)).outcome is at_once.Outcome.STORED
    db.run_sync(lambda conn: port_db.delete_port_row(
        conn, port_db.port_by_id(conn, _ports_of(db, first["uuid"])[0])))
    plan = _plan(db, api, third)  # the count is 1: it guesses .3, second's
    attempt = _write(db, api, third, plan)
    assert attempt.outcome is at_once.Outcome.TAKEN
    assert plan.next_guess(attempt, _claims()) is None
    _nothing_written(db, third, plan, ["10.8.0.3"])
    info = asyncio.run(api.allocate_for_instance(_ctx(project), third, requested_networks=AUTO,
                                                 bind_host_id="h1"))
    address = info[0]["network"]["subnets"][0]["ips"][0]["address"]
    assert address != "10.8.0.3" and _addresses(db, plan.subnet["id"]) == sorted(
        ["10.8.0.3", address])
    assert _cached(db, third["uuid"]) == list(info)


def test_a_taken_mac_fails_the_statement_whole(db: Database) -> None:
    """A MAC taken on the network fails the statement: its address, taken
    in the same statement, is not left behind."""
    project = _project(db)
    api, instance, other = _api(db), _instance(db, project), _instance(db, project)
    plan = _plan(db, api, instance)
    clash = _plan(db, api, other)
    clash.row["mac_address"] = plan.row["mac_address"]
    clash = OnePort(clash.network, clash.subnet, clash.row, clash.index + 1, clash.counted)
    assert _write(db, api, other, clash).outcome is at_once.Outcome.STORED
    assert _write(db, api, instance, plan).outcome is at_once.Outcome.OTHER
    _nothing_written(db, instance, plan, ["10.8.0.3"])


def test_an_instance_with_a_port_already_gets_the_transaction(db: Database) -> None:
    """Other ports on the instance: the one statement writes nothing, the
    transaction lists them all in the cache."""
    project = _project(db)
    api, instance = _api(db), _instance(db, project)
    ctx = _ctx(project)
    asyncio.run(api.allocate_for_instance(ctx, instance, requested_networks=AUTO,
                                          bind_host_id="h1"))
    plan = _plan(db, api, instance)
    assert _write(db, api, instance, plan).outcome is at_once.Outcome.OTHER
    assert len(_ports_of(db, instance["uuid"])) == 1
    info = asyncio.run(api.allocate_for_instance(ctx, instance, requested_networks=AUTO,
                                                 bind_host_id="h1"))
    assert len(info) == 2 and _cached(db, instance["uuid"]) == list(info)
    assert sorted(vif["id"] for vif in info) == sorted(_ports_of(db, instance["uuid"]))


def test_other_requests_take_the_transaction(db: Database) -> None:
    """Only one new port on one usable network (``auto``, or by id without
    a fixed IP) is planned, its groups those the project has."""
    project = _project(db)
    api, instance = _api(db), _instance(db, project)
    ctx = _ctx(project)

    def plan(requests: list[dict[str, Any]], groups: list[str],
             inst: dict[str, Any] = instance, context: RequestContext = ctx) -> OnePort | None:
        return db.run_sync(lambda conn: api.allocator.plan_one_port(
            conn, context, inst, requests, groups, "h1", _claims()))
    net_id = _plan(db, api, instance).network["id"]
    assert plan([{"network_id": net_id}], ["default"]) is not None
    assert plan([{"network_id": net_id, "fixed_ip": "10.8.0.9"}], ["default"]) is None
    assert plan([{"network_id": net_id, "port_id": str(uuid.uuid4())}], ["default"]) is None
    with pytest.raises(exc.NetworkNotFound):  # as the transaction's checks
        plan([{"network_id": str(uuid.uuid4())}], ["default"])
    assert plan([{"network_id": "none"}], ["default"]) is None
    assert plan([{"network_id": net_id}] * 2, ["default"]) is None
    with pytest.raises(exc.SecurityGroupNotFound):  # as the transaction would
        plan(AUTO, ["default", "other"])
    db.run_sync(lambda conn: sg_db.create_group(conn, ctx, "other"))
    assert plan(AUTO, ["default", "other"]) is not None
    assert plan(AUTO + AUTO, ["default"]) is None
    assert plan(AUTO, ["default"]) is not None
    # Another project's network: not its to use.
    stranger = _project(db)
    inst = _instance(db, stranger)
    with pytest.raises(exc.NetworkNotFound):
        plan([{"network_id": net_id}], ["default"], inst, _ctx(stranger))
    # Shared with every project: the stranger's port on it, in the stranger's project.
    db.run_sync(lambda conn: conn.execute(sa.update(networks).where(
        networks.c.id == net_id).values(shared=True)))
    shared = plan([{"network_id": net_id}], ["default"], inst, _ctx(stranger))
    assert shared is not None and shared.row["project_id"] == stranger
    assert _write(db, api, inst, shared).outcome is at_once.Outcome.STORED
    assert db.run_sync(port_db.ports_of_project, stranger) == 1
    db.run_sync(lambda conn: conn.execute(sa.update(networks).where(
        networks.c.id == net_id).values(shared=False)))
    # No auto network yet, no default group yet: the transaction makes them.
    for other in (f"none-{uuid.uuid4().hex[:6]}", _project(db, default_group=False)):
        inst = _instance(db, other)
        assert db.run_sync(lambda conn: api.allocator.plan_one_port(
            conn, _ctx(other), inst, AUTO, ["default"], "h1", _claims())) is None
    # Two subnets on the auto network: the transaction chooses.
    db.run_sync(lambda conn: create_subnet(conn, RequestContext(project_id=project, roles=[
        "admin"]), {"network_id": net_id, "cidr": "10.18.0.0/24", "ip_version": 4,
                    "project_id": project}))
    assert plan(AUTO, ["default"]) is None
    assert plan([{"network_id": net_id}], ["default"]) is None


@pytest.mark.parametrize("by_id", [False, True], ids=["auto", "by-id"])
def test_racing_computes_never_share_an_address(db: Database, by_id: bool) -> None:
    """Sixteen allocations at once from four computes, each its own process's
    in-flight claims (they cannot see each other's guesses): every port its
    own address, each instance's cache its port's, the counter exact."""
    project = _project(db, "10.9.0.0/24")
    apis = [_api(db, in_flight=ipam.InFlight()) for _ in range(4)]
    insts = [_instance(db, project) for _ in range(16)]
    ctx = _ctx(project)
    requests = _by_id(db, project) if by_id else AUTO

    async def race() -> list[Any]:
        return await asyncio.gather(*(
            apis[i % 4].allocate_for_instance(ctx, inst, requested_networks=[
                dict(r) for r in requests], bind_host_id="h1")
            for i, inst in enumerate(insts)))
    infos = asyncio.run(race())
    addresses = [info[0]["network"]["subnets"][0]["ips"][0]["address"] for info in infos]
    assert len(set(addresses)) == 16
    subnet_id = db.run_sync(lambda conn: conn.execute(sa.select(subnets.c.id).where(
        subnets.c.project_id == project)).scalar_one())
    assert sorted(addresses) == _addresses(db, subnet_id)
    assert _allocated(db, subnet_id) == 16
    for inst, info in zip(insts, infos):
        assert _cached(db, inst["uuid"]) == list(info)
        assert [vif["id"] for vif in info] == _ports_of(db, inst["uuid"])
