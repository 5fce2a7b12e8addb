"""``sessions_search``: validation, one ranked SQL statement, snippets, caps, result shape.

Invariant: visibility, the pending filter and every user filter are in the same statement as
the full-text MATCH, before ranking and LIMIT — hidden sessions never consume the limit, never
set ``truncated`` and never appear. Snippets are cut from the redacted ORIGINAL message text
(re-read through the one predicate), so no secret is shown even partly and no artefact of how
CJK is indexed leaks out. The JSON of ``results`` never exceeds :data:`MAX_RESULTS_BYTES`. An
explicit ``sessionKey`` is resolved and judged (:func:`visibility.resolve_target`) before any
text is read; a batch (``queries``) runs every query in the same snapshot, with the same filters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Connection

from . import transcript
from .errors import ToolInputError
from .index import sqlite as fts
from .index.base import Hit, SearchRequest
from .index.common import PENDING_CONDITION
from .models import INDEX_VERSION
from .query import compile_query
from .redact import Redactor, redact_text
from .snippet import make_snippet
from .tokens import body_is_clean_text, clean_text, is_valid_unicode
from .visibility import Caller, Target, incognito_key_sql, resolve_target, visible

#: OpenClaw's bounds on the query and the number of results.
MAX_QUERY_CHARS = 4096
DEFAULT_LIMIT = 10
MAX_LIMIT = 25
#: Cap on the UTF-8 JSON of ``results`` (OpenClaw's response budget).
MAX_RESULTS_BYTES = 32 * 1024
INDEXING_WARNING = (
    "Transcript indexing is in progress; results may be incomplete. Retry sessions_search shortly."
)
#: OpenClaw's message for a missing or blank query.
EMPTY_QUERY_ERROR = (
    "query must not be empty; retry with non-empty keywords to match in past session text"
)
#: Most queries one batch search runs (``queries``, together with ``query``).
MAX_BATCH_QUERIES = 8
BATCH_QUERIES_ERROR = f"queries must hold 1-{MAX_BATCH_QUERIES} non-empty strings"
ROLES = ("user", "assistant")
ORDERS = ("relevance", "recent")


def validate_limit(limit: Any, *, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    """OpenClaw's limit rule: a positive integer ≤ ``maximum``; None → ``default``."""
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise ToolInputError("limit must be a positive integer")
    if isinstance(limit, float) and (not math.isfinite(limit) or not limit.is_integer()):
        raise ToolInputError("limit must be a positive integer")
    value = int(limit)
    if value <= 0 or value > maximum:
        raise ToolInputError("limit must be a positive integer")
    return value


def parse_time_bound(value: Any, name: str, *, end_of_day: bool) -> int | None:
    """``since`` / ``until``: epoch ms or ISO 8601 (a bare date covers its whole day)."""
    if value is None:
        return None
    error = ToolInputError(f"{name} must be epoch milliseconds or an ISO 8601 date/time")
    if isinstance(value, str):
        stripped = value.strip()
        parsed = transcript.parse_timestamp(
            int(stripped)
            if stripped.isascii() and stripped.isdigit() and len(stripped) <= 19
            else stripped
        )
        if parsed is None:
            raise error
        if end_of_day and len(stripped) == 10:  # YYYY-MM-DD: inclusive through 23:59:59.999
            day = datetime.fromtimestamp(parsed / 1000, tz=timezone.utc)
            parsed = int((day + timedelta(days=1)).timestamp() * 1000) - 1
        return parsed
    parsed = transcript.parse_timestamp(value)
    if parsed is None:
        raise error
    return parsed


def build_request(
    query: Any,
    *,
    limit: Any = None,
    session_key: Any = None,
    role: Any = None,
    since: Any = None,
    until: Any = None,
    order: Any = None,
) -> SearchRequest:
    """Validate search arguments (OpenClaw's messages) into a :class:`SearchRequest`."""
    if not isinstance(query, str):
        raise ToolInputError(EMPTY_QUERY_ERROR)
    trimmed = query.strip()
    if not trimmed:
        raise ToolInputError(EMPTY_QUERY_ERROR)
    if len(trimmed) > MAX_QUERY_CHARS:
        raise ToolInputError(f"query must not exceed {MAX_QUERY_CHARS} characters")
    if session_key is not None and (not isinstance(session_key, str) or not session_key.strip()):
        raise ToolInputError("sessionKey must be a non-empty string")
    if session_key is not None and not is_valid_unicode(session_key):
        raise ToolInputError("sessionKey is not valid Unicode")
    if role is not None and role not in ROLES:
        raise ToolInputError('role must be "user" or "assistant"')
    if order is not None and order not in ORDERS:
        raise ToolInputError('order must be "relevance" or "recent"')
    return SearchRequest(
        query=trimmed,
        compiled=compile_query(trimmed),
        limit=validate_limit(limit),
        session_key=session_key.strip() if isinstance(session_key, str) else None,
        role=role,
        since=parse_time_bound(since, "since", end_of_day=False),
        until=parse_time_bound(until, "until", end_of_day=True),
        order=order or "relevance",
    )


