"""``cirrus api`` on its own (the controller of a deployment of processes)
writes ``STATE_DIR/clouds.yaml`` as ``cirrus up`` does, once its users exist,
and the clouds in it log in."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openstack
import yaml

from tests.client.conftest import free_port, stop, wait_up


def test_cirrus_api_writes_a_clouds_yaml_whose_clouds_log_in(tmp_path: Path) -> None:
    state = tmp_path / "state"
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    out = tmp_path / "api.out"
    with out.open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "api",
                                 "--state-dir", str(state), "--bind", f"127.0.0.1:{port}",
                                 "--public-url", public], stdout=log,
                                stderr=subprocess.STDOUT, text=True)
    try:
        wait_up(public, proc)
        clouds = state / "clouds.yaml"
        assert f"clouds.yaml: {clouds}" in out.read_text()
        data = yaml.safe_load(clouds.read_text())
        assert set(data["clouds"]) == {"cirrus", "cirrus-admin"}
        assert data["clouds"]["cirrus"]["auth"]["auth_url"] == f"{public}/identity"
        assert clouds.stat().st_mode & 0o077 == 0  # passwords: the owner's only
        config = openstack.config.OpenStackConfig(config_files=[str(clouds)])
        for name, project in (("cirrus", "demo"), ("cirrus-admin", "admin")):
            conn = openstack.connection.Connection(config=config.get_one(name))
            assert conn.current_project.name == project
            conn.close()
    finally:
        stop(proc)
