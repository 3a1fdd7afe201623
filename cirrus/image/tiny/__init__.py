"""The tiny guest: a Debian kernel, a busybox ramdisk and a small root disk.

Everything comes from Debian packages (the kernel package and busybox-static);
nothing is downloaded from anywhere else. The guest boots by direct kernel
boot, loads the virtio/iso9660/vfat/button modules, mounts its root disk and
config drive, asks DHCP for its address with udhcpc and prints what it got
and a boot-complete marker on the serial console; an ACPI power button press
powers it off.
"""
from __future__ import annotations

import glob
import gzip
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from cirrus.image.tiny.cpio import CpioWriter

BOOT_MARKER = "cirrus-tiny: boot complete"
# Where ``cirrus image build-tiny`` builds it, and a fresh cloud looks for it.
DEFAULT_OUTPUT = Path.home() / ".cache/cirrus/tiny"
COMMAND_LINE = "console=ttyS0 quiet panic=-1"
KERNEL_PACKAGE = "linux-image-cloud-amd64"
# What the guest needs; their dependencies are resolved from modules.dep.
MODULES = ("virtio_pci", "virtio_net", "virtio_blk", "isofs", "vfat", "nls_cp437",
           "nls_iso8859-1", "nls_ascii", "button", "evdev")


@dataclass
class TinyGuest:
    """The built artifacts."""

    kernel: Path
    ramdisk: Path
    disk: Path
    kernel_version: str


class BuildError(RuntimeError):
    """The guest could not be built (a missing package, a failed tool)."""


