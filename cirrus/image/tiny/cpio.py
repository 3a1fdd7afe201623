"""A minimal writer for the "newc" cpio format the kernel unpacks as initramfs.

Written here so building a ramdisk needs neither root (for device nodes) nor
the cpio tool.
"""
from __future__ import annotations

import stat
from typing import Protocol


class Sink(Protocol):
    """Where the archive goes: a file, or a gzip stream over one."""

    def write(self, data: bytes, /) -> int: ...


class CpioWriter:
    def __init__(self, out: Sink) -> None:
        self.out = out
        self.ino = 1

    def _entry(self, name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0),
               nlink: int = 1) -> None:
        encoded = name.encode() + b"\0"
        fields = (self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1],
                  len(encoded), 0)
        header = b"070701" + b"".join(b"%08X" % f for f in fields)
        self.ino += 1
        self.out.write(header + encoded)
        self.out.write(b"\0" * (-(len(header) + len(encoded)) % 4))
        self.out.write(data)
        self.out.write(b"\0" * (-len(data) % 4))

    def directory(self, name: str, perm: int = 0o755) -> None:
        self._entry(name, stat.S_IFDIR | perm, nlink=2)

    def file(self, name: str, data: bytes, perm: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | perm, data)

    def char_device(self, name: str, major: int, minor: int, perm: int = 0o600) -> None:
        self._entry(name, stat.S_IFCHR | perm, rdev=(major, minor))

    def trailer(self) -> None:
        self._entry("TRAILER!!!", 0, nlink=1)
