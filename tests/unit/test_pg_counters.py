"""The usage counters on PostgreSQL (migration 0032): changed at COMMIT, so no
transaction holds a project's counter row across its round trips, and the
quota checks that lock the row last still let no concurrent create past the
limit."""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import quotas
from cirrus.compute.models import project_usages
from cirrus.db import migrate, pgcommit
from cirrus.db.engine import make_engine
from cirrus.db.handoff import Unit
from cirrus.context import RequestContext
from cirrus.network import exception as port_exc
from cirrus.network import ipam
from cirrus.network import ports as port_db
from cirrus.network import quotas as port_quotas
from cirrus.network.networks import create_network, create_subnet, subnets_of, subnets_to_allocate
from tests.databases import scratch_postgres
from tests.unit.test_compute_rules import insert_instance

SETTINGS = SimpleNamespace(quota_instances=5, quota_cores=-1, quota_ram=-1, quota_key_pairs=-1,
                           quota_server_groups=-1, quota_server_group_members=-1,
                           quota_ports=4)
FLAVOR = {"vcpus": 1, "memory_mb": 512}
ADMIN = RequestContext(project_id="p", roles=["admin"])


@pytest.fixture(scope="module")
def engine() -> Iterator[sa.Engine]:
    with scratch_postgres("cirrus_pgcounters") as url:
        migrate.upgrade(url)
        engine = make_engine(url)
        yield engine
        engine.dispose()


def _counted(engine: sa.Engine, project: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(project_usages.c.instances).where(
            project_usages.c.project_id == project)).scalar() or 0)


def test_the_counter_changes_at_commit_and_holds_no_row_before(engine: sa.Engine) -> None:
    """An uncommitted create leaves the counter row alone: a second create of
    the project inserts without waiting (a lock wait would hit lock_timeout),
    and each counts at its COMMIT."""
    with engine.connect() as first:
        first.begin()
        insert_instance(first, "held-1", project="held")
        insert_instance(first, "held-1b", project="held")
        assert _counted(engine, "held") == 0  # not before COMMIT
        with engine.connect() as second, second.begin():
            second.execute(sa.text("SET LOCAL lock_timeout = '2s'"))
            insert_instance(second, "held-2", project="held")
        assert _counted(engine, "held") == 1
        first.commit()
    assert _counted(engine, "held") == 3
    with engine.begin() as conn:  # and a delete uncounts at its COMMIT as well
        conn.execute(sa.text("DELETE FROM instances WHERE uuid = 'held-1'"))
        assert _counted(engine, "held") == 3
    assert _counted(engine, "held") == 2


def test_the_quota_recheck_locks_the_counter_row_until_commit(engine: sa.Engine) -> None:
    """recheck() is the create's last statement: from it to COMMIT no other
    create of the project can take the row."""
    with engine.connect() as first:
        first.begin()
        quota = quotas.InstanceQuota(first, SETTINGS, "locked", FLAVOR)
        insert_instance(first, "locked-1", project="locked")
        quota.recheck(first, 1)
        with engine.connect() as second, second.begin():
            second.execute(sa.text("SET LOCAL lock_timeout = '200ms'"))
            with pytest.raises(sa.exc.OperationalError, match="lock timeout"):
                quotas.locked_usage(second, "locked")
        first.commit()
    assert _counted(engine, "locked") == 1


def _create_one(engine: sa.Engine, project: str, i: int, inserted: threading.Barrier) -> bool:
    """One create as the API runs it: read, insert, recheck last, COMMIT.
    Every create reads and inserts before any rechecks (the barrier), the
    worst case for a check made without a lock."""
    with engine.connect() as conn:
        conn.begin()
        quota = quotas.InstanceQuota(conn, SETTINGS, project, FLAVOR)
        fit = quota.allowed(1, 1)
        insert_instance(conn, f"{project}-{i}", project=project)
        inserted.wait(timeout=60)
        try:
            quota.recheck(conn, fit)
        except exc.TooManyInstances:
            conn.rollback()
            return False
        conn.commit()
        return True


