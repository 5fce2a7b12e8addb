"""The host application's Alembic environment, with the plugin's migrations beside its own.

Invariant: autogenerate compares the database with the host's metadata AND the plugin's, and
ignores exactly what Alembic cannot model (the FTS5 tables), so after ``alembic upgrade heads``
``alembic check`` reports nothing; and every new revision (``alembic revision``, with or without
``--autogenerate``) goes on the host's branch ``host_app``, in ``migrations/versions``, never into
the installed plugin (``openclaw_fts.alembic.configure_options``, docs/alembic.md).
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from host_app.models import metadata as host_metadata
from sqlalchemy import engine_from_config, pool

from openclaw_fts.alembic import configure_options

config = context.config
if config.config_file_name is not None:
    fileConfig(config.config_file_name)
# target_metadata (the host's and the plugin's), include_name, process_revision_directives
options = configure_options(host_metadata, branch_label="host_app")
#: Another database than alembic.ini's, e.g. PostgreSQL (the suite runs the first day there).
URL_ENV = "HOST_APP_DATABASE_URL"
if os.environ.get(URL_ENV):
    config.set_main_option("sqlalchemy.url", os.environ[URL_ENV].replace("%", "%%"))


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        literal_binds=True,
        **options,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = engine_from_config(
        config.get_section(config.config_ini_section, {}),
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            render_as_batch=True,  # SQLite: ALTER TABLE through copy-and-move
            **options,
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
