"""The few spellings the SQL both engines share needs from each engine (a boolean column's
false test, a substring test, the incognito-key shape, which text values no row can hold, an
IN-list, a timestamp parameter, a byte length, a row lock, the parent probe), registered by
each engine's package under its dialect name (``index/<engine>/dialect.py``), the way
:mod:`.base` registers its backends; ``SqlBackend`` holds its engine's as ``spelt``.

Invariant: the shared statements (``sql.py``, ``visibility_sql.py``, ``sessions_sql.py``)
never read a dialect name to choose what to write: they ask :func:`dialect_sql` (a
connection's) or their backend for the engine's :class:`DialectSql` and use what it spells.
This module holds no SQL and imports no engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UnsupportedDatabaseError

if TYPE_CHECKING:
    from sqlalchemy import Connection


class DialectSql(Protocol):
    """One engine's spellings of what the shared statements need."""

    def incognito_key(self, alias: str) -> str:
        """``caller.is_incognito_session_key`` of ``alias.session_key`` as a SQL expression
        without parameters (``visibility_sql.incognito_key_sql``)."""
        ...

    def not_flagged(self, column: str) -> str:
        """A boolean column is false."""
        ...

    def contains(self, haystack: str, needle: str) -> str:
        """``needle`` occurs in ``haystack``, case-sensitively."""
        ...

    def cannot_hold(self, value: str) -> bool:
        """Whether no text column of this engine can hold ``value`` (so it equals none)."""
        ...

    def unstorable(self, values: Iterable[object]) -> str | None:
        """Why one of these values (ids, keys, derived columns) cannot be stored on this
        engine, or None."""
        ...

    #: SQL giving, for a row whose ``parent_id`` column is empty, what tells a null
    #: ``parentId`` from a missing or malformed one (NULL otherwise); see :meth:`parent_type`.
    parent_probe: str

    def parent_type(self, probe: Any) -> str | None:
        """What :attr:`parent_probe` read, as ``json_type`` names it (``"null"`` for a null
        ``parentId``, None when it is missing)."""
        ...

    def ids_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """``column`` is one of ``values``, as SQL conditions with their parameters (one or
        more chunks, each to run as its own statement; none for no values)."""
        ...

    def time_param(self, value: datetime) -> Any:
        """A timestamp as the driver binds it."""
        ...

    def byte_length(self, column: str) -> str:
        """The UTF-8 bytes of a text column."""
        ...

    def row_lock(self, of: str | None = None) -> str:
        """The clause that locks the rows a ``SELECT`` reads (of the table aliased ``of``)
        until the transaction ends; empty where the engine serialises writers otherwise."""
        ...


_SPELLINGS: dict[str, DialectSql] = {}


def register(name: str, spelt: DialectSql) -> None:
    """Called once by each engine's read module at import, with its dialect name."""
    _SPELLINGS[name] = spelt


def dialect_sql(conn: Connection) -> DialectSql:
    """The spellings of ``conn``'s engine."""
    return spelt_for(conn.dialect.name)


def spelt_for(name: str) -> DialectSql:
    """The spellings of a dialect name (``conn.dialect.name``; for what is built before any
    connection, such as a predicate cached by dialect)."""
    found = _SPELLINGS.get(name)
    if found is None:
        raise UnsupportedDatabaseError(f"openclaw-fts has no index backend for {name!r} databases")
    return found
