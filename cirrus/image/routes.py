"""Image service v2 HTTP API (see the image issue)."""
from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
