"""The search side of the PostgreSQL index: :class:`PostgresSearch`, the search part of
:class:`~.backend.PostgresqlBackend`.

Invariant: like the SQLite reader, visibility (``visibility.visible`` rendered for PostgreSQL),
the pending filter and every user filter sit in the same statement as the ``@@`` match, before
ORDER BY and LIMIT, so a hidden or pending session never consumes the limit. The query reaches
the server only as ONE bound parameter, the ``to_tsquery`` input written by
:func:`.query.render` (never user syntax). ``rank`` is ``-ts_rank(body_tsv, q, 1)``: LOWER is
better, so ``score`` (``-rank``) is ``ts_rank`` with normalisation 1 -- the weighted frequency
of the query's lexemes in the message, divided by ``1 + log(number of words)``; no corpus-wide
statistic (unlike bm25: a word's rarity does not count), comparable only within one query.
Statements run through SQLAlchemy ``text()`` with ``:name`` parameters. A one-word search of
a wide caller ranked by relevance (no ``sessionKey``) walks the word's impact list instead
(:mod:`.impact`: the same rows, ranks and order, visibility, the pending join and the
``role`` / ``since`` / ``until`` filters in the walking statement), when the list holds enough
visible rows that pass them. A narrow caller's rows come from one of two branches with the
same conditions: its sessions' rows tested one by one while those sessions hold at most
:data:`NARROW_SCAN_EVENTS` events, else the GIN match set joined to them -- the same rows either
way, ranked and ordered by the same outer ORDER BY. The statement carries both, a one-time
filter running one, or only the one the engine last learnt the caller's sessions pick
(:func:`_few_rows_hint`: it chooses a plan, never the rows). An ``agent`` caller's statement on
the flat layout carries three such branches (:func:`_agent_plans`), one-time filters on its
sessions' events and on whether the query's words are tracked choosing one.
The words suggested when nothing is found are proved with the visibility predicate in the
proving statement: sessions the caller cannot see never decide which words are suggested. A
narrow caller's near words are also counted among its visible messages (the count orders
them; for a narrow caller with few rows, the statement reads the lexemes of its visible rows,
and the counting is done on what it returned), so those sessions do not decide their order
either; a wide caller's (``agent``, ``all``) are ordered by their frequency over the whole
index, as SQLite's wide callers' are, and only the first ``want`` proved
(:meth:`PostgresSearch._most_frequent_visible`).
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import Connection, Engine, TextClause, text

from ...query import CompiledQuery
from ...redact.engine import MASK_ELLIPSIS
from ...rows import Hit, SearchRequest
from ...spelling import is_word_like, messages_holding, note_examined, one_edit
from ..hits import hit_texts, user_filters
from ..impact import (
    FREQUENT_TERM_MIN_DOCS,
    IMPACT_TABLE,
    TERMS_TABLE,
    fast_path_word,
    trackable,
)
from ..memo import keep_for_transaction, kept_for_transaction, predicate_key
from ..pending import EXACT_JOIN, EXACT_SESSION, pending_probe_sql
from ..suggest import OwnRows
from ..visibility_sql import visible
from . import impact
from .names import CONTENT_TABLE, TEXT_SEARCH_CONFIG, TSVECTOR_COLUMN
from .partition import agent_scope_sql, is_partitioned, visible_agents
from .pending_marks import has_marks
from .query import render

if TYPE_CHECKING:
    from ...caller import Caller

#: No JIT compilation for a search's statements: one whose cost estimate passed
#: ``jit_above_cost`` (an ``agent`` caller's search of a word no visible row holds, at 1m
#: messages under load: 184,074) spent 7 ms compiling, and none of the plugin's search
#: statements runs long enough to gain it back (bench/NOTES.md). Set with
#: :data:`FORCE_CUSTOM_PLAN`, for the transaction, and for the whole session of a connection
#: of an engine the plugin made (``connect.py``).
NO_JIT = "set_config('jit', 'off', true)"
#: Set for the search's transaction before the statements that take the caller's parameters
#: (the visibility probe and the ranked statement): psycopg prepares a statement from its 5th
#: execution on a connection, and PostgreSQL may then switch to a generic plan, in which
#: ``to_tsquery(cfg, $1)`` is not a constant and the visible-sessions path is not chosen
#: (measured: a narrow search of a common word took 14-25 ms instead of about 1 ms at 10k
#: hidden sessions; docs/postgresql.md). ``is_local``: it ends with the transaction. With it,
#: :data:`NO_JIT`.
FORCE_CUSTOM_PLAN = f"SELECT set_config('plan_cache_mode', 'force_custom_plan', true), {NO_JIT}"
#: A narrow caller (``self``, ``tree``) whose visible sessions hold at most this many events
#: (``last_seq + 1``, summed: an upper bound of their index rows) is searched from its sessions'
#: rows, each tested with ``@@`` (a nested loop over the ``session_id`` index that the planner
#: cannot turn into a GIN scan): the cost follows the sessions' size, not the word's frequency
#: over the whole index. Past it, the GIN match set joined to the visible sessions (the plan
#: every wider caller gets). 10,000 rows read that way took 6-22 ms of execution at 1m messages,
#: where the GIN plan took 1 ms for a rare word and up to 180 ms for a common one (bench/NOTES.md).
NARROW_SCAN_EVENTS = 10_000
#: The visibilities whose callers' rows may be read from their sessions one by one: the narrow
#: ones (while they hold at most :data:`NARROW_SCAN_EVENTS` events), and ``agent`` on the flat
#: layout (:func:`_row_scans`; when, :func:`_agent_plans`). For an ``agent`` caller the
#: planner's plan was a nested loop over the agent's sessions, each a ``BitmapAnd`` of the
#: ``session_id`` index with the word's WHOLE posting list, decoded once per session (7 ms
#: each for a word of 11,931 messages: 1.0-1.6 s for 200 sessions under load,
#: bench/NOTES.md). A caller who sees other agents' sessions (``all``) is left to the planner.
ROW_SCAN_VISIBILITIES = ("self", "tree", "agent")
#: ``ts_rank`` normalisation: divide by 1 + the logarithm of the document length (a long message
#: that mentions a word once ranks below a short one, as with bm25's length normalisation).
RANK_NORMALIZATION = 1
DIALECT = "postgresql"
#: Near words keep this many first letters of the misspelt word (as on SQLite).
NEAR_PREFIX_CHARS = 2
#: Most one-edit words of a misspelt word probed (or, for a narrow caller's own lexemes,
#: looked up). Unlike SQLite's vocabulary range, they are computed, ~74 per letter past the
#: shared head: the bound binds only for words longer than ~29 letters
#: (:data:`~openclaw_fts.suggest.MAX_CORRECTED_CHARS` stops at 32), so a word's slips are
#: all probed; what kept an identifier's probes from running is the word-like gate
#: (:func:`~openclaw_fts.spelling.term_is_word_like`).
MAX_ONE_EDIT_PROBES = 2048
#: Most messages counted over the whole index per near word of a wide caller that is not
#: tracked (:meth:`PostgresSearch._most_frequent_visible`; a tracked word's count is the one
#: it was tracked at, at least :data:`~openclaw_fts.index.impact.FREQUENT_TERM_MIN_DOCS`):
#: the count only orders its near words, and an untracked word is mostly a rare one, whose
#: GIN matches are few; two untracked words both held by this many messages or more are
#: ordered by the word.
NEAR_WORD_COUNT_CAP = 100
#: Most messages counted per suggested word of a narrow caller, and per word of
#: :meth:`PostgresSearch.visible_words` (the count only orders suggestions): messages the
#: caller may see, never of any session (a count over the whole index would let sessions the
#: caller cannot see decide which near word comes first).
WORD_COUNT_CAP = 1000

#: The first statement of a search: sets :data:`FORCE_CUSTOM_PLAN` for the transaction and reads
#: the snapshot (the key of the pending memo) and whether this transaction has written, in one
#: round trip.
_BEGIN_SEARCH_SQL = (
    f"SELECT set_config('plan_cache_mode', 'force_custom_plan', true), {NO_JIT}, "
    "pg_current_snapshot()::text, pg_current_xact_id_if_assigned()"
)
#: Where a pooled connection records that its session has ``plan_cache_mode`` set (every
#: connection of an engine the plugin made: ``PostgresqlConnections.own_engine``).
SESSION_CUSTOM_PLANS = "openclaw_fts_pg_session_custom_plans"
#: Where a pooled connection marks the transaction it set ``plan_cache_mode`` in.
_CUSTOM_PLAN_TXN = "openclaw_fts_pg_custom_plan_txn"
#: Where a pooled connection remembers, for the current transaction, which narrow callers'
#: sessions hold at most :data:`NARROW_SCAN_EVENTS` events (:func:`_few_caller_rows`).
_FEW_ROWS_MEMO = "openclaw_fts_pg_few_rows"
#: Uses of one answer of :func:`_few_rows_hint` (each search of the caller, and each of its
#: suggestions' statements that asks) before a search asks again. The answer
#: only picks which of two equivalent statements runs (the rows are the same, only the plan
#: differs), so a stale one costs time, never a wrong result. A search that asks again keeps
#: the stale answer's branch and adds the question as a column (:func:`_few_rows_plan`):
#: the statement with both branches, whose planning costs ~0.6 ms more (measured at 100k
#: messages: 1.4-1.6 ms against 0.8-0.9 ms, ``EXPLAIN ANALYZE``, bench/NOTES.md), runs only
#: while the engine has no answer at all.
FEW_ROWS_HINT_USES = 64
#: Most callers an engine keeps a hint for; a full table starts afresh.
FEW_ROWS_HINT_ENTRIES = 1024
#: Per engine (every pooled connection of it: a caller's searches take whichever is free),
#: whether a narrow caller's sessions held few events when last asked (:func:`_few_rows_hint`),
#: and how many more uses that answer has left. Forgotten with the engine.
_FEW_ROWS_HINTS: weakref.WeakKeyDictionary[Engine, dict[Any, list[Any]]] = (
    weakref.WeakKeyDictionary()
)
_FEW_ROWS_HINTS_LOCK = threading.Lock()
#: ``conn.info`` key of :func:`_own_lexemes`' answers, kept for one transaction.
_OWN_LEXEMES_MEMO = "openclaw_fts_pg_own_lexemes"
#: ``conn.info`` key of the words a count of :meth:`PostgresSearch.visible_words` proved held
#: by a visible row without any credential mask, per predicate, for one transaction: the
#: ``unmasked`` question is then answered without a statement.
_BARE_WORDS_MEMO = "openclaw_fts_pg_bare_words"
#: ``conn.info`` key of a wide caller's prefix-form counts, per predicate and word, for one
#: transaction: the count :meth:`PostgresSearch.visible_words` gives ``word*`` (up to
#: :data:`WORD_COUNT_CAP`), read by the statement of the word's near words
#: (:meth:`PostgresSearch._most_frequent_visible`), which the suggestions ask next.
_PREFIX_COUNTS_MEMO = "openclaw_fts_pg_prefix_counts"
#: Where a pooled connection remembers ``pending_visible`` answers for one snapshot.
_PENDING_VISIBLE_MEMO = "openclaw_fts_pg_pending_visible"
#: Where a pooled connection remembers which words have impact lists
#: (:meth:`PostgresSearch._tracked_words`).
_TRACKED_WORDS = "openclaw_fts_pg_tracked_words"
#: Where a pooled connection keeps the bodies of the last ranked rows for ``hit_texts`` (with a
#: weak reference to the transaction they were read in).
_HIT_BODIES = "openclaw_fts_pg_hit_bodies"
#: Most (visibility, sessionKey) answers one pooled connection remembers for one snapshot; a
#: new snapshot, or a full memo, starts it afresh.
PENDING_MEMO_ENTRIES = 64
#: The join of a ranked statement to the state of an exactly indexed session.
_CLEAN_JOIN = f"JOIN openclaw_index_state AS st ON {EXACT_JOIN} "
#: The snapshot this statement sees, and whether this transaction has written (an xid).
_SNAPSHOT_SQL = "SELECT pg_current_snapshot()::text, pg_current_xact_id_if_assigned()"
#: Where a pooled DBAPI connection remembers whether its last snapshot had pending sessions.
_PENDING_MEMO = "openclaw_fts_pg_any_pending"
_TSQUERY = f"to_tsquery('{TEXT_SEARCH_CONFIG}'::regconfig, :q)"
#: The match of the ``recent`` order's GIN reads (:func:`_recent_sql`): the query as an
#: uncorrelated subquery (an init plan: evaluated once, a parameter of the index scan) is no
#: constant when the statement is planned, so the planner gives ``@@`` its default selectivity
#: instead of reading the column's statistics; an index condition all the same.
_UNESTIMATED_MATCH = f"mi.{TSVECTOR_COLUMN} @@ (SELECT {_TSQUERY})"
#: The match of the ``recent`` order's walks of the newest rows (:func:`_recent_sql`):
#: ``ts_match_vq`` is the function of ``@@`` (the same test), which the planner neither
#: estimates from the column's statistics (a function: a fixed share) nor answers from the GIN
#: index, so the newest rows are read newest first through the time index, the match a filter.
_WALKED_MATCH = f"ts_match_vq(mi.{TSVECTOR_COLUMN}, {_TSQUERY})"
#: A wide caller's search ordered ``recent`` first looks among the newest index rows only, this
#: many of them (:func:`hits_sql`): with the time index (revision 0011) the planner walks them
#: newest first with the match as a filter and stops at the limit, instead of ranking and
#: sorting every match (bench/NOTES.md, "Filters on the fast paths"). When they hold fewer than
#: ``limit + 1`` visible matches, a second statement answers from every match
#: (:func:`recent_rest`).
RECENT_WALK_ROWS = 4096
#: The newest rows a query requiring several tracked words looks among first (the
#: ``newest-sparse`` plan of :data:`RecentPlan`): enough to answer when its matches are dense
#: (two very common words, where sorting every match took ~400 ms at 100k), few to read when
#: they are not (two common words: the GIN index then answers in a few milliseconds).
RECENT_SPARSE_WALK_ROWS = 512
#: How long an engine uses the time of its newest rows (:meth:`PostgresSearch._recent_floor`)
#: before it reads it again. Rows written meanwhile are newer: the walk reads them too.
RECENT_FLOOR_SECONDS = 1.0
#: Per engine, per number of newest rows: that time and when it was read. Forgotten with the
#: engine.
_RECENT_FLOORS: weakref.WeakKeyDictionary[Engine, dict[int, tuple[int, float]]] = (
    weakref.WeakKeyDictionary()
)
_RECENT_FLOORS_LOCK = threading.Lock()
#: The time at or after which those rows are (every row when the index holds fewer).
_RECENT_FLOOR = (
    f"coalesce((SELECT f.timestamp_ms FROM {CONTENT_TABLE} AS f ORDER BY f.timestamp_ms DESC "
    "OFFSET :recent_rows LIMIT 1), -9223372036854775808)"
)
#: How :func:`hits_sql` reads a wide caller's matches ordered ``recent`` (no ``sessionKey``):
#: ``newest`` looks among the :data:`RECENT_WALK_ROWS` newest rows and, when they hold fewer
#: than ``limit + 1`` matches, a second statement reads every match, the ``exact`` plan (the
#: planner walks the time index newest first for it: the one word the matches must hold is
#: tracked, frequent, so either walk stops early); ``sparse`` reads every match through the
#: GIN index and sorts them (a required word is not tracked: it has fewer matches than
#: ``FREQUENT_TERM_MIN_DOCS`` unless the writer has not promoted it yet, too few for the
#: newest rows of a caller who sees part of the index, and walking the time index for them
#: read thousands of rows: bench/NOTES.md, "Filters on the fast paths"); ``newest-sparse``
#: looks among the newest rows and, when they hold too few matches, as ``sparse`` in the same
#: statement (several tracked words are required: their matches together may be as many as
#: each word's, or few);
#: ``exact`` is the one statement, ordered and limited, the planner choosing (and the
#: reference the others are tested against). All give the same rows in the same order: the
#: choice is a plan, never the rows.
RecentPlan = Literal["exact", "newest", "sparse", "newest-sparse"]
#: The plan that reads every match after a ``newest`` statement found fewer than
#: ``limit + 1`` among the newest rows: a second statement, run only then (one statement
#: holding both, the second behind a one-time filter, cost its planning every time: 1.7-2.6
#: ms at 100k, against 3-4 ms for the whole search by relevance; rare for one tracked word).
#: ``newest-sparse`` holds its GIN read in its own statement: neither branch's match is
#: estimated (:func:`_recent_sql`), and its newest rows lack ``limit + 1`` matches for most
#: pairs of words (two statements planned the visibility and pending probe twice).
RECENT_FALLBACK: dict[RecentPlan, RecentPlan] = {"newest": "exact"}


def recent_rest(recent: RecentPlan, found: int, limit: int) -> RecentPlan | None:
    """The plan of the second statement of a search ordered ``recent`` whose first, of plan
    ``recent``, found ``found`` rows: :data:`RECENT_FALLBACK`'s when the newest rows held
    fewer than ``limit + 1`` matches, else None (the first statement answered)."""
    return RECENT_FALLBACK.get(recent) if found <= limit else None


def _required_words(compiled: CompiledQuery) -> list[str]:
    """The distinct words (sorted) that every match of ``compiled`` holds and that could be
    tracked: the tokens of each term that is alone in its group (an AND of groups; a phrase
    holds each of its tokens), a prefix term's last token excepted."""
    words: set[str] = set()
    for group in compiled.groups:
        if len(group) != 1:
            continue
        term = group[0]
        tokens = term.tokens[:-1] if term.prefix else term.tokens
        words.update(t for t in tokens if t and trackable(t))
    return sorted(words)


