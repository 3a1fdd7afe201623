"""The ``openstack`` CLI and openstacksdk on the network API's tags,
quotas, bulk ports and port security, as a user and an admin drive them."""
from __future__ import annotations

import uuid
from typing import Any

from tests.client.conftest import RunningCloud
from tests.client.test_sdk_and_novaclient import connect


def test_tags_with_the_cli(running: RunningCloud) -> None:
    name = f"tag-net-{uuid.uuid4().hex[:6]}"
    running.openstack("network", "create", "--tag", "red", "--tag", "blue", name)
    assert sorted(running.openstack("network", "show", name, "-f", "json")["tags"]) == \
        ["blue", "red"]
    running.openstack("network", "set", "--tag", "green", name)
    running.openstack("network", "unset", "--tag", "red", name)
    assert sorted(running.openstack("network", "show", name, "-f", "json")["tags"]) == \
        ["blue", "green"]
    tagged = running.openstack("network", "list", "--tags", "green", "-f", "json")
    assert [n["Name"] for n in tagged] == [name]
    assert running.openstack("network", "list", "--not-tags", "green", "--tags", "blue",
                             "-f", "json") == []
    running.openstack("network", "set", "--no-tag", name)
    assert running.openstack("network", "show", name, "-f", "json")["tags"] == []


def _quota(running: RunningCloud, project: str) -> dict[str, Any]:
    """``openstack quota show --network`` as {resource: limit}."""
    shown = running.openstack("quota", "show", "--network", project, "-f", "json",
                              cloud="cirrus-admin")
    return {row["Resource"]: row["Limit"] for row in shown} if isinstance(shown, list) else shown


def test_quota_set_ports_with_the_cli(running: RunningCloud) -> None:
    project = running.openstack("token", "issue", "-f", "json")["project_id"]
    running.openstack("quota", "set", "--ports", "42", "--networks", "7", project,
                      cloud="cirrus-admin")
    shown = _quota(running, project)
    assert shown["ports"] == 42 and shown["networks"] == 7
    # Every project with limits of its own (GET /v2.0/quotas).
    listed = running.openstack("quota", "list", "--network", "-f", "json", cloud="cirrus-admin")
    assert [(row["Project ID"], row["Ports"]) for row in listed] == [(project, 42)]
    refused = running.openstack("quota", "set", "--ports", "1", project, check=False)
    assert refused.returncode != 0  # a member may not set quotas
    running.openstack("quota", "delete", "--network", project, cloud="cirrus-admin")
    assert _quota(running, project)["ports"] == 500


def test_sdk_tags_bulk_ports_and_port_security(running: RunningCloud) -> None:
    conn = connect(running)
    net = conn.network.create_network(name=f"sdk-tags-{uuid.uuid4().hex[:6]}")
    conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.95.0.0/24")
    conn.network.set_tags(net, ["a", "b"])
    assert sorted(conn.network.get_network(net.id).tags) == ["a", "b"]
    assert [n.id for n in conn.network.networks(tags="a")] == [net.id]
    ports = conn.network.create_ports([{"network_id": net.id, "name": "bulk-1"},
                                       {"network_id": net.id, "name": "bulk-2"}])
    assert sorted(p.name for p in ports) == ["bulk-1", "bulk-2"]
    open_port = conn.network.create_port(network_id=net.id, port_security_enabled=False)
    assert open_port.is_port_security_enabled is False and open_port.security_group_ids == []
    found = list(conn.network.ports(fixed_ips=["ip_address_substr=10.95.0."]))
    assert len(found) == 3
