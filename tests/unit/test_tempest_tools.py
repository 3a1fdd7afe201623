"""scripts/tempest's Python: the tempest.conf template and the run's judgement."""
from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from tests.tempest import prepare
from tests.tempest.summary import Outcome, Tally, report, why

VALUES = {"log_dir": "/tmp/logs", "identity_url": "http://127.0.0.1:1/identity",
          "region": "RegionOne", "admin_username": "admin", "admin_password": "pw",
          "admin_project": "admin", "image_ref": "i1", "image_ref_alt": "i2",
          "flavor_ref": "42", "flavor_ref_alt": "84", "network_name": "tempest-net",
          "computes": "2", "min_microversion": "2.1", "max_microversion": "2.90",
          "build_timeout": "60", "scheduler_filters": "RamFilter,ComputeFilter",
          "network_extensions": "security-group,quotas", "volume_max_microversion": "3.66",
          "public_network_id": "n-public", "public_network_name": "public",
          "volume_type_multiattach": "multiattach"}
# Issue #19's list: each must be a switch in the template.
ISSUE_FEATURES = ("resize", "cold_migration", "live_migration", "pause", "suspend", "shelve",
                  "rescue", "snapshot", "change_password", "interface_attach",
                  "console_output", "serial_console")


def rendered(features: dict[str, bool] | None = None) -> configparser.ConfigParser:
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(prepare.render(VALUES, features or prepare.FEATURES))
    return conf


def test_template_fills_every_value() -> None:
    conf = rendered()
    assert conf["compute"]["max_microversion"] == "2.90"
    assert conf["compute"]["min_microversion"] == "2.1"
    assert conf["identity"]["uri_v3"] == "http://127.0.0.1:1/identity/v3"
    assert conf["compute"]["fixed_network_name"] == "tempest-net"
    assert conf["service_available"]["cinder"] == "true"
    assert conf["volume"]["catalog_type"] == "block-storage"
    assert conf["volume"]["max_microversion"] == "3.66"
    for section in conf.sections():
        for key, value in conf[section].items():
            assert "${" not in value, (section, key)


def test_a_missing_value_is_an_error() -> None:
    with pytest.raises(KeyError):
        prepare.render({k: v for k, v in VALUES.items() if k != "image_ref"},
                       prepare.FEATURES)


@pytest.mark.parametrize("feature", ISSUE_FEATURES)
def test_each_issue_feature_is_a_switch(feature: str) -> None:
    assert feature in prepare.COMPUTE_FEATURES
    for value in (True, False):
        conf = rendered({**prepare.FEATURES, feature: value})
        assert conf["compute-feature-enabled"][feature] == ("true" if value else "false")


def test_network_features_are_switches() -> None:
    section = rendered()["network-feature-enabled"]
    for feature, value in prepare.NETWORK_FEATURES.items():
        assert section[feature] == ("true" if value else "false")
    assert section["ipv6"] == section["ipv6_subnet_attributes"] == "true"


class Text:
    """A subunit detail: content that yields bytes (memoryviews, as subunit does)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode()

    def iter_bytes(self) -> list[memoryview]:
        return [memoryview(self.data)]


TRACEBACK = """Traceback (most recent call last):
  File "x.py", line 1, in f
    raise exceptions.BadRequest(resp_body, resp=resp)
tempest.lib.exceptions.BadRequest: Bad request
Details: {'code': 400, 'message': 'no'}

"""


@pytest.mark.parametrize("status, details, expected", [
    ("skip", {"reason": Text("Resize not available.\n")}, "Resize not available."),
    ("fail", {"traceback": Text(TRACEBACK)}, "Details: {'code': 400, 'message': 'no'}"),
    ("fail", {"traceback": Text("Traceback\n  x\nAssertionError: 3 not greater than 3\n")},
     "AssertionError: 3 not greater than 3"),
    ("fail", {"traceback": Text("something odd\n  last words\n")}, "last words"),
    ("fail", {}, ""),
])
def test_why(status: str, details: dict, expected: str) -> None:
    assert why(status, details) == expected


def test_tally_and_report(tmp_path: Path) -> None:
    tally = Tally()
    for status in ("success", "success", "xfail", "fail", "uxsuccess", "skip", "exists"):
        tally.add(Outcome(f"t.{status}", status, f"because {status}"))
    assert (len(tally.passed), len(tally.failed), len(tally.skipped), tally.ran) == (3, 2, 1, 5)
    assert tally.pass_percent == pytest.approx(60.0)
    line = report(tally, tmp_path)
    assert line == "tempest: 3 of 5 tests that ran passed (60.0%); 2 failed, 1 skipped"
    assert (tmp_path / "failures.txt").read_text() == \
        "t.fail\n    because fail\nt.uxsuccess\n    because uxsuccess\n"
    assert (tmp_path / "skips.txt").read_text() == "t.skip\n    because skip\n"
    assert "because skip" in (tmp_path / "summary.txt").read_text()
    assert Tally().pass_percent == 0.0
