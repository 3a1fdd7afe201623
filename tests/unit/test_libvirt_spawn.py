"""libvirt ``spawn``'s wait for RUNNING, on a fake libvirt connection (no VM):
a guest that does not come up is a spawn failure, cleaned up, never a
"spawned" guest that is not running."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.libvirt.driver import LibvirtDriver

UUID = "11111111-2222-3333-4444-555555555555"
RUNNING, PAUSED, SHUTOFF = 1, 3, 5


class LibvirtError(Exception):
    def get_error_message(self) -> str:
        return str(self)

    def get_error_code(self) -> int:
        return 42


FAKE_LIBVIRT = SimpleNamespace(libvirtError=LibvirtError, VIR_DOMAIN_START_PAUSED=1,
                               VIR_DOMAIN_UNDEFINE_MANAGED_SAVE=1, VIR_DOMAIN_UNDEFINE_NVRAM=4,
                               VIR_ERR_NO_DOMAIN=42)


class FakeDomain:
    """A domain that, once created, stays in ``state_after_start``."""

    def __init__(self, conn: "FakeConnection") -> None:
        self.conn = conn
        self.state = SHUTOFF

    def createWithFlags(self, flags: int) -> None:  # noqa: N802 - libvirt's name
        self.state = self.conn.state_after_start

    def info(self) -> list[int]:
        return [self.state, 0, 0, 1, 0]

    def name(self) -> str:
        return "instance-00000001"

    def isActive(self) -> bool:  # noqa: N802
        return self.state != SHUTOFF

    def destroy(self) -> None:
        self.state = SHUTOFF

    def undefineFlags(self, flags: int) -> None:  # noqa: N802
        del self.conn.domains[UUID]


class FakeConnection:
    def __init__(self, state_after_start: int) -> None:
        self.state_after_start = state_after_start
        self.domains: dict[str, FakeDomain] = {}

    def defineXML(self, xml: str) -> FakeDomain:  # noqa: N802
        self.domains[UUID] = FakeDomain(self)
        return self.domains[UUID]


class FakeHost:
    """``cirrus.virt.libvirt.host.Host`` over a FakeConnection, in the loop's thread."""

    libvirt = FAKE_LIBVIRT

    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(self.conn, *args)

    def find_domain(self, conn: FakeConnection, uuid: str) -> FakeDomain | None:
        return conn.domains.get(uuid)


def _driver(tmp_path: Path, state_after_start: int) -> tuple[LibvirtDriver, FakeConnection]:
    settings = SimpleNamespace(instances_path=str(tmp_path), libvirt_uri="test:///default")
    driver = LibvirtDriver(settings, "compute1")
    conn = FakeConnection(state_after_start)
    driver._host = FakeHost(conn)  # type: ignore[assignment]
    driver.running_timeout = 0.2
    return driver, conn


INSTANCE = {"uuid": UUID, "id": 1}


@pytest.mark.parametrize("state", [PAUSED, SHUTOFF], ids=["paused", "shut-off"])
async def test_a_guest_not_running_at_the_deadline_fails_the_spawn_and_is_removed(
        tmp_path: Path, state: int) -> None:
    driver, conn = _driver(tmp_path, state)
    (tmp_path / UUID).mkdir()
    with pytest.raises(vexc.InstanceSpawnError) as raised:
        await driver._spawn_domain(None, INSTANCE, "<domain/>", [])
    assert "not running" in raised.value.format_message()
    assert conn.domains == {}  # destroyed and undefined
    assert not (tmp_path / UUID).exists()  # its disks too


async def test_a_running_guest_is_spawned_and_kept(tmp_path: Path) -> None:
    driver, conn = _driver(tmp_path, RUNNING)
    await driver._spawn_domain(None, INSTANCE, "<domain/>", [])
    assert conn.domains[UUID].state == RUNNING
