"""The composable search statement (``openclaw_fts.composable.search_select``): the hits of a
compiled query as a SQLAlchemy Core ``Select``, the engine's match and rank taken from its
backend (``Backend.match_parts``, written in ``index/<dialect>/compose.py``).

Invariant: the statement joins every hit to an exactly indexed session (:data:`.pending.
EXACT_JOIN`, the one definition of pending) and puts the caller's visibility predicate
(:func:`.visibility_sql.visible`) in its WHERE, so whatever a host adds can only narrow it;
its order is ``rank`` (lower is better) then ``hit_id``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, and_, column, false, literal_column, or_, select, table, text

from ..query import CompiledQuery, compile_query
from .base import backend_for
from .pending import EXACT_JOIN
from .visibility_sql import visible

if TYPE_CHECKING:
    from ..caller import Caller

_mi = table(
    "message_index",
    column("id"),
    column("session_id"),
    column("seq"),
    column("event_id"),
    column("role"),
    column("timestamp_ms"),
).alias("mi")
_s = table("openclaw_sessions", column("session_id"), column("session_key")).alias("s")
_st = table("openclaw_index_state").alias("st")


def hits_select(
    caller: Caller,
    compiled: CompiledQuery | None,
    *,
    after: tuple[float, int] | None,
    dialect: str,
) -> Select[Any]:
    """Hits of ``compiled`` (None: a query without a searchable token, no rows) visible to
    ``caller`` on a database of ``dialect``; ``after``: ``(rank, hit_id)`` of the row a page
    ended at (keyset pagination)."""
    empty = compiled is None
    # Any valid query when there is none: the statement keeps its columns and is emptied below.
    shape = compile_query("x") if compiled is None else compiled
    assert shape is not None
    source, joined, match, rank_expr = backend_for(dialect).match_parts(_mi, shape)
    stmt = select(
        _mi.c.id.label("hit_id"),
        _mi.c.session_id,
        _s.c.session_key,
        _mi.c.event_id.label("message_id"),
        _mi.c.seq,
        _mi.c.role,
        _mi.c.timestamp_ms,
        rank_expr.label("rank"),
    )
    stmt = stmt.select_from(source).join(_mi, joined) if source is not None else stmt
    stmt = (
        stmt.join(_s, _s.c.session_id == _mi.c.session_id)
        .join(_st, text(EXACT_JOIN))
        .order_by(literal_column("rank"), _mi.c.id)
    )
    if empty:
        return stmt.where(false())
    predicate = visible(caller, "s", dialect=dialect)
    stmt = stmt.where(match, text(predicate.sql).bindparams(**predicate.params))
    if after is not None:
        rank, hit_id = after
        stmt = stmt.where(or_(rank_expr > rank, and_(rank_expr == rank, _mi.c.id > hit_id)))
    return stmt


def rank_weights(dialect: str) -> tuple[float, ...]:
    """The column weights of the rank a database of ``dialect`` searches with (empty: its
    rank takes none)."""
    return backend_for(dialect).rank_weights
