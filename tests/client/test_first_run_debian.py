"""Issue 23's first run, as a newcomer makes it: a fresh clone, Debian's own
Python (which refuses a global ``pip install``), ``scripts/up``, and the
README's ``openstack server create … --wait vm1`` with the CLI it installed.

It runs in CI (root, apt-get, PyPI); elsewhere it skips, saying which of those
is missing. The clone is of the committed HEAD: what CI's clean clone holds.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

import pytest

from tests.client.conftest import free_port, stop, wait_up

# One worker takes the three tests, so the clone and its install are made once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("first-run")]

REPO = Path(__file__).resolve().parents[2]
DEBIAN_PYTHON = Path("/usr/bin/python3")
PACKAGES = ("python3", "python3-venv", "python3-pip")
INSTALL_TIMEOUT = 1200  # a cold pip cache downloads python-openstackclient's ~80 packages


def _apt_install() -> str | None:
    """Debian's python3 with venv and pip, installed as the issue's CI step does;
    why not, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root with apt-get"
    cmd = ["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", *PACKAGES]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(cmd, env=env, capture_output=True).returncode == 0:
        return None
    subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return None if done.returncode == 0 else f"apt-get install failed: {done.stderr[-300:]}"


def _index_unreachable() -> str | None:
    """Why pip cannot reach its package index from here, or None."""
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    parts = urlsplit(url)
    host, port = parts.hostname or "pypi.org", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        return f"no route to the package index {host}:{port} ({exc})"
    return None


def _cannot_run(reason: str) -> NoReturn:
    """Skip where the machine cannot run this; under CI, which has root, apt and
    PyPI, that is a failure: a skip there would hide an untried first run."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must try the first run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def debian_python() -> Path:
    """Debian's /usr/bin/python3, which must refuse global installs (PEP 668)."""
    if not sys.platform.startswith("linux") or shutil.which("git") is None:
        _cannot_run("needs Linux and git")
    why = _apt_install()
    probe = subprocess.run([str(DEBIAN_PYTHON), "-c", "import venv, ensurepip, sysconfig; "
                            "print(sysconfig.get_path('stdlib'))"],
                           capture_output=True, text=True) if DEBIAN_PYTHON.exists() else None
    if probe is None or probe.returncode != 0:
        _cannot_run(f"Debian's python3 and python3-venv are not installed and cannot be ({why})")
    if not (Path(probe.stdout.strip()) / "EXTERNALLY-MANAGED").exists():
        _cannot_run(f"{DEBIAN_PYTHON} has no EXTERNALLY-MANAGED marker (Debian 12 and later do)")
    unreachable = _index_unreachable()
    if unreachable:
        _cannot_run(f"scripts/up installs from PyPI: {unreachable}")
    return DEBIAN_PYTHON


def newcomer_env(**extra: str) -> dict[str, str]:
    """The environment of someone who never set this project up: none of the
    test run's Python paths, venv or pip overrides."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_BREAK_SYSTEM_PACKAGES", "PIP_USER",
                        "OS_CLOUD", "OS_CLIENT_CONFIG_FILE")
           and not k.startswith("CIRRUS_")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def clone(debian_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of HEAD whose .venv scripts/up has made (its ``--help``
    installs and returns at once)."""
    where = tmp_path_factory.mktemp("first-run") / "cirrus"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(where)], check=True)
    started = time.monotonic()
    done = subprocess.run(["scripts/up", "--help"], cwd=where, capture_output=True, text=True,
                          env=newcomer_env(PYTHON=str(debian_python)), timeout=INSTALL_TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    print(f"scripts/up installed into a fresh .venv in {time.monotonic() - started:.0f} s")
    return where


def test_debian_python_refuses_a_global_install(debian_python: Path, tmp_path: Path) -> None:
    """The reason scripts/up makes a venv: PEP 668's marker on Debian's Python."""
    done = subprocess.run([str(debian_python), "-m", "pip", "install", "--dry-run", str(REPO)],
                          capture_output=True, text=True, env=newcomer_env(), timeout=120)
    assert done.returncode != 0
    assert "externally-managed-environment" in done.stderr, done.stderr


def test_up_from_a_fresh_clone_boots_the_readme_server(clone: Path, tmp_path: Path) -> None:
    venv_python = clone / ".venv" / "bin" / "python"
    base = subprocess.run([str(venv_python), "-c", "import sys; print(sys.base_prefix)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert base == "/usr", f"the venv is not Debian's Python's: {base}"
    state, port = tmp_path / "state", free_port()
    env = newcomer_env(PYTHON=str(DEBIAN_PYTHON), CIRRUS_TINY_GUEST_DIR=str(tmp_path / "none"))
    with open(tmp_path / "up.out", "w") as out:
        proc = subprocess.Popen(["scripts/up", "--state-dir", str(state), "--bind",
                                 f"127.0.0.1:{port}"], cwd=clone, env=env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        wait_up(f"http://127.0.0.1:{port}", proc, timeout=120)
        cli = newcomer_env(OS_CLIENT_CONFIG_FILE=str(state / "clouds.yaml"), OS_CLOUD="cirrus")
        done = subprocess.run([str(clone / ".venv" / "bin" / "openstack"), "server", "create",
                               "--flavor", "m1.tiny", "--image", "cirrus-blank", "--wait",
                               "vm1", "-f", "json"],
                              env=cli, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "ACTIVE"
    finally:
        status = stop(proc)  # SIGTERM: scripts/up exec'd cirrus, so this is the cloud
    assert status == 0, (tmp_path / "up.out").read_text()[-2000:]


def test_up_on_a_taken_port_says_so_in_one_line(clone: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(["scripts/up", "--state-dir", str(tmp_path / "state"), "--bind",
                               f"127.0.0.1:{port}"], cwd=clone, capture_output=True, text=True,
                              env=newcomer_env(PYTHON=str(DEBIAN_PYTHON)), timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("cirrus: "), done.stderr
    assert f"127.0.0.1:{port}" in lines[0] and "Traceback" not in done.stderr + done.stdout
