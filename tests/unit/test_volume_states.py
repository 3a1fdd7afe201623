"""The volume state table (cinder/volume/api.py's checks) and the guarded
saves that enforce it."""
from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from cirrus.volume import db, states
from cirrus.volume.exception import InvalidVolume, VolumeNotFound
from cirrus.volume.models import volumes
from cirrus.volume.states import VolumeStatus as V

ALL = [s.value for s in V]

# (action, statuses it starts from): Cinder's rules, written out.
TABLE = [
    ("delete", {"available", "error", "error_extending", "error_deleting"}),
    ("extend", {"available"}),
    ("extend_in_use", {"available", "in-use"}),
    ("snapshot", {"available"}),
    ("snapshot_force", {"available", "in-use"}),
    ("reserve", {"available"}),
    ("reserve_multiattach", {"available", "in-use"}),
    ("unreserve", {"reserved"}),
    ("begin_detaching", {"in-use"}),
    ("roll_detaching", {"detaching"}),
    ("retype", {"available", "in-use"}),
    ("clone", {"available", "in-use"}),
    ("readonly", {"available"}),
    ("force_delete", set(ALL) - {"deleting"}),
]


@pytest.mark.parametrize("action, allowed", TABLE)
@pytest.mark.parametrize("status", ALL)
def test_each_action_starts_only_from_its_states(action: str, allowed: set[str],
                                                 status: str) -> None:
    assert states.accepts(action, status) is (status in allowed)


def test_every_action_is_in_the_table() -> None:
    assert {a for a, _ in TABLE} <= set(states.ACCEPTS)
    assert states.TRANSIENT <= set(V) and not states.TRANSIENT & states.SETTLED


def _volume(conn: sa.Connection, status: str) -> str:
    conn.execute(volumes.insert().values(
        id="v1", project_id="p", user_id="u", size=1, status=status, attach_status="detached",
        availability_zone="nova", volume_type_id=None, format="raw", metadata={},
        image_metadata={}, admin_metadata={}, created_at=dt.datetime(2026, 1, 1), deleted=False))
    return "v1"


@pytest.mark.parametrize("status, expected, moves", [
    ("available", ["available"], True),
    ("in-use", ["available"], False),
    ("creating", ["creating", "available"], True),
    ("deleting", ["available", "error"], False),
])
def test_a_guarded_save_moves_only_from_the_expected_states(
        conn: sa.Connection, status: str, expected: list[str], moves: bool) -> None:
    vid = _volume(conn, status)
    if moves:
        db.save_volume(conn, vid, {"status": V.ERROR}, expected, "test")
        assert conn.execute(sa.select(volumes.c.status)).scalar_one() == "error"
    else:
        with pytest.raises(InvalidVolume, match=f"current status is: {status}"):
            db.save_volume(conn, vid, {"status": V.ERROR}, expected, "test")
        assert conn.execute(sa.select(volumes.c.status)).scalar_one() == status


def test_a_guarded_save_of_a_missing_volume_is_404(conn: sa.Connection) -> None:
    with pytest.raises(VolumeNotFound):
        db.save_volume(conn, "nope", {"status": V.ERROR}, ["available"])


def test_check_volume_names_the_states(conn: sa.Connection) -> None:
    with pytest.raises(InvalidVolume, match="available or in-use to extend_in_use"):
        db.check_volume({"status": "error"}, "extend_in_use")
