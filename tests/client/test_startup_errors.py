"""A start that cannot work says why in one line on stderr and exits 1.

Each case runs the ``cirrus`` command as a subprocess, as a user would, with
one thing wrong: the port is taken, the state dir cannot be used, the database
or the message bus cannot be reached. None may end in a traceback.
"""
from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def run_cirrus(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cirrus.cli.main", *args],
                          capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_one_line(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Exit status 1, nothing but one ``cirrus: …`` line on stderr, naming ``expected``."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("cirrus: "), lines
    for text in expected:
        assert text in lines[0], lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


@pytest.mark.parametrize("workers", ["0", "1"])
def test_taken_port(tmp_path: Path, taken_port: int, workers: str) -> None:
    done = run_cirrus("up", "--state-dir", str(tmp_path / "state"), "--bind",
                      f"127.0.0.1:{taken_port}", "--api-workers", workers)
    assert_one_line(done, f"127.0.0.1:{taken_port}", "Address already in use")
    # Found before anything started: no database was made.
    assert not (tmp_path / "state" / "cirrus.db").exists()


def test_taken_port_api_process(tmp_path: Path, taken_port: int) -> None:
    done = run_cirrus("api", "--state-dir", str(tmp_path / "state"), "--bind",
                      f"127.0.0.1:{taken_port}")
    assert_one_line(done, f"127.0.0.1:{taken_port}")


@pytest.mark.parametrize("below", [False, True], ids=["is-a-file", "under-a-file"])
def test_state_dir_unusable(a_file: Path, below: bool) -> None:
    state = a_file / "state" if below else a_file
    done = run_cirrus("up", "--state-dir", str(state), "--bind", f"127.0.0.1:{free_port()}")
    assert_one_line(done, f"state dir {state} is not usable")


@pytest.mark.parametrize("workers", ["0", "1"])
def test_sqlite_path_unusable(tmp_path: Path, a_file: Path, workers: str) -> None:
    url = f"sqlite:///{a_file}/cirrus.db"
    done = run_cirrus("up", "--state-dir", str(tmp_path / "state"), "--bind",
                      f"127.0.0.1:{free_port()}", "--database-url", url,
                      "--api-workers", workers)
    assert_one_line(done, "cannot use the database at", url)


def test_database_unreachable_hides_password(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql+psycopg://cirrus:s3cret@127.0.0.1:{free_port()}/cirrus"
    done = run_cirrus("up", "--state-dir", str(tmp_path / "state"), "--bind",
                      f"127.0.0.1:{free_port()}", "--database-url", url)
    line = assert_one_line(done, "cannot use the database at", "cirrus:***@127.0.0.1")
    assert "s3cret" not in line


@pytest.mark.parametrize("role", ["up", "compute"])
def test_transport_unreachable(tmp_path: Path, role: str) -> None:
    url = f"amqp://guest:s3cret@127.0.0.1:{free_port()}/"
    extra = ["--api-workers", "0", "--bind", f"127.0.0.1:{free_port()}"] if role == "up" else \
        ["--host", "c1"]
    if role == "compute":  # a compute process needs a migrated database
        assert run_cirrus("db", "upgrade", "--state-dir", str(tmp_path)).returncode == 0
    done = run_cirrus(role, "--state-dir", str(tmp_path), "--transport-url", url, *extra)
    line = assert_one_line(done, "cannot connect to the message bus at",
                           "amqp://guest:***@127.0.0.1")
    assert "s3cret" not in line
