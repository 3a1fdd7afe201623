"""openstacksdk and novaclient against a running cirrus; restart and signals."""
from __future__ import annotations

import signal
import time
from pathlib import Path

import openstack
import pytest

from tests.client.conftest import RunningCloud, free_port, start_cloud, stop, wait_up


def connect(running: RunningCloud, cloud: str = "cirrus") -> openstack.connection.Connection:
    config = openstack.config.OpenStackConfig(config_files=[str(running.state_dir / "clouds.yaml")])
    return openstack.connection.Connection(config=config.get_one(cloud))


def test_sdk_images_round_trip(running: RunningCloud) -> None:
    conn = connect(running)
    assert conn.authorize()
    assert "m1.tiny" in {f.name for f in conn.compute.flavors()}
    payload = bytes(range(256)) * 400
    image = conn.image.create_image(name="sdk-img", data=payload, disk_format="raw",
                                    container_format="bare", allow_duplicates=True)
    assert conn.image.get_image(image.id).status == "active"
    assert conn.image.download_image(image.id).content == payload
    conn.image.delete_image(image.id)


def test_sdk_boots_a_server(running: RunningCloud) -> None:
    conn = connect(running)
    image = conn.image.create_image(name="sdk-boot", data=b"\0" * 1024, disk_format="raw",
                                    container_format="bare", allow_duplicates=True)
    net = conn.network.create_network(name="sdk-net")
    conn.network.create_subnet(network_id=net.id, cidr="10.7.0.0/24", ip_version=4)
    server = conn.compute.create_server(name="sdk-vm", image_id=image.id,
                                        flavor_id=conn.compute.find_flavor("m1.tiny").id,
                                        networks=[{"uuid": net.id}])
    server = conn.compute.wait_for_server(server, status="ACTIVE", wait=60)
    assert server.addresses["sdk-net"][0]["addr"].startswith("10.7.0.")
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60)
    conn.network.delete_network(net)


def test_novaclient_boot_list_show_delete(running: RunningCloud) -> None:
    from novaclient import client as nova_client

    conn = connect(running)
    image = conn.image.create_image(name="nova-img", data=b"\0" * 1024, disk_format="raw",
                                    container_format="bare", allow_duplicates=True)
    nova = nova_client.Client("2.79", session=conn.session)
    flavor = nova.flavors.find(name="m1.tiny")
    server = nova.servers.create("nova-vm", image.id, flavor, nics="auto")
    deadline = time.monotonic() + 60
    while nova.servers.get(server.id).status != "ACTIVE":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert "nova-vm" in {s.name for s in nova.servers.list()}
    assert nova.servers.get(server.id).status == "ACTIVE"
    nova.servers.delete(server.id)
    deadline = time.monotonic() + 60
    while "nova-vm" in {s.name for s in nova.servers.list()}:
        assert time.monotonic() < deadline
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_restart_keeps_data_and_stops_cleanly(tmp_path: Path, sig: int) -> None:
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_cloud(state, port)
    wait_up(url, proc)
    cloud = RunningCloud(url, state, proc, {"OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml"),
                                            "PATH": __import__("os").environ["PATH"]})
    payload = b"keep me" * 100
    conn = connect(cloud)
    image = conn.image.create_image(name="kept", data=payload, disk_format="raw",
                                    container_format="bare")
    assert stop(proc, sig) == 0
    proc = start_cloud(state, port)
    try:
        wait_up(url, proc)
        conn = connect(cloud)
        assert conn.image.download_image(image.id).content == payload
        assert conn.authorize()
    finally:
        assert stop(proc) == 0


def test_the_clients_use_the_server_resources_of_issue_19(running: RunningCloud) -> None:
    """Rename, tags, addresses, password and security groups as openstacksdk
    and novaclient call them (their own microversions and parsing)."""
    from novaclient import client as nova_client

    conn = connect(running)
    image = conn.image.create_image(name="i19-img", data=b"\0" * 1024, disk_format="raw",
                                    container_format="bare", allow_duplicates=True)
    server = conn.compute.create_server(name="i19-vm", image_id=image.id, networks="auto",
                                        flavor_id=conn.compute.find_flavor("m1.tiny").id)
    server = conn.compute.wait_for_server(server, status="ACTIVE", wait=60)
    renamed = conn.compute.update_server(server, name="i19-renamed", description="d")
    assert (renamed.name, renamed.description) == ("i19-renamed", "d")
    conn.compute.add_tag_to_server(server, "blue")
    assert conn.compute.get_server(server.id).tags == ["blue"]
    assert [s.name for s in conn.compute.servers(tags="blue")] == ["i19-renamed"]
    conn.compute.remove_tags_from_server(server)
    assert conn.compute.get_server_password(server) == ""
    groups = conn.compute.fetch_server_security_groups(server).security_groups
    assert [g["name"] for g in groups] == ["default"]

    nova = nova_client.Client("2.79", session=conn.session)
    assert [v.id for v in nova.versions.list()] == ["v2.0", "v2.1"]
    found = nova.servers.get(server.id)
    nova.servers.set_tags(found, ["a", "b"])
    assert sorted(nova.servers.tag_list(found)) == ["a", "b"]
    nova.servers.delete_tag(found, "a")
    assert nova.servers.tag_list(found) == ["b"]
    assert set(nova.servers.ips(found)) == set(found.addresses)
    nova.servers.clear_password(found)
    assert [g.name for g in nova.servers.list_security_group(found)] == ["default"]
    nova.servers.update(found, name="i19-again")
    assert nova.servers.get(server.id).name == "i19-again"
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=60)
