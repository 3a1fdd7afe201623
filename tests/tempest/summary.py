"""Judge a Tempest run from its subunit v2 stream (run in Tempest's virtualenv).

    stestr last --subunit | python -m tests.tempest.summary --results DIR --threshold 95

Counts what passed, failed and was skipped, writes ``failures.txt`` (each
failed test and the last line of its traceback), ``skips.txt`` (each skipped
test and its reason) and ``summary.txt`` to ``DIR``, and exits 1 when the
share of passes among the tests that ran is below the threshold. A class
whose setup failed is one failure here (Tempest reports it as
``setUpClass (…)``), though it stands for every test of the class.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

PASSED = {"success", "xfail"}
FAILED = {"fail", "uxsuccess"}
SKIPPED = {"skip"}
# "package.module.SomeError: message", the line a traceback ends on.
EXCEPTION_LINE = re.compile(r"^[\w.]+(Error|Exception|Failure|Mismatch\w*|Invalid\w*): ")
WHY_MAX = 300


@dataclass
class Outcome:
    """One test's id, status and the one line that says why."""

    test_id: str
    status: str
    why: str = ""


@dataclass
class Tally:
    passed: list[Outcome] = field(default_factory=list)
    failed: list[Outcome] = field(default_factory=list)
    skipped: list[Outcome] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return len(self.passed) + len(self.failed)

    @property
    def pass_percent(self) -> float:
        return 100.0 * len(self.passed) / self.ran if self.ran else 0.0

    def add(self, outcome: Outcome) -> None:
        if outcome.status in PASSED:
            self.passed.append(outcome)
        elif outcome.status in FAILED:
            self.failed.append(outcome)
        elif outcome.status in SKIPPED:
            self.skipped.append(outcome)


def _text(details: dict[str, Any], key: str) -> str:
    content = details.get(key)
    if content is None:
        return ""
    return b"".join(bytes(chunk) for chunk in content.iter_bytes()).decode("utf-8", "replace")


def why(status: str, details: dict[str, Any]) -> str:
    """The skip reason; for a failure, the last ``Details:`` line of its
    traceback (Tempest's client errors), else its last exception line."""
    if status in SKIPPED:
        return _text(details, "reason").strip()
    lines = [ln.strip() for ln in _text(details, "traceback").splitlines() if ln.strip()]
    for pick in (lambda ln: ln.startswith("Details:"), EXCEPTION_LINE.match, bool):
        chosen = [ln for ln in lines if pick(ln)]
        if chosen:
            return chosen[-1][:WHY_MAX]
    return ""


def read(stream: BinaryIO) -> Tally:
    import subunit
    import testtools

    tally = Tally()

    def on_test(test: dict[str, Any]) -> None:
        tally.add(Outcome(test["id"], test["status"], why(test["status"], test["details"])))
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    subunit.ByteStreamToStreamResult(stream, non_subunit_name="stdout").run(result)
    result.stopTestRun()
    return tally


def report(tally: Tally, results: Path) -> str:
    """Write the lists to ``results``; return the summary line."""
    results.mkdir(parents=True, exist_ok=True)
    (results / "failures.txt").write_text(
        "".join(f"{o.test_id}\n    {o.why}\n" for o in sorted(tally.failed, key=lambda o: o.test_id)))
    (results / "skips.txt").write_text(
        "".join(f"{o.test_id}\n    {o.why}\n" for o in sorted(tally.skipped, key=lambda o: o.test_id)))
    reasons = Counter(o.why for o in tally.skipped)
    line = (f"tempest: {len(tally.passed)} of {tally.ran} tests that ran passed "
            f"({tally.pass_percent:.1f}%); {len(tally.failed)} failed, "
            f"{len(tally.skipped)} skipped")
    (results / "summary.txt").write_text(
        line + "\n\nskip reasons:\n" + "".join(f"  {n:4d}  {r}\n" for r, n in reasons.most_common()))
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--threshold", type=float, default=95.0,
                        help="least pass percentage of the tests that ran")
    args = parser.parse_args(argv)
    tally = read(sys.stdin.buffer)
    print(report(tally, args.results))
    if tally.ran == 0:
        print("tempest: no test ran", file=sys.stderr)
        return 1
    if tally.pass_percent < args.threshold:
        print(f"tempest: below the threshold of {args.threshold:g}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
