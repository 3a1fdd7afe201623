"""``hosts.compute_is_up``, the question every delete (and move) asks of a
server's host, read by a statement compiled once: a heartbeat within the down
time and not forced down, and only the host's compute service counts."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.compute.hosts import compute_is_up
from cirrus.db.base import utcnow
from cirrus.service_models import services


@pytest.fixture
def engine() -> Iterator[sa.Engine]:
    engine = sa.create_engine("sqlite://")
    services.create(engine)
    yield engine
    engine.dispose()


def _service(engine: sa.Engine, host: str, binary: str, seen_ago: float | None,
             forced_down: bool = False) -> None:
    seen = None if seen_ago is None else utcnow() - dt.timedelta(seconds=seen_ago)
    with engine.begin() as conn:
        conn.execute(services.insert().values(uuid=str(uuid.uuid4()), host=host, binary=binary,
                                              topic=binary, forced_down=forced_down,
                                              last_seen_up=seen))


def _up(engine: sa.Engine, host: str, down_time: float = 60) -> Any:
    with engine.connect() as conn:
        return compute_is_up(conn, host, down_time)


def test_a_recent_heartbeat_is_up_and_an_old_one_is_not(engine: sa.Engine) -> None:
    _service(engine, "fresh", "cirrus-compute", 5)
    _service(engine, "stale", "cirrus-compute", 120)
    assert _up(engine, "fresh") is True
    assert _up(engine, "stale") is False
    assert _up(engine, "fresh", down_time=1) is False


def test_forced_down_or_never_seen_is_down(engine: sa.Engine) -> None:
    _service(engine, "forced", "cirrus-compute", 1, forced_down=True)
    _service(engine, "new", "cirrus-compute", None)
    assert _up(engine, "forced") is False
    assert _up(engine, "new") is False


def test_only_the_hosts_compute_service_counts(engine: sa.Engine) -> None:
    _service(engine, "ctl", "cirrus-conductor", 1)
    _service(engine, "ctl", "cinder-volume", 1)
    assert _up(engine, "ctl") is False
    assert _up(engine, "nowhere") is False
    _service(engine, "ctl", "cirrus-compute", 1)
    assert _up(engine, "ctl") is True
