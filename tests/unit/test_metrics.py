"""The metric families one by one: what each observation adds, what each
label may be, and the exporter that serves them (docs/operations.md, "Metrics")."""
from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from starlette.routing import Mount, Route

from cirrus import observe
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.metrics import Exporter, MeteredTransport, Metrics, loop
from cirrus.metrics.api import route_template
from cirrus.metrics.exporter import parse_listen, worker_listen
from cirrus.observe import BootStep
from cirrus.preflight import StartupError
from cirrus.rpc import RPCClient, RPCDispatcher, get_transport
from cirrus.scheduler.selection import Decision


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def value(m: Metrics, name: str, **labels: str) -> float:
    """A sample's value; 0 for one not there yet."""
    return m.registry.get_sample_value(name, labels) or 0.0


# -- boot steps: the observe sink ------------------------------------------------

@pytest.fixture
def sink(metrics: Metrics) -> Iterator[Metrics]:
    observe.add_sink(metrics.boot)
    yield metrics
    observe.remove_sink(metrics.boot)


@pytest.mark.parametrize("step, seconds, failed, outcome", [
    (BootStep.SCHEDULE, 0.004, False, "ok"),
    (BootStep.SPAWN, 2.5, False, "ok"),
    (BootStep.VIF_PLUGGED, 300.0, True, "failed"),
    (BootStep.TOTAL, 0.2, True, "failed"),
])
def test_a_boot_step_lands_in_its_step_and_outcome(sink: Metrics, step: BootStep, seconds: float,
                                                   failed: bool, outcome: str) -> None:
    observe.boot_step(step, seconds, failed)
    labels = {"step": step.value, "outcome": outcome}
    assert value(sink, "cirrus_boot_step_seconds_count", **labels) == 1
    assert value(sink, "cirrus_boot_step_seconds_sum", **labels) == pytest.approx(seconds)
    other = {"step": step.value, "outcome": "ok" if failed else "failed"}
    assert value(sink, "cirrus_boot_step_seconds_count", **other) == 0


def test_every_step_is_exported_before_its_first_boot(metrics: Metrics) -> None:
    for step in BootStep:
        assert metrics.registry.get_sample_value(
            "cirrus_boot_step_seconds_count", {"step": step.value, "outcome": "ok"}) == 0


def test_a_removed_sink_hears_no_more(metrics: Metrics) -> None:
    observe.add_sink(metrics.boot)
    observe.add_sink(metrics.boot)  # twice: still one sink
    observe.boot_step(BootStep.CLAIM, 0.001)
    observe.remove_sink(metrics.boot)
    observe.boot_step(BootStep.CLAIM, 0.001)
    assert value(metrics, "cirrus_boot_step_seconds_count", step="claim", outcome="ok") == 1


def test_two_processes_worth_of_metrics_stay_apart(sink: Metrics) -> None:
    other = Metrics()  # a second cloud in the same test process, never listening
    observe.boot_step(BootStep.SPAWN, 1.0)
    assert value(sink, "cirrus_boot_step_seconds_count", step="spawn", outcome="ok") == 1
    assert value(other, "cirrus_boot_step_seconds_count", step="spawn", outcome="ok") == 0


# -- builds in flight and waiting ------------------------------------------------

@pytest.mark.parametrize("builds, slots, in_flight, waiting", [
    (0, 10, 0, 0), (3, 10, 3, 0), (10, 10, 10, 0), (14, 10, 10, 4), (2, 1, 1, 1)])
def test_builds_in_flight_and_waiting_are_read_when_scraped(
        metrics: Metrics, builds: int, slots: int, in_flight: int, waiting: int) -> None:
    running: list[str] = []
    metrics.boot.watch_host("compute1", running, slots)
    running.extend(f"b{i}" for i in range(builds))  # after watching: read at scrape time
    assert value(metrics, "cirrus_builds_in_flight", host="compute1") == in_flight
    assert value(metrics, "cirrus_builds_waiting", host="compute1") == waiting


def test_creates_held_by_admission_are_read_when_scraped(metrics: Metrics) -> None:
    class Admission:
        waiting = 0
    admission = Admission()
    metrics.boot.watch_admission(admission)
    admission.waiting = 7
    assert value(metrics, "cirrus_build_admission_waiting") == 7


