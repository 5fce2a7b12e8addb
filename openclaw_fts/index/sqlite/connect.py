"""SQLite connection settings and transaction starts: the PRAGMAs and BEGIN modes the plugin's
guarantees rely on (``engine.configure`` decides when they run; this module says what runs).

Invariant: a connection given :func:`apply_settings` has ``foreign_keys=ON`` (cascades keep
the index exact), the busy timeout, and — file databases that can be written, unless the host
opted out — WAL with ``synchronous=NORMAL`` (``FULL`` when the store asked for
``durability="full"``: :data:`SYNCHRONOUS`); :func:`begin` starts a deferred transaction unless
asked for ``BEGIN IMMEDIATE``; :func:`take_write_lock` takes the write lock without writing.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

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
