"""The fake hypervisor's guest journal (cirrus/virt/fake_guests.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cirrus.compute.states import PowerState
from cirrus.virt.fake_guests import FakeInstance, GuestTable


def guest(uuid: str, state: PowerState = PowerState.RUNNING) -> FakeInstance:
    return FakeInstance(uuid, f"vm-{uuid}", state, console=[f"boot {uuid}"], image_ref="img")


def reopened(path: Path) -> GuestTable:
    table = GuestTable(path)
    table.load()
    return table


def test_a_new_table_has_what_the_old_one_journalled(tmp_path: Path) -> None:
    path = tmp_path / "h1.jsonl"
    table = GuestTable(path)
    table["a"], table["b"], table["c"] = guest("a"), guest("b"), guest("c")
    table["b"].state = PowerState.PAUSED
    table["b"].admin_password = "pw"
    table.saved(table["b"])
    table.pop("c")
    table.close()
    again = reopened(path)
    assert sorted(again) == ["a", "b"]
    assert (again["b"].state, again["b"].admin_password) == (PowerState.PAUSED, "pw")
    assert again["a"].record() == guest("a").record()


def test_a_start_compacts_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "h1.jsonl"
    table = GuestTable(path)
    for _ in range(5):
        table["a"] = guest("a")
        del table["a"]
    table["b"] = guest("b")
    table.close()
    reopened(path).close()
    assert len(path.read_bytes().splitlines()) == 1


def test_a_line_cut_short_by_a_crash_loses_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "h1.jsonl"
    table = GuestTable(path)
    table["a"] = guest("a")
    table.close()
    with path.open("ab") as fh:
        fh.write(b'{"uuid":"b","name":"vm-b","sta')
    assert list(reopened(path)) == ["a"]


@pytest.mark.parametrize("change", ["set", "delete", "saved"])
def test_without_a_path_nothing_is_written(tmp_path: Path, change: str) -> None:
    table = GuestTable(None)
    table["a"] = guest("a")
    {"set": lambda: table.__setitem__("b", guest("b")), "delete": lambda: table.pop("a"),
     "saved": lambda: table.saved(table["a"])}[change]()
    table.load()  # nothing to load
    assert list(tmp_path.iterdir()) == []


def test_a_guest_no_longer_in_the_table_is_not_journalled_by_saved(tmp_path: Path) -> None:
    path = tmp_path / "h1.jsonl"
    table = GuestTable(path)
    old = guest("a")
    table["a"] = old
    table["a"] = guest("a", PowerState.SHUTDOWN)
    table.saved(old)  # a stale object (a resize source, say) changes nothing
    table.close()
    assert reopened(path)["a"].state == PowerState.SHUTDOWN


def test_a_journal_mostly_stale_is_compacted_as_it_goes(tmp_path: Path) -> None:
    path = tmp_path / "h1.jsonl"
    table = GuestTable(path, compact_slack=10)
    table["keep"] = guest("keep")
    for i in range(100):
        table[f"g{i}"] = guest(f"g{i}")
        del table[f"g{i}"]
    assert len(path.read_bytes().splitlines()) <= 13
    table["last"] = guest("last")
    table.close()
    assert sorted(reopened(path)) == ["keep", "last"]
