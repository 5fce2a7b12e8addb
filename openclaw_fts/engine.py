"""Engine set-up: when the per-connection SQLite settings the plugin's guarantees rely on are
applied (what they are: ``index/sqlite/connect.py``).

Invariant: every connection a configured engine hands out — including connections pooled before
:func:`configure` ran — has ``foreign_keys=ON``, a busy timeout and (file databases that can be
written) WAL with ``synchronous=NORMAL``; transactions begin with a deferred ``BEGIN`` (so a
host's reading transaction takes no lock) except on connections marked :data:`WRITE`, which
begin with ``BEGIN IMMEDIATE``: the plugin's own write transactions (a deferred transaction that
reads then writes cannot be upgraded once another connection committed — SQLite fails it at
once, busy timeout or not). A database file that cannot be written is opened read-only, so
reads work on a read-only file and in a read-only directory. An engine or URL of a
dialect the plugin does not support is refused here, before any statement runs on it
(:mod:`openclaw_fts.dialects`). A PostgreSQL engine made here tests each pooled connection as it
is checked out (``pool_pre_ping``): a connection the server closed (a restart) is replaced, not
handed out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool

from .dialects import require_schema_dialect
from .errors import MissingDriverError
from .index.sqlite import connect as sqlite_connect

#: How long a writer waits for the lock before ``database is locked`` (ms).
BUSY_TIMEOUT_MS = 30_000
#: Execution option of a connection whose transactions only read: deferred ``BEGIN`` (the
#: default; it also wins over :data:`WRITE` on the same connection).
READ_ONLY = "openclaw_fts_read_only"
#: Execution option of a connection whose transactions write: ``BEGIN IMMEDIATE``.
WRITE = "openclaw_fts_write"
_CONFIGURED = "_openclaw_fts_configured"
_RECORD_KEY = "openclaw_fts_settings"


def is_memory_url(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def sqlite_file(url: URL) -> Path | None:
    """The database file of a plain SQLite file URL (None: memory, URI filenames, others)."""
    if url.get_backend_name() != "sqlite" or is_memory_url(url):
        return None
    database = str(url.database)
    if database.startswith("file:") or url.query.get("uri"):
        return None
    return Path(database)


def read_only_url(path: Path) -> URL:
    """A URL opening ``path`` read-only. ``immutable`` when nothing can write beside it (its
    folder is read-only and it has no WAL file): SQLite could not create the WAL index a
    read-only WAL database otherwise needs."""
    folder_writable = os.access(path.parent, os.W_OK)
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if folder_writable or wal.exists() else "immutable=1"
    return make_url(f"sqlite:///file:{quote(str(path.resolve()))}?{mode}&uri=true")


#: Async drivers whose URL maps to the synchronous driver of the same database.
SYNC_DRIVERS = {
    "sqlite+aiosqlite": "sqlite+pysqlite",
    "postgresql+asyncpg": "postgresql+psycopg",
}
#: Query parameters of a ``postgresql+asyncpg`` URL that only asyncpg's dialect reads (libpq,
#: under psycopg, would refuse them): dropped from the synchronous URL.
ASYNCPG_ONLY_PARAMS = ("prepared_statement_cache_size",)
#: asyncpg's ``ssl=<mode>`` is libpq's ``sslmode=<mode>`` for these modes.
LIBPQ_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def sync_driver_url(url: URL) -> URL:
    """``url`` with an async driver (:data:`SYNC_DRIVERS`) replaced by the synchronous driver of
    the same database: a host's async URL opens the plugin's own (synchronous) engine; any
    other URL is returned as it is."""
    driver = SYNC_DRIVERS.get(url.drivername)
    if driver is None:
        return url
    if url.drivername == "postgresql+asyncpg":
        query = {k: v for k, v in url.query.items() if k not in ASYNCPG_ONLY_PARAMS}
        ssl = query.get("ssl")
        if isinstance(ssl, str) and ssl in LIBPQ_SSL_MODES and "sslmode" not in query:
            query["sslmode"] = query.pop("ssl")
        url = url.set(query=query)
    return url.set(drivername=driver)


#: The package extra that installs each database driver the plugin works with (the module
#: name SQLAlchemy fails to import -> the extra of ``pip install 'openclaw-fts[<extra>]'``).
DRIVER_EXTRAS = {"psycopg": "postgresql", "asyncpg": "postgresql-async", "aiosqlite": "async"}
#: The PyPI distribution of the project (what ``pip install`` names).
DISTRIBUTION = "openclaw-fts"


def missing_driver_error(url: URL, exc: ImportError) -> MissingDriverError:
    """The error for ``url`` whose driver module could not be imported: it names the extra to
    install (or, for a driver the plugin does not ship an extra for, the URL to use instead)."""
    module = (exc.name or "").split(".")[0]
    extra = DRIVER_EXTRAS.get(module)
    shown = url.render_as_string(hide_password=True)
    if extra is not None:
        advice = f"install it with: pip install '{DISTRIBUTION}[{extra}]'"
    elif url.get_backend_name() == "postgresql":
        advice = (
            "use a postgresql+psycopg:// URL and install its driver with: "
            f"pip install '{DISTRIBUTION}[postgresql]'"
        )
    else:
        advice = "install that module"
    return MissingDriverError(
        f"the database driver is not installed for {shown} (no module {module or '?'!r}): {advice}"
    )


def make_engine(
    url: str | URL,
    *,
    read_only: bool | None = None,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    **kwargs: Any,
) -> Engine:
    """An engine for ``url`` with the plugin's settings (``:memory:``: one shared connection).
    ``read_only`` opens an SQLite file read-only; ``None`` does so when it cannot be written.
    An async driver's URL (``sqlite+aiosqlite``, ``postgresql+asyncpg``) opens the same
    database through the synchronous driver (:func:`sync_driver_url`)."""
    parsed = sync_driver_url(make_url(url))
    require_schema_dialect(parsed.get_backend_name())  # before a missing driver's ImportError
    path = sqlite_file(parsed)
    if path is not None and path.exists():
        writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        if read_only or (read_only is None and not writable):
            parsed = read_only_url(path)
    if is_memory_url(parsed):
        kwargs.setdefault("poolclass", StaticPool)
        kwargs.setdefault("connect_args", {"check_same_thread": False})
    elif parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {"check_same_thread": False})
    else:
        # A server restart (or an idle timeout) closes pooled connections under the pool: test
        # each on checkout, so the first call after a restart reconnects instead of failing.
        kwargs.setdefault("pool_pre_ping", True)
    try:
        engine = create_engine(parsed, **kwargs)
    except ImportError as exc:  # the URL's driver is not installed
        raise missing_driver_error(parsed, exc) from exc
    configure(engine, busy_timeout_ms=busy_timeout_ms)
    return engine


def writer(engine: Engine) -> Engine:
    """The same engine (same pool) whose transactions begin with ``BEGIN IMMEDIATE``."""
    return engine.execution_options(**{WRITE: True})


def configure(
    engine: Engine, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, wal: bool = True
) -> Engine:
    """Attach the plugin's connection settings to an engine (idempotent; SQLite only).

    Settings are applied when a connection is checked out of the pool for the first time since,
    so connections pooled before this call get them too. ``wal=False`` leaves the journal mode
    and ``synchronous`` alone."""
    require_schema_dialect(engine.dialect.name)
    if engine.dialect.name != "sqlite" or is_configured(engine):
        return engine
    # Marked on the pool: engine.execution_options() copies share it (and the listeners).
    setattr(engine.pool, _CONFIGURED, True)
    memory = is_memory_url(engine.url)

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, connection_record: Any, proxy: Any) -> None:
        if connection_record.info.get(_RECORD_KEY):
            return
        sqlite_connect.apply_settings(
            dbapi_connection, memory=memory, busy_timeout_ms=busy_timeout_ms, wal=wal
        )
        connection_record.info[_RECORD_KEY] = True

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        options = conn.get_execution_options()
        immediate = options.get(WRITE, False) and not options.get(READ_ONLY, False)
        sqlite_connect.begin(conn.connection.dbapi_connection, immediate=immediate)

    return engine


def is_configured(engine: Engine) -> bool:
    """True once :func:`configure` ran on this engine or an ``execution_options`` copy of it."""
    return bool(getattr(engine.pool, _CONFIGURED, False))
