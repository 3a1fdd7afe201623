"""How compute reaches block storage: the :class:`~cirrus.volume.cinder.VolumeAPI`
the composition root hands the compute API and each compute host.

Until a deployment has a block storage service, :class:`NoVolumeAPI` stands
in: every call is refused with a 400 saying so, so a request that names a
volume fails before anything is built.
"""
from __future__ import annotations

from typing import Any, NoReturn

from cirrus.compute.exception import VolumeServiceUnavailable
from cirrus.config import Settings
from cirrus.volume.cinder import VolumeAPI


class NoVolumeAPI:
    """A VolumeAPI of a cloud without block storage: each call raises
    VolumeServiceUnavailable (400)."""

    async def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise VolumeServiceUnavailable()

    get = create = delete = attachment_create = attachment_update = _refuse
    attachment_complete = attachment_delete = create_snapshot_force = _refuse
    get_snapshot = delete_snapshot = _refuse


def make_volume_api(settings: Settings, db: Any) -> VolumeAPI:
    """The deployment's block storage client (none yet: :class:`NoVolumeAPI`)."""
    return NoVolumeAPI()
