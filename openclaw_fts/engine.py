"""Engine set-up: the engines the plugin makes, and when the per-connection settings its guarantees
rely on are applied (what they are is the engine's backend's: SQLite's PRAGMAs and ``BEGIN`` modes
in ``index/sqlite/connect.py``; PostgreSQL needs none).

Invariant: every connection a configured engine hands out — including connections pooled before
:func:`configure` ran — has its backend's settings (SQLite: ``foreign_keys=ON``, a busy timeout
and, for file databases that can be written, WAL with ``synchronous=NORMAL``, or ``FULL`` with
``durability="full"``); a write that finds no space left raises ``StorageFullError``; transactions
begin deferred (so a host's reading transaction takes no lock) except on connections marked
:data:`WRITE` (:func:`write_engine`), which begin with ``BEGIN IMMEDIATE``: the plugin's own write
transactions (a deferred transaction that reads then writes cannot be upgraded once another
connection committed — SQLite fails it at once, busy timeout or not). A database file that cannot
be written is opened read-only, so reads work on a read-only file and in a read-only directory. An
engine or URL of a dialect the plugin does not support is refused here, before any statement runs
on it (:mod:`openclaw_fts.dialects`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url

from .dialects import require_schema_dialect
from .errors import MissingDriverError, UnsupportedDatabaseError
from .faults import watch_engine
from .index.base import DURABILITIES as DURABILITIES
from .index.base import READ_ONLY as READ_ONLY
from .index.base import WRITE as WRITE
from .index.base import backend_of, backends, dialect_of, known_backend

#: How long a writer waits for the lock before ``database is locked`` (ms).
BUSY_TIMEOUT_MS = 30_000
#: The default of ``durability`` (:data:`DURABILITIES`).
DEFAULT_DURABILITY = "normal"
_CONFIGURED = "_openclaw_fts_configured"
_DURABILITY = "_openclaw_fts_durability"


def database_file(url: URL) -> Path | None:
    """The database file of a URL naming a plain file (None: a server, memory, URI filenames,
    or a dialect the plugin does not support)."""
    found = known_backend(url)
    return found.connections.database_file(url) if found is not None else None


def is_memory_url(url: URL) -> bool:
    """Whether ``url`` names a database that lives on one connection in this process."""
    return backend_of(url).connections.in_memory(url)


#: Async drivers whose URL maps to the synchronous driver of the same database (each
#: backend's ``sync_drivers``, as full URL driver names).
SYNC_DRIVERS = {
    f"{found.name}+{driver}": f"{found.name}+{sync}"
    for found in backends()
    for driver, sync in found.connections.sync_drivers.items()
}


#: URL schemes other tools print for a dialect, read as that dialect: ``postgres://`` is what
#: Heroku, Render, Supabase and ``psql`` print, and what SQLAlchemy refuses since 1.4.
DIALECT_ALIASES = {"postgres": "postgresql"}


def canonical_url(url: URL) -> URL:
    """``url`` with an alias of a dialect (:data:`DIALECT_ALIASES`) spelt as the dialect itself
    (``postgres://`` and ``postgres+psycopg://`` as ``postgresql://`` and
    ``postgresql+psycopg://``); any other URL as it is."""
    name, plus, driver = url.drivername.partition("+")
    alias = DIALECT_ALIASES.get(name)
    return url if alias is None else url.set(drivername=alias + plus + driver)


def sync_driver_url(url: URL) -> URL:
    """``url`` with an async driver (:data:`SYNC_DRIVERS`) replaced by the synchronous driver of
    the same database, its query translated for that driver (the backend's ``sync_url``): a
    host's async URL opens the plugin's own (synchronous) engine; any other URL is returned as
    it is (a dialect alias spelt out first, :func:`canonical_url`)."""
    url = canonical_url(url)
    found = known_backend(url)
    return found.connections.sync_url(url) if found is not None else url


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
    found = known_backend(url)
    packaged = found.packaged_driver if found is not None else None
    if extra is not None:
        advice = f"install it with: pip install '{DISTRIBUTION}[{extra}]'"
    elif packaged is not None:
        driver, driver_extra = packaged
        advice = (
            f"use a {dialect_of(url)}+{driver}:// URL and install its driver with: "
            f"pip install '{DISTRIBUTION}[{driver_extra}]'"
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
    durability: str = DEFAULT_DURABILITY,
    **kwargs: Any,
) -> Engine:
    """An engine for ``url`` with the plugin's settings (``:memory:``: one shared connection).
    ``read_only`` opens an SQLite file read-only; ``None`` does so when it cannot be written.
    An async driver's URL (``sqlite+aiosqlite``, ``postgresql+asyncpg``) opens the same
    database through the synchronous driver (:func:`sync_driver_url`)."""
    parsed = sync_driver_url(make_url(url))
    require_schema_dialect(dialect_of(parsed))  # before a missing driver's ImportError
    parsed = backend_of(parsed).connections.engine_url(parsed, read_only=read_only, kwargs=kwargs)
    try:
        engine = create_engine(parsed, **kwargs)
    except ImportError as exc:  # the URL's driver is not installed
        raise missing_driver_error(parsed, exc) from exc
    backend_of(parsed).connections.own_engine(engine)
    configure(engine, busy_timeout_ms=busy_timeout_ms, durability=durability)
    return engine


def write_engine(engine: Engine) -> Engine:
    """The same engine (same pool) whose transactions begin with ``BEGIN IMMEDIATE``."""
    return engine.execution_options(**{WRITE: True})


def configure(
    engine: Engine,
    *,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    wal: bool = True,
    durability: str | None = None,
) -> Engine:
    """Attach the plugin's connection settings to an engine (idempotent; what they are is its
    backend's, ``Connections.configure_engine``), and report a full disk under it as
    :class:`~openclaw_fts.errors.StorageFullError` (:func:`~openclaw_fts.faults.watch_engine`).

    Settings are applied when a connection is checked out of the pool for the first time since,
    so connections pooled before this call get them too. ``wal=False`` leaves the journal mode
    and ``synchronous`` alone; ``durability`` (:data:`DURABILITIES`; None:
    :data:`DEFAULT_DURABILITY`, or whatever an earlier call chose) picks ``synchronous``. An
    engine configured before with another durability is refused: its connections have theirs."""
    if durability is not None and durability not in DURABILITIES:
        raise UnsupportedDatabaseError(
            f"openclaw-fts: durability must be one of {', '.join(DURABILITIES)} "
            f"(got {durability!r})"
        )
    require_schema_dialect(dialect_of(engine))
    if is_configured(engine):
        chosen = getattr(engine.pool, _DURABILITY, DEFAULT_DURABILITY)
        if durability is not None and durability != chosen:
            raise UnsupportedDatabaseError(
                f"openclaw-fts: this engine was configured with durability={chosen!r}; "
                f"durability={durability!r} needs an engine of its own"
            )
        return engine
    durability = durability or DEFAULT_DURABILITY
    # Marked on the pool: engine.execution_options() copies share it (and the listeners).
    setattr(engine.pool, _CONFIGURED, True)
    setattr(engine.pool, _DURABILITY, durability)
    backend_of(engine).connections.configure_engine(
        engine, busy_timeout_ms=busy_timeout_ms, wal=wal, durability=durability
    )
    watch_engine(engine)
    return engine


def is_configured(engine: Engine) -> bool:
    """True once :func:`configure` ran on this engine or an ``execution_options`` copy of it."""
    return bool(getattr(engine.pool, _CONFIGURED, False))
