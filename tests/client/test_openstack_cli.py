"""The ``openstack`` CLI against a running cirrus, as a user would drive it."""
from __future__ import annotations

import time
import uuid
from pathlib import Path

from tests.client.conftest import RunningCloud


def wait_status(running: RunningCloud, name: str, status: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while running.openstack("server", "show", name, "-f", "json")["status"] != status:
        assert time.monotonic() < deadline, f"{name} never reached {status}"
        time.sleep(0.2)


def test_token_issue(running: RunningCloud) -> None:
    token = running.openstack("token", "issue", "-f", "json")
    assert token["id"] and token["project_id"] and token["user_id"]


def test_flavor_list_and_show(running: RunningCloud) -> None:
    names = {f["Name"] for f in running.openstack("flavor", "list", "-f", "json")}
    assert {"m1.tiny", "m1.small"} <= names
    tiny = running.openstack("flavor", "show", "m1.tiny", "-f", "json")
    assert tiny["ram"] == 512 and tiny["vcpus"] == 1


def test_image_create_list_show_delete(running: RunningCloud, tmp_path: Path) -> None:
    data = tmp_path / "disk.img"
    data.write_bytes(b"cirrus" * 5000)
    name = f"img-{uuid.uuid4().hex[:6]}"
    created = running.openstack("image", "create", "--disk-format", "raw", "--container-format",
                                "bare", "--file", str(data), name, "-f", "json")
    assert created["status"] == "active"
    assert name in {i["Name"] for i in running.openstack("image", "list", "-f", "json")}
    running.openstack("image", "set", "--property", "color=blue", name)
    shown = running.openstack("image", "show", name, "-f", "json")
    assert shown["properties"]["color"] == "blue"
    out = tmp_path / "out.img"
    running.openstack("image", "save", "--file", str(out), name)
    assert out.read_bytes() == data.read_bytes()
    running.openstack("image", "delete", name)


def test_network_objects(running: RunningCloud) -> None:
    net = running.openstack("network", "create", "cli-net", "-f", "json")
    sub = running.openstack("subnet", "create", "--network", "cli-net", "--subnet-range",
                            "10.9.0.0/24", "cli-sub", "-f", "json")
    assert sub["cidr"] == "10.9.0.0/24"
    port = running.openstack("port", "create", "--network", "cli-net", "cli-port", "-f", "json")
    assert port["fixed_ips"]
    sg = running.openstack("security", "group", "create", "cli-sg", "-f", "json")
    running.openstack("security", "group", "rule", "create", "--protocol", "tcp", "--dst-port",
                      "22", "cli-sg")
    rules = running.openstack("security", "group", "rule", "list", "cli-sg", "-f", "json")
    assert any(r.get("Port Range") == "22:22" for r in rules)
    running.openstack("port", "delete", "cli-port")
    running.openstack("security", "group", "delete", sg["id"])
    running.openstack("subnet", "delete", "cli-sub")
    running.openstack("network", "delete", net["id"])


def test_server_lifecycle(running: RunningCloud, tmp_path: Path) -> None:
    running.image_and_network(tmp_path, "lifecycle-img", "life-net", "life-sub", "10.8.0.0/24")
    running.openstack("keypair", "create", "--private-key", str(tmp_path / "life.pem"), "life-key")
    user_data = tmp_path / "ud.txt"
    user_data.write_text("#!/bin/sh\necho hi\n")
    server = running.openstack("server", "create", "--image", "lifecycle-img", "--flavor",
                               "m1.tiny", "--network", "life-net", "--key-name", "life-key",
                               "--user-data", str(user_data), "--wait", "vm1", "-f", "json")
    assert server["status"] == "ACTIVE"
    listed = running.openstack("server", "list", "-f", "json")
    assert [s["Status"] for s in listed if s["Name"] == "vm1"] == ["ACTIVE"]
    shown = running.openstack("server", "show", "vm1", "-f", "json")
    assert "life-net" in str(shown["addresses"])
    running.openstack("server", "stop", "vm1")
    wait_status(running, "vm1", "SHUTOFF")
    running.openstack("server", "start", "vm1")
    wait_status(running, "vm1", "ACTIVE")
    running.openstack("server", "reboot", "--wait", "vm1")
    assert running.openstack("server", "show", "vm1", "-f", "json")["status"] == "ACTIVE"
    console = running.openstack("console", "log", "show", "vm1")
    assert "CIRRUS-BOOT-OK" in console.stdout
    serial = running.openstack("console", "url", "show", "--serial", "vm1", "-f", "json")
    assert serial["type"] == "serial" and serial["url"].startswith("ws://127.0.0.1:")
    events = running.openstack("server", "event", "list", "vm1", "-f", "json")
    assert {"create", "stop", "start", "reboot"} <= {e["Action"] for e in events}
    create_req = next(e["Request ID"] for e in events if e["Action"] == "create")
    detail = running.openstack("server", "event", "show", "vm1", create_req, "-f", "json")
    assert detail["action"] == "create"
    running.openstack("server", "delete", "--wait", "vm1")
    assert "vm1" not in {s["Name"] for s in running.openstack("server", "list", "-f", "json")}
    running.openstack("keypair", "delete", "life-key")


def test_keypair_and_server_group(running: RunningCloud, tmp_path: Path) -> None:
    key = running.openstack("keypair", "create", "k1")
    assert "PRIVATE KEY" in key.stdout
    assert "k1" in {k["Name"] for k in running.openstack("keypair", "list", "-f", "json")}
    running.openstack("keypair", "delete", "k1")
    group = running.openstack("server", "group", "create", "--policy", "anti-affinity", "g1",
                              "-f", "json")
    assert "anti-affinity" in str(group)
    assert "g1" in {g["Name"] for g in running.openstack("server", "group", "list", "-f", "json")}
    running.openstack("server", "group", "delete", "g1")


def test_admin_views(running: RunningCloud) -> None:
    zones = running.openstack("availability", "zone", "list", "--compute", "-f", "json")
    assert any(z["Zone Name"] == "nova" for z in zones)
    hypervisors = running.openstack("hypervisor", "list", "-f", "json", cloud="cirrus-admin")
    assert {h["Hypervisor Hostname"] for h in hypervisors} == {"compute1", "compute2"}
    services = running.openstack("compute", "service", "list", "-f", "json", cloud="cirrus-admin")
    assert {"nova-compute", "nova-conductor", "nova-scheduler"} <= {s["Binary"] for s in services}
    running.openstack("compute", "service", "set", "--disable", "compute2", "nova-compute",
                      cloud="cirrus-admin")
    services = running.openstack("compute", "service", "list", "--service", "nova-compute",
                                 "-f", "json", cloud="cirrus-admin")
    assert {s["Host"]: s["Status"] for s in services}["compute2"] == "disabled"
    running.openstack("compute", "service", "set", "--enable", "compute2", "nova-compute",
                      cloud="cirrus-admin")
    quota = running.openstack("quota", "show", "-f", "json")
    assert {q["Resource"]: q["Limit"] for q in quota}["instances"] == 10
    limits = running.openstack("limits", "show", "--absolute", "-f", "json")
    assert {item["Name"]: item["Value"] for item in limits}["instances"] == 10
