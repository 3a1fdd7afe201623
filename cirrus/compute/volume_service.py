"""How compute reaches block storage: the :class:`~cirrus.volume.cinder.VolumeAPI`
the composition root hands the compute API and each compute host (tests may
hand a fake).

As the network API is reached, it calls the volume service's own functions on
the shared database (``cirrus.volume.local_api``); in Nova this is an HTTP
client of Cinder.
"""
from __future__ import annotations

from typing import Any

from cirrus.config import Settings
from cirrus.volume.cinder import VolumeAPI


def make_volume_api(settings: Settings, db: Any) -> VolumeAPI:
    """The deployment's block storage, as compute calls it."""
    from cirrus.volume.local_api import LocalVolumeAPI
    from cirrus.volume.manager import make_block_storage

    return LocalVolumeAPI(make_block_storage(settings, db))
