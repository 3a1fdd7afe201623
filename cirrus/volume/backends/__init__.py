"""Block storage backends, by the name ``Settings.volume_backend`` gives."""
from __future__ import annotations

from typing import Callable

from cirrus.config import Settings
from cirrus.volume.backends.base import VolumeDriver
from cirrus.volume.backends.file import FileDriver


def _file(settings: Settings) -> VolumeDriver:
    return FileDriver(settings.state_dir / "volumes", settings.volume_format)


DRIVERS: dict[str, Callable[[Settings], VolumeDriver]] = {"file": _file}


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
