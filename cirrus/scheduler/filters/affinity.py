"""Server groups and the same_host / different_host hints."""
from __future__ import annotations

from cirrus.scheduler.filters.base import PASS, BaseHostFilter, FilterResult
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec


class ServerGroupAffinityFilter(BaseHostFilter):
    name = "ServerGroupAffinityFilter"

    def applies(self, spec: Spec) -> bool:
        return spec.group_policy == "affinity"

    def candidates(self, spec: Spec) -> set[str] | None:
        # Before the first member lands any host will do.
        return set(spec.group_hosts) if spec.group_hosts else None

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if spec.group_policy == "affinity" and spec.group_hosts and host.host not in spec.group_hosts:
            return FilterResult.reject("group members are on another host (affinity)")
        return PASS


class ServerGroupAntiAffinityFilter(BaseHostFilter):
    name = "ServerGroupAntiAffinityFilter"

    def applies(self, spec: Spec) -> bool:
        return spec.group_policy == "anti-affinity"

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if spec.group_policy != "anti-affinity":
            return PASS
        limit = spec.max_server_per_host or 1
        if spec.group_host_counts.get(host.host, 0) >= limit:
            return FilterResult.reject("a group member is already here (anti-affinity)")
        return PASS


class SameHostFilter(BaseHostFilter):
    name = "SameHostFilter"

    def applies(self, spec: Spec) -> bool:
        return spec.same_host is not None

    def candidates(self, spec: Spec) -> set[str] | None:
        return set(spec.same_host) if spec.same_host is not None else None

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if spec.same_host is not None and host.host not in spec.same_host:
            return FilterResult.reject("not the host of the same_host instances")
        return PASS


class DifferentHostFilter(BaseHostFilter):
    name = "DifferentHostFilter"

    def applies(self, spec: Spec) -> bool:
        return bool(spec.different_host)

    def host_passes(self, host: HostState, spec: Spec) -> FilterResult:
        if host.host in spec.different_host:
            return FilterResult.reject("hosts a different_host instance")
        return PASS
