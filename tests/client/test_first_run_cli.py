"""The README's quick start: straight after ``cirrus up`` on a fresh state dir,
the ``openstack`` CLI boots a server naming only a flavor and the default image."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.conftest import RunningCloud, free_port, stop, wait_up

pytestmark = pytest.mark.slow


def test_server_create_works_straight_after_up(tmp_path: Path) -> None:
    state = tmp_path / "state"
    port = free_port()
    env = {**os.environ, "CIRRUS_TINY_GUEST_DIR": str(tmp_path / "no-tiny")}
    with open(tmp_path / "up.out", "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir",
                                 str(state), "--bind", f"127.0.0.1:{port}"], env=env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        wait_up(f"http://127.0.0.1:{port}", proc)
        cli_env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml")}
        cloud = RunningCloud(f"http://127.0.0.1:{port}", state, proc, cli_env)
        server = cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image",
                                 "cirrus-blank", "--wait", "vm1", "-f", "json")
        assert server["status"] == "ACTIVE"
        assert "demo-net" in str(server["addresses"])
    finally:
        assert stop(proc) == 0
