"""Compute API: server_groups."""
from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
