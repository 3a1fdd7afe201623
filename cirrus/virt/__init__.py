"""Hypervisor drivers, chosen by ``compute_driver`` (seed 004's load_compute_driver)."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cirrus.virt.driver import ComputeDriver

if TYPE_CHECKING:
    from cirrus.config import Settings

# name → "module:Class"; explicit, no directory walking.
DRIVERS: dict[str, str] = {
    "fake": "cirrus.virt.fake:FakeDriver",
    "libvirt": "cirrus.virt.libvirt.driver:LibvirtDriver",
}


def load_compute_driver(settings: Settings, host: str) -> ComputeDriver:
    """Instantiate the configured driver for ``host``.

    Raises ValueError naming the valid choices for an unknown driver.
    """
    target = DRIVERS.get(settings.compute_driver)
    if target is None:
        raise ValueError(f"unknown compute_driver {settings.compute_driver!r}; "
                         f"choose one of {sorted(DRIVERS)}")
    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module), name)
    if not (isinstance(cls, type) and issubclass(cls, ComputeDriver)):
        raise TypeError(f"{target} is not a ComputeDriver")
    return cls(settings, host)
