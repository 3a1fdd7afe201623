"""Network service v2.0 HTTP API (see the network issue)."""
from __future__ import annotations

from starlette.routing import BaseRoute

ROUTES: list[BaseRoute] = []
