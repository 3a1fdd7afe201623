"""KVM when it works, TCG otherwise.

``/dev/kvm`` can exist and even create VMs while guests hang (nested
virtualisation without the features Linux needs), so "auto" boots the host's
kernel under KVM for a few seconds and looks for its first console line. The
answer is cached in the state directory.
"""
from __future__ import annotations

import glob
import os
import subprocess
import tempfile
from pathlib import Path

PROBE_SECONDS = 6.0


def _kvm_device_ok() -> bool:
    import fcntl

    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    try:
        return fcntl.ioctl(fd, 0xAE00) == 12  # KVM_GET_API_VERSION
    except OSError:
        return False
    finally:
        os.close(fd)


def _kernel_runs_under_kvm(kernel: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "console"
        try:
            subprocess.run(["qemu-system-x86_64", "-machine", "pc,accel=kvm", "-m", "128",
                            "-display", "none", "-nodefaults", "-no-reboot",
                            "-kernel", kernel, "-append", "console=ttyS0 panic=-1",
                            "-serial", f"file:{log}"], timeout=PROBE_SECONDS,
                           capture_output=True)
        except (subprocess.TimeoutExpired, FileNotFoundError):
            pass
        return log.exists() and "Linux version" in log.read_text(errors="replace")


def detect_virt_type(setting: str, state_dir: Path) -> str:
    """``kvm`` or ``qemu`` for the domain type."""
    if setting in ("kvm", "qemu"):
        return setting
    cache = state_dir / "virt-type"
    if cache.exists():
        return cache.read_text().strip()
    found = "qemu"
    kernels = sorted(glob.glob("/boot/vmlinuz-*"))
    if _kvm_device_ok() and kernels and _kernel_runs_under_kvm(kernels[-1]):
        found = "kvm"
    state_dir.mkdir(parents=True, exist_ok=True)
    cache.write_text(found + "\n")
    return found