# -- API requests ----------------------------------------------------------------

SERVER = Route("/v2.1/servers/{server_id}", lambda r: None)


@pytest.mark.parametrize("scope, template", [
    ({"route": SERVER, "root_path": "/compute"}, "/compute/v2.1/servers/{server_id}"),
    ({"route": SERVER, "root_path": "/cloud/compute", "app_root_path": "/cloud"},
     "/compute/v2.1/servers/{server_id}"),
    ({"route": Route("/", lambda r: None), "root_path": ""}, "/"),
    ({"route": Mount("/compute", routes=[]), "root_path": "/compute"}, "unmatched"),
    ({}, "unmatched"),
])
def test_the_route_label_is_the_template_never_the_path(scope: dict[str, Any],
                                                         template: str) -> None:
    assert route_template(scope) == template


@pytest.mark.parametrize("method, label", [
    ("GET", "GET"), ("DELETE", "DELETE"), ("BREW", "OTHER"), ("get", "OTHER")])
def test_unknown_methods_share_one_label(metrics: Metrics, method: str, label: str) -> None:
    metrics.api.observe(method, "/", 200, 0.01)
    metrics.api.observe(method, "/", 200, 0.03)
    labels = {"method": label, "route": "/", "status": "200"}
    assert value(metrics, "cirrus_api_request_seconds_count", **labels) == 2
    assert value(metrics, "cirrus_api_request_seconds_sum", **labels) == pytest.approx(0.04)


# -- scheduler ---------------------------------------------------------------------

def step(name: str, hosts_in: int, hosts_out: int) -> dict[str, Any]:
    return {"name": name, "hosts_in": hosts_in, "hosts_out": hosts_out, "rejected": {}}


@pytest.mark.parametrize("filters, removed", [
    ([step("ComputeFilter", 10, 10), step("RamFilter", 10, 4)], {"RamFilter": 6}),
    ([step("ComputeFilter", 10, 8), step("RamFilter", 8, 0)],
     {"ComputeFilter": 2, "RamFilter": 8}),
    ([], {}),
])
def test_hosts_removed_count_per_filter(metrics: Metrics, filters: list[Any],
                                        removed: dict[str, int]) -> None:
    decision: Decision = {"filters": filters, "hosts": 10, "scanned": 10, "weighed": []}
    metrics.scheduler.decided(0.002, decision, True)
    metrics.scheduler.decided(0.003, decision, True)
    for name in ("ComputeFilter", "RamFilter"):
        assert value(metrics, "cirrus_scheduler_filter_removed_hosts_total",
                     filter=name) == 2 * removed.get(name, 0)


@pytest.mark.parametrize("selected, outcome", [(True, "selected"), (False, "no_valid_host")])
def test_decision_time_by_outcome(metrics: Metrics, selected: bool, outcome: str) -> None:
    metrics.scheduler.decided(0.25, None, selected)
    assert value(metrics, "cirrus_scheduler_decision_seconds_count", outcome=outcome) == 1
    assert value(metrics, "cirrus_scheduler_decision_seconds_sum",
                 outcome=outcome) == pytest.approx(0.25)


# -- database --------------------------------------------------------------------

ITEMS = sa.Table("items", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))


def _insert(conn: sa.Connection) -> None:
    conn.execute(ITEMS.insert())


def _count(conn: sa.Connection) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(ITEMS)).scalar_one())


@pytest.fixture
def db(tmp_path: Path, metrics: Metrics) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'm.db'}", metrics.db)
    ITEMS.metadata.create_all(database.engine)
    yield database
    database.close()


async def test_units_are_timed_by_kind_and_grouped(db: Database, metrics: Metrics) -> None:
    await asyncio.gather(*(db.run(_insert) for _ in range(5)))  # one loop iteration: one group
    assert await db.read(_count) == 5
    assert value(metrics, "cirrus_db_unit_seconds_count", kind="write") == 5
    assert value(metrics, "cirrus_db_unit_seconds_count", kind="read") == 1
    assert value(metrics, "cirrus_db_group_size_count") == 1
    assert value(metrics, "cirrus_db_group_size_sum") == 5
    assert value(metrics, "cirrus_db_commit_seconds_count") == 1


