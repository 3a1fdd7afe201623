"""Rules of network segments: settings, provider attributes, VNI/VLAN
allocation and exhaustion, the MTU an overlay leaves."""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.network import exception as exc
from cirrus.network.models import networks
from cirrus.network.networks import create_network, update_network
from cirrus.network.segments import (NetworkType, Segment, SegmentConfig, allocate, first_free,
                                     parse_ranges, parse_vlan_ranges, requested_segment)

ADMIN = RequestContext(project_id="p", roles=["admin"])
VXLAN = SegmentConfig(tenant_type=NetworkType.VXLAN, vni_ranges=((10, 12),),
                      vlan_ranges={"physnet1": ((100, 101),), "physnet2": ()},
                      flat_networks=frozenset({"physnet1"}))


@pytest.mark.parametrize("text, ranges", [
    ("1:1000", ((1, 1000),)), ("5:5, 7:9", ((5, 5), (7, 9))), ("", ()), (" , ", ()),
])
def test_parse_ranges(text: str, ranges: tuple[tuple[int, int], ...]) -> None:
    assert parse_ranges(text, 4094) == ranges


@pytest.mark.parametrize("text", ["1", "0:10", "10:5", "1:4095", "a:b", "1:2:3", "-1:5"])
def test_parse_ranges_refuses_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        parse_ranges(text, 4094)


def test_parse_vlan_ranges_names_physnets_with_or_without_ranges() -> None:
    assert parse_vlan_ranges("physnet1:100:199,physnet2,physnet1:300:300") == {
        "physnet1": ((100, 199), (300, 300)), "physnet2": ()}
    with pytest.raises(ValueError):
        parse_vlan_ranges(":100:200")


@pytest.mark.parametrize("ranges, used, expected", [
    (((1, 3),), set(), 1), (((1, 3),), {1, 2}, 3), (((1, 3),), {1, 2, 3}, None),
    (((1, 2), (10, 11)), {1, 2}, 10), ((), set(), None),
])
def test_first_free_is_the_lowest_unused(ranges: tuple[tuple[int, int], ...], used: set[int],
                                          expected: int | None) -> None:
    assert first_free(ranges, used) == expected


@pytest.mark.parametrize("values, tenant", [
    ({}, NetworkType.LOCAL),
    ({"local_ip": "192.0.2.1"}, NetworkType.VXLAN),  # the overlay configured
    ({"tenant_network_types": "vxlan"}, NetworkType.VXLAN),  # a controller without a VTEP
    ({"tenant_network_types": "local", "local_ip": "192.0.2.1"}, NetworkType.LOCAL),
    ({"tenant_network_types": "vlan", "network_vlan_ranges": "p:1:2"}, NetworkType.VLAN),
])
def test_tenant_type_from_settings(tmp_path: Path, values: dict[str, Any],
                                   tenant: NetworkType) -> None:
    assert SegmentConfig.from_settings(Settings(state_dir=tmp_path, **values)).tenant_type == tenant


