"""The ``openstack`` CLI on aggregates, zones, flavor access and usage."""
from __future__ import annotations

from tests.client.conftest import RunningCloud

ADMIN = "cirrus-admin"


def test_aggregates_and_hypervisor_show(running: RunningCloud) -> None:
    created = running.openstack("aggregate", "create", "--zone", "cli-az", "cli-agg",
                                "-f", "json", cloud=ADMIN)
    assert created["availability_zone"] == "cli-az"
    running.openstack("aggregate", "add", "host", "cli-agg", "compute2", cloud=ADMIN)
    running.openstack("aggregate", "set", "--property", "ssd=true", "cli-agg", cloud=ADMIN)
    shown = running.openstack("aggregate", "show", "cli-agg", "-f", "json", cloud=ADMIN)
    assert shown["hosts"] == ["compute2"] and shown["availability_zone"] == "cli-az"
    assert shown["properties"] == {"ssd": "true"}
    listed = running.openstack("aggregate", "list", "--long", "-f", "json", cloud=ADMIN)
    assert [a["Name"] for a in listed] == ["cli-agg"]
    zones = running.openstack("availability", "zone", "list", "--compute", "-f", "json")
    assert {"cli-az", "nova"} <= {z["Zone Name"] for z in zones}

    # hypervisor show reads the aggregates, and the uptime: from its own
    # route before 2.88, in the hypervisor from 2.88 on.
    for version in ("2.1", "2.53", "2.88", None):
        args = ("--os-compute-api-version", version) if version else ()
        hypervisor = running.openstack(*args, "hypervisor", "show", "compute2", "-f", "json",
                                       cloud=ADMIN)
        assert hypervisor["aggregates"] == ["cli-agg"], version
        assert hypervisor["service_host"] == "compute2"
        if version in ("2.1", "2.88"):  # parsed out of the uptime line, wherever it came
            assert hypervisor["load_average"] and hypervisor["uptime"], version
    other = running.openstack("hypervisor", "show", "compute1", "-f", "json", cloud=ADMIN)
    assert other["aggregates"] == []

    running.openstack("aggregate", "unset", "--property", "ssd", "cli-agg", cloud=ADMIN)
    running.openstack("aggregate", "remove", "host", "cli-agg", "compute2", cloud=ADMIN)
    running.openstack("aggregate", "delete", "cli-agg", cloud=ADMIN)
    assert running.openstack("aggregate", "list", "-f", "json", cloud=ADMIN) == []


def test_private_flavor_and_usage(running: RunningCloud) -> None:
    running.openstack("flavor", "create", "--private", "--ram", "64", "--vcpus", "1", "--disk",
                      "1", "cli-private", cloud=ADMIN)
    assert "cli-private" not in {f["Name"] for f in running.openstack("flavor", "list",
                                                                      "-f", "json")}
    running.openstack("flavor", "set", "--project", "demo", "cli-private", cloud=ADMIN)
    assert "cli-private" in {f["Name"] for f in running.openstack("flavor", "list", "-f", "json")}
    shown = running.openstack("flavor", "show", "cli-private", "-f", "json", cloud=ADMIN)
    assert shown["os-flavor-access:is_public"] is False
    assert "demo" in str(shown["access_project_ids"]) or shown["access_project_ids"]
    running.openstack("flavor", "unset", "--project", "demo", "cli-private", cloud=ADMIN)
    running.openstack("flavor", "delete", "cli-private", cloud=ADMIN)

    usage = running.openstack("usage", "list", "-f", "json", cloud=ADMIN)
    assert isinstance(usage, list)
    mine = running.openstack("usage", "show", "-f", "json")
    assert isinstance(mine, dict)