def batch_queries(query: Any, queries: Any) -> list[str]:
    """The queries of a batch: ``query`` (when given) then ``queries``, each trimmed, exact
    repeats dropped; 1 to :data:`MAX_BATCH_QUERIES` non-empty strings in all. Each one is then
    validated like a single query."""
    if (
        not isinstance(queries, (list, tuple))
        or not queries
        or not all(isinstance(q, str) and q.strip() for q in queries)
    ):
        raise ToolInputError(BATCH_QUERIES_ERROR)
    head = [query] if isinstance(query, str) and query.strip() else []
    if query is not None and not head:
        raise ToolInputError(EMPTY_QUERY_ERROR)
    combined = list(dict.fromkeys(q.strip() for q in [*head, *queries]))
    if len(combined) > MAX_BATCH_QUERIES:
        raise ToolInputError(BATCH_QUERIES_ERROR)
    return combined


def _visible_sql(caller: Caller, session_key: str | None) -> tuple[str, dict[str, Any]]:
    """Visibility (plus the explicit ``sessionKey`` filter) over alias ``s``."""
    pred = visible(caller, "s")
    params: dict[str, Any] = dict(pred.params)
    if session_key is None:
        return pred.sql, params
    params["only_key"] = session_key
    return f"({pred.sql} AND s.session_key = :only_key)", params


#: Where a pooled DBAPI connection remembers whether its last snapshot had pending sessions.
_PENDING_MEMO = "openclaw_fts_any_pending"


def any_pending(conn: Connection) -> bool:
    """Whether any session at all is pending in this transaction's snapshot.

    Remembered per DBAPI connection and recomputed only when the database changed: ``PRAGMA
    data_version`` (frozen for the life of a read transaction, bumped by other connections'
    commits) plus the connection's own ``total_changes``. It is read first, so it starts the
    snapshot every later statement of the search sees."""
    version = conn.exec_driver_sql("PRAGMA data_version").scalar()
    driver = conn.connection.driver_connection
    key = (version, getattr(driver, "total_changes", None))
    memo = conn.connection.info.get(_PENDING_MEMO)
    if memo is not None and memo[0] == key and key[1] is not None:
        return bool(memo[1])
    found = (
        fts.cursor(conn)
        .execute(
            "SELECT EXISTS (SELECT 1 FROM openclaw_sessions AS s LEFT JOIN openclaw_index_state st "
            f"ON st.session_id = s.session_id WHERE {PENDING_CONDITION})"
        )
        .fetchone()[0]
    )
    conn.connection.info[_PENDING_MEMO] = (key, bool(found))
    return bool(found)


def pending_visible(conn: Connection, caller: Caller, session_key: str | None) -> bool:
    """Whether any session the caller may see is pending (not yet exactly indexed)."""
    where, params = _visible_sql(caller, session_key)
    sql = (
        "SELECT EXISTS (SELECT 1 FROM openclaw_sessions AS s "
        "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id "
        f"WHERE {where} AND {PENDING_CONDITION})"
    )
    return bool(fts.cursor(conn).execute(sql, params).fetchone()[0])


#: Rows beyond ``limit + 1`` the score-only ranking fetches, so that the rows tied on the score
#: at the limit are all in hand (equal scores are common: short messages of equal length); a
#: longer tie falls back to the full ORDER BY. Measured: a LIMIT of 75 costs what 11 does.
TIE_PROBE_ROWS = 64


