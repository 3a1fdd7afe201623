"""The tiny guest's init shows user data's output line by line (issue 20's
volume test hung on this: busybox sed held a script's last line back)."""
from __future__ import annotations

import re
import select
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

BUSYBOX = shutil.which("busybox")
pytestmark = pytest.mark.skipif(BUSYBOX is None, reason="busybox is not installed")


def _prefix_lines() -> str:
    """The ``prefix_lines`` function as init.sh defines it."""
    init = resources.files("cirrus.image.tiny").joinpath("init.sh").read_text()
    found = re.search(r"^prefix_lines\(\) \{\n.*?^\}\n", init, re.M | re.S)
    assert found is not None, "init.sh defines prefix_lines"
    return found.group(0)


def _run(producer: str) -> subprocess.Popen[str]:
    script = f"{_prefix_lines()}\n( {producer} ) | prefix_lines 'user-data: '\n"
    return subprocess.Popen([str(BUSYBOX), "sh", "-c", script], stdout=subprocess.PIPE,
                            text=True, bufsize=1)


def test_a_line_shows_while_the_script_still_runs(tmp_path: Path) -> None:
    release = tmp_path / "release"
    # The script prints one line, then waits silently until the test releases it.
    proc = _run(f"echo 'wrote mark'; while [ ! -e {release} ]; do sleep 0.1; done; echo done")
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "the line was held back while the script waited"
        assert proc.stdout.readline() == "user-data: wrote mark\n"
        assert proc.poll() is None  # shown before the script went on
    finally:
        release.touch()
        out, _ = proc.communicate(timeout=30)
    assert out == "user-data: done\n"


@pytest.mark.parametrize("producer, expected", [
    ("printf 'a\\n\\n  b  \\n'", "user-data: a\nuser-data: \nuser-data:   b  \n"),
    ("printf 'no newline'", "user-data: no newline\n"),
    ("printf 'back\\\\slash\\n'", "user-data: back\\slash\n"),
    ("true", ""),
])
def test_lines_keep_their_text(producer: str, expected: str) -> None:
    out, _ = _run(producer).communicate(timeout=30)
    assert out == expected
