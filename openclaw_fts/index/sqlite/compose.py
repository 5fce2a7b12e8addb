"""FTS5's part of the composable search (``openclaw_fts.composable``): the full-text table to
select from, its match condition and its rank, as SQLAlchemy Core (no statement text).

Invariant: the rank is ``sessions_search``'s bm25 with the same column weights (lower is
better); the match can only reach the ``body`` column (the compiled query says so).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, FromClause, column, func, literal_column, table

from ...query import CompiledQuery
from .fts import BM25_WEIGHTS, FTS_TABLE

_fts = table(FTS_TABLE, column("rowid"))


def fts_weights() -> tuple[float, ...]:
    """The bm25 column weights ``sessions_search`` ranks with."""
    return tuple(float(w) for w in BM25_WEIGHTS.split(","))


def match_parts(
    mi: Any, compiled: CompiledQuery
) -> tuple[FromClause, ColumnElement[bool], ColumnElement[bool], ColumnElement[float]]:
    """``(from, join condition to mi, match, rank)`` for index rows ``mi``."""
    rank = func.bm25(literal_column(FTS_TABLE), *fts_weights())
    match = literal_column(FTS_TABLE).op("MATCH")(compiled.match)
    return _fts, mi.c.id == _fts.c.rowid, match, rank