def _run(*argv: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise BuildError(f"{argv[0]} is not installed") from e
    except subprocess.CalledProcessError as e:
        raise BuildError(f"{' '.join(argv)} failed: {e.stderr.strip()[-400:]}") from e
    return done.stdout


def _installed_kernel(root: Path) -> tuple[Path, Path] | None:
    for vmlinuz in sorted(glob.glob(str(root / "boot/vmlinuz-*-amd64")), reverse=True):
        version = Path(vmlinuz).name.removeprefix("vmlinuz-")
        modules = root / "lib/modules" / version
        if (modules / "modules.dep").exists():
            return Path(vmlinuz), modules
    return None


def find_kernel(cache: Path) -> tuple[Path, Path]:
    """(vmlinuz, modules dir) of a Debian amd64 kernel: the host's installed
    one, else one unpacked from ``apt-get download`` into ``cache``."""
    found = _installed_kernel(Path("/")) or _installed_kernel(cache / "kernel")
    if found is not None:
        return found
    depends = _run("apt-cache", "depends", KERNEL_PACKAGE)
    match = re.search(r"Depends: (linux-image-\S+)", depends)
    if match is None:
        raise BuildError(f"cannot resolve {KERNEL_PACKAGE} to a kernel package")
    work = cache / "deb"
    work.mkdir(parents=True, exist_ok=True)
    _run("apt-get", "download", match.group(1), cwd=work)
    deb = sorted(work.glob("linux-image-*.deb"))[-1]
    root = cache / "kernel"
    _run("dpkg-deb", "-x", str(deb), str(root))
    # The package ships no modules.dep (its postinst runs depmod); make it.
    for modules in (root / "lib/modules").iterdir():
        depmod = shutil.which("depmod") or "/sbin/depmod"
        if Path(depmod).exists():
            _run(depmod, "-b", str(root), modules.name)
        else:
            _run(str(_busybox()), "depmod", "-b", str(root), modules.name)
    found = _installed_kernel(root)
    if found is None:
        raise BuildError(f"{deb.name} holds no usable kernel")
    return found


def module_closure(modules_dir: Path, wanted: tuple[str, ...] = MODULES) -> list[str]:
    """Relative paths of ``wanted`` modules and their dependencies, each after
    what it depends on (insmod order)."""
    deps: dict[str, list[str]] = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
    by_name = {Path(p).name.split(".ko")[0].replace("-", "_"): p for p in deps}
    ordered: list[str] = []

    def visit(path: str) -> None:
        if path in ordered:
            return
        for dep in deps.get(path, []):
            visit(dep)
        ordered.append(path)
    for name in wanted:
        found = by_name.get(name.replace("-", "_"))
        if found is not None:  # built in, or absent from this kernel
            visit(found)
    return ordered


def _busybox() -> Path:
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        if Path(candidate).exists():
            out = subprocess.run(["file", "-L", candidate], capture_output=True, text=True)
            if "dynamically" not in out.stdout:
                return Path(candidate)
    raise BuildError("busybox-static is not installed (apt-get install busybox-static)")


def _asset(name: str) -> bytes:
    return resources.files("cirrus.image.tiny").joinpath(name).read_bytes()


def _assets_digest() -> str:
    """What the ramdisk's own scripts are, so a cached build notices an edit."""
    digest = hashlib.sha256()
    for name in ("init.sh", "udhcpc.sh"):
        digest.update(_asset(name))
    return digest.hexdigest()[:16]


def build_ramdisk(modules_dir: Path, out: Path) -> None:
    """A gzip'd newc cpio: busybox, /init, the udhcpc hook and the modules."""
    order = module_closure(modules_dir)
    with gzip.open(out, "wb", compresslevel=6) as raw:
        cpio = CpioWriter(raw)
        for d in ("bin", "dev", "etc", "lib", "lib/modules", "mnt", "proc", "run", "sys",
                  "tmp"):
            cpio.directory(d)
        cpio.char_device("dev/console", 5, 1)
        cpio.file("bin/busybox", _busybox().read_bytes(), 0o755)
        cpio.file("init", _asset("init.sh"), 0o755)
        cpio.file("etc/udhcpc.sh", _asset("udhcpc.sh"), 0o755)
        names = []
        for rel in order:
            name = Path(rel).name
            names.append(name)
            cpio.file(f"lib/modules/{name}", (modules_dir / rel).read_bytes(), 0o644)
        cpio.file("etc/modules.order", ("\n".join(names) + "\n").encode(), 0o644)
        cpio.trailer()


def build_disk(out: Path, work: Path, version: str) -> None:
    """A small ext4 root disk as qcow2 (the guest mounts it and prints its tag)."""
    tree = work / "rootfs"
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "etc").mkdir(parents=True)
    (tree / "etc/cirrus-tiny").write_text(f"cirrus tiny root disk, kernel {version}\n")
    raw = work / "root.raw"
    raw.unlink(missing_ok=True)
    _run("mke2fs", "-q", "-F", "-t", "ext4", "-L", "cirrus-root", "-d", str(tree), str(raw), "16M")
    _run("qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(out))
    raw.unlink()


def built(output: Path) -> TinyGuest | None:
    """The guest a finished build left in ``output``, or None (nothing is built)."""
    stamp = output / "BUILT"
    if not stamp.exists():
        return None
    guest = TinyGuest(output / "vmlinuz", output / "initrd.gz", output / "disk.qcow2",
                      stamp.read_text().strip())
    return guest if all(p.exists() for p in (guest.kernel, guest.ramdisk, guest.disk)) else None


def build(output: Path) -> TinyGuest:
    """Build (or reuse) the tiny guest in ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    vmlinuz, modules_dir = find_kernel(output / "cache")
    version = modules_dir.name
    guest = TinyGuest(output / "vmlinuz", output / "initrd.gz", output / "disk.qcow2", version)
    stamp = output / "BUILT"
    # A changed init script is a new ramdisk, as a new kernel is.
    built = f"{version} {_assets_digest()}"
    if stamp.exists() and stamp.read_text() == built and all(
            p.exists() for p in (guest.kernel, guest.ramdisk, guest.disk)):
        return guest
    shutil.copyfile(vmlinuz, guest.kernel)
    os.chmod(guest.kernel, 0o644)
    build_ramdisk(modules_dir, guest.ramdisk)
    build_disk(guest.disk, output, version)
    stamp.write_text(built)
    return guest
