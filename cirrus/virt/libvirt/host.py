"""One libvirt connection per compute host, used from worker threads.

libvirt-python is blocking; every call goes through :meth:`Host.call` so the
event loop never waits on the hypervisor.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

from cirrus.virt import exception as vexc

T = TypeVar("T")


def import_libvirt() -> Any:
    try:
        import libvirt
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise vexc.HypervisorUnavailable(
            host="-", reason="the libvirt Python binding is not installed "
                             "(scripts/setup-libvirt.sh installs it)") from e
    # libvirt prints every error to stderr by default; ours are raised, typed.
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    return libvirt


class Host:
    """A lazily opened, re-opened-on-failure connection to libvirtd."""

    def __init__(self, uri: str, hostname: str) -> None:
        self.uri = uri
        self.hostname = hostname
        self.libvirt = import_libvirt()
        self._conn: Any = None

    def _connection(self) -> Any:
        if self._conn is not None:
            try:
                if self._conn.isAlive():
                    return self._conn
            except self.libvirt.libvirtError:
                pass
        try:
            self._conn = self.libvirt.open(self.uri)
        except self.libvirt.libvirtError as e:
            raise vexc.HypervisorUnavailable(
                host=self.hostname, reason=f"cannot connect to {self.uri}: "
                                           f"{e.get_error_message()}") from e
        return self._conn

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in a worker thread."""
        return await asyncio.to_thread(lambda: fn(self._connection(), *args))

    async def connect(self) -> None:
        """Open the connection now; HypervisorUnavailable with one clear message if not."""
        await self.call(lambda conn: conn.getVersion())

    def find_domain(self, conn: Any, uuid: str) -> Any | None:
        """The domain of instance ``uuid``, or None."""
        try:
            return conn.lookupByUUIDString(uuid)
        except self.libvirt.libvirtError as e:
            if e.get_error_code() == self.libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await asyncio.to_thread(conn.close)
