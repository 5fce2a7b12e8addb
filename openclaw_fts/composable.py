"""Composable search: the hits of a query as a SQLAlchemy ``Select`` a host can join to its own
tables, filter, order and paginate.

Invariant: the statement returned never yields a row the caller may not see (the visibility
predicate of :func:`openclaw_fts.visibility.visible`, incognito sessions excluded) nor a row of
a pending session (whose index may be stale); whatever a host adds (joins, WHERE, LIMIT) can
only narrow it. Unlike ``sessions_search`` it carries no snippet, redaction or size cap: it
returns identifiers and ranks, not text. Order is ``rank`` (lower is better: bm25 on SQLite,
``-ts_rank`` on PostgreSQL, as in ``sessions_search``) then ``hit_id``; :class:`Cursor`
continues after a row in that order (keyset pagination). The engine's own match and rank come
from its backend package; the statement itself is built in ``index/compose.py`` (SQLAlchemy
Core).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Select

from .caller import Caller
from .dialects import require_index_dialect
from .index.compose import hits_select, rank_weights
from .query import compile_query


class Cursor(NamedTuple):
    """Where the previous page ended: its last row's ``rank`` and ``hit_id``."""

    rank: float
    hit_id: int


def search_select(
    caller: Caller, query: str, *, after: Cursor | None = None, dialect: str = "sqlite"
) -> Select[Any]:
    """Hits of ``query`` (the plugin's query language) visible to ``caller``, as columns
    ``hit_id, session_id, session_key, message_id, seq, role, timestamp_ms, rank``, ordered by
    rank, for a database of ``dialect`` (``"sqlite"`` or ``"postgresql"``:
    ``engine.dialect.name``). Wrap it (``.subquery()``) to join the host's tables; add
    ``.limit(n)`` per page and pass the last row's ``Cursor(rank, hit_id)`` as ``after`` for
    the next one."""
    require_index_dialect(dialect)
    compiled = compile_query(query) if isinstance(query, str) else None
    return hits_select(caller, compiled, after=after, dialect=dialect)


def fts_weights() -> tuple[float, ...]:
    """The bm25 column weights ``sessions_search`` ranks with (SQLite)."""
    return rank_weights("sqlite")
