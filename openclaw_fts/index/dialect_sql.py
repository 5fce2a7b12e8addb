"""The few spellings the SQL both engines share needs from each engine (a boolean column's
false test, a substring test, the incognito-key shape, which text values no row can hold),
registered by each engine's read module under its dialect name, the way :mod:`.base`
registers its backends.

Invariant: the shared statements (``visibility_sql.py``, ``sessions_sql.py``) never read a
dialect name to choose what to write: they ask :func:`dialect_sql` for the engine's
:class:`DialectSql` and use what it spells. This module holds no SQL and imports no engine.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import UnsupportedDatabaseError


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


_SPELLINGS: dict[str, DialectSql] = {}


def register(name: str, spelt: DialectSql) -> None:
    """Called once by each engine's read module at import, with its dialect name."""
    _SPELLINGS[name] = spelt


def dialect_sql(name: str) -> DialectSql:
    """The spellings of a dialect name (``conn.dialect.name``)."""
    found = _SPELLINGS.get(name)
    if found is None:
        raise UnsupportedDatabaseError(f"openclaw-fts has no index backend for {name!r} databases")
    return found