def _row_scans(caller: Caller, agents: list[str] | None) -> bool:
    """Whether ``caller``'s rows may be read from its sessions one by one
    (:data:`ROW_SCAN_VISIBILITIES`); ``agents``: the partitions a search on the partitioned
    layout reads, where an ``agent`` caller's GIN index holds its partition's agents only
    (the planner's join took 0.7-15 ms there at 1m messages, its rows one by one 3.3-6.8)."""
    if caller.is_narrow:
        return True
    return caller.effective_visibility in ROW_SCAN_VISIBILITIES and agents is None


def _visible_sql(caller: Caller, session_key: str | None) -> tuple[str, dict[str, Any]]:
    pred = visible(caller, "s", dialect=DIALECT)
    params: dict[str, Any] = dict(pred.params)
    if session_key is None:
        return pred.sql, params
    # PostgreSQL text cannot hold NUL: bound as NULL, such a key matches no session.
    params["only_key"] = None if "\x00" in session_key else session_key
    return f"({pred.sql} AND s.session_key = :only_key)", params


def _order_by(req: SearchRequest, *, rows: str, keys: str) -> str:
    """The result order, columns qualified by ``rows`` (the index row's) and ``keys`` (the
    session key's). COLLATE "C": keys and ids order by code point, as SQLite's BINARY does,
    whatever the database's collation. The row id last: two incarnations of one key may hold
    the same event id."""
    tail = f'{keys}session_key COLLATE "C", {rows}event_id COLLATE "C", {rows}id'
    if req.order == "recent":
        return f"{rows}timestamp_ms DESC, {tail}"
    return f"rank, {rows}timestamp_ms DESC, {tail}"


