"""Alembic environment: the URL and metadata come from cirrus, not alembic.ini."""
from __future__ import annotations

from alembic import context

from cirrus.db.base import load_all_models

target_metadata = load_all_models()
config = context.config


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    from cirrus.db.engine import make_engine

    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("alembic.ini names no sqlalchemy.url and no connection was given")
    engine = make_engine(url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
