"""A real ``cirrus up`` on a free port and headless Chromium (Debian's) to drive it.

The browser tests skip, saying why, only where Chromium or its driver is not
installed (``scripts/setup-browser.sh`` installs them; CI runs it).
"""
from __future__ import annotations

import os

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.client.conftest import free_port, stop, wait_up

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@dataclass
class Cloud:
    url: str
    users: dict[str, dict[str, str]]  # clouds.yaml's cloud name → its auth section


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            return f"{path} is not installed (scripts/setup-browser.sh installs it from Debian)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def live_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    """``cirrus up`` with its first-run defaults (an image, the demo project's
    network), so a server can be booted from the dashboard's form."""
    state = tmp_path_factory.mktemp("dashboard") / "state"
    state.mkdir()
    port = free_port()
    log = open(state.parent / "cirrus.out", "a")
    proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir",
                             str(state), "--bind", f"127.0.0.1:{port}", "--computes", "2"],
                            stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc)
        clouds = yaml.safe_load((state / "clouds.yaml").read_text())["clouds"]
        yield Cloud(url, {name: c["auth"] for name, c in clouds.items()})
    finally:
        if proc.poll() is None:
            assert stop(proc) == 0
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = browser_missing()
    if reason:
        # CI installs Chromium (scripts/setup-browser.sh): a skip there would
        # hide that the dashboard went untested.
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    profile = tempfile.mkdtemp(prefix="cirrus-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