def test_concurrent_creates_at_the_limit_none_over(engine: sa.Engine) -> None:
    """20 creates of one project at once, each having seen room for itself,
    against an instances quota of 5: exactly 5 commit, and the counter agrees
    with the rows."""
    creates = 20
    inserted = threading.Barrier(creates)
    # A connection per create: every one holds its own until the barrier.
    many = sa.create_engine(engine.url, pool_size=creates, isolation_level="READ COMMITTED")
    try:
        with ThreadPoolExecutor(creates) as pool:
            done = list(pool.map(lambda i: _create_one(many, "race", i, inserted),
                                 range(creates)))
    finally:
        many.dispose()
    assert done.count(True) == SETTINGS.quota_instances
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT count(*) FROM instances WHERE project_id = 'race' "
                                    "AND NOT deleted")).scalar_one()
    assert rows == _counted(engine, "race") == SETTINGS.quota_instances


def test_the_port_check_reads_the_limit_with_the_row_locked(engine: sa.Engine) -> None:
    """port_limit_and_locked_use: the configured limit, the committed ports (a
    project without a row: 0, its row made), and the row held until COMMIT."""
    with engine.connect() as first:
        first.begin()
        assert port_quotas.port_limit_and_locked_use(first, SETTINGS, "ports") == (4, 0)
        with engine.connect() as second, second.begin():
            second.execute(sa.text("SET LOCAL lock_timeout = '200ms'"))
            with pytest.raises(sa.exc.OperationalError, match="lock timeout"):
                port_quotas.port_limit_and_locked_use(second, SETTINGS, "ports")
        first.commit()
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO network_quotas (project_id, resource, \"limit\") "
                             "VALUES ('ports', 'port', 7)"))
        assert port_quotas.port_limit_and_locked_use(conn, SETTINGS, "ports") == (7, 0)


def _create_in_batch(conn: sa.Connection, project: str, name: str) -> str:
    """One create as the API runs it, as a unit of a group commit."""
    quota = quotas.InstanceQuota(conn, SETTINGS, project, FLAVOR)
    fit = quota.allowed(1, 1)
    insert_instance(conn, name, project=project)
    quota.recheck(conn, fit)
    return name


async def _batch(engine: sa.Engine, fn: Any, *args: tuple[Any, ...]) -> list[tuple[bool, Any]]:
    loop = asyncio.get_running_loop()
    units = [Unit(fn, a, {}, loop, loop.create_future()) for a in args]
    return pgcommit.run_batch(engine.connect, units)


def _txid(conn: sa.Connection) -> int:
    return int(conn.execute(sa.text("SELECT txid_current()")).scalar_one())


def _takes(conn: sa.Connection, take: Any) -> int:
    take(conn)
    return _txid(conn)


HOT_ROWS = [
    pytest.param(lambda conn: quotas.locked_usage(conn, "hot"), id="instance-quota"),
    pytest.param(lambda conn: port_quotas.port_limit_and_locked_use(conn, SETTINGS, "hot"),
                 id="port-quota"),
]


@pytest.mark.parametrize("take", HOT_ROWS)
async def test_a_unit_that_locks_a_counter_row_ends_its_group_commit(engine: sa.Engine,
                                                                     take: Any) -> None:
    """The rechecks lock a row every create of the project waits for: no unit
    runs after them in the same transaction (it could wait on a transaction
    that waits for this row)."""
    outcomes = await _batch(engine, _takes, (lambda conn: None,), (take,), (lambda conn: None,))
    txids = [value for _, value in outcomes]
    assert txids[0] == txids[1] != txids[2]


def _allocate_and_count(conn: sa.Connection, subnet: dict[str, Any]) -> tuple[int, str]:
    """The subnet's count as this unit sees it, then one address allocated."""
    taken = subnets_to_allocate(conn, subnet["network_id"])[1]
    port = port_db.create_port(conn, ADMIN, {"network_id": subnet["network_id"],
                                             "fixed_ips": []}, "fa:16:3e:00:00:01")
    return taken[subnet["id"]], ipam.allocate_ip(conn, subnet, port["id"], taken=taken)


async def test_addresses_in_one_group_commit_count_each_other(engine: sa.Engine) -> None:
    """The subnet's ``allocated`` counter changes at COMMIT: each unit of a
    batch counts the addresses the units before it took, so its first guess
    is the next free address, not the one an earlier unit holds."""
    with engine.begin() as conn:
        net = create_network(conn, ADMIN, {"name": "n", "project_id": "p"})
        create_subnet(conn, ADMIN, {"network_id": net["id"], "cidr": "10.8.0.0/28",
                                    "ip_version": 4, "project_id": "p"})
        subnet = subnets_of(conn, [net["id"]])[0]
    outcomes = await _batch(engine, _allocate_and_count, *((subnet,) for _ in range(4)))
    assert [value for _, value in outcomes] == [(n, f"10.8.0.{n + 2}") for n in range(4)]
    with engine.connect() as conn:
        assert subnets_to_allocate(conn, net["id"])[1] == {subnet["id"]: 4}


