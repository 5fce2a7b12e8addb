"""SQLite engines, connection settings and transaction starts: the URL an engine is opened
with, the PRAGMAs and BEGIN modes the plugin's guarantees rely on (``engine.configure`` decides
when they run; this module says what runs), as :class:`SqliteConnections`, the
:class:`~..base.Connections` of ``SqliteBackend``.

Invariant: a connection given :func:`apply_settings` has ``foreign_keys=ON`` (cascades keep
the index exact), the busy timeout, the index's TEMP vocabulary table (``fts.CREATE_VOCAB``,
made outside any transaction), and — file databases that can be written, unless the host
opted out — WAL with ``synchronous=NORMAL`` (``FULL`` when the store asked for
``durability="full"``: :data:`SYNCHRONOUS`); :func:`begin` starts a deferred transaction unless
asked for ``BEGIN IMMEDIATE``; :func:`take_write_lock` takes the write lock without writing; a
file that cannot be written is opened read-only, an in-memory database lives on one shared
connection.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool

from ..base import READ_ONLY, WRITE
from ..connections import DefaultConnections
from .fts import CREATE_VOCAB, cursor

#: WAL file size kept after checkpoints (bytes).
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
#: A statement that writes nothing but takes SQLite's write lock (waiting up to the busy
#: timeout): the session hooks run it before a flush's first read of plugin tables.
TAKE_WRITE_LOCK = "UPDATE openclaw_sessions SET last_seq = last_seq WHERE 0"
#: ``PRAGMA synchronous`` of each durability (``index.base.DURABILITIES``). In WAL mode,
#: NORMAL syncs the WAL only at checkpoints: a power cut may undo the last commits, never
#: leave the database inconsistent; FULL syncs the WAL at every commit, so a commit that
#: returned survives a power cut (SQLite's documentation of ``PRAGMA synchronous``).
SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}
#: Where a pooled connection records that it has the plugin's settings.
_RECORD_KEY = "openclaw_fts_settings"


def apply_settings(
    dbapi_connection: Any,
    *,
    memory: bool,
    busy_timeout_ms: int,
    wal: bool = True,
    synchronous: str = SYNCHRONOUS["normal"],
) -> None:
    """Apply the plugin's settings to one DBAPI connection outside a transaction."""
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (SQLAlchemy's recipe)
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        if wal and not memory:
            cursor.execute("PRAGMA journal_mode")  # no chaining: async adapters return no cursor
            mode = cursor.fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                with contextlib.suppress(sqlite3.OperationalError):  # read-only: keeps its mode
                    cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
            cursor.execute(f"PRAGMA synchronous={synchronous}")
        # The index's vocabulary (TEMP), made here, outside any transaction: made by a search,
        # its ROLLBACK would drop it again, and the TEMP schema change would have every
        # statement of the connection prepared again (fts.CREATE_VOCAB says what it cost).
        with contextlib.suppress(sqlite3.OperationalError):
            cursor.execute(CREATE_VOCAB)
    finally:
        cursor.close()


def apply_now(dbapi_connection: Any, *, busy_timeout_ms: int) -> None:
    """The settings that can still change inside a transaction that has run no statement yet
    (a host session's first transaction, met before the engine was configured)."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    finally:
        cursor.close()


def begin(dbapi_connection: Any, *, immediate: bool) -> None:
    """Start the transaction straight on the driver: SQLAlchemy's statement handling would add
    ~15 us to every transaction (measured: 7 % of a single-event append). ``dbapi_connection``
    is sqlite3's own, or SQLAlchemy's adapter of aiosqlite's."""
    dbapi_connection.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")


def take_write_lock(cursor: Any) -> None:
    """Take the write lock now, on a DBAPI cursor of the transaction (before a flush's first
    read: a deferred transaction that reads, then writes after another connection committed,
    fails at once; taking the lock first waits the busy timeout). Straight on the driver, as
    the append's own statements are: SQLAlchemy's statement handling would cost more than the
    statement."""
    cursor.execute(TAKE_WRITE_LOCK)


def read_only_url(path: Path) -> URL:
    """A URL opening ``path`` read-only. ``immutable`` when nothing can write beside it (its
    folder is read-only and it has no WAL file): SQLite could not create the WAL index a
    read-only WAL database otherwise needs."""
    folder_writable = os.access(path.parent, os.W_OK)
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if folder_writable or wal.exists() else "immutable=1"
    return make_url(f"sqlite:///file:{quote(str(path.resolve()))}?{mode}&uri=true")


class SqliteConnections(DefaultConnections):
    """:class:`~..base.Connections` of ``sqlite`` databases: a file, or memory."""

    sync_drivers: Mapping[str, str] = {"aiosqlite": "pysqlite"}

    def in_memory(self, url: URL) -> bool:
        return url.database in (None, "", ":memory:")

    def database_file(self, url: URL) -> Path | None:
        if self.in_memory(url):
            return None
        database = str(url.database)
        if database.startswith("file:") or url.query.get("uri"):
            return None
        return Path(database)

    def engine_url(self, url: URL, *, read_only: bool | None, kwargs: dict[str, Any]) -> URL:
        """A file that cannot be written (or ``read_only``) is opened read-only; an in-memory
        database lives on one shared connection; connections may move between threads."""
        path = self.database_file(url)
        if path is not None and path.exists():
            writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
            if read_only or (read_only is None and not writable):
                url = read_only_url(path)
        if self.in_memory(url):
            kwargs.setdefault("poolclass", StaticPool)
        kwargs.setdefault("connect_args", {"check_same_thread": False})
        return url

    def configure_engine(
        self, engine: Engine, *, busy_timeout_ms: int, wal: bool, durability: str
    ) -> None:
        memory = self.in_memory(engine.url)
        synchronous = SYNCHRONOUS[durability]

        @event.listens_for(engine, "checkout")
        def _on_checkout(dbapi_connection: Any, connection_record: Any, proxy: Any) -> None:
            if connection_record.info.get(_RECORD_KEY):
                return
            apply_settings(
                dbapi_connection,
                memory=memory,
                busy_timeout_ms=busy_timeout_ms,
                wal=wal,
                synchronous=synchronous,
            )
            connection_record.info[_RECORD_KEY] = True

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            options = conn.get_execution_options()
            immediate = options.get(WRITE, False) and not options.get(READ_ONLY, False)
            begin(conn.connection.dbapi_connection, immediate=immediate)

    def settle_connection(self, dbapi_connection: Any, *, busy_timeout_ms: int) -> None:
        apply_now(dbapi_connection, busy_timeout_ms=busy_timeout_ms)

    def begin_write(self, conn: Connection) -> None:
        take_write_lock(cursor(conn))
