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
