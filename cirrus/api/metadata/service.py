"""The metadata API's collaborators in ``app.state.metadata``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cirrus.api.metadata.instance import MetadataCache
from cirrus.db.engine import Database
from cirrus.metadata.signature import shared_secret


@dataclass
class MetadataService:
    """The shared secret requests are signed with and the instances' cache."""

    secret: str
    cache: MetadataCache
    db: Database


def make_metadata_service(settings: Any, db: Database, transport: Any) -> MetadataService:
    """The composition root's factory (``bootstrap._state_factories``)."""
    return MetadataService(shared_secret(settings),
                           MetadataCache(db, float(settings.metadata_cache_expiration)), db)
