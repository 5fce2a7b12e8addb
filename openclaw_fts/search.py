"""``sessions_search``: validation, the index backend's ranked hits, snippets, caps, result shape.

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
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Connection

from . import transcript
from .errors import ToolInputError
from .index.base import reader
from .query import compile_query
from .redact import Redactor, redact_text
from .rows import Hit, SearchPage, SearchRequest
from .snippet import make_snippet
from .spans import SPAN_EXAMPLES, back_from, span_ms
from .suggest import suggestion_text
from .tokens import is_valid_unicode, utf16_len
from .visibility import Caller, Target, resolve_target

#: OpenClaw's bounds on the query and the number of results (the query's length in UTF-16 code
#: units, JavaScript's ``length`` of the trimmed query: an emoji counts 2).
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


def parse_time_bound(
    value: Any, name: str, *, end_of_day: bool, now_ms: int | None = None
) -> int | None:
    """``since`` / ``until``: epoch ms, ISO 8601 (a bare date covers its whole day), or a span
    counted back from ``now_ms`` (``90m``, ``24h``, ``7d``, ``2w``: :mod:`openclaw_fts.spans`;
    None: the clock now)."""
    if value is None:
        return None
    error = ToolInputError(
        f"{name} must be epoch milliseconds, an ISO 8601 date/time or a span back from now "
        f"({SPAN_EXAMPLES})"
    )
    if isinstance(value, str):
        stripped = value.strip()
        if span_ms(stripped) is not None:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            return back_from(now, stripped)
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
    now_ms: int | None = None,
) -> SearchRequest:
    """Validate search arguments (OpenClaw's messages) into a :class:`SearchRequest`;
    ``now_ms``: the instant spans in ``since`` / ``until`` count back from (None: the clock)."""
    if not isinstance(query, str):
        raise ToolInputError(EMPTY_QUERY_ERROR)
    trimmed = query.strip()
    if not trimmed:
        raise ToolInputError(EMPTY_QUERY_ERROR)
    if len(trimmed) > MAX_QUERY_CHARS // 2 and utf16_len(trimmed) > MAX_QUERY_CHARS:
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
        since=parse_time_bound(since, "since", end_of_day=False, now_ms=now_ms),
        until=parse_time_bound(until, "until", end_of_day=True, now_ms=now_ms),
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


#: Bytes a result item's JSON may take beyond 6 per character of its strings: its keys,
#: punctuation and numbers (at most ~190), and the ", " before it.
ITEM_FIXED_BYTES_BOUND = 256
#: Most UTF-8 bytes ``json.dumps(..., ensure_ascii=False)`` writes for one character (``\u001f``).
MAX_JSON_BYTES_PER_CHAR = 6


def _item_bytes(item: dict[str, Any]) -> int:
    return len(json.dumps(item, ensure_ascii=False).encode("utf-8"))


def _item_bytes_bound(item: dict[str, Any]) -> int:
    """An upper bound of ``_item_bytes(item)`` + 2 that costs no encoding."""
    chars = sum(len(v) for v in item.values() if isinstance(v, str))
    return ITEM_FIXED_BYTES_BOUND + MAX_JSON_BYTES_PER_CHAR * chars


def _unchanged(text: str) -> str:
    return text


def _search_time_mask(redactor: Redactor | None) -> Callable[[str], str]:
    """What a hit's text goes through before its snippet is cut.

    The backends' hit texts are already masked by the built-in rules (the index holds
    ``transcript.index_row``'s text, docs/redaction.md "The index"), and masking masked text
    changes nothing, so without host patterns they are used as they are (re-masking cost ~120
    µs per hit, about a third of a narrow search). A host's ``Redactor`` (extra patterns, or a
    subclass with its own rules) applies to what search returns, never to the index: its
    masking runs on every hit."""
    if redactor is None or (type(redactor) is Redactor and not redactor.extra_patterns):
        return _unchanged
    return lambda text: redact_text(text, redactor)


def add_warning(result: dict[str, Any], text: str) -> None:
    """Append ``text`` to the result's ``warning`` (after what is already there)."""
    result["warning"] = f"{result['warning']} {text}" if result.get("warning") else text


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
    per_session: bool = False,
    suggest: bool = True,
) -> dict[str, Any]:
    """Run validated searches (one, or a batch sharing ``sessionKey``, filters and limit) in one
    snapshot, in three steps: the explicit ``sessionKey`` resolved and judged
    (:func:`visibility.resolve_target`), the backend's page of hits
    (:meth:`~openclaw_fts.index.base.Reader.search_page`: the pending protocol, the ranking,
    the hits' texts and the suggestions), then that page shaped for the tool
    (:func:`shape_page`). ``per_session``: one hit per session key (its best), each with
    ``sessionHits``; the limit then counts sessions. ``suggest``: a query that found nothing
    gets near words and a prefix form the caller may search in ``warning``."""
    scoped = _resolve_key(conn, caller, reqs)
    if isinstance(scoped, dict):
        return scoped
    page = reader(conn).search_page(conn, caller, scoped, per_session=per_session, suggest=suggest)
    if page.indexing and on_pending is not None:
        on_pending()
    return shape_page(page, scoped, batch=batch, per_session=per_session, redactor=redactor)


