"""The machine's speed during a run, sampled beside it.

On these shared machines the same code costs 9 ms of CPU a boot in one run and
12 in the next (docs/performance.md, "Round eleven"): the host under the VM
runs it faster or slower, and CPU seconds move with it. A probe process beside
the run times a fixed chunk of pure-Python work (its own CPU time, so waiting
for a core does not count) every ``INTERVAL`` seconds; its mean over the run
says how fast the machine was. A boot's CPU divided by it — the boot's cost in
probe chunks — moves much less between runs than CPU milliseconds do, and is
what a pair of runs made minutes apart should be compared on.

    python benchmarks/_probe.py      # one probe until SIGTERM; prints its mean
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

INTERVAL = 0.05  # seconds between chunks: ~2 % of a core
CHUNK_LOOPS = 10_000


def chunk() -> int:
    """The fixed work timed: arithmetic and a dict, what a service's Python does."""
    total = 0
    for i in range(CHUNK_LOOPS):
        total += i * i
    table: dict[str, int] = {}
    for i in range(CHUNK_LOOPS // 10):
        table[str(i)] = i
    return total + len(table)


def trimmed_mean(samples: list[float], cut: float = 0.1) -> float:
    """The mean without the ``cut`` fraction at each end: a chunk the kernel
    interrupted, or one that ran while the caches were cold, says nothing of
    the machine's speed."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    k = int(len(ordered) * cut)
    kept = ordered[k:len(ordered) - k] or ordered
    return sum(kept) / len(kept)


def in_probes(cpu_ms: float, probe_ms: float) -> float:
    """``cpu_ms`` of CPU as a number of probe chunks (each ``probe_ms`` long
    in the same run): a cost with the machine's speed divided out."""
    if probe_ms <= 0:
        raise ValueError("a probe takes some time")
    return cpu_ms / probe_ms


class SpeedProbe:
    """A probe process from :meth:`start` to :meth:`stop`."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start the probe; back once it samples (its SIGTERM handler set)."""
        self._proc = subprocess.Popen([sys.executable, __file__], stdout=subprocess.PIPE,
                                      text=True)
        assert self._proc.stdout is not None
        self._proc.stdout.readline()  # "sampling"

    def stop(self) -> float | None:
        """The chunk's mean CPU ms over the probe's life; None if it took no
        sample or failed."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        try:
            return float(out.split()[0])
        except (IndexError, ValueError):
            return None


def _probe() -> None:
    samples: list[float] = []
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    print("sampling", flush=True)
    while not stopping:
        began = time.process_time_ns()
        chunk()
        samples.append((time.process_time_ns() - began) / 1e6)
        time.sleep(INTERVAL)
    print(f"{trimmed_mean(samples):.4f}" if samples else "none", flush=True)


if __name__ == "__main__":
    _probe()
