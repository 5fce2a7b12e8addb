"""Alembic environment of the plugin's own migrations (stand-alone use).

Invariant: runs on the connection handed in ``config.attributes["connection"]`` when there is
one (``openclaw_fts.migrate``), else on an engine made from ``sqlalchemy.url`` with the plugin's
connection settings; records versions in the plugin's own version table so it never collides
with a host's ``alembic_version``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from openclaw_fts.alembic import VERSION_TABLE, include_name
from openclaw_fts.engine import make_engine
from openclaw_fts.models import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_name=include_name,
        version_table=VERSION_TABLE,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
    else:
        url = config.get_main_option("sqlalchemy.url")
        assert url, "sqlalchemy.url is not set"
        engine = make_engine(url)
        with engine.connect() as conn:
            _run(conn)
        engine.dispose()
