"""Composable search: the hits of a query as a SQLAlchemy ``Select`` a host can join to its own
tables, filter, order and paginate.

Invariant: the statement returned never yields a row the caller may not see (the visibility
predicate of :func:`openclaw_fts.visibility.visible`, incognito sessions excluded) nor a row of
a pending session (whose index may be stale); whatever a host adds (joins, WHERE, LIMIT) can
only narrow it. Unlike ``sessions_search`` it carries no snippet, redaction or size cap: it
returns identifiers and ranks, not text. Order is ``rank`` (lower is better: bm25 on SQLite,
``-ts_rank`` on PostgreSQL, as in ``sessions_search``) then ``hit_id``; :class:`Cursor`
continues after a row in that order (keyset pagination). The engine's own match and rank come
from its backend package (``index/<dialect>/compose.py``); the statement is SQLAlchemy Core.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Select, and_, column, false, literal_column, or_, select, table, text

from .dialects import require_index_dialect
from .index.visibility_sql import visible
from .models import INDEX_VERSION
from .query import compile_query
from .visibility import Caller

_mi = table(
    "message_index",
    column("id"),
    column("session_id"),
    column("seq"),
    column("event_id"),
    column("role"),
    column("timestamp_ms"),
).alias("mi")
_s = table(
    "openclaw_sessions", column("session_id"), column("session_key"), column("last_seq")
).alias("s")
_st = table(
    "openclaw_index_state",
    column("session_id"),
    column("needs_rebuild"),
    column("indexed_seq"),
    column("index_version"),
).alias("st")


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
    if dialect == "postgresql":
        from .index.postgresql.compose import match_parts
    else:
        from .index.sqlite.compose import match_parts
    compiled = compile_query(query) if isinstance(query, str) else None
    if compiled is None:
        compiled = compile_query("x")  # any valid query: the statement is emptied below
        empty = True
    else:
        empty = False
    assert compiled is not None
    source, joined, match, rank_expr = match_parts(_mi, compiled)
    rank = rank_expr.label("rank")
    stmt = select(
        _mi.c.id.label("hit_id"),
        _mi.c.session_id,
        _s.c.session_key,
        _mi.c.event_id.label("message_id"),
        _mi.c.seq,
        _mi.c.role,
        _mi.c.timestamp_ms,
        rank,
    )
    stmt = stmt.select_from(source).join(_mi, joined) if source is not None else stmt
    stmt = (
        stmt.join(_s, _s.c.session_id == _mi.c.session_id)
        .join(
            _st,
            and_(
                _st.c.session_id == _s.c.session_id,
                _st.c.needs_rebuild == false(),
                _st.c.indexed_seq >= _s.c.last_seq,
                _st.c.index_version == INDEX_VERSION,
            ),
        )
        .order_by(literal_column("rank"), _mi.c.id)
    )
    if empty:
        return stmt.where(false())
    predicate = visible(caller, "s", dialect=dialect)
    stmt = stmt.where(match, text(predicate.sql).bindparams(**predicate.params))
    if after is not None:
        stmt = stmt.where(
            or_(rank_expr > after.rank, and_(rank_expr == after.rank, _mi.c.id > after.hit_id))
        )
    return stmt


def fts_weights() -> tuple[float, ...]:
    """The bm25 column weights ``sessions_search`` ranks with (SQLite)."""
    from .index.sqlite.compose import fts_weights as weights

    return weights()