# -- a port's MAC and address without savepoints, and guesses in flight --------

def _subnet_of_new_network(engine: sa.Engine, cidr: str) -> dict[str, Any]:
    with engine.begin() as conn:
        net = create_network(conn, ADMIN, {"name": "n", "project_id": "p"})
        create_subnet(conn, ADMIN, {"network_id": net["id"], "cidr": cidr, "ip_version": 4,
                                    "project_id": "p"})
        return subnets_of(conn, [net["id"]])[0]


def _no_savepoint(*_args: Any) -> None:
    raise AssertionError("a savepoint on PostgreSQL")


def test_a_clashing_mac_is_drawn_again_without_a_savepoint(
        engine: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The port insert skips a taken (network, MAC) instead of failing, so the
    transaction goes on with no savepoint around it: a generated MAC is drawn
    again, a requested one is MacAddressInUse."""
    subnet = _subnet_of_new_network(engine, "10.7.0.0/28")
    values = {"network_id": subnet["network_id"], "fixed_ips": []}
    with engine.begin() as conn:
        first = port_db.create_port(conn, ADMIN, values, "fa:16:3e:00:00:00")
    macs = iter([first["mac_address"], "fa:16:3e:aa:bb:cd"])
    monkeypatch.setattr(ipam, "generate_mac", lambda _base: next(macs))
    monkeypatch.setattr(sa.Connection, "begin_nested", _no_savepoint)
    with engine.begin() as conn:
        second = port_db.create_port(conn, ADMIN, values, "fa:16:3e:00:00:00")
        assert second["mac_address"] == "fa:16:3e:aa:bb:cd"
        assert second["seq"] == first["seq"] + 1
    with engine.begin() as conn, pytest.raises(port_exc.MacAddressInUse):
        port_db.create_port(conn, ADMIN, {**values, "mac_address": first["mac_address"]},
                            "fa:16:3e:00:00:00")


def _allocate_claimed(conn: sa.Connection, subnet: dict[str, Any], claims: ipam.Claims) -> str:
    taken = subnets_to_allocate(conn, subnet["network_id"])[1]
    port = port_db.create_port(conn, ADMIN, {"network_id": subnet["network_id"],
                                             "fixed_ips": []}, "fa:16:3e:00:00:00")
    return ipam.allocate_ip(conn, subnet, port["id"], taken=taken, claims=claims)


@pytest.mark.parametrize("shared", [True, False])
def test_allocations_in_flight_guess_past_each_other(engine: sa.Engine, shared: bool) -> None:
    """Two transactions read the same count: the second skips the address the
    first holds uncommitted instead of waiting for its COMMIT to lose it
    (lock_timeout would say it waited) — in one process by their shared
    InFlight, in two (``shared`` False) by the address's advisory lock.
    Released once the transactions end, the next one alone guesses from the
    counter."""
    subnet = _subnet_of_new_network(engine, "10.6.0.0/28" if shared else "10.5.0.0/28")
    prefix = "10.6.0." if shared else "10.5.0."
    in_flight = ipam.InFlight()
    first_claims = ipam.Claims(in_flight)
    with engine.connect() as first:
        first.begin()
        assert _allocate_claimed(first, subnet, first_claims) == prefix + "2"
        other = ipam.Claims(in_flight if shared else ipam.InFlight())
        with engine.connect() as conn, conn.begin():
            conn.execute(sa.text("SET LOCAL lock_timeout = '300ms'"))
            assert _allocate_claimed(conn, subnet, other) == prefix + "3"
        other.release()
        first.commit()
    first_claims.release()
    assert in_flight.held(subnet["id"]) == set()
    with engine.begin() as conn:
        assert _allocate_claimed(conn, subnet, ipam.Claims(in_flight)) == prefix + "4"


def test_a_guess_is_busy_while_another_transaction_tries_it_then_taken(
        engine: sa.Engine) -> None:
    """``_try_insert``: BUSY (no wait) while another transaction holds the
    address uncommitted, TAKEN once it committed, IN for a free one; an
    explicit address (``_insert``) still waits for the holder, as it must
    learn whether the address is taken."""
    subnet = _subnet_of_new_network(engine, "10.4.0.0/28")
    values = {"network_id": subnet["network_id"], "fixed_ips": []}
    with engine.connect() as first:
        first.begin()
        port = port_db.create_port(first, ADMIN, values, "fa:16:3e:00:00:00")
        assert ipam._try_insert(first, subnet, port["id"], "10.4.0.9") is ipam.Guess.IN
        with engine.connect() as conn, conn.begin():
            conn.execute(sa.text("SET LOCAL lock_timeout = '300ms'"))
            other = port_db.create_port(conn, ADMIN, values, "fa:16:3e:00:00:00")
            assert ipam._try_insert(conn, subnet, other["id"], "10.4.0.9") is ipam.Guess.BUSY
            assert ipam._try_insert(conn, subnet, other["id"], "10.4.0.10") is ipam.Guess.IN
        first.commit()
    with engine.connect() as conn, conn.begin():
        other = port_db.create_port(conn, ADMIN, values, "fa:16:3e:00:00:00")
        assert ipam._try_insert(conn, subnet, other["id"], "10.4.0.9") is ipam.Guess.TAKEN


def _auto_allocation(conn: sa.Connection, uuid_: str, limit: int) -> Any:
    """An ``auto`` allocation for instance ``uuid_`` of project ``auto``, as a
    compute runs it (its unit of work), at a port limit of ``limit``."""
    from cirrus.config import Settings
    from cirrus.network.allocate import Progress as _Progress
    from cirrus.network.api import API
    from cirrus.network.backends.noop import NoopBackend
    from cirrus.network.binding import Binder

    api = API(Settings(quota_ports=limit), None, Binder(None, NoopBackend()))  # type: ignore[arg-type]
    ctx = RequestContext(project_id="auto", user_id="u", roles=["member"])
    instance = {"uuid": uuid_, "project_id": "auto", "hostname": uuid_,
                "availability_zone": "nova"}
    return api._allocate(conn, ctx, instance, [{"network_id": "auto"}], ["default"], "h1",
                         _Progress(ipam.Claims(ipam.InFlight())))[1]


def _cached(engine: sa.Engine, uuid_: str) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return list(conn.execute(sa.text("SELECT network_info FROM instance_info_caches "
                                         "WHERE instance_uuid = :u"), {"u": uuid_}).scalar_one())


def _new_instance(engine: sa.Engine, uuid_: str) -> None:
    from cirrus.compute.models import instance_info_caches
    from cirrus.db.base import utcnow

    with engine.begin() as conn:
        insert_instance(conn, uuid_, project="auto")
        conn.execute(instance_info_caches.insert().values(instance_uuid=uuid_, network_info=[],
                                                          created_at=utcnow()))


def test_the_port_recheck_stores_the_info_cache_it_carries(engine: sa.Engine) -> None:
    """PostgreSQL: the allocation's last statement rechecks the port quota and
    stores the info cache; past the limit it refuses (and the caller's
    rollback leaves nothing); an instance with another port already gets
    the general build, both ports listed."""
    from cirrus.network.auto_allocate import get_or_create_auto_network
    from cirrus.network.segments import SegmentConfig

    with engine.begin() as conn:
        get_or_create_auto_network(conn, SimpleNamespace(auto_allocate_cidr="10.4.0.0/24"),
                                   "auto", SegmentConfig())
    for name in ("auto-1", "auto-2", "auto-3"):
        _new_instance(engine, name)
    with engine.begin() as conn:
        info = _auto_allocation(conn, "auto-1", 2)
    assert [vif["network"]["subnets"][0]["ips"][0]["address"] for vif in info] == ["10.4.0.2"]
    assert _cached(engine, "auto-1") == list(info)
    with engine.begin() as conn:  # a second port of auto-1: not the only one, the general build
        both = _auto_allocation(conn, "auto-1", 2)
    assert len(both) == 2 and _cached(engine, "auto-1") == list(both)
    with pytest.raises(port_exc.PortLimitExceeded), engine.begin() as conn:
        _auto_allocation(conn, "auto-2", 2)
    assert _cached(engine, "auto-2") == []
    with engine.begin() as conn:  # within a higher limit: stored
        info = _auto_allocation(conn, "auto-3", 3)
    assert _cached(engine, "auto-3") == list(info) and len(info) == 1


def _create_guessing(conn: sa.Connection, subnet: dict[str, Any], taken: dict[str, int],
                     in_flight: ipam.InFlight) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A compute's port: its subnet and count read already, its guesses held."""
    return port_db.create_port_with_ips(
        conn, ADMIN, {"network_id": subnet["network_id"]}, "fa:16:3e:00:00:00",
        subnets=[subnet], taken=taken, claims=ipam.Claims(in_flight))


def test_a_port_and_its_first_address_go_in_one_statement(
        engine: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The port and the count's address in one statement: a taken MAC sends
    both again with another MAC; a taken address leaves the port in and the
    IPAM goes on past it; no savepoint either way."""
    subnet = _subnet_of_new_network(engine, "10.3.0.0/28")
    in_flight = ipam.InFlight()
    with engine.begin() as conn:
        first, fixed = _create_guessing(conn, subnet, {subnet["id"]: 0}, in_flight)
    assert [ip["ip_address"] for ip in fixed] == ["10.3.0.2"]
    macs = iter([first["mac_address"], "fa:16:3e:aa:bb:ce", "fa:16:3e:aa:bb:cf"])
    monkeypatch.setattr(ipam, "generate_mac", lambda _base: next(macs))
    monkeypatch.setattr(sa.Connection, "begin_nested", _no_savepoint)
    with engine.begin() as conn:
        taken = {subnet["id"]: 1}
        second, fixed = _create_guessing(conn, subnet, taken, in_flight)
        assert second["mac_address"] == "fa:16:3e:aa:bb:ce" and taken == {subnet["id"]: 2}
    assert [ip["ip_address"] for ip in fixed] == ["10.3.0.3"]
    other = ipam.InFlight()  # another process's, with a stale count
    with engine.begin() as conn:  # its guesses (.2, then .3) are taken: .4, counted again
        third, fixed = _create_guessing(conn, subnet, {subnet["id"]: 0}, other)
        assert [ip["ip_address"] for ip in fixed] == ["10.3.0.4"]
        assert port_db.fixed_ips_of(conn, [third["id"]])[third["id"]] == fixed
    assert in_flight.held(subnet["id"]) == {0, 1} and other.held(subnet["id"]) == {0, 1, 2}


def test_a_first_guess_another_process_holds_is_passed_without_waiting(
        engine: sa.Engine) -> None:
    """Two processes' computes read the same count: the second's port goes in
    with the next address, its first guess skipped on the first's advisory
    lock instead of waiting for the first's COMMIT (lock_timeout)."""
    subnet = _subnet_of_new_network(engine, "10.2.0.0/28")
    with engine.connect() as first:
        first.begin()
        _, fixed = _create_guessing(first, subnet, {subnet["id"]: 0}, ipam.InFlight())
        assert [ip["ip_address"] for ip in fixed] == ["10.2.0.2"]
        with engine.connect() as conn, conn.begin():
            conn.execute(sa.text("SET LOCAL lock_timeout = '300ms'"))
            _, fixed = _create_guessing(conn, subnet, {subnet["id"]: 0}, ipam.InFlight())
            assert [ip["ip_address"] for ip in fixed] == ["10.2.0.3"]
        first.commit()


def test_a_walk_that_finds_only_busy_addresses_waits_for_them(engine: sa.Engine) -> None:
    """Past every free address, the walk goes back to those another
    transaction was trying and waits for it: rolled back, the address is
    this one's (not IpAddressGenerationFailure while one may come free)."""
    subnet = _subnet_of_new_network(engine, "10.1.0.0/29")  # pool 10.1.0.2-10.1.0.6
    values = {"network_id": subnet["network_id"], "fixed_ips": []}
    with engine.begin() as conn:
        for address in ("10.1.0.2", "10.1.0.3", "10.1.0.5", "10.1.0.6"):
            ipam.allocate_ip(conn, subnet, port_db.create_port(
                conn, ADMIN, values, "fa:16:3e:00:00:00")["id"], address=address)
    with engine.connect() as first, ThreadPoolExecutor(1) as pool:
        first.begin()
        held = port_db.create_port(first, ADMIN, values, "fa:16:3e:00:00:00")
        assert ipam._try_insert(first, subnet, held["id"], "10.1.0.4") is ipam.Guess.IN

        def walk() -> str:
            with engine.connect() as conn, conn.begin():
                port = port_db.create_port(conn, ADMIN, values, "fa:16:3e:00:00:00")
                return ipam._walk(conn, subnet, port["id"], subnet["allocation_pools"], False)

        walking = pool.submit(walk)
        with engine.connect() as watch:  # the walker waits on the held address's row
            for _ in range(500):
                waiting = watch.execute(sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()")).scalar()
                if waiting:
                    break
                threading.Event().wait(0.01)
            assert waiting == 1
        first.rollback()
        assert walking.result(timeout=30) == "10.1.0.4"
