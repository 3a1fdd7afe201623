"""The fake hypervisor's guests, kept in the state dir across restarts.

A real hypervisor keeps its guests running when nova-compute restarts; the
fake driver stands in for one, so its guest table outlives the process too.
Without it every ACTIVE server of a restarted cloud was found gone by the
next power-state sync and marked SHUTOFF.

The table is a journal, ``<state_dir>/fake-hypervisor/<host>.jsonl``: one
line per change (a guest's whole record, or its removal), appended with one
unbuffered write, so a ``kill -9`` loses nothing written before it and a
boot costs one small write, not a rewrite of every guest. A start replays it
and writes it back compacted, as does a run once most of its lines are stale.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from cirrus.compute.states import PowerState

COMPACT_SLACK = 10_000  # stale journal lines tolerated before a rewrite


@dataclass
class FakeInstance:
    uuid: str
    name: str
    state: PowerState
    console: list[str] = field(default_factory=list)
    admin_password: str | None = None  # the last one set_admin_password set
    rescue_image: str | None = None  # the image a rescue guest boots, while rescued
    image_ref: str = ""  # the image it was spawned from (rebuild and unshelve change it)
    started: float = field(default_factory=time.monotonic)  # for its diagnostics' uptime
    # mountpoint → the connection info of the volume plugged there (issue 20)
    volumes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """What is kept of it (its uptime starts again with the process)."""
        return {"uuid": self.uuid, "name": self.name, "state": int(self.state),
                "console": self.console, "admin_password": self.admin_password,
                "rescue_image": self.rescue_image, "image_ref": self.image_ref,
                "volumes": self.volumes}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> FakeInstance:
        return cls(uuid=data["uuid"], name=data["name"], state=PowerState(data["state"]),
                   console=list(data["console"]), admin_password=data["admin_password"],
                   rescue_image=data["rescue_image"], image_ref=data["image_ref"],
                   volumes=dict(data.get("volumes") or {}))


class GuestTable(MutableMapping[str, FakeInstance]):
    """Guests by uuid; with a ``path``, every change is journalled there.

    Assigning or deleting a guest is journalled by the table; a change made
    to a guest in place is journalled by :meth:`saved`.
    """

    def __init__(self, path: Path | None, compact_slack: int = COMPACT_SLACK) -> None:
        self.path = path
        self.compact_slack = compact_slack
        self._guests: dict[str, FakeInstance] = {}
        self._journal: BinaryIO | None = None
        self._lines = 0  # in the journal file, to compact it when mostly stale

    def load(self) -> None:
        """Replay the journal (what a previous process left), then compact it."""
        if self.path is None or not self.path.exists():
            return
        self.close()
        for line in self.path.read_bytes().splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a crash: the change before it stands
            if entry.get("gone"):
                self._guests.pop(entry["uuid"], None)
            else:
                self._guests[entry["uuid"]] = FakeInstance.from_record(entry)
        self._compact()

    def _compact(self) -> None:
        """Rewrite the journal as one line per guest (renamed into place)."""
        assert self.path is not None
        self.close()
        compacted = self.path.with_suffix(".tmp")
        compacted.write_bytes(b"".join(self._line(g.record()) for g in self._guests.values()))
        os.replace(compacted, self.path)
        self._lines = len(self._guests)

    def saved(self, guest: FakeInstance) -> None:
        """Journal ``guest`` after a change made to it in place."""
        if self._guests.get(guest.uuid) is guest:
            self._write(guest.record())

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    @staticmethod
    def _line(entry: dict[str, Any]) -> bytes:
        return orjson.dumps(entry) + b"\n"  # ~1 µs: it is on every boot's path

    def _write(self, entry: dict[str, Any]) -> None:
        if self.path is None:
            return
        if self._journal is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._journal = open(self.path, "ab", buffering=0)  # noqa: SIM115 - kept open
        self._journal.write(self._line(entry))
        self._lines += 1
        # A long run (boots and deletes by the thousand) would grow it without end.
        if self._lines > self.compact_slack + 2 * len(self._guests):
            self._compact()

    # -- the mapping ---------------------------------------------------------------
    def __getitem__(self, uuid: str) -> FakeInstance:
        return self._guests[uuid]

    def __setitem__(self, uuid: str, guest: FakeInstance) -> None:
        self._guests[uuid] = guest
        self._write(guest.record())

    def __delitem__(self, uuid: str) -> None:
        del self._guests[uuid]
        self._write({"uuid": uuid, "gone": True})

    def __iter__(self) -> Iterator[str]:
        return iter(self._guests)

    def __len__(self) -> int:
        return len(self._guests)
