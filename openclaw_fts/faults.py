"""Faults of what lies under the database — a full disk, a lost connection — as the plugin
reports them and as its background jobs wait them out.

Invariant: an exception whose chain holds a driver error that the database's backend reads as
"no space left" (``Backend.storage_full``: SQLite ``SQLITE_FULL``, PostgreSQL SQLSTATE 53100)
reaches the caller as :class:`~openclaw_fts.errors.StorageFullError`, never as the driver's own
error: on an engine the plugin configured, SQLAlchemy's ``handle_error`` event turns those of
the statements and commits SQLAlchemy runs (:func:`watch_engine`); :func:`translated` turns
those of the statements the plugin runs straight on the driver's cursor (the store's methods
and the session hooks call it). Any other exception passes through unchanged.
:func:`is_transient` says which failures a background job waits out and runs again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from .errors import StorageFullError
from .index.base import backends

#: How far down an exception's ``__cause__`` / ``__context__`` chain a driver error is looked
#: for (a driver error wrapped by SQLAlchemy, then by the plugin, is two links down).
MAX_CHAIN = 8


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < MAX_CHAIN:
        seen.add(id(current))
        yield current
        if isinstance(current, DBAPIError) and current.orig is not None:
            yield current.orig
        current = current.__cause__ or current.__context__


def _storage_name(where: Engine | Connection | URL | str | None) -> str:
    if isinstance(where, Connection):
        where = where.engine
    if isinstance(where, Engine):
        where = where.url
    if isinstance(where, URL):
        return where.render_as_string(hide_password=True)
    return where or "(unknown database)"


def storage_full_error(
    exc: BaseException, where: Engine | Connection | URL | str | None = None
) -> StorageFullError | None:
    """The :class:`StorageFullError` ``exc`` stands for (None: it is no "no space left"
    error). ``where`` names the database in the message."""
    for err in _chain(exc):
        if isinstance(err, StorageFullError):
            return err
        if any(found.storage_full(err) for found in backends()):
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return StorageFullError(_storage_name(where), reason)
    return None


def translated(
    exc: BaseException, where: Engine | Connection | URL | str | None = None
) -> BaseException:
    """``exc`` as the caller should see it: its :class:`StorageFullError`, or itself."""
    full = storage_full_error(exc, where)
    return exc if full is None else full


def watch_engine(engine: Engine) -> None:
    """Turn a "no space left" error of any statement or commit SQLAlchemy runs on ``engine``
    (and its ``execution_options`` copies, which share its dialect) into a
    :class:`StorageFullError`, the driver's error as its cause."""

    def on_error(context: Any) -> None:
        where = context.engine if context.engine is not None else engine
        full = storage_full_error(context.original_exception, where)
        if full is not None:
            raise full  # SQLAlchemy chains the original and cleans up as for its own error

    event.listen(engine, "handle_error", on_error)


def is_transient(exc: BaseException) -> bool:
    """Whether a background job that failed with ``exc`` should wait and run again: no space
    left for the database, or a connection the server cut (a restart, a terminated backend,
    a failover: the pool has dropped it and reconnects)."""
    for err in _chain(exc):
        if isinstance(err, StorageFullError):
            return True
        if isinstance(err, DBAPIError) and err.connection_invalidated:
            return True
    return storage_full_error(exc) is not None
