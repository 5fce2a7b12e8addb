"""Engine set-up: the per-connection SQLite settings the plugin's guarantees rely on.

Invariant: every SQLite connection of a configured engine has ``foreign_keys=ON`` (deletes
cascade to the index), WAL with ``synchronous=NORMAL`` and a busy timeout, and starts every
transaction with ``BEGIN IMMEDIATE`` (a deferred transaction that reads then writes cannot be
upgraded once another connection committed: SQLite fails it at once, busy timeout or not) —
except connections marked read-only with :data:`READ_ONLY`, which use a deferred ``BEGIN`` so
readers never queue behind writers. An engine or URL of a dialect the plugin does not support
is refused here, before any statement runs on it (:mod:`openclaw_fts.dialects`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool

from .dialects import require_schema_dialect

#: How long a writer waits for the lock before ``database is locked`` (ms).
BUSY_TIMEOUT_MS = 30_000
#: WAL file size kept after checkpoints (bytes).
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
#: Execution option marking a connection whose transactions only read.
READ_ONLY = "openclaw_fts_read_only"
_CONFIGURED = "_openclaw_fts_configured"


def is_memory_url(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def make_engine(url: str | URL, **kwargs: Any) -> Engine:
    """An engine for ``url`` with the plugin's settings (``:memory:``: one shared connection)."""
    parsed = make_url(url)
    require_schema_dialect(parsed.get_backend_name())  # before a missing driver's ImportError
    if is_memory_url(parsed):
        kwargs.setdefault("poolclass", StaticPool)
        kwargs.setdefault("connect_args", {"check_same_thread": False})
    elif parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {"check_same_thread": False})
    engine = create_engine(parsed, **kwargs)
    configure(engine)
    return engine


def configure(engine: Engine) -> Engine:
    """Attach the plugin's connection settings to an engine (idempotent; SQLite only)."""
    require_schema_dialect(engine.dialect.name)
    if engine.dialect.name != "sqlite" or getattr(engine, _CONFIGURED, False):
        return engine
    setattr(engine, _CONFIGURED, True)
    memory = is_memory_url(engine.url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if not memory:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        read_only = conn.get_execution_options().get(READ_ONLY, False)
        # Straight to the driver: SQLAlchemy's statement handling would add ~15 us to every
        # transaction (measured: 7 % of a single-event append).
        conn.connection.driver_connection.execute("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine
