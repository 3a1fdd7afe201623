"""Request ids across the services (issue 23): the caller's
X-OpenStack-Request-ID becomes the global request id on every log line of
the request's work, in the API and on the compute host that builds."""
from __future__ import annotations

import logging
from typing import Iterator

import httpx
import pytest

from tests.functional.servers import server_body, upload_image, wait_for_status
from tests.unit.test_log import GLOBAL, Lines


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    logger = logging.getLogger("cirrus.compute")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


async def test_the_global_id_reaches_the_computes_log_lines(demo: httpx.AsyncClient,
                                                            lines: Lines) -> None:
    image = await upload_image(demo)
    resp = await demo.post("/compute/v2.1/servers", json=server_body(image),
                           headers={"X-OpenStack-Request-ID": GLOBAL})
    assert resp.status_code == 202, resp.text
    request_id = resp.headers["x-openstack-request-id"]
    assert resp.headers["x-compute-request-id"] == request_id != GLOBAL
    server = resp.json()["server"]["id"]
    await wait_for_status(demo, server, {"ACTIVE"})
    built = [line for line in lines.lines
             if line["message"].startswith(f"instance {server} is ACTIVE")]
    assert built, lines.lines
    for line in built:
        assert line["global_request_id"] == GLOBAL
        assert (line["request_id"], line["instance_uuid"]) == (request_id, server)
        assert line["project_id"]
    actions = (await demo.get(f"/compute/v2.1/servers/{server}/os-instance-actions")).json()
    assert actions["instanceActions"][0]["request_id"] == request_id


async def test_a_malformed_global_id_is_ignored(demo: httpx.AsyncClient, lines: Lines) -> None:
    image = await upload_image(demo)
    resp = await demo.post("/compute/v2.1/servers", json=server_body(image),
                           headers={"X-OpenStack-Request-ID": "req-not-a-uuid"})
    assert resp.status_code == 202, resp.text
    server = resp.json()["server"]["id"]
    await wait_for_status(demo, server, {"ACTIVE"})
    mine = [line for line in lines.lines if line.get("instance_uuid") == server]
    assert mine and all("global_request_id" not in line for line in mine)
