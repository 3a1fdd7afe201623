"""A real guest without a config drive reads who it is from the metadata
service: DHCP routes it to 169.254.169.254 (option 121), the proxy on its
network's DHCP host signs for it, and the console shows the instance id and
the user data it read."""
from __future__ import annotations

import re

import pytest

from tests.realvm.conftest import MARKER, RealCloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]
USER_DATA = "#!/bin/sh\necho METADATA-USER-DATA-OK\n"


def test_guest_reads_instance_id_and_user_data_from_the_metadata_service(
        real_cloud: RealCloud) -> None:
    user_data = real_cloud.state_dir.parent / "md-user-data.sh"
    user_data.write_text(USER_DATA)
    server = real_cloud.openstack("server", "create", "--flavor", "rv.tiny", "--image",
                                  "cirrus-tiny", "--network", "rv-net", "--user-data",
                                  str(user_data), "--wait", "rv-md", "-f", "json", timeout=300)
    assert server["status"] == "ACTIVE"
    assert not server.get("config_drive")  # nothing but the metadata service to read
    console = real_cloud.wait_console("rv-md", re.escape(MARKER))
    assert "config drive /dev/" not in console
    assert f"metadata service: instance-id: {server['id']}" in console, console
    assert "hostname rv-md" in console
    console = real_cloud.wait_console("rv-md", "user-data: METADATA-USER-DATA-OK", timeout=60)
    # The proxy listens on the network's bridge (only) in the host namespace.
    listening = real_cloud.ns("ss", "-Hltn").stdout
    assert re.search(r"169\.254\.169\.254%brq[0-9a-f-]+:80 ", listening), listening
    real_cloud.openstack("server", "delete", "--wait", "rv-md", timeout=180)