async def test_a_failing_unit_is_timed_too(db: Database, metrics: Metrics) -> None:
    def fail(conn: sa.Connection) -> None:
        raise ValueError("no")
    with pytest.raises(ValueError):
        await db.run(fail)
    assert value(metrics, "cirrus_db_unit_seconds_count", kind="write") == 1


# -- bus ---------------------------------------------------------------------------

class Endpoint:
    RPC_API = frozenset({"ping", "note"})

    async def ping(self, ctx: RequestContext) -> str:
        return "pong"

    async def note(self, ctx: RequestContext) -> None:
        return None


async def test_messages_are_counted_sent_and_received_by_method(metrics: Metrics) -> None:
    transport = MeteredTransport(get_transport("inprocess://"), metrics.bus)
    await transport.start()
    try:
        await transport.listen("t", "a", RPCDispatcher(Endpoint()))
        client = RPCClient(transport, "t")
        assert await client.call(RequestContext(), "ping") == "pong"
        await client.cast(RequestContext(), "note")
        await client.fanout(RequestContext(), "note")
        await asyncio.wait_for(_until(lambda: value(
            metrics, "cirrus_bus_messages_received_total", method="note") == 2), 10)
    finally:
        await transport.stop()
    for method, kind in (("ping", "call"), ("note", "cast"), ("note", "fanout")):
        assert value(metrics, "cirrus_bus_messages_sent_total", method=method, kind=kind) == 1
    assert value(metrics, "cirrus_bus_messages_received_total", method="ping") == 1


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.01)


def test_reconnects_are_counted_where_a_transport_reports_them(metrics: Metrics) -> None:
    inner = get_transport("inprocess://")
    inner.reconnect_hooks = []  # type: ignore[attr-defined] # as AMQPTransport has them
    MeteredTransport(inner, metrics.bus)
    for hook in inner.reconnect_hooks:  # type: ignore[attr-defined]
        hook()
    assert value(metrics, "cirrus_bus_reconnects_total") == 1


def test_the_amqp_transport_reports_a_reconnect_once_per_loss() -> None:
    from cirrus.rpc.amqp import AMQPTransport
    from cirrus.rpc.amqp.connection import Connection

    transport = AMQPTransport("amqp://guest:guest@127.0.0.1:1/")
    seen: list[int] = []
    transport.reconnect_hooks.append(lambda: seen.append(1))
    transport._restored()  # the first connection: not a reconnect
    lost = transport._conn = object.__new__(Connection)
    transport._on_lost(lost, ConnectionError("dropped"))
    transport._on_lost(lost, ConnectionError("dropped"))  # told twice of one loss
    transport._started = True
    transport._restored()
    assert seen == [1]


# -- exporter ----------------------------------------------------------------------

@pytest.mark.parametrize("listen, parsed", [
    ("", None), ("0", None), (" ", None), ("9180", ("127.0.0.1", 9180)),
    ("0.0.0.0:9180", ("0.0.0.0", 9180)), (":9181", ("127.0.0.1", 9181)),
    ("[::1]:9182", ("::1", 9182)), ("127.0.0.1:0", ("127.0.0.1", 0)),
])
def test_metrics_listen(listen: str, parsed: tuple[str, int] | None) -> None:
    assert parse_listen(listen) == parsed


@pytest.mark.parametrize("listen, n, worker", [
    ("127.0.0.1:9180", 0, "127.0.0.1:9181"), ("127.0.0.1:9180", 2, "127.0.0.1:9183"),
    ("[::1]:9180", 0, "[::1]:9181"), ("", 1, ""), ("127.0.0.1:0", 3, "127.0.0.1:0"),
])
def test_api_workers_listen_on_the_next_ports(listen: str, n: int, worker: str) -> None:
    assert worker_listen(listen, n) == worker