def _hits_sql(caller: Caller, req: SearchRequest, *, exact: bool) -> tuple[str, dict[str, Any]]:
    """The ranked statement; ``exact`` (no session is pending in this snapshot) drops the
    per-row pending filter, which then holds for every row."""
    where, params = _visible_sql(caller, req.session_key)
    assert req.compiled is not None
    params.update(q=req.compiled.match, v=INDEX_VERSION, lim=req.limit + 1)
    match = ":q"
    if caller.is_narrow:
        # FTS5 intersects the text doclist with the visible sessions' tokens, so ranking only
        # scores rows the caller may see (engine-facts: 8 ms instead of 268 ms). The subquery
        # re-uses the visibility SQL: its own alias `s` shadows the outer one.
        match = (
            "'(' || :q || ') AND sess : (' || coalesce((SELECT group_concat('s' || st2.id, "
            "' OR ') FROM openclaw_sessions AS s JOIN openclaw_index_state AS st2 ON "
            "st2.session_id = s.session_id "
            f"WHERE {where}), 's0') || ')'"
        )
    filters = []
    if req.role is not None:
        filters.append("AND mi.role = :role")
        params["role"] = req.role
    if req.since is not None:
        filters.append("AND mi.timestamp_ms >= :since")
        params["since"] = req.since
    if req.until is not None:
        filters.append("AND mi.timestamp_ms <= :until")
        params["until"] = req.until
    score = f"bm25({fts.FTS_TABLE}, {fts.BM25_WEIGHTS})"
    # mi.id last: two incarnations of one session key may hold the same message id.
    if req.order == "recent":
        order = "mi.timestamp_ms DESC, s.session_key, mi.event_id, mi.id"
    else:
        order = "rank, mi.timestamp_ms DESC, s.session_key, mi.event_id, mi.id"
    pending = (
        ""
        if exact
        else "CROSS JOIN openclaw_index_state AS st ON st.session_id = s.session_id "
        "AND st.needs_rebuild = 0 AND st.indexed_seq >= s.last_seq AND st.index_version = :v "
    )
    sql = (
        f"SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
        f"s.session_key, {score} AS rank "
        f"FROM {fts.FTS_TABLE} CROSS JOIN {fts.CONTENT_TABLE} AS mi "
        f"ON mi.id = {fts.FTS_TABLE}.rowid "
        f"CROSS JOIN openclaw_sessions AS s ON s.session_id = mi.session_id {pending}"
        f"WHERE {fts.FTS_TABLE} MATCH {match} AND {where} "
        f"{' '.join(filters)} ORDER BY {order} LIMIT :lim"
    )
    return sql, params


def _order_key(hit: Hit) -> tuple[float, int, str, str, int]:
    return (hit[7] if hit[7] is not None else 0.0, -hit[5], hit[6], hit[3], hit[0])


def _top_of_everything(conn: Connection, req: SearchRequest) -> list[Hit] | None:
    """The ranked hits of a caller who sees every session that is not incognito (by flag or by
    key), in a snapshot
    where no session is pending: FTS5 alone ranks (no join per match, as raw SQL would), then
    only the top rows are joined. None when a tie on the score at the limit runs past
    :data:`TIE_PROBE_ROWS`, or a top row is not visible after all: the full statement then
    decides."""
    assert req.compiled is not None
    want = req.limit + 1
    ranked = (
        fts.cursor(conn)
        .execute(
            f"SELECT rowid, bm25({fts.FTS_TABLE}, {fts.BM25_WEIGHTS}) AS rank "
            f"FROM {fts.FTS_TABLE} WHERE {fts.FTS_TABLE} MATCH ? ORDER BY rank LIMIT ?",
            (req.compiled.match, want + TIE_PROBE_ROWS),
        )
        .fetchall()
    )
    if not ranked:
        return []
    if len(ranked) > want:
        boundary = ranked[want - 1][1]
        if len(ranked) == want + TIE_PROBE_ROWS and ranked[-1][1] == boundary:
            return None  # the tie may go on past what was fetched
        ranked = [r for r in ranked if r[1] <= boundary]  # every row tied at the limit
    score = dict(ranked)
    marks = ", ".join("?" * len(ranked))
    rows = (
        fts.cursor(conn)
        .execute(
            "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
            f"s.session_key FROM {fts.CONTENT_TABLE} AS mi JOIN openclaw_sessions AS s "
            f"ON s.session_id = mi.session_id WHERE mi.id IN ({marks}) AND s.incognito = 0 "
            f"AND NOT {incognito_key_sql('s')}",
            list(score),
        )
        .fetchall()
    )
    if len(rows) != len(ranked):
        return None
    hits: list[Hit] = [(r[0], r[1], r[2], r[3], r[4], r[5], r[6], score[r[0]]) for r in rows]
    return sorted(hits, key=_order_key)[:want]


def _ranked_hits(conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool) -> list[Hit]:
    """Up to ``limit + 1`` hits in result order (one more than asked: ``truncated``)."""
    if (
        exact
        and visible(caller, "s").everything
        and req.session_key is None
        and req.role is None
        and req.since is None
        and req.until is None
        and req.order == "relevance"
    ):
        top = _top_of_everything(conn, req)
        if top is not None:
            return top
    sql, params = _hits_sql(caller, req, exact=exact)
    # The DBAPI cursor (sqlite3 takes the same :name parameters): SQLAlchemy's statement
    # handling cost ~0.3 ms a search, a third of a narrow search's SQL time.
    return fts.cursor(conn).execute(sql, params).fetchall()