def _resolve_key(
    conn: Connection, caller: Caller, reqs: Sequence[SearchRequest]
) -> Sequence[SearchRequest] | dict[str, Any]:
    """The requests with their shared explicit ``sessionKey`` resolved (an alias, a session
    id), or the ``forbidden`` / ``error`` answer when the caller may not search it."""
    session_key = reqs[0].session_key
    if session_key is None:
        return reqs
    target = resolve_target(conn, caller, session_key, action="search")
    if not isinstance(target, Target):
        return target
    return [replace(r, session_key=target.session_key) for r in reqs]


class _ResultsBudget:
    """The items of ``results`` whose JSON (as ``json.dumps(results, ensure_ascii=False)``
    writes it: ", " between items) stays within :data:`MAX_RESULTS_BYTES`. While the items'
    upper bounds fit, every item fits; exact sizes are counted only near the cap."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.full = False  # an item did not fit: nothing more is taken
        self._bound_used = 2  # the enclosing "[]"; an upper bound of the JSON so far
        self._exact_used: int | None = None  # the exact size, once it is needed

    def take(self, item: dict[str, Any]) -> bool:
        """Add ``item`` when it fits; False (and full) when it does not."""
        if self._exact_used is None:
            bound = _item_bytes_bound(item)
            if self._bound_used + bound <= MAX_RESULTS_BYTES:
                self._bound_used += bound
                self.items.append(item)
                return True
            used = 2 + sum(_item_bytes(r) + 2 for r in self.items)
            self._exact_used = used - (2 if self.items else 0)
        size = _item_bytes(item) + (2 if self.items else 0)
        if self._exact_used + size > MAX_RESULTS_BYTES:
            self.full = True
            return False
        self._exact_used += size
        self.items.append(item)
        return True


def _result_item(
    hit: Hit,
    snippet: str,
    *,
    query_index: int | None,
    session_hits: int | None,
) -> dict[str, Any]:
    """One hit as the tool shows it (docs/tools.md)."""
    _row_id, session_id, _seq, event_id, role, ts, key, rank = hit
    item: dict[str, Any] = {
        "sessionKey": key,
        "sessionId": session_id,
        "messageId": event_id,
        "role": role,
        "timestamp": int(ts),
        "snippet": snippet,
        "score": -float(rank) if rank is not None else 0.0,
    }
    if query_index is not None:
        item["queryIndex"] = query_index
    if session_hits is not None:
        item["sessionHits"] = session_hits
    return item


def shape_page(
    page: SearchPage,
    reqs: Sequence[SearchRequest],
    *,
    batch: bool,
    per_session: bool = False,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """The tool's answer for a backend's page: each hit's snippet cut from its (masked) text,
    camelCase keys, ``results`` within :data:`MAX_RESULTS_BYTES`, the indexing warning and
    the suggestions. A batch answers ``batch: true``, ``queries``, and each hit's
    ``queryIndex``; the queries whose hits were cut are listed in ``truncatedQueries``, and
    while sessions are pending ``indexingQueries`` lists every query (each may miss hits).
    ``results`` holds each query's hits in turn, and the byte cap applies to all of them
    together."""
    out: dict[str, Any] = {}
    if batch:
        out["batch"] = True
        out["queries"] = [r.query for r in reqs]
    out["results"] = []
    if page.indexing:
        out["indexing"] = True
        out["warning"] = INDEXING_WARNING
        if batch:
            out["indexingQueries"] = list(range(len(reqs)))
    mask = _search_time_mask(redactor)
    budget = _ResultsBudget()
    truncated_queries: list[int] = []
    for query_index, (req, found) in enumerate(zip(reqs, page.queries, strict=True)):
        if budget.full:  # no room left: a query with hits is cut whole
            if found.hits:
                truncated_queries.append(query_index)
            continue
        terms = req.compiled.terms if req.compiled is not None else []
        for hit in found.hits:
            item = _result_item(
                hit,
                make_snippet(mask(found.texts[hit[0]]), terms),
                query_index=query_index if batch else None,
                session_hits=found.session_hits[hit[0]] if per_session else None,
            )
            if not budget.take(item):
                break
        if found.more or budget.full:
            truncated_queries.append(query_index)
    out["results"] = budget.items
    for query_index, found in enumerate(page.queries):
        if found.suggestions:
            head = f"Query {query_index + 1}: " if batch else ""
            add_warning(out, head + suggestion_text(found.suggestions))
    if truncated_queries:
        out["truncated"] = True
        if batch:
            out["truncatedQueries"] = truncated_queries
    return out
