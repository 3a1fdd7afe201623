"""A libvirt driver whose host seam is faked: libvirt calls run inline
against one fake domain, for unit tests of the driver's volume paths."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from cirrus.virt.libvirt.driver import LibvirtDriver


class FakeHost:
    """The driver's ``_host``: ``libvirt`` is the test's fake module (its
    error class and flags); ``find_domain`` finds ``dom`` whatever the uuid."""

    def __init__(self, libvirt: Any, dom: Any) -> None:
        self.libvirt, self.dom = libvirt, dom

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(None, *args)

    def find_domain(self, conn: Any, uuid: str) -> Any:
        return self.dom


def fake_driver(libvirt: Any, dom: Any) -> LibvirtDriver:
    """A libvirt driver of host ``compute1`` whose host is :class:`FakeHost`."""
    settings = SimpleNamespace(instances_path="/nonexistent", libvirt_uri="test:///default",
                               force_config_drive=False)
    driver = LibvirtDriver(settings, "compute1")  # type: ignore[arg-type]
    driver._host = FakeHost(libvirt, dom)  # type: ignore[assignment]
    return driver
