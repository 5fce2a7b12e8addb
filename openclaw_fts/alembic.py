"""Helpers for hosts that run the plugin's migrations inside their own Alembic environment.

Invariant: :func:`include_name` hides exactly the objects Alembic cannot model (what each
engine's backend names as its own: the FTS5 virtual table and its shadow tables on SQLite; the
generated tsvector column and its GIN index on PostgreSQL) and the plugin's stand-alone version
table, so autogenerate against a migrated database reports no changes on either.

In a host's ``env.py``::

    from openclaw_fts import metadata as openclaw_fts_metadata
    from openclaw_fts.alembic import include_name

    context.configure(
        connection=connection,
        target_metadata=[my_app_metadata, openclaw_fts_metadata],
        include_name=include_name,
    )

and in its ``pyproject.toml`` (the package form holds a ":", so not in an ``alembic.ini`` with
``path_separator = os``; see docs/alembic.md)::

    [tool.alembic]
    version_locations = ["%(here)s/migrations/versions", "openclaw_fts:migrations/versions"]

then ``alembic upgrade heads``.
"""

from __future__ import annotations

from typing import Any

from .index.base import backends

#: Version table of the plugin's stand-alone migrations (``openclaw-fts upgrade``).
VERSION_TABLE = "openclaw_fts_version"


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic ``include_name`` hook: skip FTS5 tables, the PostgreSQL tsvector column and GIN
    index, and the plugin's version table."""
    if name is None:
        return True
    if type_ == "table" and name == VERSION_TABLE:
        return False
    table = parent_names.get("table_name") if isinstance(parent_names, dict) else None
    # The hook does not know the database's engine: what any engine's backend owns is skipped.
    return not any(found.unmodelled(type_, name, table) for found in backends())
