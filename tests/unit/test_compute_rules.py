"""Rules of the compute stage: guarded saves, quotas, status mapping, request parsing."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.api.compute.server_schema import parse_create
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import quotas
from cirrus.compute.records import sanitize_hostname
from cirrus.compute.events import InstanceEvents
from cirrus.compute.models import instances
from cirrus.compute.states import PowerState, TaskState, VmState, status_of
from cirrus.db import migrate
from cirrus.db.base import utcnow
from cirrus.db.engine import make_engine
from cirrus.exception import ValidationError


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> sa.Engine:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'unit.db'}"
    migrate.upgrade(url)
    return make_engine(url)


def insert_instance(conn: sa.Connection, uuid: str, project: str = "p1", vcpus: int = 1,
                    memory_mb: int = 512, **values: Any) -> None:
    row = {"uuid": uuid, "project_id": project, "user_id": "u", "display_name": uuid,
           "hostname": uuid, "flavor": {}, "vcpus": vcpus, "memory_mb": memory_mb, "root_gb": 1,
           "vm_state": "building", "task_state": "scheduling", "reservation_id": "r",
           "created_at": utcnow()}
    row.update(values)
    conn.execute(instances.insert().values(**row))


def test_guarded_save_applies_only_in_expected_state(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        insert_instance(conn, "i-guard")
        inst.save(conn, "i-guard", {"task_state": "networking"}, expected_task_state=["scheduling"])
        with pytest.raises(exc.UnexpectedTaskStateError):
            inst.save(conn, "i-guard", {"task_state": "spawning"}, expected_task_state="scheduling")
        assert inst.get(conn, "i-guard")["task_state"] == "networking"


@pytest.mark.parametrize("expected, applies", [
    ({"expected_task_state": [None, "scheduling"]}, True),
    ({"expected_task_state": [None]}, False),
    ({"expected_task_state": ["spawning", "scheduling"]}, True),
    ({"expected_task_state": []}, False),
    ({"expected_vm_state": ["active", "building"]}, True),
    ({"expected_vm_state": "active"}, False),
    ({"expected_host": None}, False),
    ({"expected_host": "h1"}, True),
    ({"expected_host": "h2"}, False),
    ({"expected_task_state": "scheduling", "expected_vm_state": "building",
      "expected_host": "h1"}, True),
    ({}, True),
])
def test_guarded_save_shapes(engine: sa.Engine, expected: dict[str, Any], applies: bool) -> None:
    """Each shape of expectation (prepared once per shape) guards as written."""
    uuid = f"i-shape-{abs(hash(repr(expected)))}"
    with engine.begin() as conn:
        insert_instance(conn, uuid, host="h1")
        if applies:
            inst.save(conn, uuid, {"task_state": "networking", "flavor": {"a": 1}}, **expected)
        else:
            with pytest.raises(exc.UnexpectedTaskStateError):
                inst.save(conn, uuid, {"task_state": "networking"}, **expected)
        row = inst.get(conn, uuid)
        assert row["task_state"] == ("networking" if applies else "scheduling")
        assert row["flavor"] == ({"a": 1} if applies else {})
        assert row["updated_at"] is not None or not applies


def test_guarded_save_reports_a_racing_delete(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        insert_instance(conn, "i-del", task_state="deleting")
        with pytest.raises(exc.UnexpectedDeletingTaskStateError):
            inst.save(conn, "i-del", {"task_state": "spawning"}, expected_task_state="block_device_mapping")
        inst.soft_delete(conn, "i-del")
        with pytest.raises(exc.InstanceNotFound):
            inst.save(conn, "i-del", {"task_state": None})


def test_guarded_save_stores_enum_members_as_their_values(engine: sa.Engine) -> None:
    """States given as enum members (str and int enums, in values and in the
    expectation) are written and returned as plain values; others as given."""
    launched = utcnow()
    with engine.begin() as conn:
        insert_instance(conn, "i-enum", host="h1")
        values = inst.save(conn, "i-enum", {"vm_state": VmState.ACTIVE, "task_state": None,
                                            "power_state": PowerState.RUNNING,
                                            "launched_at": launched, "flavor": {"a": 1}},
                           expected_task_state=[TaskState.SCHEDULING, None],
                           expected_vm_state=VmState.BUILDING, expected_host="h1")
        assert {k: (v, type(v)) for k, v in values.items() if k != "updated_at"} == {
            "vm_state": ("active", str), "task_state": (None, type(None)),
            "power_state": (1, int), "launched_at": (launched, type(launched)),
            "flavor": ({"a": 1}, dict)}
        row = inst.get(conn, "i-enum")
        assert (row["vm_state"], row["power_state"], row["launched_at"]) == ("active", 1, launched)


def test_none_is_an_expected_task_state(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        insert_instance(conn, "i-none", task_state=None)
        inst.save(conn, "i-none", {"task_state": "powering-on"}, expected_task_state=[None])
        assert inst.get(conn, "i-none")["task_state"] == "powering-on"


@pytest.mark.parametrize("change, rows_changed", [
    (lambda conn, uuid: inst.save(conn, uuid, {"task_state": "networking", "host": "h1"},
                                  expected_task_state="scheduling"), 1),
    (lambda conn, uuid: inst.save_and_get(conn, uuid, {"vm_state": "active"}), 1),
    (inst.soft_delete, 2),  # the instance, and its project's usage row
])
def test_only_changes_of_counted_columns_fire_the_usage_triggers(
        engine: sa.Engine, change: Any, rows_changed: int) -> None:
    """The boot path's guarded saves set no counted column, so no trigger runs
    for them (SQLite counts the rows a trigger changes as changed too)."""
    uuid = f"i-trig-{rows_changed}-{abs(hash(change))}"
    with engine.begin() as conn:
        insert_instance(conn, uuid)
        driver = conn.connection.driver_connection
        before = driver.total_changes  # type: ignore[union-attr]
        change(conn, uuid)
        assert driver.total_changes - before == rows_changed  # type: ignore[union-attr]


@pytest.mark.parametrize("used, min_count, max_count, expected", [
    (0, 1, 1, 1), (8, 1, 5, 2), (9, 1, 1, 1), (10, 1, 1, None), (0, 11, 11, None), (5, 3, 10, 5),
])
def test_allowed_instances(engine: sa.Engine, used: int, min_count: int, max_count: int,
                           expected: int | None) -> None:
    project = f"q-{used}-{min_count}-{max_count}"
    settings = SimpleNamespace(**{f"quota_{r}": 10 if r == "instances" else 100000
                                  for r in quotas.ALL_RESOURCES})
    with engine.begin() as conn:
        for i in range(used):
            insert_instance(conn, f"{project}-{i}", project=project)
        flavor = {"vcpus": 1, "memory_mb": 512}
        if expected is None:
            with pytest.raises(exc.TooManyInstances) as err:
                quotas.allowed_instances(conn, settings, project, flavor, min_count, max_count)
            assert err.value.code == 403
            assert "instances" in err.value.format_message()
        else:
            assert quotas.allowed_instances(conn, settings, project, flavor, min_count,
                                            max_count) == expected


@pytest.mark.parametrize("vm, task, status", [
    ("building", "scheduling", "BUILD"), ("active", None, "ACTIVE"),
    ("active", "rebooting", "REBOOT"), ("active", "rebooting_hard", "HARD_REBOOT"),
    ("stopped", None, "SHUTOFF"), ("error", None, "ERROR"), ("deleted", None, "DELETED"),
])
def test_status_of(vm: str, task: str | None, status: str) -> None:
    assert status_of(vm, task) == status


@pytest.mark.parametrize("name, expected", [
    ("Web Server_1", "web-server-1"), ("..x..", "x"), ("!!!", "server-1"), ("a" * 80, "a" * 63),
])
def test_sanitize_hostname(name: str, expected: str) -> None:
    assert sanitize_hostname(name, "server-1") == expected


def test_parse_create_defaults_and_password() -> None:
    req, want_rid = parse_create({"server": {"name": " vm ", "flavorRef": "http://x/flavors/1",
                                             "imageRef": "6f0b3c1e-0000-4000-8000-000000000000",
                                             "networks": "auto"}}, (2, 37))
    assert req.name == "vm" and req.flavor_id == "1" and not want_rid
    assert req.requested_networks == [{"network_id": "auto", "port_id": None, "fixed_ip": None}]
    assert len(req.admin_password or "") == 12


@pytest.mark.parametrize("server", [
    {"name": "x", "flavorRef": "1", "imageRef": "6f0b3c1e-0000-4000-8000-000000000000",
     "networks": [{"port": "nope"}]},
    {"name": "x", "flavorRef": "1", "imageRef": "6f0b3c1e-0000-4000-8000-000000000000",
     "personality": []},
    {"name": "x", "flavorRef": "1"},
    {"name": "x", "flavorRef": "1", "imageRef": "6f0b3c1e-0000-4000-8000-000000000000",
     "accessIPv4": "::1"},
])
def test_parse_create_rejects(server: dict) -> None:
    server.setdefault("networks", "none")
    with pytest.raises(ValidationError):
        parse_create({"server": server}, (2, 60))


async def test_instance_events_deliver_and_timeout() -> None:
    events = InstanceEvents()
    failures: list[list[str]] = []
    async with events.wait_for_instance_event("i1", ["network-vif-plugged-p1"], deadline=1,
                                              error_cb=failures.append):
        asyncio.get_running_loop().call_soon(events.deliver, {
            "name": "network-vif-plugged", "tag": "p1", "server_uuid": "i1", "status": "completed"})
    assert failures == []
    async with events.wait_for_instance_event("i1", ["network-vif-plugged-p2"], deadline=0.05,
                                              error_cb=failures.append):
        pass
    assert failures == [["network-vif-plugged-p2"]]


@pytest.mark.parametrize("fatal", [True, False])
async def test_vif_plugging_timeout(fatal: bool) -> None:
    from cirrus.compute.virtapi import VirtAPI

    api = VirtAPI(InstanceEvents(), timeout=0.05, fatal=fatal)
    vifs = [{"id": "p1", "active": False}, {"id": "p2", "active": True}]
    if fatal:
        with pytest.raises(exc.VirtualInterfaceCreateException, match="network-vif-plugged-p1"):
            async with api.wait_for_vif_plugged({"uuid": "i1"}, vifs):
                pass
    else:
        async with api.wait_for_vif_plugged({"uuid": "i1"}, vifs):
            pass


async def test_vif_plugged_event_ends_the_wait() -> None:
    from cirrus.compute.virtapi import VirtAPI

    events = InstanceEvents()
    api = VirtAPI(events, timeout=5, fatal=True)
    async with api.wait_for_vif_plugged({"uuid": "i1"}, [{"id": "p1", "active": False}]):
        asyncio.get_running_loop().call_later(0.01, events.deliver, {
            "name": "network-vif-plugged", "tag": "p1", "server_uuid": "i1", "status": "completed"})


def _quota_settings(**limits: int) -> SimpleNamespace:
    return SimpleNamespace(**{f"quota_{r}": limits.get(r, -1) for r in quotas.ALL_RESOURCES})


@pytest.mark.parametrize("limits, own, used, vcpus, added", [
    ({"instances": 10, "cores": 4}, {}, 3, 1, 1),  # fits
    ({"instances": 10, "cores": 4}, {}, 3, 1, 2),  # cores over
    ({"instances": 2}, {}, 3, 1, 1),  # the limit was lowered below the usage
    ({"cores": 2}, {}, 3, 0, 1),  # cores over before, the flavor adds none
    ({"instances": 5, "ram": 2048}, {}, 4, 1, 1),  # ram over (512 MB each)
    ({"instances": 10, "cores": 4}, {"cores": 10, "instances": 4}, 3, 1, 2),  # own limits
    ({"instances": 1}, {"instances": -1, "key_pairs": 0}, 3, 1, 2),  # own: unlimited
])
def test_recheck_from_the_count_is_a_recount(engine: sa.Engine, limits: dict[str, int],
                                             own: dict[str, int], used: int, vcpus: int,
                                             added: int) -> None:
    """On SQLite (one writer) the check after the insert adds what was inserted
    to the first count (limits and usage read in one statement): the same
    outcome and resource over as counting again with limits() and instance_usage()."""
    project = f"rc-{abs(hash(repr((limits, own, used, vcpus, added))))}"
    settings = _quota_settings(**limits)
    outcomes = []
    for recount in (False, True):
        with engine.connect() as conn, conn.begin() as tx:
            quotas.set_limits(conn, project, own)
            for i in range(used):
                insert_instance(conn, f"{project}-{i}", project=project)
            quota = quotas.InstanceQuota(conn, settings, project, {"vcpus": vcpus,
                                                                   "memory_mb": 512})
            for i in range(added):
                insert_instance(conn, f"{project}-new-{i}", project=project, vcpus=vcpus)
            try:
                if recount:
                    quotas.recount(conn, settings, project)
                else:
                    quota.recheck(conn, added)
                outcomes.append(None)
            except exc.TooManyInstances as error:  # which resource is over
                outcomes.append(error.format_message().split(":")[0])
            tx.rollback()
    assert outcomes[0] == outcomes[1]


def _raw_row(conn: sa.Connection, table: sa.Table, where: Any, skip: tuple[str, ...]) -> dict:
    row = conn.execute(sa.select(*(sa.type_coerce(c, sa.String) for c in table.columns))
                       .where(where)).one()
    return {c.name: v for c, v in zip(table.columns, row) if c.name not in skip}


def test_provisioning_stores_what_core_inserts_store(engine: sa.Engine) -> None:
    """The prepared inserts of a create store the same column values as SQLAlchemy's
    own insert of the same records, and the ids they return are the rows' ids."""
    from cirrus.compute import records
    from cirrus.compute.api import API, CreateRequest
    from cirrus.compute.models import block_device_mappings, instance_info_caches
    from cirrus.context import RequestContext
    from tests.fakes_volume import FakeVolumes

    settings = SimpleNamespace(**vars(_quota_settings()), build_backlog_limit=0, build_backlog_wait=0.0)
    compute = API(settings, None, None, None, None,  # type: ignore[arg-type]
                  volume_api=FakeVolumes())
    ctx = RequestContext(user_id="u", project_id="p-prov")
    req = CreateRequest(name="web", flavor_id="1", image_href="img", max_count=3,
                        metadata={"k": "v"}, tags=["t"], requested_networks=None)
    flavor = {"flavorid": "1", "name": "m1.tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
              "ephemeral_gb": 0, "swap": 0, "rxtx_factor": 1.0, "extra_specs": {"a": "b"},
              "description": None}
    image = {"id": "img", "properties": {"os": "x"}, "disk_format": "raw", "min_ram": 0}
    with engine.connect() as conn, conn.begin() as tx:
        rows = compute._provision_instances(conn, ctx, req, flavor, image, "nova", None, None,
                                            "r-1", 3)
        assert [r["display_name"] for r in rows] == ["web-1", "web-2", "web-3"]
        twin = dict(rows[0], uuid="twin-of-web-1")
        twin.pop("id")
        conn.execute(instances.insert(), [twin])
        conn.execute(instance_info_caches.insert(), [{"instance_uuid": "twin-of-web-1",
                                                      "network_info": [],
                                                      "created_at": rows[0]["created_at"]}])
        bdm = {**records.bdm_rows(req, image, flavor, rows[0]["created_at"])[0],
               "instance_uuid": "twin-of-web-1"}
        conn.execute(block_device_mappings.insert(), [bdm])
        for table, key, skip in ((instances, instances.c.uuid, ("id", "uuid")),
                                 (instance_info_caches, instance_info_caches.c.instance_uuid,
                                  ("instance_uuid",)),
                                 (block_device_mappings, block_device_mappings.c.instance_uuid,
                                  ("id", "instance_uuid", "uuid"))):
            assert _raw_row(conn, table, key == rows[0]["uuid"], skip) == \
                _raw_row(conn, table, key == "twin-of-web-1", skip)
        for row in rows:
            assert conn.execute(sa.select(instances.c.id).where(
                instances.c.uuid == row["uuid"])).scalar_one() == row["id"]
        tx.rollback()


