"""The backend seam: where a volume's data lives and how a host reaches it.

A driver stores each volume under its id and each snapshot under its own id.
Every method is idempotent in the way a retry needs (create over a leftover
replaces it, delete of a missing volume succeeds) so that the periodic sweep
can re-run whatever a killed process left half done. Failures raise
:class:`cirrus.volume.exception.BackendError` with the tool's own words.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

from cirrus.volume.cinder import ConnectionInfo, Connector

GiB = 1 << 30


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the core (Cinder's driver capabilities)."""

    volume_backend_name: str
    storage_protocol: str
    vendor_name: str = "cirrus"
    retype: bool = True          # between types of this backend: data stays in place
    online_extend: bool = True   # extend while in-use (3.42)
    multiattach: bool = False


class VolumeDriver(abc.ABC):
    """One block storage backend."""

    capabilities: Capabilities

    @abc.abstractmethod
    async def create_volume(self, volume_id: str, size_gb: int) -> None:
        """An empty volume of ``size_gb`` GiB (zeroes when read)."""

    @abc.abstractmethod
    async def create_volume_from_image(self, volume_id: str, image_path: str,
                                       size_gb: int) -> None:
        """The image's data (any format qemu-img reads) written to a new
        volume of ``size_gb`` GiB; BackendError if it does not fit."""

    @abc.abstractmethod
    async def create_cloned_volume(self, volume_id: str, source_id: str, size_gb: int) -> None:
        """A copy of volume ``source_id``, grown to ``size_gb`` GiB."""

    @abc.abstractmethod
    async def create_snapshot(self, snapshot_id: str, volume_id: str) -> None:
        """A point-in-time copy of the volume under ``snapshot_id``."""

    @abc.abstractmethod
    async def create_volume_from_snapshot(self, volume_id: str, snapshot_id: str,
                                          size_gb: int) -> None:
        """A new volume with the snapshot's data, grown to ``size_gb`` GiB."""

    @abc.abstractmethod
    async def extend_volume(self, volume_id: str, size_gb: int) -> None:
        """Grow the volume to ``size_gb`` GiB (never shrinks)."""

    @abc.abstractmethod
    async def delete_volume(self, volume_id: str) -> None:
        """Remove the volume's data; a missing volume is not an error."""

    @abc.abstractmethod
    async def delete_snapshot(self, snapshot_id: str) -> None:
        """Remove the snapshot's data; a missing one is not an error."""

    @abc.abstractmethod
    async def copy_volume_to_file(self, volume_id: str, dest: str, fmt: str) -> None:
        """The volume's data written to the file ``dest`` in format ``fmt``
        (``raw`` or ``qcow2``): an upload to the image service."""

    @abc.abstractmethod
    def initialize_connection(self, volume_id: str, connector: Connector,
                              access_mode: str) -> ConnectionInfo:
        """How the host ``connector`` describes reaches the volume."""

    def terminate_connection(self, volume_id: str, connector: Connector | None) -> None:
        """Undo :meth:`initialize_connection` (nothing for local files)."""
