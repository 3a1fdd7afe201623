"""The nbd backend: the file backend's files, each served while attached
as an NBD export by a ``qemu-storage-daemon`` on the volume host, so that a
guest on any host reaches it over the network (docs/volumes.md says why NBD
and not LVM with iSCSI through LIO).

One daemon per attached volume, at ``volume_nbd_address`` on a port of its
own, export ``volume-<id>`` (Cinder's NBD connector shape:
``{"driver_volume_type": "nbd", "data": {"host", "port", "name"}}``). Every
attachment of a volume — two at once while a server moves between hosts —
shares its one export, so the file is opened (and locked) by one process.
Each volume's export state is a pid file and a port file under
``<volumes>/.exports``, taken under a file lock, because any process that
calls the attachments API (the API, a compute service) may create it; the
volume service's supervisor keeps them in step with the database.
"""
from __future__ import annotations

import fcntl
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from cirrus.volume.backends import qsd
from cirrus.volume.backends.base import Capabilities
from cirrus.volume.backends.file import FileDriver
from cirrus.volume.cinder import ConnectionInfo, Connector
from cirrus.volume.exception import BackendError


def export_name(volume_id: str) -> str:
    return f"volume-{volume_id}"


class NbdDriver(FileDriver):
    """Volumes as files in ``root``, exported over NBD at ``address``."""

    def __init__(self, root: Path, fmt: str, address: str) -> None:
        super().__init__(root, fmt)
        self.address = address
        self.exports_dir = self.root / ".exports"
        # Growing a file a daemon holds open needs the daemon's own resize.
        self.capabilities = Capabilities(volume_backend_name="nbd", storage_protocol="nbd",
                                         online_extend=False, multiattach=False)

    # -- export state on disk --------------------------------------------------
    def _pidfile(self, volume_id: str) -> Path:
        return self.exports_dir / f"{volume_id}.pid"

    def _portfile(self, volume_id: str) -> Path:
        return self.exports_dir / f"{volume_id}.port"

    @contextmanager
    def _locked(self, volume_id: str) -> Iterator[None]:
        self.exports_dir.mkdir(parents=True, exist_ok=True)
        with open(self.exports_dir / f"{volume_id}.lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _port(self, volume_id: str) -> int | None:
        try:
            return int(self._portfile(volume_id).read_text())
        except (OSError, ValueError):
            return None

    def running(self, volume_id: str) -> int | None:
        """The pid of the volume's daemon, if it runs."""
        return qsd.running(self._pidfile(volume_id), export_name(volume_id))

    def exported(self) -> list[str]:
        """The volumes with export state here (running or not)."""
        if not self.exports_dir.is_dir():
            return []
        return sorted({p.stem for p in self.exports_dir.iterdir()
                       if p.suffix in (".pid", ".port")})

    def export_age(self, volume_id: str) -> float:
        """Seconds since the volume's export state was last written."""
        try:
            changed = max(p.stat().st_mtime for p in (self._pidfile(volume_id),
                                                       self._portfile(volume_id)) if p.exists())
        except ValueError:  # neither file
            return float("inf")
        return time.time() - changed

    # -- exports ---------------------------------------------------------------
    def ensure_export(self, volume_id: str, port: int | None = None) -> int:
        """The volume served (started if its daemon is not running, on
        ``port`` if given, else the port it had, else a free one); the port.
        BackendError if the daemon cannot start."""
        with self._locked(volume_id):
            had = self._port(volume_id)
            if self.running(volume_id) is not None and had is not None and port in (None, had):
                return had
            self._stop(volume_id)
            if not self.path(volume_id).exists():
                raise BackendError(reason=f"volume {volume_id} has no data to export")
            serving = qsd.start(qsd.Export(self.path(volume_id), self.fmt, self.address,
                                           port or had or 0, export_name(volume_id)),
                                self._pidfile(volume_id))
            self._portfile(volume_id).write_text(str(serving))
            return serving

    def remove_export(self, volume_id: str) -> None:
        """The volume's daemon stopped and its export state gone (idempotent)."""
        with self._locked(volume_id):
            self._stop(volume_id)
            self._portfile(volume_id).unlink(missing_ok=True)

    def _stop(self, volume_id: str) -> None:
        qsd.stop(self._pidfile(volume_id), export_name(volume_id))

    def initialize_connection(self, volume_id: str, connector: Connector,
                              access_mode: str) -> ConnectionInfo:
        port = self.ensure_export(volume_id)
        return {"driver_volume_type": "nbd",
                "data": {"host": self.address, "port": port, "name": export_name(volume_id),
                         "access_mode": access_mode}}

    def terminate_connection(self, volume_id: str, connector: Connector | None) -> None:
        """The export goes (the attachments API calls this once no attachment
        of the volume is left: all of them share it)."""
        self.remove_export(volume_id)

    # -- data while exported ---------------------------------------------------
    def source(self, name: str) -> tuple[str, str]:
        # The daemon holds the file's write lock: copies (snapshots, clones,
        # uploads of an attached volume) read through the export instead.
        port = self._port(name)
        if port is not None and self.running(name) is not None:
            host = f"[{self.address}]" if ":" in self.address else self.address
            return "raw", f"nbd://{host}:{port}/{export_name(name)}"
        return super().source(name)

    async def delete_volume(self, volume_id: str) -> None:
        self.remove_export(volume_id)
        await super().delete_volume(volume_id)
        # The lock file goes with the volume only: unlinked while another
        # process waits on it, two could hold "the" lock at once.
        (self.exports_dir / f"{volume_id}.lock").unlink(missing_ok=True)
