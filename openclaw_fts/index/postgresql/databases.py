"""Whole databases on a PostgreSQL server: created and dropped for the testing kit's per-test
databases (:mod:`openclaw_fts.pytest_plugin`), as :class:`ServerDatabases`, the
:class:`~..base.Databases` of ``PostgresqlBackend``.

Invariant: a database name is always a quoted identifier made by the caller from digits,
letters and ``_`` only (anything else is refused before any statement); a drop ends the
connections still open on it where the server can (``WITH (FORCE)``, PostgreSQL 13 and later).
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, text

#: The first PostgreSQL version whose DROP DATABASE takes ``WITH (FORCE)``.
FORCE_DROP_VERSION = 13
#: What a database name made here may hold.
DATABASE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _checked(name: str) -> str:
    if not DATABASE_NAME_RE.match(name):
        raise ValueError(f"not a database name made by openclaw-fts: {name!r}")
    return name


def create_database(server: Engine, name: str) -> None:
    """``CREATE DATABASE name`` through ``server`` (an engine in autocommit mode)."""
    with server.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{_checked(name)}"'))


def drop_database(server: Engine, name: str) -> None:
    """``DROP DATABASE IF EXISTS name`` through ``server`` (autocommit), its connections ended
    first where the server supports it."""
    with server.connect() as conn:
        version = int((conn.dialect.server_version_info or (0,))[0])
        force = " WITH (FORCE)" if version >= FORCE_DROP_VERSION else ""
        conn.execute(text(f'DROP DATABASE IF EXISTS "{_checked(name)}"{force}'))


class ServerDatabases:
    """:class:`~..base.Databases` of a PostgreSQL server: :func:`create_database` and
    :func:`drop_database`."""

    def create(self, server: Engine, name: str) -> None:
        create_database(server, name)

    def drop(self, server: Engine, name: str) -> None:
        drop_database(server, name)