async def test_the_exporter_serves_the_registry_and_stops(metrics: Metrics) -> None:
    exporter = Exporter(metrics.registry, "127.0.0.1:0")
    exporter.start()
    try:
        metrics.scheduler.decided(0.01, None, True)
        async with httpx.AsyncClient() as client:
            resp = await client.get(exporter.url)
        assert resp.status_code == 200
        families = {f.name: f for f in text_string_to_metric_families(resp.text)}
        assert "cirrus_scheduler_decision_seconds" in families
        url = exporter.url
    finally:
        await exporter.stop()
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as client:
            await client.get(url)


async def test_a_taken_metrics_port_is_one_clear_line(metrics: Metrics) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        exporter = Exporter(metrics.registry, f"127.0.0.1:{port}")
        with pytest.raises(StartupError, match=f"metrics_listen 127.0.0.1:{port}"):
            exporter.start()
    await exporter.stop()  # nothing started: nothing to stop


async def test_a_disabled_exporter_serves_nothing(metrics: Metrics) -> None:
    exporter = Exporter(metrics.registry, "0")
    exporter.start()
    await exporter.stop()


# -- the loop's own families -----------------------------------------------------

@pytest.mark.parametrize("observed, cumulative", [
    ([], [0, 0, 0, 0]),
    ([0.5], [1, 1, 1, 1]),  # a bound is inclusive (le)
    ([0.7, 1.0], [0, 2, 2, 2]),
    ([0.1, 2.0, 5.0, 99.0], [1, 1, 3, 4]),
])
def test_a_loop_histogram_exports_cumulative_buckets(observed: list[float],
                                                     cumulative: list[int]) -> None:
    registry = CollectorRegistry()
    histogram = loop.Histogram("h_seconds", "h", ("k",), buckets=(0.5, 1.0, 5.0),
                               registry=registry)
    child = histogram.labels("a")
    for v in observed:
        child.observe(v)
    for le, count in zip(("0.5", "1.0", "5.0", "+Inf"), cumulative):
        assert registry.get_sample_value("h_seconds_bucket", {"k": "a", "le": le}) == count
    assert registry.get_sample_value("h_seconds_count", {"k": "a"}) == len(observed)
    assert registry.get_sample_value("h_seconds_sum", {"k": "a"}) == pytest.approx(sum(observed))


def test_a_loop_counter_counts_per_label_set() -> None:
    registry = CollectorRegistry()
    counter = loop.Counter("c", "c", ("k",), registry=registry)
    counter.labels("a").inc()
    counter.labels("a").inc(2)
    counter.labels("b").inc()
    assert registry.get_sample_value("c_total", {"k": "a"}) == 3
    assert registry.get_sample_value("c_total", {"k": "b"}) == 1


@pytest.mark.parametrize("labels", [(), ("a", "b")])
def test_a_loop_family_refuses_the_wrong_labels(labels: tuple[str, ...]) -> None:
    registry = CollectorRegistry()
    with pytest.raises(ValueError, match="takes labels"):
        loop.Counter("c", "c", ("k",), registry=registry).labels(*labels)
    with pytest.raises(ValueError, match="takes labels"):
        loop.Histogram("h", "h", ("k",), buckets=(1.0,), registry=registry).labels(*labels)


def test_two_families_of_one_name_in_one_registry_are_refused() -> None:
    registry = CollectorRegistry(auto_describe=True)  # as Metrics makes it
    loop.Counter("c", "c", registry=registry)
    with pytest.raises(ValueError, match="Duplicated"):
        loop.Counter("c", "c", registry=registry)


@pytest.mark.parametrize("method, label", [("GET", "GET"), ("BREW", "OTHER")])
def test_a_request_is_counted_under_its_template_however_often(metrics: Metrics, method: str,
                                                               label: str) -> None:
    for server in ("a", "b", "c"):  # three servers, one route: one series
        scope = {"method": method, "route": SERVER, "root_path": "/compute",
                 "path": f"/compute/v2.1/servers/{server}"}
        metrics.api.observe_request(scope, 200, 0.01)
    metrics.api.observe_request({"method": method, "root_path": ""}, 404, 0.01)
    assert value(metrics, "cirrus_api_request_seconds_count", method=label,
                 route="/compute/v2.1/servers/{server_id}", status="200") == 3
    assert value(metrics, "cirrus_api_request_seconds_count", method=label,
                 route="unmatched", status="404") == 1
