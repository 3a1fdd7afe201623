"""The build's outcome table (seed 004) and what the build is asked, as rules."""
from __future__ import annotations

import base64

import pytest

from cirrus.compute import exception as exc
from cirrus.compute.build_failure import aborted, rescheduled
from cirrus.compute.build_request import BuildRequest
from cirrus.compute.outcomes import (ACTION_OUTCOMES, BUILD_OUTCOMES, NO_MORE_NETWORK, Outcome,
                                     outcome_of, rule_of)
from cirrus.network import exception as nexc
from cirrus.virt import exception as vexc

U = "u-1"
NETWORK_ABORT = "Build of instance u-1 aborted: Failed to allocate the network(s) with error {}, " \
                "not rescheduling."

# error → (outcome while the guest is built, the abort's fault message or None)
CASES = [
    (exc.InstanceNotFound(instance_id=U), Outcome.DELETED, None),
    (exc.UnexpectedDeletingTaskStateError(instance_uuid=U, expected="a", actual="deleting"),
     Outcome.DELETED, None),
    (exc.RescheduledException(instance_uuid=U, reason="r"), Outcome.RESCHEDULE, None),
    (exc.ComputeResourcesUnavailable(reason="no claim"), Outcome.RESCHEDULE, None),
    (exc.BuildAbortException(instance_uuid=U, reason="given up"), Outcome.ABORT,
     "Build of instance u-1 aborted: given up"),
    (nexc.IpAddressGenerationFailure(net_id="n"), Outcome.ABORT,
     NETWORK_ABORT.format("No more IP addresses available on network n.")),
    (nexc.NoMoreFixedIps(net="n"), Outcome.ABORT,
     NETWORK_ABORT.format("No fixed IP addresses available for network: n")),
    (nexc.FixedIpLimitExceeded(), Outcome.ABORT,
     NETWORK_ABORT.format("Maximum number of fixed IPs exceeded")),
    (nexc.NoMoreNetworks(), Outcome.ABORT, NETWORK_ABORT.format("No more available networks.")),
    (nexc.PortLimitExceeded(), Outcome.ABORT,
     NETWORK_ABORT.format("Maximum number of ports exceeded")),
    (exc.VirtualInterfaceCreateException(), Outcome.ABORT,
     "Build of instance u-1 aborted: Failed to allocate the network(s), not rescheduling."),
    (exc.FlavorDiskTooSmall(), Outcome.ABORT,
     "Build of instance u-1 aborted: Flavor's disk is too small for requested image."),
    (exc.FlavorMemoryTooSmall(), Outcome.ABORT,
     "Build of instance u-1 aborted: Flavor's memory is too small for requested image."),
    (exc.ImageNotActive(image_id="i"), Outcome.ABORT,
     "Build of instance u-1 aborted: Image i is not active."),
    (exc.ImageUnacceptable(image_id="i", reason="bad"), Outcome.ABORT,
     "Build of instance u-1 aborted: Image i is unacceptable: bad"),
    (exc.ImageNotFound(), Outcome.ABORT,
     "Build of instance u-1 aborted: Can not find requested image"),
    # A corrupt download is corrupt on every host; a failed one may work elsewhere.
    (exc.ImageChecksumMismatch(image_href="i", algorithm="sha512", actual="a", expected="b"),
     Outcome.ABORT, "Build of instance u-1 aborted: Image i is corrupt: the sha512 of the "
                    "downloaded data does not match the image service's (got a, expected b)"),
    (exc.ImageDownloadFailed(image_href="i", reason="503"), Outcome.RESCHEDULE, None),
    # Not in the table: the phase's default (reschedule while building).
    (vexc.InstanceSpawnError(instance_uuid=U, reason="boom"), Outcome.RESCHEDULE, None),
    (nexc.NetworkNotFound(net_id="n"), Outcome.RESCHEDULE, None),
    (RuntimeError("odd"), Outcome.RESCHEDULE, None),
]


@pytest.mark.parametrize("error, outcome, message", CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_build_outcome_of_each_error(error: Exception, outcome: Outcome,
                                     message: str | None) -> None:
    assert outcome_of(error, BUILD_OUTCOMES, Outcome.RESCHEDULE) is outcome
    if message is not None:
        recorded = aborted(U, error, rule_of(error, BUILD_OUTCOMES))
        assert isinstance(recorded, exc.BuildAbortException)
        assert recorded.format_message() == message


@pytest.mark.parametrize("error", [RuntimeError("odd"), vexc.InstanceSpawnError(
    instance_uuid=U, reason="x")])
def test_an_unnamed_error_takes_the_default_and_is_recorded_as_it_is(error: Exception) -> None:
    assert outcome_of(error, BUILD_OUTCOMES, Outcome.ABORT) is Outcome.ABORT
    assert aborted(U, error, rule_of(error, BUILD_OUTCOMES)) is error


def test_no_more_network_is_seed_004s_five_classes() -> None:
    assert [c.__name__ for c in NO_MORE_NETWORK] == [
        "IpAddressGenerationFailure", "NoMoreFixedIps", "FixedIpLimitExceeded",
        "NoMoreNetworks", "PortLimitExceeded"]
    assert all(getattr(nexc, c.__name__) is c for c in NO_MORE_NETWORK)


def test_deleted_comes_before_its_base_class() -> None:
    """UnexpectedDeletingTaskStateError is an UnexpectedTaskStateError: deleted."""
    error = exc.UnexpectedDeletingTaskStateError(instance_uuid=U, expected="a", actual="b")
    assert outcome_of(error, ACTION_OUTCOMES, Outcome.FAULT) is Outcome.DELETED


@pytest.mark.parametrize("error, reason", [
    (exc.ComputeResourcesUnavailable(reason="no claim"),
     "Insufficient compute resources: no claim."),
    (RuntimeError("odd"), "odd"),
])
def test_a_reschedule_records_a_rescheduled_exception(error: Exception, reason: str) -> None:
    out = rescheduled(U, error)
    assert out.format_message() == f"Build of instance u-1 was re-scheduled: {reason}"
    assert out.__cause__ is error
    given = exc.RescheduledException(instance_uuid=U, reason="r")
    assert rescheduled(U, given) is given


def test_the_build_request_is_decoded_once_and_a_reschedule_leaves_it_as_it_came() -> None:
    request = BuildRequest.from_cast(
        U, "node1", {"instance_group": None},
        {"scheduler_hints": {}, "retry": {"num_attempts": 1, "hosts": []}},
        {"admin_password": "pw", "injected_files": [["/etc/x", base64.b64encode(b"hi").decode()]],
         "requested_networks": [{"network_id": "n"}], "security_groups": []})
    assert request.injected_files == [("/etc/x", b"hi")]
    assert request.admin_password == "pw" and request.security_groups is None
    assert not request.in_group
    retried = request.retried_from("compute1", "node1", "why")
    assert retried == {"scheduler_hints": {}, "retry": {"num_attempts": 2, "hosts": [
        ["compute1", "node1"]], "exc_reason": "why"}}
    assert request.filter_properties["retry"] == {"num_attempts": 1, "hosts": []}
    without = BuildRequest.from_cast(U, None, {}, {}, {})
    assert without.retried_from("compute1", "n", "why") is None
    assert without.injected_files == [] and without.requested_networks is None
