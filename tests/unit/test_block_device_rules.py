"""Block device mapping rules that need no lookup (cirrus/compute/block_device.py)
and the shape of ``block_device_mapping_v2`` / legacy mappings
(cirrus/api/compute/bdm_schema.py), as tables."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.api.compute.bdm_schema import parse_bdm_v2, parse_legacy
from cirrus.compute import block_device as bd
from cirrus.compute import exception as exc
from cirrus.exception import ValidationError

FLAVOR = {"root_gb": 10, "ephemeral_gb": 5, "swap": 512}
IMG = "11111111-1111-4111-8111-111111111111"
VOL = "22222222-2222-4222-8222-222222222222"


def m(source: str, dest: str, boot: int | None = None, **extra: Any) -> bd.BdmRequest:
    return {"source_type": source, "destination_type": dest, "boot_index": boot,  # type: ignore
            "uuid": None if source == "blank" else VOL, **extra}


@pytest.mark.parametrize("bdms, image, ok", [
    ([m("volume", "volume", 0)], None, True),
    ([m("volume", "volume", 0), m("volume", "volume", 1)], None, True),
    ([m("volume", "volume", 0), m("volume", "volume", 2)], None, False),  # a gap
    ([m("volume", "volume", 1)], None, False),  # no 0
    ([], None, False),  # nothing to boot
    ([m("blank", "volume", None, volume_size=1)], IMG, True),  # the image is 0
    ([m("volume", "volume", 1)], IMG, True),  # image 0, volume 1
    ([m("volume", "volume", -1), m("volume", "volume", 0)], None, True),  # -1: not bootable
])
def test_boot_sequence(bdms: list[bd.BdmRequest], image: str | None, ok: bool) -> None:
    if ok:
        bd.check_boot_sequence(bdms, image)
    else:
        with pytest.raises(exc.InvalidBDMBootSequence):
            bd.check_boot_sequence(bdms, image)


@pytest.mark.parametrize("bdms, count, error", [
    ([m("image", "local", 0)], 1, None),
    ([m("image", "local", 1)], 1, exc.InvalidBDMFormat),
    ([m("volume", "local", 0)], 1, exc.InvalidBDMFormat),
    ([m("image", "volume", 0)], 1, exc.InvalidBDM),  # no size
    ([m("image", "volume", 0, volume_size=1)], 1, None),
    ([m("blank", "volume")], 1, exc.InvalidBDM),
    ([m("volume", "volume", 0, disk_bus="virtio")], 1, None),
    ([m("volume", "volume", 0, disk_bus="nvme-ish")], 1, exc.InvalidBDMDiskBus),
    ([m("volume", "volume", 0)], 2, exc.InvalidRequest),  # one volume, two servers
    ([m("blank", "local", None, guest_format="swap", volume_size=512)], 1, None),
    ([m("blank", "local", None, guest_format="swap", volume_size=1024)], 1,
     exc.InvalidBDMSwapSize),
    ([m("blank", "local", None, guest_format="swap", volume_size=1)] * 2, 1,
     exc.InvalidBDMFormat),
    ([m("blank", "local", None, volume_size=3), m("blank", "local", None, volume_size=2)], 1,
     None),
    ([m("blank", "local", None, volume_size=6)], 1, exc.InvalidBDMEphemeralSize),
])
def test_bdm_rules(bdms: list[bd.BdmRequest], count: int, error: type | None) -> None:
    if error is None:
        bd.check_bdm_rules(bdms, FLAVOR, count)
    else:
        with pytest.raises(error):
            bd.check_bdm_rules(bdms, FLAVOR, count)


@pytest.mark.parametrize("size, image, ok", [
    (1, {"min_disk": 0, "size": 1 << 20}, True),
    (1, {"min_disk": 2, "size": 0}, False),
    (2, {"min_disk": 0, "size": (1 << 30) + 1}, True),  # 1 GiB and a byte: 2 GiB
    (1, {"min_disk": 0, "size": (1 << 30) + 1}, False),
])
def test_a_volume_holds_its_image(size: int, image: dict[str, Any], ok: bool) -> None:
    bdm = m("image", "volume", 0, volume_size=size)
    if ok:
        bd.check_image_size(bdm, image)
    else:
        with pytest.raises(exc.VolumeSmallerThanMinDisk):
            bd.check_image_size(bdm, image)


def test_device_names_keep_given_ones_and_fill_the_rest_in_order() -> None:
    bdms = [m("volume", "volume", None), m("volume", "volume", 0),
            m("volume", "volume", None, device_name="/dev/vdb"), m("blank", "volume")]
    assert bd.device_names(bdms) == ["/dev/vdc", "/dev/vda", "/dev/vdb", "/dev/vdd"]
    assert bd.next_device_name(["/dev/vda", "/dev/vdb"]) == "/dev/vdc"
    with pytest.raises(exc.TooManyDiskDevices):
        bd.next_device_name([f"/dev/vd{c}" for c in "abcdefghijklmnopqrstuvwxyz"])


def test_rows_of_an_image_server_with_a_volume() -> None:
    rows = bd.bdm_rows([m("volume", "volume")], {"id": IMG}, FLAVOR, "now")
    assert [(r["source_type"], r["destination_type"], r["device_name"], r["boot_index"],
             r["image_id"], r["volume_id"], r["delete_on_termination"]) for r in rows] == [
        ("image", "local", "/dev/vda", 0, IMG, None, True),
        ("volume", "volume", "/dev/vdb", None, None, VOL, False)]
    assert len({r["uuid"] for r in rows}) == 2


def test_rows_of_a_volume_backed_server() -> None:
    rows = bd.bdm_rows([m("image", "volume", 0, volume_size=3, delete_on_termination=True)],
                       None, FLAVOR, "now")
    [row] = rows
    assert (row["device_name"], row["image_id"], row["volume_size"],
            row["delete_on_termination"]) == ("/dev/vda", VOL, 3, True)
    assert bd.is_volume_backed(rows) and not bd.is_volume_backed([m("image", "local", 0)])


@pytest.mark.parametrize("item, version, field", [
    ({"source_type": "disk", "uuid": VOL}, (2, 1), "source_type"),
    ({"source_type": "volume", "destination_type": "tape", "uuid": VOL}, (2, 1),
     "destination_type"),
    ({"source_type": "volume"}, (2, 1), "uuid"),
    ({"source_type": "volume", "uuid": "a b"}, (2, 1), "uuid"),
    ({"source_type": "blank", "uuid": VOL}, (2, 1), "uuid"),
    ({"source_type": "volume", "uuid": VOL, "boot_index": "x"}, (2, 1), "boot_index"),
    ({"source_type": "volume", "uuid": VOL, "volume_size": 0}, (2, 1), "volume_size"),
    ({"source_type": "volume", "uuid": VOL, "device_name": "vd b"}, (2, 1), "device_name"),
    ({"source_type": "volume", "uuid": VOL, "delete_on_termination": "perhaps"}, (2, 1),
     "delete_on_termination"),
    ({"source_type": "volume", "uuid": VOL, "tag": "t"}, (2, 41), "block_device_mapping_v2/0"),
    ({"source_type": "volume", "uuid": VOL, "tag": "a/b"}, (2, 42), "tag"),
    ({"source_type": "volume", "uuid": VOL, "volume_type": "ssd"}, (2, 66),
     "block_device_mapping_v2/0"),
])
def test_bad_v2_items_name_their_field(item: dict[str, Any], version: tuple[int, int],
                                       field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        parse_bdm_v2([item], version)
    assert field in raised.value.format_message()


def test_v2_items_are_converted_as_nova_does() -> None:
    [bdm] = parse_bdm_v2([{"source_type": "volume", "uuid": VOL, "boot_index": "0",
                           "volume_size": "2", "device_name": "vda",
                           "delete_on_termination": "true", "tag": "root",
                           "volume_type": "ssd"}], (2, 67))
    assert bdm == {"source_type": "volume", "destination_type": "volume", "uuid": VOL,
                   "boot_index": 0, "device_name": "/dev/vda", "guest_format": None,
                   "disk_bus": None, "device_type": None, "volume_type": "ssd",
                   "volume_size": 2, "delete_on_termination": True, "tag": "root"}
    [blank] = parse_bdm_v2([{"source_type": "blank", "volume_size": 1}], (2, 1))
    assert blank["destination_type"] == "local"


@pytest.mark.parametrize("items, image, expected", [
    ([{"volume_id": VOL, "device_name": "vda"}], None, [("volume", 0, "/dev/vda")]),
    ([{"volume_id": VOL, "device_name": "/dev/vdb"}], IMG, [("volume", None, "/dev/vdb")]),
    ([{"snapshot_id": VOL, "device_name": "vda", "volume_size": 3}], None,
     [("snapshot", 0, "/dev/vda")]),
    ([{"device_name": "vdc", "no_device": True}], IMG, []),
])
def test_legacy_mappings(items: list[dict[str, Any]], image: str | None,
                         expected: list[tuple[str, int | None, str]]) -> None:
    out = parse_legacy(items, image)
    assert [(b["source_type"], b["boot_index"], b["device_name"]) for b in out] == expected
    assert all(b["destination_type"] == "volume" for b in out)


@pytest.mark.parametrize("items", [{"volume_id": VOL}, [{"device_name": "vda"}],
                                   [{"volume_id": VOL, "source_type": "volume"}]])
def test_bad_legacy_mappings(items: Any) -> None:
    with pytest.raises(ValidationError):
        parse_legacy(items, None)
