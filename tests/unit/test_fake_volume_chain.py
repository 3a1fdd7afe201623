"""The fake driver's model of an assisted snapshot's merge (``_merged_chain``):
a pull down to a file (or all of it), a commit into the file below; every
other request refused, the chain unchanged."""
from __future__ import annotations

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.fake import _merged_chain

CHAIN = ["base", "s1", "s2", "active"]


@pytest.mark.parametrize("to_merge, target, after", [
    (None, None, ["active"]),                       # pull everything
    ("s2", None, CHAIN),                            # nothing above s2 but the active file
    ("s1", None, ["base", "s1", "active"]),         # pull s2
    ("base", None, ["base", "active"]),
    ("s2", "s1", ["base", "s1", "active"]),         # commit s2 into s1
    ("s2", "base", ["base", "active"]),             # commit s1 and s2 into base
    ("s1", "base", ["base", "s2", "active"]),
])
def test_merges(to_merge: str | None, target: str | None, after: list[str]) -> None:
    assert _merged_chain("v", list(CHAIN), to_merge, target) == after


@pytest.mark.parametrize("to_merge, target", [
    ("active", None), ("nothing", None), ("active", "s2"), ("s1", "s2"), ("s1", "s1"),
    ("s1", "nothing"), (None, "base"),
])
def test_refused_merges(to_merge: str | None, target: str | None) -> None:
    with pytest.raises(vexc.VolumeSnapshotFailed):
        _merged_chain("v", list(CHAIN), to_merge, target)
