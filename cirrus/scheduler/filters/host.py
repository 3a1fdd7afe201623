"""Filters about the host itself: service state, zone, image needs, retries."""
from __future__ import annotations

from typing import Any

from cirrus.scheduler.filters.base import PASS, BaseHostFilter, FilterResult
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec


class ComputeFilter(BaseHostFilter):
    """The compute service is enabled and up."""

    name = "ComputeFilter"
    run_for_forced = True
    static = True

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if not host.enabled:
            return FilterResult.reject("compute service is disabled")
        if not host.up:
            return FilterResult.reject("compute service is down")
        return PASS


class RequestedDestinationFilter(BaseHostFilter):
    """The host (and node) an admin named at microversion 2.74 (Nova's
    ``requested_destination``). Unlike a forced host (``zone:host``), every
    other filter still runs on it."""

    name = "RequestedDestinationFilter"

    def applies(self, spec: Spec) -> bool:
        return bool(spec.requested_host or spec.requested_node)

    def candidates(self, spec: Spec) -> set[str] | None:
        return {spec.requested_host} if spec.requested_host else None

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if spec.requested_host and host.host != spec.requested_host:
            return FilterResult.reject(f"not the requested host {spec.requested_host}")
        if spec.requested_node and host.nodename != spec.requested_node:
            return FilterResult.reject(f"not the requested node {spec.requested_node}")
        return PASS


class AvailabilityZoneFilter(BaseHostFilter):
    name = "AvailabilityZoneFilter"

    def applies(self, spec: Spec) -> bool:
        return bool(spec.availability_zone)

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if spec.availability_zone and host.availability_zone != spec.availability_zone:
            return FilterResult.reject(f"in zone {host.availability_zone}, "
                                       f"not {spec.availability_zone}")
        return PASS


def _prop(props: dict[str, Any], *names: str) -> str | None:
    for name in names:
        if props.get(name):
            return str(props[name]).lower()
    return None


class ImagePropertiesFilter(BaseHostFilter):
    """The image's architecture and hypervisor type, if it names them."""

    name = "ImagePropertiesFilter"

    def applies(self, spec: Spec) -> bool:
        return bool(_prop(spec.image_props, "hw_architecture", "architecture", "img_hv_type",
                          "hypervisor_type"))

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        arch = _prop(spec.image_props, "hw_architecture", "architecture")
        if arch and arch != host.cpu_arch.lower():
            return FilterResult.reject(f"image needs {arch}, host is {host.cpu_arch}")
        hv = _prop(spec.image_props, "img_hv_type", "hypervisor_type")
        if hv and hv != host.hypervisor_type.lower():
            return FilterResult.reject(f"image needs hypervisor {hv}, host has {host.hypervisor_type}")
        return PASS


class RetryFilter(BaseHostFilter):
    """Hosts this instance already failed to build on."""

    name = "RetryFilter"
    run_for_forced = True

    def applies(self, spec: Spec) -> bool:
        return bool(spec.retry_hosts)

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if (host.host, host.nodename) in spec.retry_hosts:
            return FilterResult.reject("already tried for this instance")
        return PASS