def _hit_texts(conn: Connection, hits: list[Hit]) -> dict[int, str]:
    """Each hit's searchable text (clean), by index row id. The indexed body IS that text
    unless CJK was spaced for the index; only those messages are re-read through the one
    predicate."""
    if not hits:
        return {}
    marks = ", ".join("?" * len(hits))
    bodies = dict(
        fts.cursor(conn)
        .execute(
            f"SELECT id, body FROM {fts.CONTENT_TABLE} WHERE id IN ({marks})", [h[0] for h in hits]
        )
        .fetchall()
    )
    texts = {}
    for hit in hits:
        body = bodies.get(hit[0])
        if body is not None and body_is_clean_text(body):
            texts[hit[0]] = body
        else:
            texts[hit[0]] = _original_text(conn, hit[1], hit[2])
    return texts


def _original_text(conn: Connection, session_id: str, seq: int) -> str:
    """The message's searchable text, re-read through the one predicate."""
    found = (
        fts.cursor(conn)
        .execute(
            "SELECT event FROM transcript_events WHERE session_id = ? AND seq = ?",
            (session_id, seq),
        )
        .fetchone()
    )
    try:
        event = json.loads(found[0]) if found is not None else None
    except (ValueError, RecursionError):
        event = None
    row = transcript.index_row(seq, event) if isinstance(event, dict) else None
    return clean_text(row.text) if row is not None else ""


def run_search(
    conn: Connection,
    caller: Caller,
    req: SearchRequest,
    *,
    redactor: Redactor | None = None,
    on_pending: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run a validated search on a (read) connection; the result dict of docs/tools.md."""
    return run_searches(conn, caller, [req], batch=False, redactor=redactor, on_pending=on_pending)


def run_searches(
    conn: Connection,
    caller: Caller,
    reqs: Sequence[SearchRequest],
    *,
    batch: bool,
    redactor: Redactor | None = None,
    on_pending: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run validated searches (one, or a batch sharing ``sessionKey``, filters and limit) in one
    snapshot. A batch answers ``batch: true``, ``queries``, and each hit's ``queryIndex``; the
    queries whose hits were cut are listed in ``truncatedQueries``, and while sessions are
    pending ``indexingQueries`` lists every query (each may miss hits). ``results`` holds each
    query's hits in turn, and the byte cap applies to all of them together."""
    exact = not any_pending(conn)  # first: it starts the snapshot every statement below reads
    session_key = reqs[0].session_key
    if session_key is not None:
        target = resolve_target(conn, caller, session_key, action="search")
        if not isinstance(target, Target):
            return target
        reqs = [replace(r, session_key=target.session_key) for r in reqs]
        session_key = target.session_key
    out: dict[str, Any] = {}
    if batch:
        out["batch"] = True
        out["queries"] = [r.query for r in reqs]
    out["results"] = []
    indexing = not exact and pending_visible(conn, caller, session_key)
    if indexing:
        out["indexing"] = True
        out["warning"] = INDEXING_WARNING
        if batch:
            out["indexingQueries"] = list(range(len(reqs)))
        if on_pending is not None:
            on_pending()
    results: list[dict[str, Any]] = []
    truncated_queries: list[int] = []
    used = 2  # the enclosing "[]"
    full = False
    for index, req in enumerate(reqs):
        if req.compiled is None:
            continue
        hits = _ranked_hits(conn, caller, req, exact=exact)
        truncated = len(hits) > req.limit
        hits = hits[: req.limit]
        if full:
            if hits:
                truncated_queries.append(index)
            continue
        texts = _hit_texts(conn, hits)
        for row_id, session_id, _seq, event_id, role, ts, key, rank in hits:
            snippet = make_snippet(redact_text(texts[row_id], redactor), req.compiled.terms)
            item: dict[str, Any] = {
                "sessionKey": key,
                "sessionId": session_id,
                "messageId": event_id,
                "role": role,
                "timestamp": int(ts),
                "snippet": snippet,
                "score": -float(rank) if rank is not None else 0.0,
            }
            if batch:
                item["queryIndex"] = index
            # Counted as json.dumps(results, ensure_ascii=False) writes it: ", " between items.
            size = len(json.dumps(item, ensure_ascii=False).encode("utf-8")) + (2 if results else 0)
            if used + size > MAX_RESULTS_BYTES:
                truncated = full = True
                break
            used += size
            results.append(item)
        if truncated:
            truncated_queries.append(index)
    out["results"] = results
    if truncated_queries:
        out["truncated"] = True
        if batch:
            out["truncatedQueries"] = truncated_queries
    return out
