"""Which databases a ``cloud`` test runs on (tests/databases.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.databases import STORAGE_SUITES, backends_for

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", sorted(STORAGE_SUITES))
def test_every_storage_suite_exists(path: str) -> None:
    """A renamed file would silently leave the PostgreSQL pass."""
    assert (TESTS / path).is_file(), f"{path}: in STORAGE_SUITES, not under tests/"


@pytest.mark.parametrize("chosen, every, path, marked, expected", [
    (None, None, "functional/test_lifecycle.py", False, ["sqlite", "postgresql"]),
    (None, None, "security/test_compute_validation.py", False, ["sqlite"]),
    (None, None, "security/test_compute_validation.py", True, ["sqlite", "postgresql"]),
    (None, "1", "security/test_compute_validation.py", False, ["sqlite", "postgresql"]),
    ("sqlite", None, "functional/test_lifecycle.py", False, ["sqlite"]),
    ("postgresql", None, "security/test_compute_validation.py", False, ["postgresql"]),
    ("postgresql,sqlite", None, "functional/test_boot.py", False, ["postgresql"]),
])
def test_backends_for(monkeypatch: pytest.MonkeyPatch, chosen: str | None, every: str | None,
                      path: str, marked: bool, expected: list[str]) -> None:
    for name, value in (("CIRRUS_TEST_DATABASES", chosen), ("CIRRUS_TEST_EVERY_BACKEND", every)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("CIRRUS_TEST_DATABASE_URL", raising=False)
    assert backends_for(path, marked) == expected
