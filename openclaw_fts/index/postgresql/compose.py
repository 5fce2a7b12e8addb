"""PostgreSQL's part of the composable search (``openclaw_fts.composable``): the ``tsvector``
match and its rank, as SQLAlchemy Core (no statement text).

Invariant: the query reaches the server only as one bound ``to_tsquery`` input rendered by
:func:`.query.render` (never user syntax); the rank is ``-ts_rank`` with the normalisation
``sessions_search`` uses (lower is better, like bm25 on SQLite).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Double,
    FromClause,
    cast,
    false,
    func,
    literal,
    literal_column,
    true,
)

from ...query import CompiledQuery
from .names import TEXT_SEARCH_CONFIG, TSVECTOR_COLUMN
from .query import render
from .read import RANK_NORMALIZATION


def match_parts(
    mi: Any, compiled: CompiledQuery
) -> tuple[FromClause | None, ColumnElement[bool], ColumnElement[bool], ColumnElement[float]]:
    """``(no extra table, no join condition, match, rank)`` for index rows ``mi``."""
    rendered = render(compiled)
    vector: ColumnElement[Any] = literal_column(f"{mi.name}.{TSVECTOR_COLUMN}")
    if rendered is None:
        return None, true(), false(), literal(0.0)
    query = func.to_tsquery(literal_column(f"'{TEXT_SEARCH_CONFIG}'::regconfig"), rendered)
    # float8: ts_rank is a float4, and a page's cursor comes back as a Python float (float8);
    # compared as float8 on both sides, the row the cursor names equals itself.
    rank: ColumnElement[float] = cast(-func.ts_rank(vector, query, RANK_NORMALIZATION), Double())
    return None, true(), vector.op("@@")(query), rank
