"""Running the plugin's Alembic migrations from code (the store, the CLI, tests).

Invariant: finds the migration scripts both in a source checkout (top-level ``migrations/``)
and in an installed wheel (``openclaw_fts/migrations``), and runs them on the caller's engine or
connection, inside one transaction per call.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine

from .alembic import VERSION_TABLE

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported inside the functions: it costs a few hundred ms at start-up, and most
# command-line runs (search, history) never migrate.

#: The Alembic branch label of the plugin's revisions.
BRANCH_LABEL = "openclaw_fts"
HEAD = f"{BRANCH_LABEL}@head"


def script_location() -> Path:
    """The folder holding ``env.py`` and ``versions/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("openclaw_fts migrations not found (broken installation?)")


def version_location() -> Path:
    """The ``versions`` folder, for a host's ``version_locations``."""
    return script_location() / "versions"


def _config(conn: Connection) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["connection"] = conn
    return cfg


def _run(bind: Engine | Connection, action: str, revision: str) -> None:
    if isinstance(bind, Engine):
        with bind.begin() as conn:
            _run(conn, action, revision)
        return
    from alembic import command

    cfg = _config(bind)
    if action == "upgrade":
        command.upgrade(cfg, revision)
    else:
        command.downgrade(cfg, revision)


def upgrade(bind: Engine | Connection, revision: str = HEAD) -> None:
    """Migrate the database up to ``revision`` (default: the plugin's head)."""
    _run(bind, "upgrade", revision)


def downgrade(bind: Engine | Connection, revision: str) -> None:
    """Migrate down to ``revision`` (``"base"`` removes every plugin table)."""
    _run(bind, "downgrade", revision)


def current_revisions(bind: Engine | Connection) -> tuple[str, ...]:
    """The plugin revisions the database is at (empty: not migrated)."""
    if isinstance(bind, Engine):
        with bind.connect() as conn:
            return current_revisions(conn)
    from alembic.runtime.migration import MigrationContext

    ctx = MigrationContext.configure(bind, opts={"version_table": VERSION_TABLE})
    return tuple(ctx.get_current_heads())
