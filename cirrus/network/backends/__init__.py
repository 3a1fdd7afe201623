"""Host backends by name (``network_backend``); explicit, no directory walking."""
from __future__ import annotations

import importlib
from typing import Any

from cirrus.network.backends.base import HostBackend

BACKENDS: dict[str, str] = {
    "noop": "cirrus.network.backends.noop:NoopBackend",
    "linuxbridge": "cirrus.network.backends.linuxbridge:LinuxBridgeBackend",
}


def get_backend(settings: Any, host: str | None) -> HostBackend:
    target = BACKENDS.get(settings.network_backend)
    if target is None:
        raise ValueError(f"unknown network_backend {settings.network_backend!r}; "
                         f"choose one of {sorted(BACKENDS)}")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(settings, host)
