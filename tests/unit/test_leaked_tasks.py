"""The suite's leaked-task check (tests/conftest.py) fails a test that leaves
an asyncio task pending, whether the test or its fixture's teardown left it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = "tests/unit/leaky_cases.py"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each case's outcome in a child pytest run: "passed", or "error: <message>"."""
    report = tmp_path_factory.mktemp("leaks") / "report.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           f"--junitxml={report}", CASES],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert report.exists(), proc.stdout + proc.stderr
    found: dict[str, str] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        problem = case.find("error")
        if problem is None:
            problem = case.find("failure")
        found[case.attrib["name"]] = (
            "passed" if problem is None else f"{problem.tag}: {problem.attrib['message']}")
    return found


@pytest.mark.parametrize(("case", "task"), [
    ("test_leaks_a_task", "leaky-test-body"),
    ("test_fixture_leaks_a_task", "leaky-fixture-teardown"),
])
def test_a_leaked_task_fails_its_test_by_name(outcomes: dict[str, str], case: str,
                                              task: str) -> None:
    assert outcomes[case] == f"error: failed on teardown with \"Failed: test left 1 asyncio task(s) pending: {task}\""


@pytest.mark.parametrize("case", [
    "test_stopped_task_is_no_leak",
    "test_finished_task_is_no_leak",
    "test_sync_test_is_left_alone",
])
def test_tasks_that_end_with_their_test_pass(outcomes: dict[str, str], case: str) -> None:
    assert outcomes[case] == "passed"
