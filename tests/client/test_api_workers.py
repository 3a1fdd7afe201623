"""``cirrus up --api-workers N``: the API in N forked processes, the engine in the
first, the local bus between them. What a user sees is the same cloud; the
processes start, serve and stop together."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import openstack
import pytest

from tests.client.conftest import RunningCloud, free_port, start_cloud, stop, wait_up

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs Linux pidfds")


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def start(tmp_path: Path, workers: int) -> RunningCloud:
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    proc = start_cloud(state, port, "--computes", "2", "--api-workers", str(workers))
    url = f"http://127.0.0.1:{port}"
    wait_up(url, proc)
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml")}
    return RunningCloud(url, state, proc, env)


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[RunningCloud]:
    running = start(tmp_path, 2)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            stop(running.process, signal.SIGKILL)
            for pid in children(running.process.pid):
                os.kill(pid, signal.SIGKILL)


def connect(running: RunningCloud) -> openstack.connection.Connection:
    config = openstack.config.OpenStackConfig(
        config_files=[str(running.state_dir / "clouds.yaml")])
    return openstack.connection.Connection(config=config.get_one("cirrus"))


def test_servers_boot_list_and_delete_across_the_processes(cloud: RunningCloud) -> None:
    workers = children(cloud.process.pid)
    assert len(workers) == 2 and all(alive(pid) for pid in workers)
    conn = connect(cloud)
    image = conn.image.create_image(name="w-img", data=b"\0" * 1024, disk_format="raw",
                                    container_format="bare", allow_duplicates=True)
    flavor = conn.compute.find_flavor("m1.tiny")
    servers = [conn.compute.create_server(name=f"w-{i}", image_id=image.id, flavor_id=flavor.id,
                                          networks="auto") for i in range(6)]
    for server in servers:
        server = conn.compute.wait_for_server(server, status="ACTIVE", wait=60)
        assert server.addresses["auto_allocated_network"][0]["addr"].startswith("10.")
    # Each request may land on either worker: every one sees every server.
    for _ in range(6):
        assert {s.name for s in conn.compute.servers()} >= {f"w-{i}" for i in range(6)}
    console = conn.compute.get_server_console_output(servers[0])["output"]  # a call to a compute
    assert "CIRRUS-BOOT-OK" in console
    conn.compute.stop_server(servers[1])
    conn.compute.wait_for_server(servers[1], status="SHUTOFF", wait=60)
    for server in servers:
        conn.compute.delete_server(server)
    for server in servers:
        conn.compute.wait_for_delete(server, wait=60)
    ids = {server.id for server in servers}
    assert not [port for port in conn.network.ports() if port.device_id in ids]


def test_sigterm_stops_every_process_cleanly(cloud: RunningCloud) -> None:
    workers = children(cloud.process.pid)
    assert stop(cloud.process) == 0
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "an api worker outlived the engine"
        time.sleep(0.05)
    out = (cloud.state_dir.parent / f"cirrus-{cloud.url.rsplit(':', 1)[1]}.out").read_text()
    assert "cirrus stopped" in out and "Traceback" not in out


def test_a_worker_that_dies_stops_the_cloud_with_an_error(cloud: RunningCloud) -> None:
    """No half cloud: a lost API worker takes the rest down (non-zero exit),
    so a supervisor restarts the whole."""
    workers = children(cloud.process.pid)
    os.kill(workers[0], signal.SIGKILL)
    assert cloud.process.wait(timeout=30) == 1
    deadline = time.monotonic() + 10
    while alive(workers[1]):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_an_engine_that_dies_takes_the_workers_with_it(cloud: RunningCloud) -> None:
    workers = children(cloud.process.pid)
    os.kill(cloud.process.pid, signal.SIGKILL)
    cloud.process.wait(timeout=10)
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "an api worker outlived a killed engine"
        time.sleep(0.05)


def test_one_worker_serves_the_openstack_cli(tmp_path: Path) -> None:
    running = start(tmp_path, 1)
    try:
        assert running.openstack("server", "list", "-f", "json") == []  # a fresh cloud
        assert running.openstack("token", "issue", "-f", "json")["project_id"]
    finally:
        assert stop(running.process) == 0
    assert subprocess.run(["pgrep", "-f", str(running.state_dir)],
                          capture_output=True).stdout == b""


def test_ctrl_c_to_the_terminal_group_stops_everything_cleanly(tmp_path: Path) -> None:
    """Ctrl-C signals every process of the group at once: the workers leave
    the stop to the engine, which drains them; no tracebacks, exit 0."""
    import sys

    state = tmp_path / "state"
    port = free_port()
    log = tmp_path / "up.out"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir",
                                 str(state), "--bind", f"127.0.0.1:{port}",
                                 "--api-workers", "2"], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_up(f"http://127.0.0.1:{port}", proc)
        deadline = time.monotonic() + 30
        while "is up" not in log.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        workers = children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert not any(alive(pid) for pid in workers)
        text = log.read_text()
        assert "cirrus stopped" in text and "Traceback" not in text and "ERROR" not in text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
