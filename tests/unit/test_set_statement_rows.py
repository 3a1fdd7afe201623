"""The rows of the build path's set statements travel as one JSON parameter
(``build_folds._rows_json``), read back by ``json_to_recordset`` with each
field typed as its column: what a field becomes in that text."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from cirrus.compute import build_folds
from cirrus.compute.states import VmState


def test_fields_keep_their_json_types_and_timestamps_become_iso_text() -> None:
    when = dt.datetime(2026, 11, 27, 1, 2, 3, 456789)
    rows = [{"uuid": "u1", "e_id": 7, "e_now": when, "v_locked": True, "e_details": None,
             "v_vm_state": VmState.ACTIVE},
            {"uuid": "u2", "e_id": None, "e_now": when.replace(microsecond=0), "v_locked": False,
             "e_details": "{\"a\": 1}", "v_vm_state": "building"}]
    assert json.loads(build_folds._rows_json(rows)) == [
        {"uuid": "u1", "e_id": 7, "e_now": "2026-11-27T01:02:03.456789", "v_locked": True,
         "e_details": None, "v_vm_state": "active"},
        {"uuid": "u2", "e_id": None, "e_now": "2026-11-27T01:02:03", "v_locked": False,
         "e_details": "{\"a\": 1}", "v_vm_state": "building"}]


def test_an_aware_timestamp_is_written_as_naive_utc_as_the_columns_store_it() -> None:
    east = dt.timezone(dt.timedelta(hours=2))
    aware = dt.datetime(2026, 11, 27, 3, 0, 0, 5, tzinfo=east)
    assert json.loads(build_folds._rows_json([{"t": aware}])) == [{"t": "2026-11-27T01:00:00.000005"}]


def test_a_field_json_cannot_hold_is_refused() -> None:
    with pytest.raises(TypeError, match="set"):
        build_folds._rows_json([{"x": object()}])


def test_the_rows_cte_types_each_field_as_its_column() -> None:
    from cirrus.compute.models import instances
    cte = build_folds._rows_cte([("uuid", instances.c.uuid), ("v_launched_at",
                                                              instances.c.launched_at)])
    assert cte == ("WITH d AS (SELECT * FROM json_to_recordset(CAST(:rows AS JSON)) "
                   "AS d(uuid VARCHAR(36), v_launched_at TIMESTAMP WITHOUT TIME ZONE)), ")
