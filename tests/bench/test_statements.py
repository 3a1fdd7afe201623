"""benchmarks/_statements.py: a boot phase's statements, from two snapshots."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _statements  # noqa: E402


def test_statements_a_boot_are_what_grew_between_the_snapshots() -> None:
    before = {"BEGIN ISOLATION LEVEL READ COMMITTED": 10, "SELECT 1": 5, "gone": 3}
    after = {"BEGIN ISOLATION LEVEL READ COMMITTED": 30, "COMMIT": 20, "SELECT 1": 5,
             "UPDATE  instances\n  SET x = $1": 40}
    total, begins, top = _statements.per_boot(before, after, boots=20)
    assert total == (20 + 20 + 40) / 20  # SELECT 1 did not run; "gone" counts nothing
    assert begins == 1.0
    assert [(c.per_boot, c.query) for c in top] == [
        (2.0, "UPDATE instances SET x = $1"), (1.0, "BEGIN ISOLATION LEVEL READ COMMITTED"),
        (1.0, "COMMIT")]


def test_no_boots_counts_as_one_and_top_cuts_the_list() -> None:
    total, _, top = _statements.per_boot({}, {"a": 3, "b": 2, "c": 1}, boots=0, top=2)
    assert total == 6 and [c.query for c in top] == ["a", "b"]


def test_without_a_snapshot_there_are_no_figures() -> None:
    counter = _statements.StatementCounter("postgresql+psycopg://nobody@127.0.0.1:1/none", "x")
    assert counter.snapshot() is None  # nothing listens there: no figures, no error
    assert counter.figures(None, 10) == {}
