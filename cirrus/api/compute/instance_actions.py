"""Compute API: instance_actions."""
from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
