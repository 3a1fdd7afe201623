"""A real ``cirrus up`` on a free port, driven by the real clients."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningCloud:
    url: str
    state_dir: Path
    process: subprocess.Popen[str]
    env: dict[str, str]

    def openstack(self, *args: str, cloud: str = "cirrus", check: bool = True,
                  timeout: float = 120) -> Any:
        """Run the ``openstack`` CLI; parsed JSON when ``-f json`` is among the args."""
        cmd = ["openstack", "--os-cloud", cloud, *args]
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
        if "json" in args and done.returncode == 0 and done.stdout.strip():
            return json.loads(done.stdout)
        return done

    def image_and_network(self, tmp_path: Path, image: str, network: str, subnet: str,
                          cidr: str) -> None:
        """A tiny raw image and a network with one subnet, made with the CLI:
        what a server create needs."""
        data = tmp_path / f"{image}.img"
        data.write_bytes(b"\0" * 4096)
        self.openstack("image", "create", "--disk-format", "raw", "--container-format", "bare",
                       "--file", str(data), image)
        self.openstack("network", "create", network)
        self.openstack("subnet", "create", "--network", network, "--subnet-range", cidr, subnet)


def start_cloud(state_dir: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    log = open(state_dir.parent / f"cirrus-{port}.out", "a")
    return subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir",
                             str(state_dir), "--bind", f"127.0.0.1:{port}", "--no-defaults",
                             *extra],
                            stdout=log, stderr=subprocess.STDOUT, text=True)


def wait_up(url: str, process: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"cirrus up exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/identity/v3", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("cirrus up did not answer in time")


def stop(process: subprocess.Popen[str], sig: int = signal.SIGTERM) -> int:
    process.send_signal(sig)
    return process.wait(timeout=20)


@pytest.fixture(scope="session")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    state = tmp_path_factory.mktemp("cloud") / "state"
    state.mkdir()
    port = free_port()
    proc = start_cloud(state, port, "--computes", "2")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc)
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml")}
        env.pop("OS_CLOUD", None)
        yield RunningCloud(url, state, proc, env)
    finally:
        if proc.poll() is None:
            assert stop(proc) == 0