def test_generated_passwords_are_base62_of_the_length() -> None:
    from cirrus.api.compute.server_schema import PASSWORD_ALPHABET, generate_password

    seen = {generate_password() for _ in range(200)}
    assert len(seen) == 200
    assert all(len(p) == 12 and set(p) <= set(PASSWORD_ALPHABET) for p in seen)
    assert set("".join(seen)) == set(PASSWORD_ALPHABET)  # 2,400 draws reach all 62
    assert len(generate_password(30)) == 30


async def test_instance_lock_serialises_and_is_forgotten_when_free() -> None:
    """Operations on one instance queue behind each other; once nobody holds or
    waits for its lock (a waiter cancelled included), the host keeps nothing."""
    from cirrus.utils import KeyedLocks

    locks = KeyedLocks()
    order: list[str] = []

    async def hold(name: str, uuid: str = "i1") -> None:
        async with locks(uuid):
            order.append(f"{name}+")
            await asyncio.sleep(0.01)
            order.append(f"{name}-")

    await asyncio.gather(hold("a"), hold("b"), hold("c", "i2"))
    assert order.index("a-") < order.index("b+") and len(locks) == 0

    first = asyncio.ensure_future(hold("x"))
    waiter = asyncio.ensure_future(hold("y"))
    await asyncio.sleep(0)
    waiter.cancel()
    await first
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert order[-2:] == ["x+", "x-"] and len(locks) == 0
