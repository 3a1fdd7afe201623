"""Real-VM boot benchmark: POST /servers → the guest's boot marker on its console,
next to a bare ``qemu-system-x86_64`` boot of the same guest in the same run.

The control plane's share is (cirrus time − bare time) / cirrus time; the
target (issue 6) is under 10%. Needs root and libvirt (it runs
scripts/setup-libvirt.sh --netns cirrus-rv). Writes benchmarks/results/real_boot.json.

    python benchmarks/real_boot.py [--boots 3] [--short]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import running_cloud, token  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NETNS = "cirrus-rv"
MARKER = "cirrus-tiny: boot complete"
TINY = Path.home() / ".cache/cirrus/tiny"


def bare_boot(memory_mb: int, accel: str) -> float:
    """Seconds from starting QEMU to the marker, same kernel, ramdisk and disk."""
    with tempfile.TemporaryDirectory() as tmp:
        overlay = Path(tmp) / "disk"
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(TINY / "disk.qcow2"),
                        "-F", "qcow2", str(overlay), "1G"], check=True)
        console = Path(tmp) / "console"
        start = time.perf_counter()
        proc = subprocess.Popen([
            "qemu-system-x86_64", "-machine", f"pc,accel={accel}", "-m", str(memory_mb),
            "-smp", "1", "-display", "none", "-nodefaults", "-no-reboot",
            "-kernel", str(TINY / "vmlinuz"), "-initrd", str(TINY / "initrd.gz"),
            "-append", "console=ttyS0 quiet panic=-1",
            "-drive", f"file={overlay},if=virtio", "-netdev", "user,id=n0",
            "-device", "virtio-net-pci,netdev=n0", "-serial", f"file:{console}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while MARKER not in (console.read_text(errors="replace") if console.exists() else ""):
                if proc.poll() is not None or time.perf_counter() - start > 300:
                    raise RuntimeError("bare QEMU boot did not reach the marker")
                time.sleep(0.02)
            return time.perf_counter() - start
        finally:
            proc.kill()
            proc.wait()


class Client:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=60, headers={"X-Auth-Token": token(url),
                                                      "OpenStack-API-Version": "compute 2.37"})

    def post(self, path: str, body: dict) -> dict:
        reply = self.http.post(self.url + path, json=body)
        reply.raise_for_status()
        return reply.json()

    def get(self, path: str) -> dict:
        reply = self.http.get(self.url + path)
        reply.raise_for_status()
        return reply.json()


def cirrus_boot(client: Client, image: str, flavor: str, network: str, name: str) -> dict:
    """POST, then poll status and console; seconds to ACTIVE and to the marker."""
    start = time.perf_counter()
    server = client.post("/compute/v2.1/servers", {"server": {
        "name": name, "imageRef": image, "flavorRef": flavor,
        "networks": [{"uuid": network}]}})["server"]
    posted = time.perf_counter() - start
    active = None
    while True:
        now = time.perf_counter() - start
        if active is None:
            status = client.get(f"/compute/v2.1/servers/{server['id']}")["server"]["status"]
            if status == "ERROR":
                raise RuntimeError(f"{name} went to ERROR")
            if status == "ACTIVE":
                active = now
        else:
            out = client.post(f"/compute/v2.1/servers/{server['id']}/action",
                              {"os-getConsoleOutput": {"length": 50}})["output"]
            if MARKER in out:
                return {"post_s": posted, "active_s": active, "marker_s": now, "id": server["id"]}
        if now > 300:
            raise RuntimeError(f"{name}: no marker in 300 s")
        time.sleep(0.05)


def delete_and_wait(client: Client, server_id: str) -> None:
    client.http.delete(f"{client.url}/compute/v2.1/servers/{server_id}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.http.get(f"{client.url}/compute/v2.1/servers/{server_id}").status_code == 404:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{server_id} was not deleted")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--short", action="store_true", help="one boot each (smoke run)")
    args = parser.parse_args()
    boots = 1 if args.short else args.boots
    ready = subprocess.run([str(ROOT / "scripts/setup-libvirt.sh"), "--netns", NETNS],
                           capture_output=True, text=True)
    if "libvirt ready" not in ready.stdout:
        print(f"real_boot: libvirt is not available: {ready.stderr.strip()}", file=sys.stderr)
        return 1
    env = {"CIRRUS_COMPUTE_DRIVER": "libvirt", "CIRRUS_HOST_NETNS": NETNS}
    with tempfile.TemporaryDirectory() as state, running_cloud(1, env=env, state_dir=state) as (url, _):
        clouds = {**os.environ, "OS_CLIENT_CONFIG_FILE": f"{state}/clouds.yaml"}
        out = subprocess.run(["cirrus", "image", "build-tiny", "--os-cloud", "cirrus-admin",
                              "--output", str(TINY)], env=clouds, capture_output=True,
                             text=True, check=True).stdout
        image = dict(line.split() for line in out.splitlines() if " " in line
                     and line.split()[0] in ("image", "kernel", "ramdisk"))["image"]
        client = Client(url)
        flavor = client.post("/compute/v2.1/flavors", {"flavor": {
            "name": "bench.tiny", "ram": 128, "vcpus": 1, "disk": 1}})["flavor"]["id"]
        net = client.post("/network/v2.0/networks", {"network": {"name": "bench"}})["network"]["id"]
        client.post("/network/v2.0/subnets", {"subnet": {
            "network_id": net, "cidr": "10.78.0.0/24", "ip_version": 4}})
        accel = (Path(state) / "virt-type").read_text().strip()
        runs, bare = [], []
        # Alternate the two so machine load affects both alike.
        for i in range(boots):
            runs.append(cirrus_boot(client, image, flavor, net, f"bench-{i}"))
            delete_and_wait(client, runs[-1]["id"])
            bare.append(bare_boot(128, "kvm" if accel == "kvm" else "tcg"))
    cirrus_s = statistics.median(r["marker_s"] for r in runs)
    bare_s = statistics.median(bare)
    result = {
        "boots": boots, "accel": accel,
        "cirrus_post_to_marker_s": round(cirrus_s, 3),
        "cirrus_post_s": round(statistics.median(r["post_s"] for r in runs), 3),
        "cirrus_post_to_active_s": round(statistics.median(r["active_s"] for r in runs), 3),
        "bare_qemu_to_marker_s": round(bare_s, 3),
        "control_plane_share": round(max(0.0, cirrus_s - bare_s) / cirrus_s, 3),
    }
    print(f"real boot ({accel}, median of {boots}):")
    print(f"  cirrus POST → console marker   {cirrus_s:7.2f} s "
          f"(POST {result['cirrus_post_s']:.2f} s, ACTIVE at {result['cirrus_post_to_active_s']:.2f} s)")
    print(f"  bare qemu → console marker     {bare_s:7.2f} s")
    print(f"  control plane share            {result['control_plane_share'] * 100:6.1f} %")
    print(f"  load average during the run    {os.getloadavg()[0]:6.2f} (2 cores; TCG is CPU-bound)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "real_boot.json").write_text(json.dumps(result, indent=2) + "\n")
    assert 0 < bare_s and 0 < cirrus_s, "sane figures"
    return 0


if __name__ == "__main__":
    sys.exit(main())
