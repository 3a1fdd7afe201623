"""Compute API: servers."""
from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
