"""Block storage backends, by the name ``Settings.volume_backend`` gives."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from cirrus.config import Settings
from cirrus.volume.backends.base import VolumeDriver
from cirrus.volume.backends.file import FileDriver
from cirrus.volume.backends.nbd import NbdDriver


def volumes_path(settings: Settings) -> Path:
    """Where the volumes' files live (shared by every process that exports them)."""
    return Path(settings.volumes_path) if settings.volumes_path else settings.state_dir / "volumes"


def _file(settings: Settings) -> VolumeDriver:
    return FileDriver(volumes_path(settings), settings.volume_format)


def _nbd(settings: Settings) -> VolumeDriver:
    return NbdDriver(volumes_path(settings), settings.volume_format, settings.volume_nbd_address)


DRIVERS: dict[str, Callable[[Settings], VolumeDriver]] = {"file": _file, "nbd": _nbd}


def load_driver(settings: Settings) -> VolumeDriver:
    """The configured backend; ValueError naming the choices for another name."""
    try:
        return DRIVERS[settings.volume_backend](settings)
    except KeyError:
        raise ValueError(f"volume_backend must be one of {sorted(DRIVERS)}, "
                         f"not {settings.volume_backend!r}") from None


def backend_host(settings: Settings) -> str:
    """Cinder's ``host@backend`` of this host's volume service."""
    return f"{settings.compute_host or 'cirrus'}@{settings.volume_backend}"
