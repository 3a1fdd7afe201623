"""``openstack server event show`` (2.84) tells where a boot spent its time:
the boot timeline read by the real CLI from a real ``cirrus up``."""
from __future__ import annotations

import json
from pathlib import Path

from cirrus.compute import timeline
from tests.client.conftest import RunningCloud


def test_event_show_lists_the_boot_steps_with_their_timing(running: RunningCloud,
                                                           tmp_path: Path) -> None:
    running.image_and_network(tmp_path, "timeline-img", "timeline-net", "timeline-sub",
                              "10.9.0.0/24")
    running.openstack("server", "create", "--image", "timeline-img", "--flavor", "m1.tiny",
                      "--network", "timeline-net", "--wait", "timeline-vm")
    events = running.openstack("server", "event", "list", "timeline-vm", "-f", "json")
    create = next(e["Request ID"] for e in events if e["Action"] == "create")
    shown = running.openstack("--os-compute-api-version", "2.84", "server", "event", "show",
                              "timeline-vm", create, "-f", "json")
    steps = {e["event"]: json.loads(e["details"]) for e in shown["events"]}
    assert {timeline.SCHEDULE_EVENT, timeline.CLAIM_EVENT, timeline.NETWORK_EVENT,
            timeline.BLOCK_DEVICE_EVENT, timeline.SPAWN_EVENT} <= set(steps)
    for details in steps.values():
        assert details["start_ms"] <= details["finish_ms"]
        assert details["duration_ms"] >= 0
    assert "filters" in steps[timeline.SCHEDULE_EVENT]
    running.openstack("server", "delete", "--wait", "timeline-vm")
