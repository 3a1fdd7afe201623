"""Compute v2.1 HTTP API: one route table built from each resource's module."""
from __future__ import annotations

from starlette.routing import BaseRoute

from cirrus.api.compute import (availability_zones, external_events, flavors, hypervisors, images,
                                instance_actions, interfaces, keypairs, quota_sets, server_actions,
                                server_groups, server_metadata, servers, services, versions)

# Starlette tries routes in order, ~1.5 µs each: the servers' come first, as
# the most requested (no other pattern matches their paths, so order is free).
ROUTES: list[BaseRoute] = [
    *servers.ROUTES,
    *versions.ROUTES,
    *flavors.ROUTES,
    *keypairs.ROUTES,
    *availability_zones.ROUTES,
    *server_groups.ROUTES,
    *server_actions.ROUTES,
    *server_metadata.ROUTES,
    *services.ROUTES,
    *hypervisors.ROUTES,
    *quota_sets.ROUTES,
    *instance_actions.ROUTES,
    *interfaces.ROUTES,
    *external_events.ROUTES,
    *images.ROUTES,
]
