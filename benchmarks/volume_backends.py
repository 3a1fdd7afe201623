"""Block storage backends compared: a volume's I/O as QEMU does it, on the
volume file itself (the ``file`` backend's ``local`` connection), through
the ``nbd`` backend's export (a ``qemu-storage-daemon`` serving that file on
the socket cirrus makes, with ``TCP_NODELAY``), and through the same daemon
listening on its own socket (``addr.type=inet``: what QEMU 7.2 does alone).

``qemu-img bench`` is QEMU's own block layer, the one a guest's disk goes
through, so the figures are what a guest's virtio disk could get at most
with no guest in the way (fio is not installed here; a TCG guest would
measure its emulator). For each target:

* sequential write, 1 MiB requests, queue depth 4 (MB/s);
* 4 KiB writes and reads at a stride of 4 KiB × 7919 (prime) through the
  volume, wrapping at its end — scattered like random I/O — queue depth 16
  (IOPS).

Each figure is the median of ``--runs`` runs; the machine's other load
shows in the spread, printed beside it.

    python benchmarks/volume_backends.py
    python benchmarks/volume_backends.py --address 198.51.100.1 --size-mib 2048 --cache none
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cirrus.volume.backends import qsd  # noqa: E402

STRIDE = 4096 * 7919


def bench(target: list[str], *args: str) -> float:
    """Seconds ``qemu-img bench`` took (as it reports them)."""
    out = subprocess.run(["qemu-img", "bench", "-q", *args, *target], check=True,
                         capture_output=True, text=True).stdout
    found = re.search(r"Run completed in ([0-9.]+) seconds", out)
    if found is None:
        raise RuntimeError(f"qemu-img bench said: {out!r}")
    return float(found.group(1))


def measure(target: list[str], size_mib: int, runs: int, cache: str) -> dict[str, list[float]]:
    seq_count, rand_count = size_mib, 5000
    out: dict[str, list[float]] = {"seq write MB/s": [], "4k write IOPS": [],
                                   "4k read IOPS": []}
    for _ in range(runs):
        t = bench(target, "-w", "-t", cache, "-s", "1M", "-c", str(seq_count), "-d", "4")
        out["seq write MB/s"].append(seq_count * 1.048576 / t)
        t = bench(target, "-w", "-t", cache, "-s", "4k", "-S", str(STRIDE),
                  "-c", str(rand_count), "-d", "16")
        out["4k write IOPS"].append(rand_count / t)
        t = bench(target, "-t", cache, "-s", "4k", "-S", str(STRIDE),
                  "-c", str(rand_count), "-d", "16")
        out["4k read IOPS"].append(rand_count / t)
    return out


def report(name: str, figures: dict[str, list[float]]) -> None:
    for metric, values in figures.items():
        print(f"{name:<28} {metric:<16} {statistics.median(values):>10.0f}"
              f"   (min {min(values):.0f}, max {max(values):.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="127.0.0.1", help="where the export listens")
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", default="writeback", choices=["writeback", "none"],
                        help="the local file's cache mode (none: O_DIRECT)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        volume = Path(tmp) / "volume"
        subprocess.run(["qemu-img", "create", "-q", "-f", "raw", str(volume),
                        f"{args.size_mib}M"], check=True)
        subprocess.run(["dd", "if=/dev/zero", f"of={volume}", "bs=1M",
                        f"count={args.size_mib}", "conv=fsync", "status=none"], check=True)
        report("file (local)", measure(["-f", "raw", str(volume)], args.size_mib, args.runs,
                                       args.cache))
        for name, start in (("nbd, TCP_NODELAY", _cirrus_daemon),
                            ("nbd, QEMU's own socket", _inet_daemon)):
            pidfile = Path(tmp) / "qsd.pid"
            port = start(volume, args.address, pidfile)
            try:
                url = f"nbd://{args.address}:{port}/bench"
                report(name, measure(["-f", "raw", url], args.size_mib, args.runs,
                                     "writeback"))
            finally:
                qsd.stop(pidfile, "bench")


def _cirrus_daemon(volume: Path, address: str, pidfile: Path) -> int:
    return qsd.start(qsd.Export(volume, "raw", address, 0, "bench"), pidfile)


def _inet_daemon(volume: Path, address: str, pidfile: Path) -> int:
    with qsd.listen(address, 0) as sock:  # only to find a free port
        port = int(sock.getsockname()[1])
    args = qsd.command(qsd.Export(volume, "raw", address, port, "bench"), pidfile, 0)
    args[args.index("--nbd-server") + 1] = f"addr.type=inet,addr.host={address},addr.port={port}"
    subprocess.run(args, check=True)
    return port

if __name__ == "__main__":
    main()