def with_bodies_sql(
    caller: Caller,
    req: SearchRequest,
    *,
    exact: bool,
    agents: list[str] | None = None,
    extra: str = "",
    few: bool | None = None,
    recent: RecentPlan = "exact",
    floor: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """:func:`hits_sql` with each returned row's ``body`` joined on AFTER the limit (ranking
    never carries the bodies of the rows it drops), in the same order."""
    ranked, params = hits_sql(
        caller, req, exact=exact, agents=agents, extra=extra, few=few, recent=recent, floor=floor
    )
    order = _order_by(req, rows="h.", keys="h.")
    scope = "" if agents is None else f" AND {agent_scope_sql('b', agents)[0]}"
    sql = (
        f"SELECT h.*, b.body FROM ({ranked}) AS h "
        f"JOIN {CONTENT_TABLE} AS b ON b.id = h.id{scope} ORDER BY {order}"
    )
    return sql, params


def _few_events_sql(where: str) -> str:
    """Whether the sessions ``s`` that satisfy ``where`` hold at most ``:narrow_events``
    events (:data:`NARROW_SCAN_EVENTS`), as a one-row statement."""
    return (
        "SELECT coalesce(sum(greatest(s.last_seq + 1, 0)), 0) <= :narrow_events "
        f"FROM openclaw_sessions AS s WHERE {where}"
    )


def _agent_plans(
    req: SearchRequest,
    where: str,
    agents: list[str] | None,
    params: dict[str, Any],
    head: str,
    pending: str,
    lateral: str,
    filters: str,
) -> str:
    """An ``agent`` caller's rows (:data:`ROW_SCAN_VISIBILITIES`), unordered: branches behind
    one-time filters, one of which runs, each the match, ``where`` (visibility) and ``filters``
    (``AND …``) over its own rows: ``lateral`` (its sessions' rows one by one), the GIN match
    set read ONCE (an ``OFFSET 0`` subquery) joined to the sessions, or the planner's join of
    the index to the sessions (``head``: the statement's select list up to ``FROM``;
    ``pending``: its join to the index state, or empty). Only the planner's branch has its
    match estimated (``@@`` with the query): the other two are fixed by their shape, and each
    estimate reads the column's most common lexemes at planning (:func:`_recent_sql`); so an
    absent identifier's search plans in about the time it did with the planner's join alone.
    When every match must hold some words that can be tracked (:func:`_required_words`): the
    rows one by one while the caller's sessions hold at most :data:`NARROW_SCAN_EVENTS` events
    and every such word is tracked (in :data:`~..impact.TERMS_TABLE`: it was in at least
    ``FREQUENT_TERM_MIN_DOCS`` messages; reading 10,000 events took 3-13 ms at 1m messages,
    whatever the word); the match set once when one is not (a word in few messages: 0.7-3 ms);
    else the planner's join. A query without such a word (an OR, a prefix) keeps the narrow
    callers' rule: its rows one by one while they are few, else the planner's join. The
    planner's join alone was a nested loop over the agent's sessions, each a ``BitmapAnd`` of
    the ``session_id`` index with the query's whole GIN posting list, decoded once per session
    (47-108 ms for a word of 4,000-9,000 messages, 1.0-1.6 s for one of 11,931 under load, at
    1m messages and 200 sessions: bench/NOTES.md). A tracked word's ``docs`` is no bound to
    choose by: it is its count when it was tracked (7,982 for a word in 803,195 messages at
    1m)."""
    assert req.compiled is not None
    params["narrow_events"] = NARROW_SCAN_EVENTS
    few = f"({_few_events_sql(where)})"
    match = f"mi.{TSVECTOR_COLUMN} @@ {_TSQUERY} AND {where} {filters}"
    walked = f"{_WALKED_MATCH} AND {where} {filters}"

    def joined(rows: str) -> str:
        return (
            f"{head}{rows} AS mi JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
            f"{pending}WHERE "
        )

    required = _required_words(req.compiled)
    if not required:
        return f"{lateral}{few} AND {walked} UNION ALL {joined(CONTENT_TABLE)}NOT {few} AND {match}"
    params.update(tracked_words=required, tracked_count=len(required))
    tracked = (
        f"(SELECT count(*) = :tracked_count FROM {TERMS_TABLE} AS tt "
        "WHERE tt.term = ANY(CAST(:tracked_words AS text[])))"
    )
    scope = "" if agents is None else f" AND {agent_scope_sql('x', agents)[0]}"
    # The match set's rows all match: their conditions are the rest.
    once = joined(
        f"(SELECT x.* FROM {CONTENT_TABLE} AS x WHERE x.{TSVECTOR_COLUMN} @@ "
        f"(SELECT {_TSQUERY}){scope} OFFSET 0)"
    )
    return (
        f"{lateral}{tracked} AND {few} AND {walked} UNION ALL "
        f"{once}NOT {tracked} AND {where} {filters} "
        f"UNION ALL {joined(CONTENT_TABLE)}{tracked} AND NOT {few} AND {match}"
    )


def _session_rows_sql(agents: list[str] | None) -> str:
    """The index rows of session ``s`` (a LATERAL subquery), read through the ``session_id``
    index: ``OFFSET 0`` keeps any ``@@`` of the outer statement out of it, so the planner
    cannot answer it from the GIN index instead."""
    rows = f"SELECT x.* FROM {CONTENT_TABLE} AS x WHERE x.session_id = s.session_id"
    if agents is not None:
        rows += f" AND {agent_scope_sql('x', agents)[0]}"
    return rows + " OFFSET 0"


def _recent_sql(
    req: SearchRequest,
    recent: RecentPlan,
    floor: int | None,
    wide_over: Callable[[str], str],
    visibility: str,
    filters: str,
    params: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """:func:`hits_sql` of a wide caller's ``recent`` order in plan ``recent`` (not
    ``exact``): ``wide_over(sessions)`` is the statement's head up to ``WHERE``, its sessions
    ``s`` read from ``sessions`` (a table or a CTE),
    ``visibility`` the condition on ``s``, ``filters`` the ``AND …`` conditions after it
    (``params`` gets the plan's own).

    The match is written so that planning never estimates it (:data:`_UNESTIMATED_MATCH`,
    :data:`_WALKED_MATCH`): these plans are fixed by the statement's shape, and estimating
    ``@@`` reads the column's most common lexemes (ten thousand of them, revision 0006) at
    every planning, 0.4-0.8 ms of a 1.0-1.6 ms planning at 100k (bench/NOTES.md)."""
    # ``OFFSET 0`` keeps the order out of the subquery: the planner cannot walk the time
    # index (reading rows until enough match) instead of the GIN index.
    outer = _order_by(req, rows="r.", keys="r.")
    wide = wide_over("openclaw_sessions")

    def gin(rows: str, conditions: str) -> str:
        return (
            f"SELECT r.* FROM ({rows}{_UNESTIMATED_MATCH} AND {conditions} OFFSET 0) AS r "
            f"ORDER BY {outer} LIMIT :lim"
        )

    if recent == "sparse":
        return gin(wide, f"{visibility} {filters}"), params
    # The newest rows' matches: the answer when they are ``limit + 1`` (every match they
    # leave out is older than all of them).
    sparse = recent == "newest-sparse"
    at = _RECENT_FLOOR
    if floor is None:
        params["recent_rows"] = RECENT_SPARSE_WALK_ROWS if sparse else RECENT_WALK_ROWS
    else:
        at = "CAST(:recent_floor AS bigint)"
        params["recent_floor"] = floor
    order = _order_by(req, rows="mi.", keys="s.")
    # Tracked words required (:meth:`PostgresSearch._recent_plan`): frequent, so the walk
    # stops early; without one (a prefix, an OR) the planner's estimate of the match picks
    # between the walk and the GIN index (for a rare prefix the walk reads every newest row).
    assert req.compiled is not None
    walked = (
        _WALKED_MATCH if _required_words(req.compiled) else f"mi.{TSVECTOR_COLUMN} @@ {_TSQUERY}"
    )

    def newest(rows: str, conditions: str) -> str:
        return (
            f"{rows}{walked} AND {conditions} AND mi.timestamp_ms >= {at} "
            f"ORDER BY {order} LIMIT :lim"
        )

    if not sparse:
        # Fewer: the caller runs the statement of RECENT_FALLBACK's plan.
        return newest(wide, f"{visibility} {filters}"), params
    # Fewer: every match, through the GIN index, in the same statement: the newest rows'
    # branch and this one each run only when the other does not (one-time filters on the
    # count of the newest rows' matches, read once). The visible sessions are written once
    # (``v``, inlined into each branch: the same plans): psycopg caches the parsing of a
    # statement of at most 4,096 bytes only, and with two copies of a wide caller's
    # visibility this one was 4.4-4.7 KB (0.15-0.35 ms of client CPU per search).
    rows = wide_over("v")
    enough = "(SELECT count(*) FROM n) >= :lim"
    sql = (
        f"WITH v AS NOT MATERIALIZED (SELECT s.* FROM openclaw_sessions AS s WHERE {visibility}), "
        f"n AS MATERIALIZED ({newest(rows, f'TRUE {filters}')}) SELECT n.* FROM n "
        f"WHERE {enough} UNION ALL (SELECT g.* FROM ({gin(rows, f'TRUE {filters}')}) AS g "
        f"WHERE NOT {enough})"
    )
    return sql, params


def hits_sql(
    caller: Caller,
    req: SearchRequest,
    *,
    exact: bool,
    agents: list[str] | None = None,
    unordered: bool = False,
    extra: str = "",
    few: bool | None = None,
    recent: RecentPlan = "exact",
    floor: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """The ranked statement and its parameters (``req.compiled`` must render). ``agents``: on the
    partitioned layout (:mod:`.partition`), every agent whose sessions the caller can see; only
    their partitions are read. ``unordered``: every visible match, without ORDER BY or LIMIT
    (what :func:`session_hits_sql` groups). ``extra``: one more ``AND …`` condition on the rows
    (``mi``) and their sessions (``s``), before ranking. ``few`` (a narrow caller; an ``agent``
    caller's statement always chooses, :func:`_agent_plans`): whether its sessions hold at most
    :data:`NARROW_SCAN_EVENTS` events, when known (:func:`_few_rows_hint`): only that branch is
    written; None writes both, the statement choosing. The rows are the same either way.
    ``recent``: a wide caller's plan for the ``recent`` order (:data:`RecentPlan`; ignored
    otherwise). ``floor``: for the ``newest`` plans, the time the newest rows are at or after
    (:meth:`PostgresSearch._recent_floor`); None reads it from the time index in the statement.
    Any value gives the same rows: a returned row is never older than it, and every match older
    than it is older than them all; it bounds the rows read (a match the newest rows lack is
    found by the second statement)."""
    assert req.compiled is not None
    tsquery = render(req.compiled)
    assert tsquery is not None
    where, params = _visible_sql(caller, req.session_key)
    params.update(q=tsquery, lim=req.limit + 1)
    filters = user_filters(req, params)
    if agents is not None:
        scope, scope_params = agent_scope_sql("mi", agents)
        filters = f"{filters} AND {scope}"
        params.update(scope_params)
    filters += extra
    pending = ""
    if not exact:
        pending = _CLEAN_JOIN
    head = (
        "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
        f"s.session_key, -ts_rank(mi.{TSVECTOR_COLUMN}, {_TSQUERY}, {RANK_NORMALIZATION}) "
        "AS rank FROM "
    )
    match = f"mi.{TSVECTOR_COLUMN} @@ {_TSQUERY} AND {where} {filters}"

    def wide_over(sessions: str) -> str:
        return (
            f"{head}{CONTENT_TABLE} AS mi JOIN {sessions} AS s ON s.session_id = mi.session_id "
            f"{pending}WHERE "
        )

    wide = wide_over("openclaw_sessions")
    walks = req.order == "recent" and req.session_key is None and recent != "exact"
    if not _row_scans(caller, agents) or walks:
        order = _order_by(req, rows="mi.", keys="s.")
        if unordered:
            return f"{wide}{match}", params
        if walks:
            return _recent_sql(req, recent, floor, wide_over, where, filters, params)
        return f"{wide}{match} ORDER BY {order} LIMIT :lim", params
    # A narrow or agent caller: its sessions' rows one by one when they are few (see
    # NARROW_SCAN_EVENTS, ROW_SCAN_VISIBILITIES).
    lateral = (
        f"{head}openclaw_sessions AS s CROSS JOIN LATERAL ({_session_rows_sql(agents)}) AS mi "
        f"{pending}WHERE "
    )
    if not caller.is_narrow:  # an agent caller: the statement always chooses
        both = _agent_plans(req, where, agents, params, head, pending, lateral, filters)
    elif few is None:
        params["narrow_events"] = NARROW_SCAN_EVENTS
        gate = f"({_few_events_sql(where)})"
        both = f"{lateral}{gate} AND {match} UNION ALL {wide}NOT {gate} AND {match}"
    else:
        both = f"{lateral if few else wide}{match}"
    if unordered:
        return both, params
    order = _order_by(req, rows="u.", keys="u.")
    return f"SELECT u.* FROM ({both}) AS u ORDER BY {order} LIMIT :lim", params


#: The pending condition of :func:`folded_sql`'s ranked rows: nothing visible is pending
#: (the statement's first CTE, ``p``, read once), or this row's session is exact.
_CLEAN_UNLESS_NONE_PENDING = f" AND (NOT (SELECT p.pending FROM p) OR {EXACT_SESSION})"


def folded_sql(
    caller: Caller,
    req: SearchRequest,
    *,
    memo: tuple[str, bool] | None,
    word: str | None = None,
    walk: bool = False,
    few: bool | None = None,
    ask: bool = False,
    recent: RecentPlan = "exact",
    floor: int | None = None,
    marked: bool = False,
    timed: bool = False,
) -> tuple[str, dict[str, Any]]:
    """A whole search in ONE statement: the snapshot it reads (the key of the pending memo),
    whether a session the caller may see (keyed ``req.session_key`` when given) is pending,
    and :func:`with_bodies_sql`'s rows, filtered by pending only when something is. The
    probe runs only when ``memo`` (a snapshot and its answer) is not this statement's
    snapshot, or this transaction has written (unmarked, it reads every visible session). At
    least one row: ``snapshot, wrote, pending, listed, tracked, few`` then the hit's columns
    (NULL when nothing matched), in result order. ``few``: :func:`hits_sql`'s; when it is None for a
    narrow caller, or ``ask``, the ``few`` column answers it (for :func:`_few_rows_hint`), else
    NULL.

    ``word``: the query's one word when an impact list could answer it
    (:func:`~..impact.fast_path_word`); ``tracked`` says whether it has a list (FALSE without
    ``word``). ``walk``: its list is walked instead of ranking every match
    (:func:`.impact.walk_sql`, the same pending filter; rows tied at the cut come along, so
    there may be more than ``limit + 1``), and ``listed`` says whether the walk found
    ``limit + 1`` visible rows. When it did not, the rows are not the answer: the caller runs
    the statement again without ``walk``. (The exact statement as a second branch skipped by
    a one-time filter would save that round trip in the rare case, but planning it doubles
    the planning time of every walk: 1.1 against 0.5-0.7 ms at 100k, measured with
    ``EXPLAIN ANALYZE``.) Without ``walk``, ``listed`` is FALSE. ``recent``, ``floor``:
    :func:`hits_sql`'s. ``marked``: the database keeps the pending marks (revision 0014), so
    the probe reads the marked sessions, not every visible one
    (:func:`~..pending.pending_probe_sql`). ``timed``: the list rows carry their time
    (:func:`.impact.timed`), so the walk drops the rows outside a ``since`` / ``until``
    window before the join."""
    assert word is not None or not walk
    where, visibility = _visible_sql(caller, req.session_key)
    params: dict[str, Any] = {
        "memo_snapshot": None if memo is None else memo[0],
        "memo_pending": bool(memo and memo[1]),
    }
    probe = pending_probe_sql(where, marked=marked)
    order = _order_by(req, rows="r.", keys="r.")
    head = (
        "WITH p AS MATERIALIZED (SELECT pg_current_snapshot()::text AS snapshot, "
        "pg_current_xact_id_if_assigned()::text AS wrote, CASE WHEN "
        "pg_current_xact_id_if_assigned() IS NULL "
        "AND pg_current_snapshot()::text = :memo_snapshot "
        f"THEN CAST(:memo_pending AS boolean) ELSE ({probe}) END AS pending)"
    )
    tracked = "FALSE AS tracked"
    asked = "CAST(NULL AS boolean) AS few"
    if caller.is_narrow and (few is None or ask):
        asked = f"({_few_events_sql(where)}) AS few"
        params["narrow_events"] = NARROW_SCAN_EVENTS
    if word is not None:
        params.update(impact.walk_params(word, req.limit + 1))
        tracked = impact.TRACKED_SQL
    if not walk:
        ranked, ranked_params = with_bodies_sql(
            caller,
            req,
            exact=True,
            extra=_CLEAN_UNLESS_NONE_PENDING,
            few=few,
            recent=recent,
            floor=floor,
        )
        params.update(ranked_params)
        sql = (
            f"{head} SELECT p.snapshot, p.wrote, p.pending, FALSE AS listed, {tracked}, "
            f"{asked}, r.* FROM p LEFT JOIN ({ranked}) AS r ON TRUE ORDER BY {order}"
        )
        return sql, params
    params.update(visibility)
    filters = user_filters(req, params)
    listed = impact.list_filters(req.since, req.until, params) if timed else ""
    rows = impact.walk_sql(where, "", f"{_CLEAN_UNLESS_NONE_PENDING} {filters}".rstrip(), listed)
    sql = (
        f"{head}, w AS MATERIALIZED ({rows}) SELECT p.snapshot, p.wrote, p.pending, "
        f"(SELECT count(*) FROM w) >= :impact_rows AS listed, {tracked}, {asked}, r.* FROM p "
        f"LEFT JOIN w AS r ON TRUE ORDER BY {order}"
    )
    return sql, params


def session_hits_sql(
    caller: Caller, req: SearchRequest, *, exact: bool, agents: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    """Each session key's best match (in the request's order) with the key's number of
    visible matches, keys in result order, ``limit + 1`` at most: grouped, counted, ordered
    and limited in the one statement, after visibility and every filter."""
    ranked, params = hits_sql(caller, req, exact=exact, agents=agents, unordered=True)
    inner = _order_by(req, rows="m.", keys="m.")
    outer = _order_by(req, rows="g.", keys="g.")
    sql = (
        "SELECT g.id, g.session_id, g.seq, g.event_id, g.role, g.timestamp_ms, g.session_key, "
        "g.rank, g.n FROM (SELECT m.*, row_number() OVER (PARTITION BY m.session_key "
        f"ORDER BY {inner}) AS rn, count(*) OVER (PARTITION BY m.session_key) AS n "
        f"FROM ({ranked}) AS m) AS g WHERE g.rn = 1 ORDER BY {outer} LIMIT :lim"
    )
    return sql, params


#: ``TextClause`` objects :func:`_statement` remembers.
STATEMENT_CACHE = 256


@functools.lru_cache(maxsize=STATEMENT_CACHE)
def _statement(sql: str) -> TextClause:
    """One ``TextClause`` per statement text (building one parses its ``:name`` parameters;
    a caller's searches repeat the same text with other values)."""
    return text(sql)


def _session_plans(conn: Connection) -> bool:
    """Whether every plan on this connection is custom without a setting per transaction: it
    has ``plan_cache_mode`` for its whole session (a connection of an engine the plugin made:
    ``PostgresqlConnections.own_engine``), or psycopg never prepares a statement on it
    (``prepare_threshold`` None: behind a transaction pooler, ``pooling.py``)."""
    if conn.info.get(SESSION_CUSTOM_PLANS):
        return True
    driver: Any = conn.connection.driver_connection
    return hasattr(driver, "prepare_threshold") and driver.prepare_threshold is None


#: The isolation level of a connection opened for one statement
#: (``snapshot_options(one_statement=True)``), and the one :func:`_one_snapshot` moves it to.
ONE_STATEMENT = "AUTOCOMMIT"
SNAPSHOT_ISOLATION = "REPEATABLE READ"


def _one_snapshot(conn: Connection) -> None:
    """Make a connection opened for one statement read one snapshot from its next statement
    on (a search that needs more than its one statement: a batch, suggestions, the
    partitioned layout). A no-op on any other connection."""
    if conn.get_execution_options().get("isolation_level") != ONE_STATEMENT:
        return
    if conn.in_transaction():
        conn.rollback()  # SQLAlchemy's own bookkeeping: autocommit has no transaction to end
    conn.execution_options(isolation_level=SNAPSHOT_ISOLATION)


def _custom_plans(conn: Connection) -> None:
    """:data:`FORCE_CUSTOM_PLAN`, unless the session or this transaction already has it (a
    search's ``pending_visible`` sets it; a savepoint rolled back in between would undo it,
    which costs only the plan choice)."""
    if _session_plans(conn):
        return
    _one_snapshot(conn)  # the setting is local to a transaction
    if kept_for_transaction(conn, _CUSTOM_PLAN_TXN) is None:
        conn.execute(text(FORCE_CUSTOM_PLAN))
        keep_for_transaction(conn, _CUSTOM_PLAN_TXN, True)


def _few_rows_hint(conn: Connection, caller: Caller, key: Any) -> bool | None:
    """For a narrow caller (``key``: :func:`~..memo.predicate_key` of its visibility):
    whether its sessions held at most :data:`NARROW_SCAN_EVENTS` events when its engine last
    learnt it (from a search's ``few`` column or the suggestions' read), for
    :data:`FEW_ROWS_HINT_USES` uses; None when it has not learnt it or that many uses have
    spent it (the statement that called asks; a search keeps the spent answer's branch and
    asks in its ``few`` column: :func:`_few_rows_plan`). Across transactions: the answer only
    picks the plan, never the rows."""
    if not caller.is_narrow:
        return None
    with _FEW_ROWS_HINTS_LOCK:
        hint = _FEW_ROWS_HINTS.get(conn.engine, {}).get(key)
        if hint is None or hint[1] <= 0:
            return None
        hint[1] -= 1
        return bool(hint[0])


def _few_rows_plan(conn: Connection, caller: Caller, key: Any) -> tuple[bool | None, bool]:
    """For a search's one statement (:func:`folded_sql`): which branch it carries
    (:func:`_few_rows_hint`'s answer; None: both, the statement choosing) and whether it asks
    again (its ``few`` column). Once the answer's uses are spent, the search keeps its branch
    and asks: a stale answer costs the plan of one more search, where the statement with both
    branches cost every 65th search of a narrow caller ~0.5 ms (planning 1.0-1.15 ms against
    0.6-0.7 at 100k messages, about 40% of the search; bench/NOTES.md). With no answer: both
    branches, asked."""
    if not caller.is_narrow:
        return None, False
    with _FEW_ROWS_HINTS_LOCK:
        hint = _FEW_ROWS_HINTS.get(conn.engine, {}).get(key)
        if hint is None:
            return None, True
        hint[1] -= 1
        return bool(hint[0]), hint[1] < 0


def _keep_few_rows_hint(conn: Connection, key: Any, few: bool) -> None:
    """Remember ``few`` for :func:`_few_rows_hint` (a full table starts afresh)."""
    with _FEW_ROWS_HINTS_LOCK:
        hints = _FEW_ROWS_HINTS.get(conn.engine)
        if hints is None or len(hints) >= FEW_ROWS_HINT_ENTRIES:
            hints = _FEW_ROWS_HINTS[conn.engine] = {}
        hints[key] = [few, FEW_ROWS_HINT_USES]


def _few_caller_rows(conn: Connection, caller: Caller) -> bool:
    """Whether ``caller`` is narrow and its visible sessions hold at most
    :data:`NARROW_SCAN_EVENTS` events (:func:`_few_events_sql`): asked once per caller and
    transaction (the suggestions of one search ask it for each statement they run), so call
    it after :func:`_one_snapshot`; taken from the engine's hint (:func:`_few_rows_hint`)
    while it has one. It picks how rows are counted, never which: a stale answer costs time."""
    if not caller.is_narrow:
        return False
    where, params = _visible_sql(caller, None)
    key = predicate_key(where, params)
    memo: dict[Any, bool] = kept_for_transaction(conn, _FEW_ROWS_MEMO) or {}
    if key not in memo:
        hint = _few_rows_hint(conn, caller, key)  # it picks a plan, as the answer does here
        if hint is None:
            params["narrow_events"] = NARROW_SCAN_EVENTS
            hint = bool(conn.execute(text(_few_events_sql(where)), params).scalar())
            _keep_few_rows_hint(conn, key, hint)
        memo[key] = hint
        keep_for_transaction(conn, _FEW_ROWS_MEMO, memo)  # a statement began it
    return memo[key]


def _is_own_lexeme(word: str) -> bool:
    """Lower-case ASCII letters and digits are their own lexemes under the column's
    configuration (unaccent and lower change nothing; the parser keeps them one token)."""
    return word.isascii() and word.isalnum() and word == word.lower()


def _one_edit_candidates(token: str, head: str) -> list[str]:
    """The words one edit away from ``token`` that keep its ``head`` and are their own
    lexemes, in :func:`~openclaw_fts.spelling.one_edit`'s order, at most
    :data:`MAX_ONE_EDIT_PROBES`: the candidate near words of both paths of
    :meth:`PostgresSearch.near_words`. Those of a word-like token are word-like too
    (:func:`~openclaw_fts.spelling.is_word_like`, as :func:`~openclaw_fts.spelling.nearest`
    keeps them on SQLite): letters only, no digit substituted or inserted, a quarter fewer
    GIN probes."""
    letters = is_word_like(token)
    words = [
        w
        for w in one_edit(token)
        if w.startswith(head) and _is_own_lexeme(w) and (not letters or w.isalpha())
    ]
    return words[:MAX_ONE_EDIT_PROBES]


def _prefix_query(head: str) -> str:
    """The ``tsquery`` text of lexemes starting with ``head``, quoted (``'pl':*``): what
    ``starts_with(lexeme, head)`` tests, lexeme by lexeme."""
    return "'" + head.replace("\\", "\\\\").replace("'", "''") + "':*"


def _own_lexemes(
    conn: Connection,
    caller: Caller,
    head: str,
    exact: bool,
    *,
    only_kept: bool = False,
    bare: bool = False,
) -> list[frozenset[str]] | None:
    """For a narrow caller with few rows (:func:`_few_caller_rows`): the lexemes starting with
    ``head`` of each of its visible rows that has one, in ONE statement over its sessions'
    rows (``tsvector_to_array`` of each row's ``tsvector``), kept for the transaction; None
    when its rows are not few. A search that found nothing asks, for one query word, whether
    the word is visible, which of its near words are and how often, and whether words
    starting with it are (``suggest``): each is a question about lexemes sharing the word's
    first :data:`NEAR_PREFIX_CHARS` letters, answered here from that one read instead of one
    statement each. When whether the rows are few is not known yet in this transaction, the
    same statement answers it first (the rows are read only if they are few). Called before
    :func:`_one_snapshot`: a search's suggestions answered here are this one statement after
    the search's, both in autocommit (no ``BEGIN``, no ``ROLLBACK``); "the transaction" of
    the memo is then SQLAlchemy's bookkeeping one, which ends with the search's connection.
    ``only_kept``: only what this transaction has read already (None when it has not).
    ``bare``: only the rows whose body holds no credential mask (the same read keeps them
    apart: whether a near word is said outside every mask is then answered without a
    transaction of its own, :meth:`PostgresSearch.visible_words` with ``unmasked``)."""
    if not caller.is_narrow:
        return None
    where, params = _visible_sql(caller, None)
    visibility = predicate_key(where, params)
    memo: dict[Any, OwnRows] = kept_for_transaction(conn, _OWN_LEXEMES_MEMO) or {}
    key = (visibility, head, exact)
    if only_kept:
        kept = memo.get(key)
        return None if kept is None else kept.bare if bare else kept.rows
    few: dict[Any, bool] = kept_for_transaction(conn, _FEW_ROWS_MEMO) or {}
    if few.get(visibility) is False or (
        visibility not in few and _few_rows_hint(conn, caller, visibility) is False
    ):
        return None
    if key not in memo:
        params.update(
            head=head,
            head_prefix=_prefix_query(head),
            narrow_events=NARROW_SCAN_EVENTS,
            ellipsis=MASK_ELLIPSIS,
        )
        rows = conn.execute(
            text(
                f"WITH few(ok) AS MATERIALIZED ({_few_events_sql(where)}) "
                "SELECT few.ok, own.lexemes, own.bare FROM few LEFT JOIN LATERAL ("
                # bare: the row's body holds no mask (the unmasked proof's strpos, per row)
                "SELECT array_agg(l.lexeme) AS lexemes, "
                "bool_and(strpos(mi.body, :ellipsis) = 0) AS bare FROM openclaw_sessions AS s "
                f"CROSS JOIN LATERAL ({_session_rows_sql(None)}) AS mi "
                # The lexemes alone (tsvector_to_array): unnest of the tsvector also builds
                # each lexeme's positions and weights (1.8 against 1.1 ms for 127 rows). Rows
                # without a lexeme starting with the head are skipped first, by the tsvector's
                # own prefix search (ts_match_vq: the @@ operator would have the planner
                # estimate it from the column's statistics, 0.24 ms of planning).
                f"CROSS JOIN LATERAL unnest(tsvector_to_array(mi.{TSVECTOR_COLUMN})) AS l(lexeme) "
                f"WHERE few.ok AND {where}{'' if exact else f' AND {EXACT_SESSION}'} "
                f"AND ts_match_vq(mi.{TSVECTOR_COLUMN}, CAST(:head_prefix AS tsquery)) "
                "AND starts_with(l.lexeme, :head) GROUP BY mi.id"
                ") AS own ON true"
            ),
            params,
        ).all()
        few[visibility] = bool(rows[0][0])
        _keep_few_rows_hint(conn, visibility, few[visibility])
        keep_for_transaction(conn, _FEW_ROWS_MEMO, few)  # the statement began it
        if not few[visibility]:
            return None
        held = [(frozenset(r[1]), bool(r[2])) for r in rows if r[1] is not None]
        memo[key] = OwnRows([x for x, _ in held], [x for x, bare_row in held if bare_row])
        keep_for_transaction(conn, _OWN_LEXEMES_MEMO, memo)
    return memo[key].bare if bare else memo[key].rows


def _most_first(counted: Sequence[tuple[str, int]], want: int) -> list[tuple[str, int]]:
    """The ``want`` words of ``counted`` held by the most messages (ties: the word)."""
    return sorted(counted, key=lambda wc: (-wc[1], wc[0]))[:want]


class PostgresSearch:
    """The search methods of :class:`~openclaw_fts.index.base.Reader` on PostgreSQL (one
    instance per process, shared by threads: what it remembers lives on the pooled connection,
    never on the instance)."""

    #: No: any commit anywhere changes the snapshot its memo is keyed by, and before revision
    #: 0014 the probe read every session (docs/postgresql.md); search asks
    #: ``pending_visible`` only.
    GLOBAL_PENDING_PROBE = False
    #: Whether a one-word search of a wide caller walks the word's impact list when it has one
    #: (:mod:`.impact`); off, every search takes the exact path.
    IMPACT_LISTS = True

    def any_pending(self, conn: Connection) -> bool:
        """Remembered per DBAPI connection for one snapshot: ``pg_current_snapshot()`` (xmin,
        xmax, in-progress ids) is PostgreSQL's ``PRAGMA data_version`` -- two equal snapshots
        see exactly the same committed rows. Not remembered once this transaction has written
        (its own rows are not in the key). Recomputed, the probe reads the marked sessions
        (revision 0014), else every session (docs/postgresql.md)."""
        key, wrote = conn.execute(text(_SNAPSHOT_SQL)).one()
        memo = conn.connection.info.get(_PENDING_MEMO)
        if wrote is None and memo is not None and memo[0] == key:
            return bool(memo[1])
        found = bool(conn.execute(text(pending_probe_sql(marked=has_marks(conn)))).scalar())
        if wrote is None:
            conn.connection.info[_PENDING_MEMO] = (key, found)
        return found

    def pending_visible(self, conn: Connection, caller: Caller, session_key: str | None) -> bool:
        """Remembered per pooled connection for one snapshot, like :meth:`any_pending`, per
        (visibility predicate, parameters). Since revision 0014 the probe reads the marked
        sessions (usually none) and the states at another version through their index;
        before, every session the caller may see (about 3 µs each: 59 ms for a wide caller at
        20,000 sessions, docs/postgresql.md), which the memo kept to once per commit. Sets
        ``plan_cache_mode`` for the transaction in the same round trip."""
        _one_snapshot(conn)
        where, params = _visible_sql(caller, session_key)
        _, _, snapshot, wrote = conn.execute(text(_BEGIN_SEARCH_SQL)).one()
        keep_for_transaction(conn, _CUSTOM_PLAN_TXN, True)
        key = (where, tuple(sorted(params.items(), key=lambda kv: kv[0])))
        memo: tuple[str, dict[Any, bool]] | None = conn.info.get(_PENDING_VISIBLE_MEMO)
        if wrote is None and memo is not None and memo[0] == snapshot and key in memo[1]:
            return memo[1][key]
        probe = pending_probe_sql(where, marked=has_marks(conn))
        found = bool(conn.execute(text(probe), params).scalar())
        if wrote is None:  # this transaction's own rows are not in the snapshot's key
            if memo is None or memo[0] != snapshot or len(memo[1]) >= PENDING_MEMO_ENTRIES:
                memo = (snapshot, {})
                conn.info[_PENDING_VISIBLE_MEMO] = memo
            memo[1][key] = found
        return found

    def pending_and_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest
    ) -> tuple[bool, list[Hit]] | None:
        """See the Reader protocol: :func:`folded_sql`, one round trip on a connection of an
        engine the plugin made (custom plans for its session; on another, ``plan_cache_mode``
        is set for the transaction first), a search one frequent word's impact list answers
        included. None on the partitioned layout (its partitions are chosen by a statement of
        their own)."""
        if req.compiled is None or render(req.compiled) is None or is_partitioned(conn):
            return None
        _custom_plans(conn)
        where, params = _visible_sql(caller, req.session_key)
        key = (where, tuple(sorted(params.items(), key=lambda kv: kv[0])))
        memo: tuple[str, dict[Any, bool]] | None = conn.info.get(_PENDING_VISIBLE_MEMO)
        known = memo[1].get(key) if memo is not None else None
        visibility = predicate_key(where, params)
        few, ask = _few_rows_plan(conn, caller, visibility)
        rows = self._folded_rows(
            conn,
            caller,
            req,
            memo=None if memo is None or known is None else (memo[0], known),
            few=few,
            ask=ask,
        )
        snapshot, wrote, pending = rows[0][0], rows[0][1], bool(rows[0][2])
        if rows[0][5] is not None:
            _keep_few_rows_hint(conn, visibility, bool(rows[0][5]))
        if wrote is None:
            if memo is None or memo[0] != snapshot or len(memo[1]) >= PENDING_MEMO_ENTRIES:
                memo = (snapshot, {})
                conn.info[_PENDING_VISIBLE_MEMO] = memo
            memo[1][key] = pending
        found = [r[6:] for r in rows if r[6] is not None][: req.limit + 1]
        # for hit_texts, in this transaction (index rows never change)
        keep_for_transaction(conn, _HIT_BODIES, {int(r[0]): str(r[8]) for r in found})
        return pending, [(r[0], r[1], r[2], r[3], r[4], r[5], r[6], float(r[7])) for r in found]

    def _folded_rows(
        self,
        conn: Connection,
        caller: Caller,
        req: SearchRequest,
        *,
        memo: tuple[str, bool] | None,
        few: bool | None,
        ask: bool = False,
    ) -> Sequence[Any]:
        """:func:`folded_sql`'s rows: from the query's word's impact list when it has one
        word, the caller is wide, the word is tracked and its list holds enough visible rows
        (column 3, ``listed``), else ranked. Whether a word is tracked is remembered per
        pooled connection (:meth:`_tracked_words`) and corrected by every such statement
        (column 4, ``tracked``), so a word not tracked costs no walk. A walk that does not
        answer costs a second statement, with its own snapshot and pending answer (the
        first's snapshot as the memo: the probe runs again only if a commit came in
        between). Either way the rows are exact: a list answers only with enough rows."""
        word = fast_path_word(req) if self.IMPACT_LISTS and not caller.is_narrow else None
        marked = has_marks(conn)
        if word is None:
            recent = self._recent_plan(conn, caller, req)
            floor = self._recent_floor(conn, recent)
            sql, params = folded_sql(
                caller,
                req,
                memo=memo,
                few=few,
                ask=ask,
                recent=recent,
                floor=floor,
                marked=marked,
            )
            rows = conn.execute(_statement(sql), params).all()
            rest = recent_rest(recent, sum(r[6] is not None for r in rows), req.limit)
            if rest is None:
                return rows
            if rows[0][1] is None:
                memo = (str(rows[0][0]), bool(rows[0][2]))
            sql, params = folded_sql(caller, req, memo=memo, few=few, recent=rest, marked=marked)
            return conn.execute(_statement(sql), params).all()
        tracked = self._tracked_words(conn)
        if word in tracked:
            sql, params = folded_sql(
                caller,
                req,
                memo=memo,
                word=word,
                walk=True,
                marked=marked,
                timed=impact.timed(conn),
            )
            rows = conn.execute(_statement(sql), params).all()
            if rows[0][3]:
                return rows
            if rows[0][1] is None:
                memo = (str(rows[0][0]), bool(rows[0][2]))
        sql, params = folded_sql(caller, req, memo=memo, word=word, marked=marked)
        rows = conn.execute(_statement(sql), params).all()
        if rows[0][4]:
            tracked.add(word)
        else:
            tracked.discard(word)
        return rows

    def _recent_plan(self, conn: Connection, caller: Caller, req: SearchRequest) -> RecentPlan:
        """How a search ordered ``recent`` reads its matches (:data:`RecentPlan`): ``newest``
        when its matches must hold no word (:func:`_required_words`: a prefix, an OR) or one
        word that is tracked as this pooled connection knows (:meth:`_tracked_words`),
        ``newest-sparse`` when they must hold several and all are tracked, else ``sparse``;
        ``exact`` for a narrow caller, a ``sessionKey``, another order, or with the fast
        paths off. A word tracked since this connection learnt the set costs the ``sparse``
        plan (every match sorted) until the connection learns it; the rows are the same."""
        if (
            req.order != "recent"
            or req.session_key is not None
            or caller.is_narrow
            or not self.IMPACT_LISTS
            or req.compiled is None
        ):
            return "exact"
        required = _required_words(req.compiled)
        if not required:
            return "newest"
        tracked = self._tracked_words(conn)
        if any(word not in tracked for word in required):
            return "sparse"
        return "newest" if len(required) == 1 else "newest-sparse"

    @staticmethod
    def _recent_floor(conn: Connection, recent: RecentPlan) -> int | None:
        """For a ``newest`` plan, the time at or after which the newest
        :data:`RECENT_WALK_ROWS` (``newest-sparse``: :data:`RECENT_SPARSE_WALK_ROWS`) index
        rows are, as this engine last read it, for :data:`RECENT_FLOOR_SECONDS` (read again
        after: the rows written since are read too until then); None for another plan. Any
        floor gives the same rows (:func:`hits_sql`); a bound parameter instead of the
        statement's own read of the time index saved ~1 ms of a 9 ms search at load 5 (its
        4,097 newest entries, and the planner then knows how many rows the bound keeps)."""
        if recent not in RECENT_FALLBACK:
            return None
        rows = RECENT_SPARSE_WALK_ROWS if recent == "newest-sparse" else RECENT_WALK_ROWS
        now = time.monotonic()
        with _RECENT_FLOORS_LOCK:
            kept = _RECENT_FLOORS.get(conn.engine, {}).get(rows)
        if kept is not None and now - kept[1] < RECENT_FLOOR_SECONDS:
            return kept[0]
        read = conn.execute(text(f"SELECT {_RECENT_FLOOR}"), {"recent_rows": rows})
        floor = int(read.scalar_one())
        with _RECENT_FLOORS_LOCK:
            _RECENT_FLOORS.setdefault(conn.engine, {})[rows] = (floor, now)
        return floor

    @staticmethod
    def _tracked_words(conn: Connection) -> set[str]:
        """The words with an impact list, as this pooled connection last learnt them: read
        once when it first searches (:data:`.impact.TRACKED_WORDS_SQL`), then kept up to date
        by each one-word search's ``tracked`` column. A word tracked since is walked from its
        next search on; a stale entry costs one walk that finds nothing."""
        words: set[str] | None = conn.info.get(_TRACKED_WORDS)
        if words is None:
            words = {str(r[0]) for r in conn.execute(text(impact.TRACKED_WORDS_SQL))}
            conn.info[_TRACKED_WORDS] = words
        return words

    def ranked_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[Hit]:
        if req.compiled is None or render(req.compiled) is None:
            return []
        _one_snapshot(conn)
        _custom_plans(conn)
        agents = visible_agents(conn, caller) if is_partitioned(conn) else None
        rows = self._impact_rows(conn, caller, req, exact=exact, agents=agents)
        if rows is None:
            recent = self._recent_plan(conn, caller, req)
            floor = self._recent_floor(conn, recent)
            sql, params = with_bodies_sql(
                caller, req, exact=exact, agents=agents, recent=recent, floor=floor
            )
            rows = conn.execute(text(sql), params).all()
            rest = recent_rest(recent, len(rows), req.limit)
            if rest is not None:  # too few matches among the newest rows
                sql, params = with_bodies_sql(caller, req, exact=exact, agents=agents, recent=rest)
                rows = conn.execute(text(sql), params).all()
        # for hit_texts, in this transaction (index rows never change)
        keep_for_transaction(conn, _HIT_BODIES, {int(r[0]): str(r[8]) for r in rows})
        return [(r[0], r[1], r[2], r[3], r[4], r[5], r[6], float(r[7])) for r in rows]

    def _impact_rows(
        self,
        conn: Connection,
        caller: Caller,
        req: SearchRequest,
        *,
        exact: bool,
        agents: list[str] | None,
    ) -> Sequence[Any] | None:
        """The ranked rows (with their bodies) from the query's word's impact list
        (:mod:`.impact`; the ``role`` / ``since`` / ``until`` filters in the walking
        statement), or None when the exact path must answer: not one frequent word, a
        ``sessionKey``, the ``recent`` order, a narrow caller, or too few visible rows that
        pass the filters in the list."""
        word = fast_path_word(req) if self.IMPACT_LISTS and not caller.is_narrow else None
        if word is None:
            return None
        where, params = _visible_sql(caller, None)
        scope = ""
        if agents is not None:
            scope_sql, scope_params = agent_scope_sql("mi", agents)
            scope = f" AND {scope_sql}"
            params.update(scope_params)
        filters = user_filters(req, params)
        listed = impact.list_filters(req.since, req.until, params) if impact.timed(conn) else ""
        condition = "" if exact else f" AND {EXACT_SESSION}"
        return impact.top_rows(
            conn,
            word,
            req.limit + 1,
            where,
            params,
            condition=f"{condition} {filters}".rstrip(),
            scope=scope,
            listed=listed,
        )

    def session_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[tuple[Hit, int]]:
        """One hit per session key with its visible match count (:func:`session_hits_sql`)."""
        if req.compiled is None or render(req.compiled) is None:
            return []
        _one_snapshot(conn)
        _custom_plans(conn)
        agents = visible_agents(conn, caller) if is_partitioned(conn) else None
        sql, params = session_hits_sql(caller, req, exact=exact, agents=agents)
        rows = conn.execute(text(sql), params).all()
        return [((r[0], r[1], r[2], r[3], r[4], r[5], r[6], float(r[7])), int(r[8])) for r in rows]

    def near_words(
        self,
        conn: Connection,
        caller: Caller,
        token: str,
        *,
        max_distance: int,
        want: int,
        exact: bool = False,
    ) -> list[tuple[str, int]]:
        """See the Reader protocol. PostgreSQL keeps no vocabulary of the index (``ts_stat``
        reads every row), so the candidates are the words ONE edit away
        (:func:`~openclaw_fts.spelling.one_edit`) that keep the token's first
        :data:`NEAR_PREFIX_CHARS` letters, as on SQLite. For a narrow caller, a first
        statement keeps those that are lexemes of the index at all: one GIN lookup each (a
        LATERAL probe per candidate, so the planner sees one lexeme at a time; an OR of
        hundreds of lexemes is estimated to match most rows and read by a sequential scan --
        measured 1.3 s at 15k rows);
        the few found are then proved visible, and counted among the messages the caller may
        see, by :meth:`visible_words`. One whose sessions hold at most
        :data:`NARROW_SCAN_EVENTS` events takes instead the lexemes of its own rows that
        share the token's head and are one edit away (:func:`_own_lexemes`: one statement,
        shared with :meth:`visible_words` for the same word), counted there (a GIN lookup
        builds the candidate's whole posting list, so the probes cost what the candidates'
        frequencies over the whole index do: 7.8 ms for 107 candidates at 1m messages, and
        counting a frequent one over the index 225 ms at 10m, bench/NOTES.md): the words
        :meth:`visible_words` would give, with the counts it would give below
        :data:`WORD_COUNT_CAP`. A wide caller's candidates are ordered by their frequency
        over the whole index and proved visible until ``want`` are, in one statement
        (:meth:`_most_frequent_visible`: a tracked one is not probed). ``max_distance``
        beyond 1 is not reached here."""
        if len(token) <= NEAR_PREFIX_CHARS or max_distance < 1:
            return []
        head = token[:NEAR_PREFIX_CHARS]
        _custom_plans(conn)
        # Before _one_snapshot: answered from one statement, it needs no transaction.
        own = _own_lexemes(conn, caller, head, exact)
        if own is not None:
            # The lexemes of the caller's own rows, counted there: as many rows as its
            # sessions hold (a GIN probe per candidate would read the candidate's whole
            # posting list). Each is visible (the rows are), and its count is the number
            # of the caller's messages that hold it (a tsvector holds a lexeme once).
            # The candidates are those of its lexemes one edit away (the words of
            # one_edit below that the rows hold: each keeps the token's head, and a lexeme
            # of lower-case ASCII letters and digits is one edit away exactly when it is
            # at optimal string alignment distance 1).
            # At most MAX_ONE_EDIT_PROBES of them (the cap of the path below, whose candidate
            # words these are), in one_edit's order: the same cap, the same words first.
            held = {x for lexemes in own for x in lexemes}
            examined = _one_edit_candidates(token, head)
            note_examined("postgresql own lexemes", token, len(examined))
            near = [w for w in examined if w in held]
            return _most_first([(w, messages_holding(own, w, prefix=False)) for w in near], want)
        _one_snapshot(conn)  # enable_seqscan below is set for the transaction
        # Lower-case ASCII letters and digits are their own lexemes under the column's
        # configuration (unaccent and lower change nothing): cast, not parsed per candidate.
        # At most MAX_ONE_EDIT_PROBES probes, in one_edit's order (deletions and
        # transpositions first, the commonest slips): a GIN probe each.
        candidates = _one_edit_candidates(token, head)
        note_examined("postgresql one-edit probes", token, len(candidates))
        if not candidates:
            return []
        # Inside the LATERAL the lexeme is an outer reference, estimated at the default
        # selectivity: a LIMIT 1 then looks cheaper as a sequential scan, which for a lexeme
        # no row holds reads the whole table, per candidate (measured 22 s for 480 candidates
        # at 15k rows). Index lookups only, for this statement.
        if not caller.is_narrow:
            return self._most_frequent_visible(conn, caller, token, candidates, want, exact)
        previous = conn.execute(
            text(
                "SELECT current_setting('enable_seqscan'), "
                "set_config('enable_seqscan', 'off', true)"
            )
        ).one()[0]
        # The setting goes back in the same statement (one round trip less): a statement is
        # planned before it runs, so the probes keep the plan made without sequential scans,
        # and the reset (the outer side of the LEFT JOIN, one row) runs before them.
        present = [
            str(r[0])
            for r in conn.execute(
                text(
                    "SELECT p.w FROM (SELECT set_config('enable_seqscan', :v, true)) AS reset(v) "
                    "LEFT JOIN LATERAL (SELECT c.w, c.n FROM unnest(CAST(:words AS text[])) "
                    "WITH ORDINALITY AS c(w, n) "
                    f"CROSS JOIN LATERAL (SELECT 1 FROM {CONTENT_TABLE} AS x "
                    f"WHERE x.{TSVECTOR_COLUMN} @@ CAST(quote_literal(c.w) AS tsquery) "
                    "LIMIT 1) AS hit) AS p ON true ORDER BY p.n"
                ),
                {"words": candidates, "v": previous},
            )
            if r[0] is not None
        ]
        return self.visible_words(conn, caller, present, want=want, exact=exact)

    @staticmethod
    def _most_frequent_visible(
        conn: Connection,
        caller: Caller,
        token: str,
        candidates: list[str],
        want: int,
        exact: bool,
    ) -> list[tuple[str, int]]:
        """A wide caller's near words (:meth:`near_words`): of ``candidates``, the ``want``
        most frequent over the whole index that a message the caller may see holds, each with
        that index-wide count -- the order SQLite's wide callers have (FTS5's vocabulary,
        counted over every session). One statement, planned without sequential scans (as
        the probes of :meth:`near_words`; it puts the setting back itself, first). A tracked
        word (:data:`TERMS_TABLE`, kept by the writer) is known present, with the count it
        was tracked at (at least :data:`FREQUENT_TERM_MIN_DOCS`, as on SQLite): no GIN
        lookup, whose bitmap is its whole posting list. Any other is counted over the index
        up to :data:`NEAR_WORD_COUNT_CAP` (a rare word's short posting list; one no row
        holds: one lookup). In that order
        (ties: the word), each is then proved visible by its first visible message, with the
        visibility predicate in the proof, until ``want`` are: no candidate is counted among
        the visible messages (up to :data:`WORD_COUNT_CAP` each, the order's cost before,
        bench/NOTES.md). Which words are suggested still depends only on what the caller may
        see; their order, and which are kept past ``want``, on the whole index. The proof
        also reads whether that first message's body holds no credential mask, kept for the
        transaction (:data:`_BARE_WORDS_MEMO`), as :meth:`visible_words`' count does. The same
        statement counts the visible messages holding a word that starts with ``token`` (its
        prefix form, which the suggestions ask next), as :meth:`visible_words` would, and
        keeps the answer for the transaction (:data:`_PREFIX_COUNTS_MEMO`): one statement and
        round trip fewer for a search that finds nothing."""
        where, params = _visible_sql(caller, None)
        if not exact:
            where = f"({where} AND {EXACT_SESSION})"
        visibility = predicate_key(where, params)
        bare_key = (visibility, False)
        prefixes: dict[Any, int] = kept_for_transaction(conn, _PREFIX_COUNTS_MEMO) or {}
        prefix_key = (visibility, token)
        previous = conn.execute(
            text(
                "SELECT current_setting('enable_seqscan'), "
                "set_config('enable_seqscan', 'off', true)"
            )
        ).one()[0]
        params.update(
            words=candidates,
            v=previous,
            cap=NEAR_WORD_COUNT_CAP,
            min_docs=FREQUENT_TERM_MIN_DOCS,
            want=want,
            ellipsis=MASK_ELLIPSIS,
            token=token,
            word_cap=WORD_COUNT_CAP,
        )
        # The prefix form's count, as visible_words counts it (unless this transaction has it).
        prefix_count = (
            "0, false"
            if prefix_key in prefixes
            else "pc.n, (SELECT strpos(b.body, :ellipsis) = 0 "
            f"FROM {CONTENT_TABLE} AS b WHERE b.id = pc.first)"
        )
        prefix_join = (
            ""
            if prefix_key in prefixes
            else "CROSS JOIN LATERAL (SELECT count(*) AS n, min(r.id) AS first FROM (SELECT mi.id "
            f"FROM {CONTENT_TABLE} AS mi JOIN openclaw_sessions AS s "
            f"ON s.session_id = mi.session_id WHERE mi.{TSVECTOR_COLUMN} @@ "
            f"to_tsquery('{TEXT_SEARCH_CONFIG}'::regconfig, :token || ':*') AND {where} "
            "LIMIT :word_cap) AS r) AS pc "
        )
        lexeme = "CAST(quote_literal({}) AS tsquery)"
        gin_match = f"mi.{TSVECTOR_COLUMN} @@ {lexeme.format('f.w')}"
        visible_row = (
            "JOIN openclaw_sessions AS s ON s.session_id = mi.session_id WHERE {} "
            f"AND {where} LIMIT 1"
        )
        rows = conn.execute(
            text(
                f"SELECT k.w, k.docs, k.bare, {prefix_count} FROM "
                f"(SELECT set_config('enable_seqscan', :v, true)) AS reset(v) {prefix_join}"
                "LEFT JOIN LATERAL (SELECT f.w, f.docs, (SELECT strpos(b.body, :ellipsis) = 0 "
                f"FROM {CONTENT_TABLE} AS b WHERE b.id = h.id) AS bare FROM ("
                # The tracked candidates first, by the count they were tracked at; the
                # others after them (UNION ALL runs its parts in turn: when the first gives
                # the want-th visible word, the second part, and its counts, never run).
                "(SELECT t.term AS w, greatest(t.docs, :min_docs) AS docs, "
                "t.avg_len >= 0 AS listed FROM unnest(CAST(:words AS text[])) AS c(w) "
                f"JOIN {TERMS_TABLE} AS t ON t.term = c.w "
                'ORDER BY docs DESC, t.term COLLATE "C") '
                # An untracked one is probed first (its first GIN match: one lookup when no row
                # holds it), then counted, up to the cap.
                "UNION ALL (SELECT c.w, (SELECT count(*) FROM (SELECT 1 "
                f"FROM {CONTENT_TABLE} AS x WHERE x.{TSVECTOR_COLUMN} @@ {lexeme.format('c.w')} "
                "LIMIT :cap) AS z) AS n, false FROM unnest(CAST(:words AS text[])) AS c(w) "
                f"CROSS JOIN LATERAL (SELECT 1 FROM {CONTENT_TABLE} AS x "
                f"WHERE x.{TSVECTOR_COLUMN} @@ {lexeme.format('c.w')} LIMIT 1) AS hit "
                f"WHERE NOT EXISTS (SELECT 1 FROM {TERMS_TABLE} AS t WHERE t.term = c.w) "
                'ORDER BY n DESC, c.w COLLATE "C")) AS f '
                # Each proved by its first visible message, in that order (the nested loop
                # keeps it), until the want-th: a tracked word's from its impact list (rows
                # that hold it, read by the list's index: no GIN bitmap of its posting list),
                # else from its GIN matches.
                "CROSS JOIN LATERAL (SELECT p.id FROM ((SELECT mi.id "
                f"FROM {IMPACT_TABLE} AS i JOIN {CONTENT_TABLE} AS mi ON mi.id = i.row_id "
                f"{visible_row.format('f.listed AND i.term = f.w')}) UNION ALL (SELECT mi.id "
                f"FROM {CONTENT_TABLE} AS mi {visible_row.format(gin_match)})"
                ") AS p LIMIT 1) AS h LIMIT :want) AS k ON true"
            ),
            params,
        ).all()
        proved = [(str(r[0]), int(r[1]), bool(r[2])) for r in rows if r[0] is not None]
        if any(bare for _, _, bare in proved):
            memo: dict[Any, set[str]] = kept_for_transaction(conn, _BARE_WORDS_MEMO) or {}
            memo[bare_key] = memo.get(bare_key, set()) | {w for w, _, bare in proved if bare}
            keep_for_transaction(conn, _BARE_WORDS_MEMO, memo)
        if prefix_key not in prefixes:
            prefixes[prefix_key] = int(rows[0][3])
            keep_for_transaction(conn, _PREFIX_COUNTS_MEMO, prefixes)
            if rows[0][4]:  # its lowest counted row holds no mask, as visible_words keeps it
                memo = kept_for_transaction(conn, _BARE_WORDS_MEMO) or {}
                memo[(visibility, True)] = memo.get((visibility, True), set()) | {token}
                keep_for_transaction(conn, _BARE_WORDS_MEMO, memo)
        return _most_first([(w, n) for w, n, _ in proved], want)

    def visible_words(
        self,
        conn: Connection,
        caller: Caller,
        words: Sequence[str],
        *,
        prefix: bool = False,
        want: int = 1,
        exact: bool = False,
        unmasked: bool = False,
        counted: bool = True,
    ) -> list[tuple[str, int]]:
        """See the Reader protocol. One statement counts, for each word, the messages the
        caller may see that hold it, up to :data:`WORD_COUNT_CAP` (the visibility predicate
        inside the count; a word counted 0 is not visible): the count both proves the word
        and orders the words. No vocabulary table: a word no message holds costs one index
        lookup. A narrow caller whose sessions hold at most :data:`NARROW_SCAN_EVENTS` events
        (:func:`_few_caller_rows`) has its sessions' rows tested one by one (no GIN probe,
        whose bitmap is the word's whole posting list); any other caller's count is the
        word's GIN matches joined to their sessions until :data:`WORD_COUNT_CAP` visible ones
        are found -- the word's whole GIN bitmap (as every search of the word reads), and at
        worst every match of the word, when the caller sees few of them. ``unmasked``: the
        same statement, each word's messages limited to those whose body holds no credential
        mask, and only the first such message looked for (not counted). ``counted=False``:
        the same statement, only the first visible message of each word looked for (a
        search that found nothing asks it for every word of its query: counting a common
        word's messages up to the cap, word by word, cost more than the search). A narrow
        caller with few rows has the words of one head answered from its rows' lexemes
        (:func:`_own_lexemes`): counted, or a prefix, read if need be; ``unmasked`` (from its
        rows without a mask) and ``counted=False`` only when this transaction read them."""
        plain = [w for w in dict.fromkeys(words) if w.isalnum()]  # no tsquery syntax
        if not plain:
            return []
        _custom_plans(conn)
        heads = {w[:NEAR_PREFIX_CHARS] for w in plain}
        own_words = len(heads) == 1 and all(
            _is_own_lexeme(w) and len(w) >= NEAR_PREFIX_CHARS for w in plain
        )
        # A narrow caller's words from its rows' lexemes (:func:`_own_lexemes`, one read the
        # suggestions of a word share): ``unmasked``, from those of its rows without a mask,
        # and whether the words are found (``counted=False``, not a prefix), only when this
        # transaction read them already (before _one_snapshot, which would end it): a search
        # that a filter emptied holds found words, whose first visible row answers, where
        # reading every lexeme of the caller's rows starting with the head cost 2-3x that
        # search at 100k (bench/NOTES.md).
        held = (
            _own_lexemes(
                conn,
                caller,
                next(iter(heads)),
                exact,
                only_kept=unmasked or not (counted or prefix),
                bare=unmasked,
            )
            if own_words
            else None
        )
        if held is not None:
            counts = {w: messages_holding(held, w, prefix=prefix) for w in plain}
            if unmasked or not counted:
                return [(w, 0) for w, n in counts.items() if n][:want]
            capped = [(w, min(n, WORD_COUNT_CAP)) for w, n in counts.items() if n]
            return _most_first(capped, want)
        if counted:
            # The counts of several words, and the statements after them, read one snapshot.
            # Whether the words of a query that found nothing are found is its suggestions'
            # first statement, and mostly its only one (every word found: a filter or the
            # combination left nothing): on a connection opened for one statement it reads
            # its own snapshot, with no BEGIN and ROLLBACK around it (the search's statement
            # read another one already); near words, when asked, take a transaction.
            _one_snapshot(conn)
        where, params = _visible_sql(caller, None)
        if not exact:
            where = f"({where} AND {EXACT_SESSION})"
        bare_key = (predicate_key(where, params), prefix)
        if prefix and counted and not unmasked and len(plain) == 1:
            # A wide caller's near words' statement counted this prefix form already.
            kept = (kept_for_transaction(conn, _PREFIX_COUNTS_MEMO) or {}).get(
                (bare_key[0], plain[0])
            )
            if kept is not None:
                return [(plain[0], kept)] if kept else []
        bare_memo: dict[Any, set[str]] = kept_for_transaction(conn, _BARE_WORDS_MEMO) or {}
        bare = bare_memo.get(bare_key, set())
        if unmasked and all(w in bare for w in plain):
            # This transaction's count of these words proved each (:data:`_BARE_WORDS_MEMO`).
            return [(w, 0) for w in plain][:want]
        counting = counted and not unmasked
        params.update(words=plain, cap=WORD_COUNT_CAP if counting else 1)
        params["ellipsis"] = MASK_ELLIPSIS
        if unmasked:
            where = f"{where} AND strpos(mi.body, :ellipsis) = 0"
        if _few_caller_rows(conn, caller):
            rows = (
                f"openclaw_sessions AS s CROSS JOIN LATERAL ({_session_rows_sql(None)}) AS mi "
                f"WHERE {where} AND mi.{TSVECTOR_COLUMN} @@ q.q"
            )
        else:
            rows = (
                f"{CONTENT_TABLE} AS mi JOIN openclaw_sessions AS s "
                f"ON s.session_id = mi.session_id WHERE mi.{TSVECTOR_COLUMN} @@ q.q AND {where}"
            )
        operand = "c.w || ':*'" if prefix else "c.w"
        words_sql = (
            "FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS c(w, n) CROSS JOIN "
            f"LATERAL to_tsquery('{TEXT_SEARCH_CONFIG}'::regconfig, {operand}) AS q(q) "
        )
        if counting:
            # Counting, the lowest id of the rows counted too, and whether that one row's
            # body holds no credential mask (one lookup by the primary key): the ``unmasked``
            # proof the suggestions ask of these words next, which built each word's GIN
            # bitmap again (4.8 ms of a 25 ms miss at 100k, bench/NOTES.md). Carrying every
            # counted row's body to test them all was not faster (measured, not kept).
            sql = (
                f"SELECT c.w, k.n, (SELECT strpos(b.body, :ellipsis) = 0 FROM {CONTENT_TABLE} "
                f"AS b WHERE b.id = k.first) {words_sql}CROSS JOIN LATERAL (SELECT count(*) "
                f"AS n, min(r.id) AS first FROM (SELECT mi.id FROM {rows} LIMIT :cap) AS r) "
                "AS k ORDER BY c.n"
            )
        else:
            # The tsquery once per word (a function in FROM), not once per row tested.
            sql = (
                f"SELECT c.w, (SELECT count(*) FROM (SELECT 1 FROM {rows} LIMIT :cap) AS k), "
                f"false {words_sql}ORDER BY c.n"
            )
        found = conn.execute(text(sql), params).all()
        if counting and any(r[2] for r in found):
            bare_memo[bare_key] = bare | {str(r[0]) for r in found if r[2]}
            keep_for_transaction(conn, _BARE_WORDS_MEMO, bare_memo)
        proved = [(str(r[0]), int(r[1])) for r in found if r[1]]
        if unmasked or not counted:
            return [(w, 0) for w, _ in proved[:want]]
        return _most_first(proved, want)

    def hit_texts(self, conn: Connection, hits: list[Hit]) -> dict[int, str]:
        """The stored (masked) body when it is the message's clean text; a body whose CJK was
        spaced for the index is re-read from the event, as on SQLite. The bodies come with
        :meth:`ranked_hits`' rows (one round trip less); any not among them are read here."""
        if not hits:
            return {}
        stash: dict[int, str] = kept_for_transaction(conn, _HIT_BODIES, pop=True) or {}
        bodies = {h[0]: stash[h[0]] for h in hits if h[0] in stash}
        missing = [h[0] for h in hits if h[0] not in bodies]
        if missing:
            bodies.update(
                (int(r[0]), str(r[1]))
                for r in conn.execute(
                    text(f"SELECT id, body FROM {CONTENT_TABLE} WHERE id = ANY(:ids)"),
                    {"ids": missing},
                )
            )
        return hit_texts(conn, hits, bodies)


#: ``LC_CTYPE`` values under which PostgreSQL folds ASCII case only and reads every non-ASCII
#: character as a letter (docs/postgresql.md, "What still differs from FTS5").
BYTE_CTYPES = ("C", "POSIX")


def ctype_warning(conn: Connection) -> str | None:
    """What a database's ``LC_CTYPE`` costs search, or None when it is a full locale (for the
    store to log once when it opens a PostgreSQL database)."""
    ctype = conn.execute(
        text("SELECT datctype FROM pg_database WHERE datname = current_database()")
    ).scalar()
    if str(ctype) not in BYTE_CTYPES:
        return None
    return (
        f"openclaw-fts: this PostgreSQL database has LC_CTYPE {ctype}: search folds ASCII case "
        "only and does not split words at non-ASCII punctuation (a capitalised Greek or "
        "Cyrillic word cannot be found); create the database with a UTF-8 LC_CTYPE such as "
        "C.UTF-8 for full Unicode behaviour"
    )
