"""The one SQLAlchemy ``MetaData`` every package's tables hang off.

Each stage declares its own tables in its own ``models`` module (Core ``Table``
objects: the hot path uses Core statements, not the ORM). :func:`load_all_models`
imports them so that migrations and ``create_all`` see the whole schema.
"""
from __future__ import annotations

import datetime as _dt
import importlib
import sys
import uuid
from typing import Any, Callable

import sqlalchemy as sa

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING)

# Packages that declare tables; listed explicitly (no directory walking).
MODEL_MODULES = (
    "cirrus.service_models",
    "cirrus.identity.models",
    "cirrus.image.models",
    "cirrus.compute.models",
    "cirrus.network.models",
    "cirrus.console.models",
    "cirrus.volume.models",
)


def load_all_models() -> sa.MetaData:
    """Import every models module and return the shared metadata."""
    for name in MODEL_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return metadata


def _aware_utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


# Naive UTC now: what every timestamp column stores. ``datetime.utcnow`` gives
# it in C, ~15× cheaper than dropping the zone of an aware now (``replace``
# alone costs ~2 µs on 3.11, and a boot takes dozens of timestamps); it is
# deprecated from 3.12 on, where the aware form is used.
utcnow: Callable[[], _dt.datetime] = (
    _dt.datetime.utcnow if sys.version_info < (3, 12) else _aware_utcnow)


def new_uuid() -> str:
    return str(uuid.uuid4())


def uuid_col(name: str = "id", **kw: Any) -> sa.Column[str]:
    return sa.Column(name, sa.String(36), primary_key=True, **kw)


def timestamps() -> list[sa.Column[_dt.datetime]]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=False, default=utcnow),
        sa.Column("updated_at", sa.DateTime, nullable=True, onupdate=utcnow),
    ]


def isotime(value: _dt.datetime | None) -> str | None:
    """OpenStack's ``2026-01-01T00:00:00Z`` form, or None."""
    if value is None:
        return None
    # timespec="seconds" drops the microseconds as replace(microsecond=0) did,
    # at half the cost (four per server in a listing of thousands).
    return value.isoformat(timespec="seconds") + "Z"


def nova_time(value: _dt.datetime | None) -> str | None:
    """The form Nova's JSON gives a naive timestamp where its API returns a
    datetime as stored (aggregates, usage): ``2026-01-01T00:00:00.000000``."""
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f")