@pytest.mark.parametrize("values", [
    {"tenant_network_types": "flat"}, {"tenant_network_types": "geneve"}, {"vni_ranges": "0:9"},
    {"tenant_network_types": "vlan", "network_vlan_ranges": "physnet1"},  # nothing to allocate
    {"tenant_network_types": "vxlan", "vni_ranges": ""},
])
def test_bad_settings_are_refused(tmp_path: Path, values: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SegmentConfig.from_settings(Settings(state_dir=tmp_path, **values))


T, P, S = "provider:network_type", "provider:physical_network", "provider:segmentation_id"


@pytest.mark.parametrize("values, segment", [
    ({}, None),
    ({T: "vxlan"}, Segment(NetworkType.VXLAN)),
    ({T: "vxlan", S: 5000}, Segment(NetworkType.VXLAN, "", 5000)),  # outside the tenant range: fine
    ({T: "vlan", P: "physnet1", S: 4094}, Segment(NetworkType.VLAN, "physnet1", 4094)),
    ({T: "vlan", P: "physnet2"}, Segment(NetworkType.VLAN, "physnet2")),
    ({T: "flat", P: "physnet1"}, Segment(NetworkType.FLAT, "physnet1", 0)),
    ({T: "local"}, Segment(NetworkType.LOCAL)),
])
def test_requested_segment(values: dict[str, Any], segment: Segment | None) -> None:
    assert requested_segment(VXLAN, values) == segment


@pytest.mark.parametrize("values, reason", [
    ({P: "physnet1"}, "provider:network_type required"),
    ({T: "gre"}, "network_type value 'gre' not supported"),
    ({T: "vxlan", P: "physnet1"}, "provider:physical_network prohibited for VXLAN"),
    ({T: "vxlan", S: 2 ** 24}, "out of range (1 through 16777215)"),
    ({T: "vxlan", S: 0}, "out of range"),
    ({T: "vlan", S: 5}, "provider:physical_network required for VLAN"),
    ({T: "vlan", P: "nowhere", S: 5}, "physical_network 'nowhere' unknown for VLAN"),
    ({T: "vlan", P: "physnet1", S: 4095}, "out of range (1 through 4094)"),
    ({T: "flat", P: "physnet1", S: 3}, "provider:segmentation_id prohibited for flat"),
    ({T: "flat"}, "provider:physical_network required for flat"),
    ({T: "flat", P: "physnet2"}, "physical_network 'physnet2' unknown for flat"),
    ({T: "local", S: 3}, "provider:segmentation_id prohibited for local"),
])
def test_requested_segment_refuses(values: dict[str, Any], reason: str) -> None:
    with pytest.raises(exc.InvalidInput) as caught:
        requested_segment(VXLAN, values)
    assert reason in caught.value.format_message()
    assert caught.value.code == 400


def _create(conn: sa.Connection, config: SegmentConfig = VXLAN, segment: Segment | None = None,
            **values: Any) -> dict[str, Any]:
    return create_network(conn, ADMIN, {"name": "n", **values}, config, segment)


def test_tenant_networks_take_the_lowest_free_vni_until_exhausted(conn: sa.Connection) -> None:
    assert [_create(conn)["segmentation_id"] for _ in range(3)] == [10, 11, 12]
    with pytest.raises(exc.NoNetworkAvailable) as caught:
        _create(conn)
    assert caught.value.code == 503
    # A freed VNI is taken again.
    conn.execute(networks.delete().where(networks.c.segmentation_id == 11))
    assert _create(conn)["segmentation_id"] == 11


def test_an_admins_vni_inside_the_range_is_skipped_by_allocation(conn: sa.Connection) -> None:
    _create(conn, segment=Segment(NetworkType.VXLAN, "", 10))
    assert _create(conn)["segmentation_id"] == 11


def test_a_vni_lost_to_a_concurrent_creation_is_the_next_one_tried(conn: sa.Connection) -> None:
    """The unique index is the guard: when another creation takes the chosen
    VNI between the read of the free ones and the insert, the next is tried."""
    tried: list[int | None] = []

    def insert(segment: Segment) -> dict[str, Any]:
        tried.append(segment.segmentation_id)
        if len(tried) == 1:  # the racer's row lands first
            create_network(conn, ADMIN, {"name": "racer"}, VXLAN, segment)
        row = {"id": f"net-{len(tried)}", "name": "n", "project_id": "p", "mtu": 1450,
               "created_at": datetime.datetime(2026, 1, 1), "network_type": "vxlan",
               "segmentation_id": segment.segmentation_id}
        conn.execute(networks.insert().values(**row))
        return row
    row = allocate(conn, VXLAN, None, insert)
    assert tried == [10, 11] and row["segmentation_id"] == 11


@pytest.mark.parametrize("segment, error", [
    (Segment(NetworkType.VXLAN, "", 7), exc.TunnelIdInUse),
    (Segment(NetworkType.VLAN, "physnet1", 7), exc.VlanIdInUse),
    (Segment(NetworkType.FLAT, "physnet1", 0), exc.FlatNetworkInUse),
])
def test_a_taken_segment_is_409(conn: sa.Connection, segment: Segment, error: type) -> None:
    _create(conn, segment=segment)
    with pytest.raises(error) as caught:
        _create(conn, segment=segment)
    assert caught.value.code == 409


def test_vlan_ids_are_per_physical_network(conn: sa.Connection) -> None:
    first = _create(conn, segment=Segment(NetworkType.VLAN, "physnet1"))
    second = _create(conn, segment=Segment(NetworkType.VLAN, "physnet1"))
    assert (first["segmentation_id"], second["segmentation_id"]) == (100, 101)
    with pytest.raises(exc.NoNetworkAvailable):
        _create(conn, segment=Segment(NetworkType.VLAN, "physnet1"))
    # physnet2 has no range: only a named VLAN goes there.
    with pytest.raises(exc.NoNetworkAvailable):
        _create(conn, segment=Segment(NetworkType.VLAN, "physnet2"))
    assert _create(conn, segment=Segment(NetworkType.VLAN, "physnet2", 100))["segmentation_id"] == 100


def test_each_type_allocates_from_its_own_ranges(conn: sa.Connection) -> None:
    """Tenant networks of type vlan take the first physnet with a range; an
    admin's vxlan network without a VNI still takes one from vni_ranges."""
    vlan_tenants = SegmentConfig(tenant_type=NetworkType.VLAN, vni_ranges=((50, 50),),
                                 vlan_ranges={"physnet0": (), "physnet1": ((7, 8),)})
    tenant = _create(conn, vlan_tenants)
    assert (tenant["network_type"], tenant["physical_network"], tenant["segmentation_id"]) == (
        "vlan", "physnet1", 7)
    assert _create(conn, vlan_tenants, Segment(NetworkType.VXLAN))["segmentation_id"] == 50


def test_local_networks_need_no_segment(conn: sa.Connection) -> None:
    rows = [_create(conn, SegmentConfig()) for _ in range(3)]
    assert {(r["network_type"], r["segmentation_id"]) for r in rows} == {("local", None)}


@pytest.mark.parametrize("segment, mtu", [
    (None, 1450), (Segment(NetworkType.VLAN, "physnet1", 5), 1500),
    (Segment(NetworkType.FLAT, "physnet1", 0), 1500), (Segment(NetworkType.LOCAL), 1500),
])
def test_the_default_mtu_is_what_the_underlay_carries(conn: sa.Connection, segment: Segment | None,
                                                       mtu: int) -> None:
    assert _create(conn, segment=segment)["mtu"] == mtu


def test_an_mtu_the_overlay_cannot_carry_is_400(conn: sa.Connection) -> None:
    with pytest.raises(exc.InvalidInput, match="maximum is 1450"):
        _create(conn, mtu=1500)
    row = _create(conn, mtu=1400)
    update_network(conn, ADMIN, row["id"], {"mtu": 1450}, VXLAN)
    with pytest.raises(exc.InvalidInput, match="maximum is 1450"):
        update_network(conn, ADMIN, row["id"], {"mtu": 1451}, VXLAN)
    jumbo = SegmentConfig(tenant_type=NetworkType.VXLAN, physnet_mtu=9000)
    assert _create(conn, jumbo)["mtu"] == 8950


@pytest.mark.parametrize("segment, view", [
    (Segment(NetworkType.LOCAL), ("local", None, None)),
    (Segment(NetworkType.FLAT, "physnet1", 0), ("flat", "physnet1", None)),
    (Segment(NetworkType.VLAN, "physnet1", 7), ("vlan", "physnet1", 7)),
    (Segment(NetworkType.VXLAN, "", 70), ("vxlan", None, 70)),
])
def test_provider_view(segment: Segment, view: tuple[Any, ...]) -> None:
    assert tuple(segment.view().values()) == view
