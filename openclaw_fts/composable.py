"""Composable search: the hits of a query as a SQLAlchemy ``Select`` a host can join to its own
tables, filter, order and paginate.

Invariant: the statement returned never yields a row the caller may not see (the visibility
predicate of :func:`openclaw_fts.visibility.visible`, incognito sessions excluded) nor a row of
a pending session (whose index may be stale); whatever a host adds (joins, WHERE, LIMIT) can
only narrow it. Unlike ``sessions_search`` it carries no snippet, redaction or size cap: it
returns identifiers and ranks, not text. Order is ``rank`` (bm25, lower is better) then
``hit_id``; :class:`Cursor` continues after a row in that order (keyset pagination).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Select, and_, column, false, func, literal_column, or_, select, table, text

from .index import sqlite as fts
from .models import INDEX_VERSION
from .query import compile_query
from .visibility import Caller, visible

_fts = table(fts.FTS_TABLE, column("rowid"))
_mi = table(
    fts.CONTENT_TABLE,
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


def search_select(caller: Caller, query: str, *, after: Cursor | None = None) -> Select[Any]:
    """Hits of ``query`` (the plugin's query language) visible to ``caller``, as columns
    ``hit_id, session_id, session_key, message_id, seq, role, timestamp_ms, rank``, ordered by
    rank. Wrap it (``.subquery()``) to join the host's tables; add ``.limit(n)`` per page and
    pass the last row's ``Cursor(rank, hit_id)`` as ``after`` for the next one."""
    rank = func.bm25(literal_column(fts.FTS_TABLE), *fts_weights()).label("rank")
    stmt = (
        select(
            _mi.c.id.label("hit_id"),
            _mi.c.session_id,
            _s.c.session_key,
            _mi.c.event_id.label("message_id"),
            _mi.c.seq,
            _mi.c.role,
            _mi.c.timestamp_ms,
            rank,
        )
        .select_from(_fts)
        .join(_mi, _mi.c.id == _fts.c.rowid)
        .join(_s, _s.c.session_id == _mi.c.session_id)
        .join(
            _st,
            and_(
                _st.c.session_id == _s.c.session_id,
                _st.c.needs_rebuild == 0,
                _st.c.indexed_seq >= _s.c.last_seq,
                _st.c.index_version == INDEX_VERSION,
            ),
        )
        .order_by(literal_column("rank"), _mi.c.id)
    )
    compiled = compile_query(query) if isinstance(query, str) else None
    if compiled is None:
        return stmt.where(false())
    predicate = visible(caller, "s")
    stmt = stmt.where(
        literal_column(fts.FTS_TABLE).op("MATCH")(compiled.match),
        text(predicate.sql).bindparams(**predicate.params),
    )
    if after is not None:
        stmt = stmt.where(or_(rank > after.rank, and_(rank == after.rank, _mi.c.id > after.hit_id)))
    return stmt


def fts_weights() -> tuple[float, ...]:
    """The bm25 column weights ``sessions_search`` ranks with."""
    return tuple(float(w) for w in fts.BM25_WEIGHTS.split(","))
