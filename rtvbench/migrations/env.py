"""Alembic environment of the rtvbench store.

rtvbench applies migrations itself (rtvbench.store.db.open_store) and hands its own
connection in `config.attributes["connection"]`; the `alembic` command line works
too, with `sqlalchemy.url` set in an alembic.ini or via `-x url=...`.
"""

from alembic import context
from sqlalchemy import create_engine

from rtvbench.store.schema import metadata

config = context.config


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    with create_engine(url).connect() as conn:
        _run(conn)
