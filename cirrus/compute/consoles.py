"""Where an instance's consoles are, on this host (``get_serial_console``)."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.compute import exception as exc
from cirrus.compute.states import PowerState
from cirrus.compute.store import InstanceStore
from cirrus.context import RequestContext
from cirrus.exception import ConsoleTypeUnavailable
from cirrus.virt.driver import ComputeDriver


@dataclass(frozen=True)
class Consoles:
    """The consoles of one host's instances."""

    store: InstanceStore
    driver: ComputeDriver
    serial_enabled: bool
    netns: str  # where the hypervisor's ports listen on this host ("": here)

    async def get_serial_console(self, ctx: RequestContext, uuid: str) -> dict[str, object]:
        """``{"host", "port", "netns"}`` of the guest's serial port (the proxy connects there).

        ConsoleTypeUnavailable when serial consoles are off on this host,
        InstanceNotReady when the guest is not running."""
        if not self.serial_enabled:
            raise ConsoleTypeUnavailable(console_type="serial")
        instance = await self.store.get(uuid)
        if (await self.driver.get_info(instance)).state != PowerState.RUNNING:
            raise exc.InstanceNotReady(instance_id=uuid)
        serial = await self.driver.get_serial_console(instance)
        return {"host": serial.host, "port": serial.port, "netns": self.netns}
