"""Databases as an earlier release of the plugin left them, to test upgrades from.

Before revision 0005, revisions 0001-0004 created ``sessions``, ``branches`` and ``index_state``;
this release's 0001-0004 create the namespaced names from the start. A database at an old
revision under the old names is made the way a user going back to an earlier release makes
it: this release's revisions up to head, then down to the old revision (0005's downgrade
renames back to the old names when no other table holds them)."""

from __future__ import annotations

from sqlalchemy import Engine, inspect

from openclaw_fts import migrate


def earlier_release_database(engine: Engine, revision: str) -> None:
    """Take an empty database to ``revision`` under the table names earlier releases used."""
    migrate.upgrade(engine)
    migrate.downgrade(engine, revision)
    names = set(inspect(engine).get_table_names())
    assert "sessions" in names and "openclaw_sessions" not in names, names
