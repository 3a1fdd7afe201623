"""``python -m tests.fuzz`` (what scripts/fuzz runs): a longer campaign.

Records every distinct failure and prints it (the route, the status, the
smallest request seen to cause it, the server log's last line); with
``--stop``, stops at the first and lets Hypothesis shrink it, as CI does.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

from tests.fuzz.campaign import Options, run
from tests.fuzz.runner import Finding


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=5000,
                        help="examples (batches of up to --batch requests); default 5000")
    parser.add_argument("--seed", type=int, default=None,
                        help="Hypothesis seed (default: a new one, printed)")
    parser.add_argument("--stop", action="store_true",
                        help="stop at the first failure and shrink it (CI's mode)")
    parser.add_argument("--report", type=Path, default=None,
                        help="also write the findings to this file")
    parser.add_argument("--batch", type=int, default=8, help="most requests per example")
    parser.add_argument("--slow", type=float, default=2.0, help="CPU seconds a request may take")
    parser.add_argument("--log", type=Path, default=None,
                        help="write the cloud's log here (default: dropped; each failure "
                             "carries its own traceback's last line)")
    args = parser.parse_args(argv)
    handler = logging.FileHandler(args.log) if args.log else logging.NullHandler()
    logging.getLogger().addHandler(handler)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    print(f"fuzz: {args.examples} examples, seed {seed} (again: scripts/fuzz --seed {seed})",
          flush=True)
    options = Options(examples=args.examples, seed=seed, record=not args.stop, report=args.report,
                      batch=args.batch, slow=args.slow)

    def heard(finding: Finding) -> None:
        line = f"  new: [{finding.kind}] {finding.where} → {finding.status} {finding.error[:120]}"
        print(line.encode("utf-8", "backslashreplace").decode("utf-8"), flush=True)

    with tempfile.TemporaryDirectory(prefix="cirrus-fuzz-") as root:
        try:
            fuzzer = run(Path(root), options, on_new=heard)
        except AssertionError as failure:
            print(f"\n{failure}")
            return 1
    print(f"\n{fuzzer.stats.summary()}")
    if not fuzzer.findings:
        print("no failures")
        return 0
    print(f"{len(fuzzer.findings)} distinct failures:\n\n{fuzzer.findings.text()}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
