"""The search side of the SQLite FTS5 index: :class:`SqliteSearch`, the search part of
:class:`~.backend.SqliteBackend`.

Invariant: hidden sessions never consume the limit and never appear. Either visibility, the
pending filter and every user filter are in the same statement as the full-text MATCH, before
ranking and LIMIT (narrow callers: every visible match is fetched and ranked here, the user
filters judged per row with the rows that pass them first, read until one fails), or — no
filter but visibility and ``role``, nothing pending — FTS5 ranks alone and the top rows are
judged by the visibility and the role, the statement deciding whenever those rows cannot prove
the answer; or — one
frequent word, a wide caller, ranked by relevance, no ``sessionKey`` — the word's impact list
is walked with visibility, the pending filter and the ``role`` / ``since`` / ``until`` filters
in the walking statement (:mod:`.impact`); or — a wide caller's search ordered ``recent`` — the
newest matches are judged first and the page is proved from them, or every match is judged
(:func:`_newest_hits`, :func:`_few_newest`). Every statement
runs on the DBAPI cursor of the caller's transaction (:func:`cursor`), so all of one search reads
one snapshot. Nothing here writes. A word suggested when nothing is found is proved visible by a
statement with the visibility in it: for a narrow caller with few messages, the statement that
reads its messages' words (the words, their counts and their order come from those messages
alone); for another narrow caller, statements over its sessions' tokens in the MATCH, which
count (order) its near words too; a wider caller's keep FTS5's vocabulary order, of every
session (:meth:`SqliteSearch.near_words` says why). Whether a query word is found at all is
proved the same way, or, for a narrow caller, by a row of its ranked statement that the user
filters left out (a visible, exactly indexed match: :func:`_keep_found_words`); a narrow
caller's words are first looked up in the whole index (:func:`_in_index`), which only ever
rules a word out: one no message holds is held by none the caller may see.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection

from ...caller import Caller
from ...query import CompiledQuery
from ...redact.engine import MASK_ELLIPSIS
from ...rows import (
    INDEX_VERSION,
    SESSION_TOKEN_PREFIX,
    Hit,
    SearchRequest,
    session_token,
)
from ...spelling import (
    MAX_NEAR_CANDIDATES,
    examine_order,
    messages_holding,
    near_heads,
    nearest,
    note_examined,
)
from ...tokens import (
    TEXTS_JOINER,
    ascii_holds_token,
    exact_words_starting,
    is_cjk,
    mirror_is_exact,
    scan_tokens,
)
from ..hits import hit_texts, user_filters
from ..impact import FREQUENT_TERM_MIN_DOCS, TERMS_TABLE, fast_path_word, single_word
from ..memo import keep_for_transaction, kept_for_transaction, predicate_key
from ..pending import EXACT_JOIN, EXACT_SESSION, pending_probe_sql
from ..suggest import MAX_FRAGMENT_CHARS, OwnRows
from ..visibility_sql import Predicate, visible
from . import impact, vocabulary
from .fts import BM25_WEIGHTS, CONTENT_TABLE, CREATE_VOCAB, FTS_TABLE, VOCAB_TABLE, cursor

#: The characters :func:`_just_below` and :func:`_without_tracked` bound term ranges with: no
#: term of the index holds either (the tokenizer keeps letters and digits).
_LOWEST = "\x01"
_HIGHEST = "\U0010ffff"

#: Where a pooled DBAPI connection remembers whether its last snapshot had pending sessions.
_PENDING_MEMO = "openclaw_fts_any_pending"
#: Where it remembers, until the database changes, the id bounds of the time windows it read
#: (:func:`_window_ids`), at most :data:`WINDOW_MEMO_SIZE` of them.
_WINDOW_MEMO = "openclaw_fts_sqlite_window_ids"
WINDOW_MEMO_SIZE = 64

#: Near words share this many first letters with the misspelt word: the vocabulary is read
#: over that range of terms only (a slip in the first two letters is not corrected).
NEAR_PREFIX_CHARS = 2
#: Most messages counted per near word of a narrow caller (the count only orders suggestions):
#: messages of its sessions, not the vocabulary's count over every session (which lets sessions
#: the caller cannot see decide which near word comes first; wide callers keep it, see
#: :meth:`SqliteSearch.near_words`).
WORD_COUNT_CAP = 1000
#: A ``self`` or ``tree`` caller whose sessions hold at most this many indexed messages has
#: the suggestions of a search that found nothing answered from those messages' own words
#: (:func:`_own_words`: one read of the messages that may hold a word starting with the
#: misspelt word's first letters, tokenized here) instead of FTS5's vocabulary of every
#: session, whose ``fts5vocab`` reads each candidate term's whole doclist. The same bound as
#: PostgreSQL's ``NARROW_SCAN_EVENTS``; a caller above it keeps the vocabulary path.
NARROW_SCAN_ROWS = 10_000
#: Characters of those messages :func:`_own_words` reads for one word before it gives the
#: question back to the vocabulary path (the rows bound the count, not the size: a caller with
#: megabytes of logs would tokenize them in Python for every search that finds nothing).
NARROW_SCAN_CHARS = 262_144
#: Characters of all of a narrow caller's messages :func:`_own_words` reads for one word
#: (it reads every message, and searches those that can hold the word) before it gives the
#: question back to the vocabulary path.
NARROW_READ_CHARS = 4 * NARROW_SCAN_CHARS
#: Rows of those messages fetched at a time (the characters are counted after each).
OWN_ROWS_CHUNK = 256
#: A narrow caller with at most this many messages has the words of a query that found
#: nothing proved found from its messages' bodies (:func:`_own_bodies`, read once for the
#: transaction and then shared with its near words) when an ASCII body holds them, instead of
#: a statement each with its sessions' tokens in the MATCH (~0.12 ms a word at 100k events
#: against ~0.06 ms for reading the bench's `tree` caller's 127 bodies, bench/NOTES.md); a
#: caller with more keeps the statements, which stop at a word's first visible message.
FOUND_READ_ROWS = 512
#: Where a connection remembers, for one transaction, whether a narrow caller's messages are
#: few (:func:`_few_own_rows`) and the words read from them (:func:`_own_words`).
_FEW_ROWS_MEMO = "openclaw_fts_sqlite_few_rows"
_OWN_WORDS_MEMO = "openclaw_fts_sqlite_own_words"
_OWN_BODIES_MEMO = "openclaw_fts_sqlite_own_bodies"
#: Where it remembers, for one transaction, the words a narrow caller's filtered search proved
#: found (:func:`_keep_found_words`).
_FOUND_WORDS_MEMO = "openclaw_fts_sqlite_found_words"
#: Where it remembers, for one transaction, the near words of a wide caller that the statement
#: proving them visible also found in a visible message without any credential mask
#: (:meth:`SqliteSearch._prove`, ``bare``): :meth:`SqliteSearch.visible_words` answers
#: ``unmasked`` for them without a statement each.
_BARE_WORDS_MEMO = "openclaw_fts_sqlite_bare_words"

#: Rows beyond ``limit + 1`` the score-only ranking fetches, so that the rows tied on the score
#: at the limit are all in hand (equal scores are common: short messages of equal length): first
#: :data:`FIRST_TIE_PROBE_ROWS`, then, when those cannot prove the answer (a longer tie, too
#: few visible rows), :data:`TIE_PROBE_ROWS`; beyond that the full ORDER BY decides. Measured at
#: 100k events (CPU time, `all` caller, the bench's mid / two-word / phrase / prefix / CJK
#: queries): fetching 75 rows and joining them cost 1.2-1.6 ms a search, 19 rows 0.8-1.2 ms,
#: and none of those queries needed the second probe.
FIRST_TIE_PROBE_ROWS = 8
TIE_PROBE_ROWS = 64
#: The probes in turn. A ``role`` filter takes the long one alone: the short one's 8 rows
#: beyond the limit rarely hold ``limit + 1`` of one role (about half the rows each), and each
#: probe ranks the whole match set again (measured at 100k, bench filters: an ``all`` caller's
#: mid word with a role cost 2.2x the unfiltered search with both probes).
ROW_PROBES = (FIRST_TIE_PROBE_ROWS, TIE_PROBE_ROWS)
#: Matches of a query (over every session) above which a caller who sees a share of the
#: sessions (``agent``; ``all`` with or without agent-to-agent) is ranked by FTS5 alone, like a
#: caller who sees everything: the top rows are joined and judged by the visibility afterwards
#: (what sqlite-utils' ``search(where=…)`` does). Below it the one statement that joins every
#: match before ranking is cheaper: bm25() per match dominates, and the join lets it score only
#: the visible ones. Measured crossover: ~1,000–2,000 matches at 10k-100k events, ~3,000 at
#: 300k, so the bound is a share of the index rows, never below the minimum.
SCOPED_RANK_ALL_MIN_MATCHES = 1024
SCOPED_RANK_ALL_SHARE = 64

#: A wide caller's search ordered ``recent`` walks FTS5's matches newest row id first
#: (:func:`_newest_hits`) and reads at most this many before the exact statement decides (a
#: caller who sees few of the matches, or filters that keep few).
RECENT_WALK_ROWS = 4096
#: A wide caller's query with a time window and more matches than this (of any session) has
#: the window's id bounds read when the connection does not keep them (:func:`_window_ids`):
#: the read (an aggregate over the window's entries of the time index, ~0.2 ms for 7 days at
#: 100k messages) costs about what joining and scoring a few hundred matches does, so a rarer
#: query is not bounded then (a rare word's windowed search: 0.21 ms, 0.42 ms with the read).
WINDOW_BOUND_MIN_MATCHES = 256
#: A query with at most this many matches (of any session) ordered ``recent`` has every match's
#: time read (:func:`_few_newest`), not walked: the walk's proof reads the time index over the
#: span its newest matches cover, which for a rare word is most of the index (measured at
#: 100k: a word of ~40 matches cost 2 ms walked against 0.7 ms exact); bm25 over a few
#: hundred matches costs less.
RECENT_MIN_MATCHES = 512
#: Index rows at least as new as the walk's last kept row but with a lower id (written out of
#: time order: sessions interleaved in time, an import of old sessions after new ones, a
#: rebuilt session) that the walk matches and merges; with more, the exact statement decides.
#: The bench corpus at 100k has ~600 such rows behind the newest matches of a common word
#: (sessions written in batches, their messages interleaved in time).
RECENT_STRAYS = 4096
#: A query of at most :data:`RECENT_MIN_MATCHES` matches ordered ``recent``: the newest this
#: many matches per row wanted (that pass the filters over index rows) are judged by the
#: visibility first (:func:`_few_newest`), not every match. Measured at 100k (five phrases
#: and mid words, ~250-480 matches, ``all`` caller): 0.85-0.93 ms judging every match, 0.62 ms
#: judging the newest 44 (the time of every match is read either way).
RECENT_FEW_ROWS = 4
#: A tracked word's search ordered ``recent`` first reads the newest rows in time that should
#: hold this many times the rows wanted (:func:`_newest_in_time`), by the word's share of the
#: rows when it became tracked (at most :data:`RECENT_WALK_ROWS` rows: the count of a word
#: tracked in a smaller index is that of a rarer word); a page they cannot fill is walked
#: (:func:`_walked`). Measured at 100k (the bench's common and very common words, ``all``
#: caller, statements alone): 0.25-0.32 ms walked, 0.13-0.16 ms read in time with a margin of
#: 1.5-3, 0.27-0.29 ms with 10 (the time index and the doclist are read over the span of
#: those rows' ids).
RECENT_TIME_MARGIN = 2
#: The ids of every match of ``:q``, as a ``{matches}`` subquery.
_MATCH_IDS = f"SELECT rowid AS id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :q"
#: The ``recent`` order of :func:`_newest_hits`' statement (the exact statement's).
_RECENT_ORDER = "ORDER BY mi.timestamp_ms DESC, s.session_key, mi.event_id, mi.id"

# Ranking of the narrow callers (``tree`` / ``self``; docs/tools.md, "score"): per message, from
# that message alone. bm25() would compute each term's IDF by walking the term's doclist over
# every session, visible or not, so a common word cost the caller's 5 sessions as much as the
# whole corpus. Instead: BM25's term-frequency part with IDF 1, where the frequency is the
# number of query-phrase instances FTS5's highlight() marks in the text and the length is the
# text's length in characters against a fixed reference (no corpus statistics).
#: BM25's k1 (term-frequency saturation), FTS5's value.
NARROW_K1 = 1.2
#: BM25's b (length normalisation), FTS5's value.
NARROW_B = 0.75
#: The reference message length in characters (the "average document length" of the formula).
NARROW_REFERENCE_CHARS = 256
#: Marks highlight() puts around each instance (control characters; a message that holds
#: U+0001 itself scores a little higher: only the order depends on it, never what is visible).
_OPEN, _CLOSE = "\x01", "\x02"


def _visible_sql(
    caller: Caller, session_key: str | None, pred: Predicate | None = None
) -> tuple[str, dict[str, Any]]:
    """Visibility (plus the explicit ``sessionKey`` filter) over alias ``s``."""
    pred = pred or visible(caller, "s")
    params: dict[str, Any] = dict(pred.params)
    if session_key is None:
        return pred.sql, params
    params["only_key"] = session_key
    return f"({pred.sql} AND s.session_key = :only_key)", params


def _searchable_sql(caller: Caller, exact: bool) -> tuple[str, dict[str, Any]]:
    """What a search that found nothing may take words from (over alias ``s``): the caller's
    visible sessions that are exactly indexed. Search hides a pending session, whose index
    rows may still hold words its transcript no longer does (:mod:`..pending`). ``exact``:
    none of them is pending (known), so the visibility alone."""
    where, params = _visible_sql(caller, None)
    return (where, params) if exact else (f"({where} AND {EXACT_SESSION})", params)


def _scoped_match(match: str, where: str) -> str:
    """The FTS5 expression ``match`` (a parameter) AND one of the visible sessions' tokens in
    the ``sess`` column (``where``: the visibility over alias ``s``): FTS5 intersects the
    text's doclist with the visible sessions' tokens, so a narrow caller's statement never
    reads a match outside its sessions. The subquery's own alias ``s`` shadows an outer one."""
    return (
        f"'(' || {match} || ') AND sess : (' || coalesce((SELECT group_concat("
        f"'{SESSION_TOKEN_PREFIX}' || st2.id, ' OR ') FROM openclaw_sessions AS s JOIN "
        "openclaw_index_state AS st2 ON st2.session_id = s.session_id "
        f"WHERE {where}), '{session_token(0)}') || ')'"
    )


def _most_first(word_count: tuple[str, int]) -> tuple[int, str]:
    """The order of counted words: the highest count first, then the word."""
    return (-word_count[1], word_count[0])


def _own_visibility(
    conn: Connection, caller: Caller, exact: bool
) -> tuple[tuple[Any, ...], str, dict[str, Any]]:
    """A narrow caller's visibility (its SQL and parameters) and the key its answers are kept
    by in one transaction: that visibility, and the connection's own ``total_changes`` (a
    write in the transaction -- a session flagged incognito, say -- makes them be read
    again)."""
    if not conn.in_transaction():
        conn.begin()  # the engine's BEGIN (engine.py): the answers are kept for it
    where, params = _searchable_sql(caller, exact)
    changes = getattr(conn.connection.driver_connection, "total_changes", None)
    return (predicate_key(where, params), changes), where, params


def _few_own_rows(conn: Connection, caller: Caller, exact: bool) -> bool:
    """Whether ``caller`` is narrow and its visible sessions hold at most
    :data:`NARROW_SCAN_ROWS` indexed messages (:func:`_own_row_count`)."""
    return _own_row_count(conn, caller, exact) <= NARROW_SCAN_ROWS


def _own_row_count(conn: Connection, caller: Caller, exact: bool) -> int:
    """How many indexed messages a narrow ``caller``'s visible sessions hold, counted up to one
    past :data:`NARROW_SCAN_ROWS` (a wider caller: past it): asked once per caller and
    transaction (an index-only count, stopped one past the bound)."""
    if not caller.is_narrow:
        return NARROW_SCAN_ROWS + 1
    key, where, params = _own_visibility(conn, caller, exact)
    memo: dict[Any, int] = kept_for_transaction(conn, _FEW_ROWS_MEMO) or {}
    if key not in memo:
        params["past"] = NARROW_SCAN_ROWS + 1
        held = cursor(conn).execute(
            f"SELECT count(*) FROM (SELECT 1 FROM openclaw_sessions AS s CROSS JOIN "
            f"{CONTENT_TABLE} AS mi ON mi.session_id = s.session_id WHERE {where} LIMIT :past)",
            params,
        )
        memo[key] = int(held.fetchone()[0])
        keep_for_transaction(conn, _FEW_ROWS_MEMO, memo)
    return memo[key]


class _OwnBodies(NamedTuple):
    """A narrow caller's messages' bodies as :func:`_own_bodies` read them: every body, and
    the ASCII ones lower-cased and joined by a separator (a token of one is a run of ASCII
    letters and digits there, exactly as FTS5 has it:
    :func:`~openclaw_fts.tokens.ascii_holds_token`)."""

    texts: list[str]
    plain: str


def _own_bodies(conn: Connection, caller: Caller, exact: bool) -> _OwnBodies | None:
    """The bodies of a narrow caller's visible messages (one statement), kept for the
    transaction: the near words of every head (:func:`_own_words`) and the found-word proofs
    (:meth:`SqliteSearch.visible_words`) read them once. None when the caller has more than
    :data:`NARROW_SCAN_ROWS` messages or they hold more than :data:`NARROW_READ_CHARS`
    characters."""
    if not _few_own_rows(conn, caller, exact):
        return None
    visibility, where, params = _own_visibility(conn, caller, exact)
    memo: dict[Any, _OwnBodies | None] = kept_for_transaction(conn, _OWN_BODIES_MEMO) or {}
    if visibility not in memo:
        bodies = cursor(conn).execute(
            f"SELECT mi.body FROM openclaw_sessions AS s CROSS JOIN {CONTENT_TABLE} AS mi "
            f"ON mi.session_id = s.session_id WHERE {where}",
            params,
        )
        texts: list[str] = []
        read = 0
        while chunk := bodies.fetchmany(OWN_ROWS_CHUNK):
            more = [body for (body,) in chunk]
            read += sum(map(len, more))
            if read > NARROW_READ_CHARS:
                memo[visibility] = None
                break
            texts += more
        else:
            plain = TEXTS_JOINER.join(t for t in texts if t.isascii() and "\x00" not in t)
            memo[visibility] = _OwnBodies(texts, plain.lower())
        keep_for_transaction(conn, _OWN_BODIES_MEMO, memo)
    return memo[visibility]


def _own_words(
    conn: Connection,
    caller: Caller,
    head: str,
    exact: bool,
    *,
    only_kept: bool = False,
    bare: bool = False,
) -> list[frozenset[str]] | None:
    """For a narrow caller with few messages (:func:`_few_own_rows`): the words starting with
    ``head`` of each of its visible messages that holds one, kept for the transaction; None
    for any other caller (and for a ``head`` shorter than :data:`NEAR_PREFIX_CHARS` or with
    a CJK character). One statement reads the bodies of its messages, and those that can
    hold such a word (those whose ASCII-lower-cased text holds ``head``, and those with a
    character beyond ASCII, whose folding is left to the tokenizer's mirror) are tokenized
    as FTS5 does (:func:`_own_rows`). None as well, the vocabulary path then answering,
    when such a body holds a character where the mirror and FTS5 may differ
    (:func:`~openclaw_fts.tokens.mirror_is_exact`: mostly characters newer than SQLite's
    Unicode tables, such as recent emoji) or the bodies pass :data:`NARROW_SCAN_CHARS`
    (all of them :data:`NARROW_READ_CHARS`). A search that found nothing asks, for one
    query word, whether the word is visible, its near words with their counts, and whether
    words start with it: each is answered from this one read, as the statements over the
    caller's sessions' tokens in the MATCH would answer it, without reading FTS5's
    vocabulary of every session. ``only_kept``: only what this transaction has read already
    (None when it has not). ``bare``: only the messages whose body holds no credential mask
    (the same read keeps them apart: whether a near word is said outside every mask is then
    answered without a statement, :meth:`SqliteSearch.visible_words` with ``unmasked``)."""
    if len(head) < NEAR_PREFIX_CHARS or any(map(is_cjk, head)) or not caller.is_narrow:
        return None
    memo: dict[Any, OwnRows | None] = kept_for_transaction(conn, _OWN_WORDS_MEMO) or {}
    if only_kept:
        kept = memo.get((_own_visibility(conn, caller, exact)[0], head))
        return None if kept is None else kept.bare if bare else kept.rows
    bodies = _own_bodies(conn, caller, exact)
    if bodies is None:
        return None
    key = (_own_visibility(conn, caller, exact)[0], head)
    if key not in memo:
        memo[key] = _own_rows(bodies.texts, head)
        keep_for_transaction(conn, _OWN_WORDS_MEMO, memo)
    kept = memo[key]
    return None if kept is None else kept.bare if bare else kept.rows


def _own_rows(texts: list[str], head: str) -> OwnRows | None:
    """What :func:`_own_words` keeps for ``head`` from the bodies of a narrow caller's
    messages (:func:`_own_bodies`): the words starting with it of each body that holds one,
    and of those without a credential mask. None when the bodies that can hold such a word
    (those with a character beyond ASCII, whose folding is left to the mirror, and the ASCII
    ones whose lower-cased text holds ``head``) pass :data:`NARROW_SCAN_CHARS` characters or
    one holds a character the mirror may misread
    (:func:`~openclaw_fts.tokens.exact_words_starting`, which searches them as one text).
    Every body is read, not only those: testing ``instr(lower(body), :head)`` and the body's
    length in SQL cost more than returning each body (0.12 against 0.06 ms for the bench's
    `tree` caller's 127 messages, bench/NOTES.md)."""
    held = [text for text in texts if not text.isascii() or head in text.lower()]
    if sum(map(len, held)) > NARROW_SCAN_CHARS:
        return None
    found = exact_words_starting(held, head)
    if found is None:
        return None
    rows: list[frozenset[str]] = []
    without_masks: list[frozenset[str]] = []
    for text, starting in zip(held, found, strict=True):
        if starting:
            words = frozenset(starting)
            rows.append(words)
            if MASK_ELLIPSIS not in text:  # instr(mi.body, :ellipsis) = 0
                without_masks.append(words)
    return OwnRows(rows, without_masks)


def _found_key(conn: Connection, caller: Caller) -> tuple[Any, ...]:
    """What :func:`_keep_found_words` keeps a narrow caller's words by in one transaction: its
    visibility, and the connection's own ``total_changes`` (a write in the transaction makes
    them be proved again)."""
    where, params = _visible_sql(caller, None)
    changes = getattr(conn.connection.driver_connection, "total_changes", None)
    return predicate_key(where, params), changes


def _query_words(compiled: CompiledQuery) -> set[str]:
    """The words every message matching ``compiled`` holds as words of its body: the tokens of
    each AND group of one term (a prefix term's last token left out: only its start is held).
    Empty when a character of the expression is one the mirror may tokenize
    otherwise than FTS5 (:func:`~openclaw_fts.tokens.mirror_is_exact`): the terms' tokens are
    the mirror's."""
    if not mirror_is_exact(compiled.match):
        return set()
    words: set[str] = set()
    for group in compiled.groups:
        if len(group) == 1:
            term = group[0]
            words.update(term.tokens[:-1] if term.prefix else term.tokens)
    return words


def _keep_found_words(conn: Connection, caller: Caller, compiled: CompiledQuery | None) -> None:
    """Keep for this transaction the words of ``compiled`` (:func:`_query_words`) as found by
    the narrow ``caller``: its ranked statement matched a message of its visible sessions that
    the search's filters then left out. That row is of a session exactly indexed (the search
    joins the pending filter, or knows none of the sessions it may return is pending), so each
    word is proved as :meth:`SqliteSearch._prove` would prove it, whichever ``exact`` the
    suggestions ask with; :meth:`SqliteSearch.visible_words` answers them without a statement."""
    if compiled is None:
        return
    words = _query_words(compiled)
    if not words:
        return
    memo: dict[Any, set[str]] = kept_for_transaction(conn, _FOUND_WORDS_MEMO) or {}
    memo.setdefault(_found_key(conn, caller), set()).update(words)
    keep_for_transaction(conn, _FOUND_WORDS_MEMO, memo)


def _kept_found_words(conn: Connection, caller: Caller) -> set[str]:
    """The words :func:`_keep_found_words` kept for ``caller`` in this transaction."""
    memo: dict[Any, set[str]] | None = kept_for_transaction(conn, _FOUND_WORDS_MEMO)
    return memo.get(_found_key(conn, caller), set()) if memo else set()


def _bare_key(conn: Connection, caller: Caller, exact: bool) -> tuple[Any, ...]:
    """What :func:`_keep_bare_words` keeps words by in one transaction: the statements'
    predicate (visibility and, unless ``exact``, the pending filter) and the connection's own
    ``total_changes`` (a write in the transaction makes them be proved again)."""
    where, params = _searchable_sql(caller, exact)
    changes = getattr(conn.connection.driver_connection, "total_changes", None)
    return predicate_key(where, params), changes


def _keep_bare_words(conn: Connection, caller: Caller, exact: bool, words: set[str]) -> None:
    """Keep for this transaction ``words`` as held by a visible message without any mask."""
    memo: dict[Any, set[str]] = kept_for_transaction(conn, _BARE_WORDS_MEMO) or {}
    memo.setdefault(_bare_key(conn, caller, exact), set()).update(words)
    keep_for_transaction(conn, _BARE_WORDS_MEMO, memo)


def _kept_bare_words(conn: Connection, caller: Caller, exact: bool) -> set[str]:
    """The words :func:`_keep_bare_words` kept for ``caller`` (and ``exact``) in this
    transaction."""
    memo: dict[Any, set[str]] | None = kept_for_transaction(conn, _BARE_WORDS_MEMO)
    return memo.get(_bare_key(conn, caller, exact), set()) if memo else set()


def _is_one_token(word: str) -> bool:
    """Whether ``word`` is one folded token of the index (what a MATCH of it looks up)."""
    return scan_tokens(word)[2] == [word]


def _nearest_own(
    own: list[frozenset[str]], token: str, *, max_distance: int, want: int
) -> list[tuple[str, int]]:
    """Up to ``want`` words of ``own`` (:func:`_own_words`) within ``max_distance`` edits of
    ``token``, nearest first, then held by the most messages (ties: the word), each with that
    count up to :data:`WORD_COUNT_CAP`; a farther distance only when the nearer ones give
    fewer than ``want``: the words and counts the vocabulary path gives a narrow caller."""
    # What the vocabulary path reads: the same words in the same order, the same cap.
    held = {w for words in own for w in words}
    examined = examine_order(token, held, NEAR_PREFIX_CHARS)[:MAX_NEAR_CANDIDATES]
    note_examined("sqlite own words", token, len(examined))
    by_distance: dict[int, list[tuple[str, int]]] = {}
    for word, distance in nearest(token, examined, max_distance):
        count = min(messages_holding(own, word, prefix=False), WORD_COUNT_CAP)
        by_distance.setdefault(distance, []).append((word, count))
    found: list[tuple[str, int]] = []
    for distance in sorted(by_distance):
        if len(found) >= want:
            break
        found += sorted(by_distance[distance], key=_most_first)[: want - len(found)]
    return found


def _after(head: str) -> str:
    """The first string past every string starting with ``head`` (a range's end)."""
    return head[:-1] + chr(ord(head[-1]) + 1)


def _just_below(word: str) -> str:
    """A bound every term sorting before ``word`` (an ASCII word: a tracked word) sorts at or
    before, and ``word`` after: its last letter lowered by one, then the highest code points
    (terms compare by their UTF-8 bytes, which follow code points)."""
    return word[:-1] + chr(ord(word[-1]) - 1) + _HIGHEST * 4


def _without_tracked(
    ranges: Sequence[tuple[str, str]], tracked: Sequence[str]
) -> list[tuple[str, str]]:
    """``ranges`` (``[start, end)`` of terms, in examining order) split around every word of
    ``tracked`` inside them: ``[start, just below w)``, ``[just past w, ...)`` (``w`` then a
    character below every character a term holds). ``fts5vocab`` positions its cursor on the
    first term at or past a range's start without reading the terms before it, so the
    tracked words' doclists -- the longest of the range -- are never walked."""
    out: list[tuple[str, str]] = []
    for start, end in ranges:
        for word in sorted(w for w in tracked if start <= w < end):
            out.append((start, _just_below(word)))
            start = word + _LOWEST
        out.append((start, end))
    return [(a, b) for a, b in out if a < b]


def _match_word(word: str, prefix: bool) -> str:
    """The FTS5 expression of one word (``prefix``: as the start of a word) in the body."""
    return "body : " + '"' + word.replace('"', '""') + '"' + (" *" if prefix else "")


def _in_index(conn: Connection, words: Sequence[str]) -> list[str]:
    """Those of ``words`` that some message of the index holds, whoever may see it, in the
    order given: one statement, a MATCH of the word alone each (a term lookup). A word no
    message holds is held by none the caller may see, so a narrow caller's found-word proofs
    (statements with its sessions' tokens in the MATCH: ~0.12 ms each at 100k events, against
    ~0.02 ms for the lookup, bench/NOTES.md) are asked only of the others; a misspelt word of
    a query that found nothing is mostly one no message holds."""
    if not words:
        return []
    exists = ", ".join(
        f"EXISTS (SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :m{n})"
        for n in range(len(words))
    )
    params = {f"m{n}": _match_word(word, False) for n, word in enumerate(words)}
    held = cursor(conn).execute(f"SELECT {exists}", params).fetchone()
    return [word for word, found in zip(words, held, strict=True) if found]


def narrow_score(marked: str) -> float:
    """The score of one message for a narrow caller, from its text as highlight() marked it."""
    instances = marked.count(_OPEN)
    if not instances:
        return 0.0
    chars = len(marked) - 2 * instances
    norm = 1 - NARROW_B + NARROW_B * chars / NARROW_REFERENCE_CHARS
    return instances * (NARROW_K1 + 1) / (instances + NARROW_K1 * norm)


def _order_key(hit: Hit) -> tuple[float, int, str, str, int]:
    return (hit[7] if hit[7] is not None else 0.0, -hit[5], hit[6], hit[3], hit[0])


def _recent_key(hit: Hit) -> tuple[int, str, str, int]:
    return (-hit[5], hit[6], hit[3], hit[0])


def _newest_hits(
    conn: Connection, caller: Caller, req: SearchRequest, pred: Predicate, *, exact: bool
) -> list[Hit] | None:
    """The ``limit + 1`` newest visible matches of a wide caller's search ordered ``recent``
    (the exact statement's rows and order), without joining, scoring and sorting every match.
    A tracked word's are first read from the newest rows in time (:func:`_newest_in_time`:
    one statement, exact when those rows fill the page). Else FTS5's matches are walked
    newest row id first (:func:`_walked`), each joined to its index row and session
    for visibility and the filters, until ``limit + 1`` pass. Row ids are not time (an import
    of old sessions after new ones, a rebuilt session), so the walk is proved: every match it
    did not read has a lower id than the last one it kept, so only an index row at least as
    new as the last of the kept rows in result order *and* with a lower id could rank among
    them — those are read from the time index (:data:`~openclaw_fts.models.TIME_INDEX`, ids
    and times only, no row read) and, at most :data:`RECENT_STRAYS` of them, matched (one
    read of the doclist over their ids' range), judged like the walk's rows and merged in.
    None (the exact statement decides) when the walk reads :data:`RECENT_WALK_ROWS` matches
    without enough passing, or there are more strays. A query of few matches is not walked:
    :func:`_few_newest` reads every match's time. The scores are read for the rows returned
    only: for one tracked word, the word's list's (:func:`.impact.list_ranks`: bm25 without
    its IDF, as the same search by relevance scores them); else bm25's."""
    assert req.compiled is not None
    cur = cursor(conn)
    # one tracked word: frequent (no probe needed) and scored from its list, without bm25
    word = single_word(req.compiled)
    tracked = (
        cur.execute(
            f"SELECT docs, (SELECT max(id) FROM {CONTENT_TABLE}) FROM {TERMS_TABLE} WHERE term = ?",
            (word,),
        ).fetchone()
        if word is not None
        else None
    )
    want = req.limit + 1
    where, params = _visible_sql(caller, None, pred)
    filters = user_filters(req, params)
    params.update(q=req.compiled.match, cap=RECENT_WALK_ROWS, want=want)
    pending = "" if exact else f"CROSS JOIN openclaw_index_state AS st ON {EXACT_JOIN} "
    select = (
        "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
        "s.session_key FROM ({matches}) AS f "
        f"CROSS JOIN {CONTENT_TABLE} AS mi ON mi.id = f.id "
        f"CROSS JOIN openclaw_sessions AS s ON s.session_id = mi.session_id {pending}"
        f"WHERE {where} {filters}"
    )
    if tracked is None:
        few = _few_newest(cur, req.compiled.match, select, filters, params)
        if few is not None:
            return few  # few matches: every one judged and sorted, as the exact statement
    rows = None
    if tracked is not None and req.until is None:
        # the newest rows in time that should hold enough of the word's messages, by its
        # share of the rows when it became tracked (a share that grows: more rows than
        # needed) and the highest row id (at least the number of rows)
        docs, highest = tracked
        judged = math.ceil(want * RECENT_TIME_MARGIN * (highest or 0) / max(docs, 1))
        rows = _newest_in_time(cur, select, params, min(judged, RECENT_WALK_ROWS))
    if rows is None:
        rows = _walked(cur, select, params)
    if rows is None:
        return None
    rows = sorted(rows, key=_newest_first)[:want]
    if not rows:
        return []
    kept = {r[0] for r in rows}
    # one tracked word: the rows ranked as its list ranks them (what the same search by
    # relevance shows), without bm25's IDF and so without reading the word's whole doclist
    score = (
        impact.list_ranks(cur, word, sorted(kept), tracked=True)
        if tracked is not None and word is not None
        else None
    )
    if score is None:
        score = _bm25_of(cur, req.compiled.match, kept)
    return [(*r, score[r[0]]) for r in rows]


def _walked(cur: Any, select: str, params: dict[str, Any]) -> list[Any] | None:
    """:func:`_newest_hits`' walk: FTS5's matches newest row id first, judged until ``want``
    pass, then the rows at least as new as the last kept one with a lower id (the strays)
    matched, judged and merged in; the rows in no order, None when the walk or the strays
    reach their caps (the exact statement decides)."""
    want = params["want"]
    walk = (
        f"SELECT rowid AS id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :q "
        "ORDER BY rowid DESC LIMIT :cap"
    )
    rows: list[Any] = cur.execute(select.format(matches=walk) + " LIMIT :want", params).fetchall()
    if len(rows) < want:
        beyond = cur.execute(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT 1 OFFSET ?",
            (params["q"], RECENT_WALK_ROWS),
        ).fetchone()
        if beyond is not None:
            return None  # the cap, not the match set, ended the walk
        return rows
    last_kept = min(r[0] for r in rows)
    boundary = sorted(rows, key=_newest_first)[want - 1]
    # How many they are (up to one past the cap: a rare word's walk reaches far back,
    # behind tens of thousands) and the lowest id, counted in the time index (ids only;
    # `+mi.id`: the time range drives, the ids below the last kept row are most rows).
    # Reading the ids into Python (~900 a common word at 100k) cost more than the rest.
    strays, first = cur.execute(
        f"SELECT count(*), min(id) FROM (SELECT +mi.id AS id FROM {CONTENT_TABLE} AS mi "
        "WHERE mi.timestamp_ms >= :t AND +mi.id < :last LIMIT :n)",
        {"t": boundary[5], "last": last_kept, "n": RECENT_STRAYS + 1},
    ).fetchone()
    if strays > RECENT_STRAYS:
        return None
    if strays:
        # The newest `want` of them in result order that match (one read of the doclist
        # over their id range, as a set SQLite builds once) and pass, read newest first
        # from the time index: the time index gives the order's first key, so only the
        # rows of the times reached are read and sorted, where joining every matching
        # one (~300 a very common word at 100k) cost more than the walk. Only those can
        # rank among the `want` kept.
        newest = (
            f"SELECT +ti.id AS id, ti.timestamp_ms AS ts FROM {CONTENT_TABLE} AS ti "
            "WHERE ti.timestamp_ms >= :t AND +ti.id < :last"
        )
        rows += cur.execute(
            select.format(matches=newest)
            + f" AND +f.id IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :q "
            "AND rowid >= :first AND rowid < :last) "
            "ORDER BY f.ts DESC, s.session_key, mi.event_id, mi.id LIMIT :want",
            {**params, "first": first, "last": last_kept, "t": boundary[5]},
        ).fetchall()
    return rows


def _newest_in_time(cur: Any, select: str, params: dict[str, Any], judged: int) -> list[Any] | None:
    """The ``want`` newest matches that pass ``select``, read from the time index newest
    first, when the newest ``judged`` rows in time (and every row as new as the last of them)
    hold that many; else None. Exact: every row at least as new as the edge (the row after
    the ``judged`` newest) is read, and its id is at least their lowest id, over which the
    word's doclist is read (one read, as a set SQLite builds once); every other row is older
    than all of them. One statement for the walk, the strays' count and the strays' read of
    :func:`_walked`, whose two reads of the doclist cost most of it."""
    edge = (
        f"coalesce((SELECT timestamp_ms FROM {CONTENT_TABLE} "
        "ORDER BY timestamp_ms DESC LIMIT 1 OFFSET :judged), "
        f"(SELECT min(timestamp_ms) FROM {CONTENT_TABLE}))"
    )
    newest = (
        f"SELECT +ti.id AS id, ti.timestamp_ms AS ts FROM {CONTENT_TABLE} AS ti "
        f"WHERE ti.timestamp_ms >= {edge}"
    )
    rows: list[Any] = cur.execute(
        select.format(matches=newest)
        + f" AND +f.id IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :q AND rowid "
        f">= (SELECT min(+id) FROM {CONTENT_TABLE} WHERE timestamp_ms >= {edge})) "
        "ORDER BY f.ts DESC, s.session_key, mi.event_id, mi.id LIMIT :want",
        {**params, "judged": judged},
    ).fetchall()
    return rows if len(rows) == params["want"] else None


def _few_newest(
    cur: Any, match: str, select: str, filters: str, params: dict[str, Any]
) -> list[Hit] | None:
    """The exact statement's rows (and bm25: :func:`_bm25_of`) of a search ordered ``recent``
    whose query has at most :data:`RECENT_MIN_MATCHES` matches (of any session), else None
    (the walk answers). One read of the matches (up to one past the bound, materialised)
    serves the count and the rows, where a probe of the count and then the exact statement
    evaluated the query twice. The matches' times are read (every one joined to its index
    row) and the newest :data:`RECENT_FEW_ROWS` per row wanted that pass ``filters`` are
    judged by the visibility (their sessions joined): the ``want`` best of those are the
    answer when the last of them is newer than every row left out (each is as old as the
    oldest judged row or older); else the statement that judges every match decides.
    ``select``: :func:`_newest_hits`' statement of the visible rows that pass the filters
    over a ``{matches}`` subquery of ids; ``filters`` the filters over ``mi`` alone."""
    want = params["want"]
    rows = cur.execute(
        f"WITH m AS MATERIALIZED (SELECT rowid AS id FROM {FTS_TABLE} "
        f"WHERE {FTS_TABLE} MATCH :q LIMIT :few), "
        "t AS MATERIALIZED (SELECT mi.id AS id, mi.timestamp_ms AS ts FROM m "
        f"CROSS JOIN {CONTENT_TABLE} AS mi ON mi.id = m.id "
        f"WHERE (SELECT count(*) FROM m) < :few {filters} "
        "ORDER BY mi.timestamp_ms DESC LIMIT :judged) "
        f"SELECT * FROM ({select.format(matches='SELECT id FROM t')} {_RECENT_ORDER} LIMIT :want) "
        "UNION ALL SELECT NULL, (SELECT count(*) FROM m), count(*), NULL, NULL, min(ts), NULL "
        "FROM t",
        {**params, "few": RECENT_MIN_MATCHES + 1, "judged": RECENT_FEW_ROWS * want},
    ).fetchall()
    # the counts' row (no index row has a NULL id), wherever UNION ALL put it
    _, matches, judged, _, _, oldest, _ = next(r for r in rows if r[0] is None)
    if matches > RECENT_MIN_MATCHES:
        return None
    found = sorted((r for r in rows if r[0] is not None), key=_newest_first)
    if judged == RECENT_FEW_ROWS * want and (len(found) < want or found[-1][5] <= oldest):
        found = _every_match_newest(cur, select, params)  # rows left out may rank among these
    if not found:
        return []
    score = _bm25_of(cur, match, {r[0] for r in found})
    return [(*r, score[r[0]]) for r in found]


def _every_match_newest(cur: Any, select: str, params: dict[str, Any]) -> list[Any]:
    """:func:`_few_newest`' rows when the newest matches it judged cannot prove them: every
    match judged and sorted (the query read again), the exact statement's rows."""
    rows: list[Any] = cur.execute(
        f"{select.format(matches=_MATCH_IDS)} {_RECENT_ORDER} LIMIT :want", params
    ).fetchall()
    return rows


def _bm25_of(cur: Any, match: str, ids: set[int]) -> dict[int, float]:
    """bm25 of the index rows ``ids`` (rows that match ``match``), the score the ranked
    statement gives them: one read of the doclist over their id range (a rowid IN list
    would run the query once per id, each computing the terms' IDF again). The IDF is the
    whole index's whatever the range (FTS5 counts each phrase's rows with a query of its
    own), so a search ordered ``recent`` scores only the rows it returns."""
    return {
        r[0]: r[1]
        for r in cur.execute(
            f"SELECT rowid, bm25({FTS_TABLE}, {BM25_WEIGHTS}) FROM {FTS_TABLE} "
            f"WHERE {FTS_TABLE} MATCH :q AND rowid BETWEEN :low AND :high",
            {"q": match, "low": min(ids), "high": max(ids)},
        )
        if r[0] in ids
    }


def _window_ids(
    conn: Connection, req: SearchRequest, *, kept_only: bool = False
) -> tuple[int | None, int | None] | None:
    """The id bounds (:func:`.impact.id_bound`) of the request's ``since`` and ``until``,
    remembered per DBAPI connection until the database changes (``PRAGMA data_version`` and
    the connection's own ``total_changes``, as :meth:`SqliteSearch.any_pending` keys its
    answer): reading one costs an aggregate over the window's entries of the time index
    (~0.5 ms for 7 days at 100k messages), about what the bounded walk itself costs. A bound
    read for an earlier ``since`` (a later ``until``) holds for this one too, the window being
    inside that window: a relative span (``7d``) counted from a later clock reuses the one
    read a moment before, a little looser. ``kept_only``: None unless every bound needed is
    kept already (nothing read)."""
    if req.since is None and req.until is None:
        return None, None
    cur = cursor(conn)
    version = cur.execute("PRAGMA data_version").fetchone()[0]
    key = (version, getattr(conn.connection.driver_connection, "total_changes", None))
    kept = conn.connection.info.get(_WINDOW_MEMO)
    memo: dict[tuple[bool, int], int | None] = (
        kept[1] if kept is not None and kept[0] == key and key[1] is not None else {}
    )
    found: list[int | None] = []
    for at, since in ((req.since, True), (req.until, False)):
        if at is None:
            found.append(None)
            continue
        wider = [
            v
            for (s, v), bound in memo.items()
            if s == since and bound is not None and (v <= at if since else v >= at)
        ]
        if wider:
            found.append(memo[(since, max(wider) if since else min(wider))])
            continue
        if kept_only:
            return None
        bound = impact.id_bound(cur, at, since=since)
        if len(memo) >= WINDOW_MEMO_SIZE:
            memo.clear()
        memo[(since, at)] = bound
        found.append(bound)
    conn.connection.info[_WINDOW_MEMO] = (key, memo)
    return found[0], found[1]


def _newest_first(row: Sequence[Any]) -> tuple[int, str, str, int]:
    """The ``recent`` order of a hit's first seven columns (:func:`_recent_key`'s)."""
    return (-row[5], row[6], row[3], row[0])


def group_by_session(hits: list[Hit], req: SearchRequest) -> list[tuple[Hit, int]]:
    """Every visible match grouped by session key: each key's first hit in the request's
    order, with the key's count, keys in that order, ``req.limit + 1`` at most."""
    key = _recent_key if req.order == "recent" else _order_key
    best: dict[str, Hit] = {}
    counts: dict[str, int] = {}
    for hit in hits:
        counts[hit[6]] = counts.get(hit[6], 0) + 1
        if hit[6] not in best or key(hit) < key(best[hit[6]]):
            best[hit[6]] = hit
    ordered = sorted(best.values(), key=key)[: req.limit + 1]
    return [(hit, counts[hit[6]]) for hit in ordered]


class SqliteSearch:
    """The search methods of :class:`~openclaw_fts.index.base.Reader` over ``message_fts`` /
    ``message_index``."""

    #: Remembered per connection until the database changes.
    GLOBAL_PENDING_PROBE = True
    #: Whether a one-word search of a wide caller walks the word's impact list when it has one
    #: (:mod:`.impact`), a wide caller's search ordered ``recent`` walks the matches newest
    #: first (:func:`_newest_hits`), a wide caller's time window bounds its matches' ids, and a
    #: narrow caller's filtered search proves its words found by a row that fails the filters
    #: (:func:`_keep_found_words`); off, every search takes the exact path (what the bench and
    #: the tests compare them with).
    IMPACT_LISTS = True

    def any_pending(self, conn: Connection) -> bool:
        """Whether any session at all is pending in this transaction's snapshot.

        Remembered per DBAPI connection and recomputed only when the database changed: ``PRAGMA
        data_version`` (frozen for the life of a read transaction, bumped by other connections'
        commits) plus the connection's own ``total_changes``. It is read first, so it starts the
        snapshot every later statement of the search sees."""
        if not conn.in_transaction():
            conn.begin()  # the engine's BEGIN (engine.py), without a statement through SQLAlchemy
        cur = cursor(conn)
        version = cur.execute("PRAGMA data_version").fetchone()[0]
        driver = conn.connection.driver_connection
        key = (version, getattr(driver, "total_changes", None))
        memo = conn.connection.info.get(_PENDING_MEMO)
        if memo is not None and memo[0] == key and key[1] is not None:
            return bool(memo[1])
        found = cur.execute(pending_probe_sql()).fetchone()[0]
        conn.connection.info[_PENDING_MEMO] = (key, bool(found))
        return bool(found)

    def pending_visible(self, conn: Connection, caller: Caller, session_key: str | None) -> bool:
        """Whether any session the caller may see is pending (not yet exactly indexed)."""
        where, params = _visible_sql(caller, session_key)
        return bool(cursor(conn).execute(pending_probe_sql(where), params).fetchone()[0])

    def pending_and_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest
    ) -> tuple[bool, list[Hit]] | None:
        """None: the pending probes are answered from a per-connection memo (no round trip to
        save)."""
        return None

    def ranked_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[Hit]:
        """Up to ``limit + 1`` hits in result order (one more than asked: ``truncated``)."""
        # A role keeps about half the rows: FTS5's ranking and the probes below find the
        # caller's rows of that role at the top as they find visible ones. A time window may
        # keep a few rows of a hundred (the bench's 7 days of 60: 11%), so the probes would
        # mostly fail after paying for the ranking: the joined statement answers.
        simple = (
            exact
            and req.session_key is None
            and req.since is None
            and req.until is None
            and req.order == "relevance"
        )
        pred = visible(caller, "s")
        word = fast_path_word(req) if self.IMPACT_LISTS and not caller.is_narrow else None
        if word is not None:
            where, params = _visible_sql(caller, None, pred)
            filters = user_filters(req, params)
            pending = "" if exact else f"CROSS JOIN openclaw_index_state AS st ON {EXACT_JOIN} "
            # a window's id bounds for a word with a list only (one that has none takes the
            # exact path: no bound to pay for)
            tracked = impact.is_tracked(cursor(conn), word)
            low, high = (_window_ids(conn, req) if tracked else None) or (None, None)
            top = impact.top_hits(
                cursor(conn),
                word,
                where,
                params,
                req.limit + 1,
                pending,
                filters,
                low=low,
                high=high,
            )
            if top is not None:
                return top
        # Ranked by FTS5 alone when everything is visible, or when the match set is large
        # enough that scoring every match beats joining every match first.
        if (
            simple
            and not caller.is_narrow
            and (pred.everything or not self._at_most(conn, req, self._rank_all_bound(conn)))
        ):
            where, params = _visible_sql(caller, None, pred)
            where = f"{where} {user_filters(req, params)}"
            # a role drops about half the top rows: the short probe would rarely hold enough
            probes = (TIE_PROBE_ROWS,) if req.role is not None else ROW_PROBES
            for extra in probes:
                top = self._top_visible(conn, req, ":q", where, params, extra)
                if top is not None:
                    return top
        if (
            req.order == "recent"
            and self.IMPACT_LISTS
            and req.session_key is None
            and not caller.is_narrow
        ):
            newest = _newest_hits(conn, caller, req, pred, exact=exact)
            if newest is not None:
                return newest
        low = high = None
        if self.IMPACT_LISTS and not caller.is_narrow and (req.since, req.until) != (None, None):
            # The window's id bounds, for FTS5 to skip the matches outside them before any
            # is joined or scored (a prefix of ~6,000 matches with 7 days of 60: 5.3 ms
            # scored whole, 1.5 ms bounded, measured at 100k: bench/NOTES.md); read only
            # for a query of more than WINDOW_BOUND_MIN_MATCHES matches unless kept.
            bounds = _window_ids(conn, req, kept_only=True)
            if bounds is None and not self._at_most(conn, req, WINDOW_BOUND_MIN_MATCHES):
                bounds = _window_ids(conn, req)
            low, high = bounds or (None, None)
            if impact.EMPTY_WINDOW in (low, high):
                return []  # no index row is in the window
        filtered = req.role is not None or req.since is not None or req.until is not None
        judged = self.IMPACT_LISTS and caller.is_narrow and filtered
        sql, params = self._hits_sql(
            caller, req, exact=exact, pred=pred, low=low, high=high, judged=judged
        )
        # The DBAPI cursor (sqlite3 takes the same :name parameters): SQLAlchemy's statement
        # handling cost ~0.3 ms a search, a third of a narrow search's SQL time.
        cur = cursor(conn)
        if judged:
            # the rows that pass the filters come first (:meth:`_hits_sql`); one that fails
            # ends them, and proves the query's words found if none passed
            rows: list[Any] = []
            for row in cur.execute(sql, params):
                if not row[8]:
                    if not rows:
                        _keep_found_words(conn, caller, req.compiled)
                    break
                rows.append(row[:8])
            cur.close()  # the statement may be left unfinished
        else:
            rows = cur.execute(sql, params).fetchall()
        if not caller.is_narrow:
            if req.order == "recent" and rows:
                # the statement left the score out (:meth:`_hits_sql`): the rows returned only
                assert req.compiled is not None
                score = _bm25_of(cur, req.compiled.match, {r[0] for r in rows})
                return [(*r[:7], score[r[0]]) for r in rows]
            hits: list[Hit] = rows
            return hits
        # highlight()'s marked text -> rank (lower is better); relevance is ordered here.
        hits = [(*row[:7], -narrow_score(row[7])) for row in rows]
        if req.order == "relevance":
            hits.sort(key=_order_key)
        return hits[: req.limit + 1]

    def hit_texts(self, conn: Connection, hits: list[Hit]) -> dict[int, str]:
        """Each hit's searchable text (clean), by index row id. The indexed body IS that text
        unless CJK was spaced for the index; only those messages are re-read through the one
        predicate."""
        if not hits:
            return {}
        marks = ", ".join("?" * len(hits))
        cur = cursor(conn)
        bodies = dict(
            cur.execute(
                f"SELECT id, body FROM {CONTENT_TABLE} WHERE id IN ({marks})",
                [h[0] for h in hits],
            ).fetchall()
        )

        def execute(sql: str, params: dict[str, Any]) -> list[Any]:
            rows: list[Any] = cur.execute(sql, params).fetchall()
            return rows

        return hit_texts(conn, hits, bodies, execute)

    @staticmethod
    def _hits_sql(
        caller: Caller,
        req: SearchRequest,
        *,
        exact: bool,
        pred: Predicate | None = None,
        unordered: bool = False,
        low: int | None = None,
        high: int | None = None,
        judged: bool = False,
    ) -> tuple[str, dict[str, Any]]:
        """The ranked statement; ``exact`` (no session is pending in this snapshot) drops the
        per-row pending filter, which then holds for every row. ``unordered``: every visible
        match, without ORDER BY or LIMIT (what :meth:`session_hits` groups). ``low`` /
        ``high``: bounds of the ids of every row the time window keeps (:func:`_window_ids`),
        given to FTS5 with the MATCH, so that only the matches inside them are joined and
        scored (the IDF is the whole index's whatever the range). ``judged`` (a narrow caller's
        statement with ``role`` / ``since`` / ``until``): the filters are judged per row
        instead of in the WHERE, a ninth column, ``passed``, first in the order, the text
        marked for the rows that pass only (:meth:`ranked_hits` reads the rows up to the
        first that fails, which proves the query's words found: :func:`_keep_found_words`)."""
        where, params = _visible_sql(caller, req.session_key, pred)
        assert req.compiled is not None
        params.update(q=req.compiled.match, v=INDEX_VERSION, lim=req.limit + 1)
        bounds = ""
        if low is not None:
            bounds += f"AND {FTS_TABLE}.rowid >= :low "
            params["low"] = low
        if high is not None:
            bounds += f"AND {FTS_TABLE}.rowid <= :high "
            params["high"] = high
        match = ":q"
        if caller.is_narrow:
            # FTS5 intersects the text doclist with the visible sessions' tokens, so ranking
            # only scores rows the caller may see (8 ms instead of 268 ms measured). The
            # subquery re-uses the visibility SQL: its own alias `s` shadows the outer one.
            match = _scoped_match(":q", where)
        filters = user_filters(req, params)
        score = f"bm25({FTS_TABLE}, {BM25_WEIGHTS})"
        # mi.id last: two incarnations of one session key may hold the same message id.
        order = "mi.timestamp_ms DESC, s.session_key, mi.event_id, mi.id"
        limit = "LIMIT :lim"
        passed = ""
        if caller.is_narrow:
            # Every visible match, unranked (ranked by narrow_score): no bm25(), so no walk
            # of the query terms' doclists over every session.
            score = f"highlight({FTS_TABLE}, 0, char(1), char(2))"
            if req.order == "relevance":
                order = limit = ""
            if judged and filters and not unordered:
                # The filters judged per row, the rows that pass first: a row that fails
                # them still proves the query's words found, which a search that finds
                # nothing would otherwise ask one statement per word (each reading the
                # words' and the sessions' doclists again).
                passed = f"CASE WHEN 1 {filters} THEN 1 ELSE 0 END"
                score = f"CASE WHEN 1 {filters} THEN {score} END"
                order = f"passed DESC, {order}" if order else "passed DESC"
                filters = ""
        elif req.order == "relevance":
            order = f"rank, {order}"
        elif not unordered:
            # Ordered by time: bm25() of every match before the sort cost 7-10 ms of a phrase
            # of ~270 matches at 100k (1.3-2 ms without it); ranked_hits scores the rows
            # returned alone (:func:`_bm25_of`), the same scores.
            score = "NULL"
        if unordered:
            order = limit = ""
        pending = "" if exact else f"CROSS JOIN openclaw_index_state AS st ON {EXACT_JOIN} "
        sql = (
            f"SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
            f"s.session_key, {score} AS rank{', ' + passed + ' AS passed' if passed else ''} "
            f"FROM {FTS_TABLE} CROSS JOIN {CONTENT_TABLE} AS mi "
            f"ON mi.id = {FTS_TABLE}.rowid "
            f"CROSS JOIN openclaw_sessions AS s ON s.session_id = mi.session_id {pending}"
            f"WHERE {FTS_TABLE} MATCH {match} {bounds}AND {where} "
            f"{filters} {'ORDER BY ' + order if order else ''} {limit}"
        )
        return sql, params

    def session_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[tuple[Hit, int]]:
        """One hit per session key with the key's visible match count (see the Reader
        protocol). Wide callers: grouped, counted, ordered and limited in SQL over the ranked
        matches (a MATERIALIZED CTE: FTS5's bm25() cannot run inside a window function).
        Narrow callers: their matches are every visible match, ranked per message here
        (:func:`narrow_score`), so they are grouped here from the same rows."""
        sql, params = self._hits_sql(caller, req, exact=exact, unordered=True)
        if caller.is_narrow:
            rows = cursor(conn).execute(sql, params).fetchall()
            hits: list[Hit] = [(*row[:7], -narrow_score(row[7])) for row in rows]
            return group_by_session(hits, req)
        tail = "timestamp_ms DESC, session_key, event_id, id"
        order = tail if req.order == "recent" else f"rank, {tail}"
        params["glim"] = req.limit + 1
        grouped = (
            f"WITH m AS MATERIALIZED ({sql}), g AS (SELECT m.*, row_number() OVER "
            f"(PARTITION BY session_key ORDER BY {order}) AS rn, count(*) OVER "
            "(PARTITION BY session_key) AS n FROM m) "
            "SELECT id, session_id, seq, event_id, role, timestamp_ms, session_key, rank, n "
            f"FROM g WHERE rn = 1 ORDER BY {order} LIMIT :glim"
        )
        return [(tuple(r[:8]), int(r[8])) for r in cursor(conn).execute(grouped, params)]

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
        """See the Reader protocol. A narrow caller with few messages (:func:`_own_words`)
        takes its candidates from the words of its own messages that share the token's first
        :data:`NEAR_PREFIX_CHARS` letters, counted there (:func:`_nearest_own`): the words
        and counts the path below gives it, without ``fts5vocab``, which reads each
        candidate's whole doclist over every session (measured: bench/NOTES.md).
        Otherwise candidates come from the index's vocabulary
        (:data:`VOCAB_TABLE`, FTS5's ``fts5vocab`` over the body column): only the terms that
        share the token's first :data:`NEAR_PREFIX_CHARS` letters (a range of the term
        B-tree, not the whole vocabulary), those of its :func:`~openclaw_fts.spelling.near_heads`
        first (:func:`~openclaw_fts.spelling.examine_order`), at most
        :data:`~openclaw_fts.spelling.MAX_NEAR_CANDIDATES` of them (a range crowded by
        identifiers -- ``w0g0n…q`` ids, hex hashes -- read 5,900 terms for one search, 76 ms
        at 59k messages); the edit distance is computed here, in one call
        (:func:`~openclaw_fts.spelling.nearest`). The own-words path examines its words in the
        same order with the same cap. A narrow caller's nearest candidates are counted among
        the messages of its sessions (:meth:`_most_visible`; the vocabulary's document counts,
        of every session, only bound those counts), the visible ones ordered by that count,
        a farther distance counted only when the nearer ones give fewer than ``want``. A
        wider caller's candidates keep the vocabulary's order (nearest, then most frequent
        over every session) and are proved visible one statement each until ``want`` are
        (:meth:`_prove`): so which of its visible near words come first, and which are kept
        past ``want``, follows their frequency in sessions it may not see. Counting them among
        its visible messages instead (a statement per candidate joining up to
        :data:`WORD_COUNT_CAP` matches to their sessions) made such a search 0.3-0.6 ms
        slower at 100k events with a cap of 100 and 1-2.5 ms with 1,000, measured
        (bench/NOTES.md), where a narrow caller's counts cost nothing more."""
        if len(token) <= NEAR_PREFIX_CHARS:
            return []
        low = token[:NEAR_PREFIX_CHARS]
        own = _own_words(conn, caller, low, exact) if caller.is_narrow else None
        if own is not None:
            return _nearest_own(own, token, max_distance=max_distance, want=want)
        cur = cursor(conn)
        cur.execute(CREATE_VOCAB)  # made with the connection's settings: nothing to do
        # The terms of each near head first, then the rest of the range in order, and no more
        # than MAX_NEAR_CANDIDATES in all (UNION ALL runs its parts in turn and stops at the
        # LIMIT). No length bound in SQL: fts5vocab would read every term of the range and
        # the LIMIT would not bound that; the distance rejects the lengths.
        heads = [(h, _after(h)) for h in near_heads(token, NEAR_PREFIX_CHARS)]
        edges = [low, *(v for r in sorted(heads) for v in r), _after(low)]
        gaps = [(edges[n], edges[n + 1]) for n in range(0, len(edges), 2)]
        ranges = [*heads, *((a, b) for a, b in gaps if a < b)]
        # The tracked words of the range (the impact lists' words: every word held by
        # FREQUENT_TERM_MIN_DOCS messages or more, kept by the writer) come from their own
        # table, with the count they were tracked at, and the vocabulary is read around them:
        # fts5vocab counts a term by walking its whole doclist, and these are the longest
        # (the `hi` range at 100k events: 3.1 ms with `hi` and `him`, 0.8 ms without).
        tracked = {
            str(term): max(int(doc), FREQUENT_TERM_MIN_DOCS)
            for term, doc in cur.execute(
                f"SELECT term, docs FROM {TERMS_TABLE} WHERE term >= ? AND term < ?",
                (low, _after(low)),
            )
        }
        ranges = _without_tracked(ranges, list(tracked))
        if vocabulary.holds(token) and vocabulary.kept(conn):
            # The writer-kept words (revision 0015): the range is a B-tree read, and only the
            # few terms within the distance are counted in fts5vocab (bench/NOTES.md).
            terms = vocabulary.range_terms(cur, ranges, MAX_NEAR_CANDIDATES)
            note_examined("sqlite vocabulary", token, len(terms) + len(tracked))
            within = nearest(token, [*terms, *tracked], max_distance)
            docs = vocabulary.term_counts(cur, [t for t, _ in within if t not in tracked])
            docs.update(tracked)
            near = [(d, term, docs[term]) for term, d in within if term in docs]
        else:
            part = (
                f"SELECT term, doc FROM {VOCAB_TABLE} WHERE term >= ? AND term < ? AND col = 'body'"
            )
            rows = (
                cur.execute(
                    " UNION ALL ".join([part] * len(ranges)) + " LIMIT ?",
                    (*(v for r in ranges for v in r), MAX_NEAR_CANDIDATES),
                ).fetchall()
                if ranges
                else []
            )
            note_examined("sqlite vocabulary", token, len(rows) + len(tracked))
            docs = {str(term): int(doc) for term, doc in rows}
            docs.update(tracked)
            near = [(d, term, docs[term]) for term, d in nearest(token, list(docs), max_distance)]
        if not caller.is_narrow:
            # The vocabulary's order, nearest and most frequent over every session first:
            # counting each candidate among the visible messages cost a wide caller's search
            # that finds nothing 0.3-2.5 ms more at 100k events (bench/NOTES.md).
            ranked = [(term, doc) for _, term, doc in sorted(near, key=lambda n: (n[0], -n[2]))]
            candidates = [t for t, _ in ranked]
            proved = self._prove(
                conn, caller, candidates, prefix=False, want=want, exact=exact, bare=True
            )
            docs = dict(ranked)
            return [(term, docs[term]) for term in proved]
        by_distance: dict[int, list[tuple[str, int]]] = {}
        for distance, term, doc in near:
            by_distance.setdefault(distance, []).append((term, min(doc, WORD_COUNT_CAP)))
        found: list[tuple[str, int]] = []
        for distance in sorted(by_distance):
            if len(found) >= want:
                break
            found += self._most_visible(
                conn, caller, by_distance[distance], want - len(found), exact
            )
        return found

    def _most_visible(
        self,
        conn: Connection,
        caller: Caller,
        words: list[tuple[str, int]],
        want: int,
        exact: bool,
    ) -> list[tuple[str, int]]:
        """The ``want`` of ``words`` that the most messages the caller may see hold (ties:
        the word), with those counts (:meth:`_count_visible`, capped). Each word comes with
        an upper bound of its count (the vocabulary's, of every session, capped): the words
        are counted in the order of their bounds, and counting stops when no word left can
        reach the ``want``-th count found. The answer is the one counting every word gives:
        the bounds decide only how many statements run, never which words are returned."""
        counted: list[tuple[str, int]] = []
        for word, bound in sorted(words, key=_most_first):
            if len(counted) >= want and _most_first((word, bound)) > _most_first(counted[want - 1]):
                break  # this word, and every word after it, has fewer than the want-th
            counted += self._count_visible(conn, caller, [word], prefix=False, exact=exact)
            counted.sort(key=_most_first)
        return counted[:want]

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
        """See the Reader protocol: each word proved by one statement, in the order given,
        until ``want`` are (:meth:`_prove`); their counts are not read (0): the one caller,
        :mod:`openclaw_fts.suggest`, wants one word, which needs no order. A narrow caller
        with few messages has single-token words answered from its messages' words
        (:func:`_own_words`, the read its near words share; ``unmasked``: from the words of
        those of its messages without a mask, when this transaction has read them: the
        suggestions ask it of the near words that read gave); with ``counted=False``
        (whether the words of a query that found nothing are found at all) only when this
        transaction has read them already: a statement stopping at a word's first visible
        message costs less than reading and tokenizing every message of the caller that
        holds the word's first letters, one read per word (bench/NOTES.md, "Filters on the
        fast paths"), and a word
        that is not found is read by its near words anyway. A narrow caller's words that a
        filtered search of this transaction proved found (:func:`_keep_found_words`: a match
        of its sessions the filters left out) need no statement. Otherwise (``counted=False``)
        a narrow caller's words are first looked up in the whole index (:func:`_in_index`:
        a word no message holds is not found), and one with at most
        :data:`FOUND_READ_ROWS` messages has a word one of its ASCII bodies holds proved by
        that body (:func:`_own_bodies`, the read its near words share)."""
        if unmasked:
            kept = set() if prefix else _kept_bare_words(conn, caller, exact)
            bare: list[str] = []
            for word in words:  # in order, until want: a kept word needs no statement
                if len(bare) >= want:
                    break
                own = (
                    _own_words(
                        conn, caller, word[:NEAR_PREFIX_CHARS], exact, only_kept=True, bare=True
                    )
                    if caller.is_narrow and len(word) >= NEAR_PREFIX_CHARS and _is_one_token(word)
                    else None
                )
                if own is not None:  # the messages its near words were read from say it
                    said = bool(messages_holding(own, word, prefix=prefix))
                else:
                    said = word in kept or bool(
                        self._prove(
                            conn, caller, [word], prefix=prefix, want=1, exact=exact, unmasked=True
                        )
                    )
                if said:
                    bare.append(word)
            return [(word, 0) for word in bare]
        found = _kept_found_words(conn, caller) if caller.is_narrow and not prefix else set()
        rest = [w for w in words if w not in found]
        if found and len(rest) < len(words):
            # words a filtered search of this transaction proved found: the rest asked below
            more = (
                {
                    w
                    for w, _ in self.visible_words(
                        conn, caller, rest, want=len(rest), exact=exact, counted=counted
                    )
                }
                if rest
                else set()
            )
            return [(w, 0) for w in words if w in found or w in more][:want]
        if caller.is_narrow and all(
            len(w) >= NEAR_PREFIX_CHARS and _is_one_token(w) for w in words
        ):
            proved: list[str] = []
            for w in words:
                held = _own_words(conn, caller, w[:NEAR_PREFIX_CHARS], exact, only_kept=not counted)
                if held is None:
                    break  # the statements below answer every word
                if messages_holding(held, w, prefix=prefix):
                    proved.append(w)
            else:
                return [(word, 0) for word in proved[:want]]
        if caller.is_narrow and not counted and not prefix:
            words = _in_index(conn, words)  # an unscoped lookup each: the scoped proof costs 5x
            bodies = (
                _own_bodies(conn, caller, exact)
                if words and _own_row_count(conn, caller, exact) <= FOUND_READ_ROWS
                else None
            )
            if bodies is not None:
                proved = []
                for w in words:  # in order, until want: a word of an ASCII body needs no proof
                    if len(proved) >= want:
                        break
                    if ascii_holds_token(bodies.plain, w) or self._prove(
                        conn, caller, [w], prefix=False, want=1, exact=exact
                    ):
                        proved.append(w)
                return [(word, 0) for word in proved]
        proved = self._prove(conn, caller, words, prefix=prefix, want=want, exact=exact)
        return [(word, 0) for word in proved]

    @staticmethod
    def _prove(
        conn: Connection,
        caller: Caller,
        words: Sequence[str],
        *,
        prefix: bool,
        want: int,
        exact: bool,
        unmasked: bool = False,
        bare: bool = False,
    ) -> list[str]:
        """The first ``want`` of ``words`` that match a message the caller may search: one
        statement each, the MATCH joined to the visibility predicate, stopping at the first
        visible row (``unmasked``: the first whose body holds no credential mask). ``bare``
        (a wide caller's near words): the statement that proves a word of at most
        :data:`~..suggest.MAX_FRAGMENT_CHARS` letters visible also looks, once it is, for a
        visible message holding it without any mask, and the words it finds are kept for
        the transaction (:func:`_kept_bare_words`): the suggestions ask exactly that of them
        next (:func:`~..suggest.said_outside_masks`), which cost a statement each (measured:
        bench/NOTES.md)."""
        where, params = _searchable_sql(caller, exact)
        cur = cursor(conn)
        bare = bare and not caller.is_narrow and not prefix and not unmasked
        if unmasked:
            params["ellipsis"] = MASK_ELLIPSIS
            match = _scoped_match(":m", where) if caller.is_narrow else ":m"
            sql = (
                f"SELECT EXISTS (SELECT 1 FROM {FTS_TABLE} CROSS JOIN {CONTENT_TABLE} AS mi "
                f"ON mi.id = {FTS_TABLE}.rowid CROSS JOIN openclaw_sessions AS s "
                f"ON s.session_id = mi.session_id WHERE {FTS_TABLE} MATCH {match} AND {where} "
                "AND instr(mi.body, :ellipsis) = 0)"
            )
        elif caller.is_narrow:
            # The visible sessions' tokens in the MATCH (as the narrow ranked statement does):
            # joining each match to its session read a common word's whole doclist for a
            # caller who sees none of it (measured ~2 ms a word at 100k events).
            sql = (
                f"SELECT EXISTS (SELECT 1 FROM {FTS_TABLE} "
                f"WHERE {FTS_TABLE} MATCH {_scoped_match(':m', where)})"
            )
        else:
            rows = (
                f"SELECT 1 FROM {FTS_TABLE} CROSS JOIN {CONTENT_TABLE} AS mi "
                f"ON mi.id = {FTS_TABLE}.rowid CROSS JOIN openclaw_sessions AS s "
                f"ON s.session_id = mi.session_id WHERE {FTS_TABLE} MATCH :m AND {where}"
            )
            sql = f"SELECT EXISTS ({rows})"
            # 2: also held by a visible message without any mask, looked for only once the
            # word is proved visible (CASE evaluates its branches lazily).
            bare_sql = (
                f"SELECT CASE WHEN EXISTS ({rows}) THEN "
                f"1 + EXISTS ({rows} AND instr(mi.body, :ellipsis) = 0) ELSE 0 END"
            )
        if bare:
            params["ellipsis"] = MASK_ELLIPSIS
            if not conn.in_transaction():
                conn.begin()  # the engine's BEGIN (engine.py): the words are kept for it
        proved: list[str] = []
        found_bare: set[str] = set()
        for word in words:
            if len(proved) >= want:
                break
            params["m"] = _match_word(word, prefix)
            short = bare and len(word) <= MAX_FRAGMENT_CHARS
            held = int(cur.execute(bare_sql if short else sql, params).fetchone()[0])
            if held:
                proved.append(word)
            if held == 2:
                found_bare.add(word)
        if found_bare:
            _keep_bare_words(conn, caller, exact, found_bare)
        return proved

    @staticmethod
    def _count_visible(
        conn: Connection, caller: Caller, words: Sequence[str], *, prefix: bool, exact: bool
    ) -> list[tuple[str, int]]:
        """Each of ``words`` that matches a message of a narrow caller's sessions, with how
        many of those messages hold it, up to :data:`WORD_COUNT_CAP`: one statement each, the
        visible sessions' tokens in the MATCH (as the narrow ranked statement has them), so
        neither which words are returned nor their counts depend on other sessions."""
        assert caller.is_narrow
        where, params = _searchable_sql(caller, exact)
        params["cap"] = WORD_COUNT_CAP
        sql = (
            f"SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE} "
            f"WHERE {FTS_TABLE} MATCH {_scoped_match(':m', where)} LIMIT :cap)"
        )
        cur = cursor(conn)
        counted: list[tuple[str, int]] = []
        for word in dict.fromkeys(words):
            params["m"] = _match_word(word, prefix)
            n = int(cur.execute(sql, params).fetchone()[0])
            if n:
                counted.append((word, n))
        return counted

    @staticmethod
    def _rank_all_bound(conn: Connection) -> int:
        """Matches above which a scoped query is ranked by FTS5 alone (see
        :data:`SCOPED_RANK_ALL_SHARE`); the newest row id stands for the row count."""
        newest = cursor(conn).execute(f"SELECT max(id) FROM {CONTENT_TABLE}").fetchone()[0]
        return max(SCOPED_RANK_ALL_MIN_MATCHES, (newest or 0) // SCOPED_RANK_ALL_SHARE)

    @staticmethod
    def _at_most(conn: Connection, req: SearchRequest, matches: int) -> bool:
        """Whether the query matches at most ``matches`` rows (of any session): FTS5 steps
        through the doclist unranked and stops there."""
        assert req.compiled is not None
        beyond = (
            cursor(conn)
            .execute(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT 1 OFFSET ?",
                (req.compiled.match, matches),
            )
            .fetchone()
        )
        return beyond is None

    @staticmethod
    def _top_visible(
        conn: Connection,
        req: SearchRequest,
        match: str,
        where: str,
        params: dict[str, Any],
        extra: int = TIE_PROBE_ROWS,
    ) -> list[Hit] | None:
        """The ranked hits of a search with no filter but visibility and ``role``, in a snapshot
        where no session is pending: FTS5 alone ranks ``match`` (no join per match, as raw SQL
        would), then only the top rows are joined and judged by ``where`` (the visibility and
        the role filter over ``s`` and ``mi``). None when fewer than
        ``limit + 1`` of the ``extra`` rows fetched beyond them are visible, or the score at
        the limit ties with the last row fetched: a longer probe or the full statement then
        decides."""
        assert req.compiled is not None
        want = req.limit + 1
        fetch = want + extra
        ranked = (
            cursor(conn)
            .execute(
                f"SELECT rowid, bm25({FTS_TABLE}, {BM25_WEIGHTS}) AS rank "
                f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH {match} ORDER BY rank LIMIT :fetch",
                {**params, "q": req.compiled.match, "fetch": fetch},
            )
            .fetchall()
        )
        if not ranked:
            return []
        score = dict(ranked)
        ids = {f"id{n}": row_id for n, row_id in enumerate(score)}
        marks = ", ".join(f":{name}" for name in ids)
        rows = (
            cursor(conn)
            .execute(
                "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
                # CROSS JOIN fixes the order: with a long id list and an OR of indexed
                # session columns (agent, key) the planner otherwise drives from the sessions
                # and reads every row of the caller's agent (measured 3x slower at 300k).
                f"s.session_key FROM {CONTENT_TABLE} AS mi CROSS JOIN openclaw_sessions AS s "
                f"ON s.session_id = mi.session_id WHERE mi.id IN ({marks}) AND {where}",
                {**params, **ids},
            )
            .fetchall()
        )
        hits: list[Hit] = sorted(
            ((r[0], r[1], r[2], r[3], r[4], r[5], r[6], score[r[0]]) for r in rows),
            key=_order_key,
        )
        if len(ranked) < fetch:
            return hits[:want]  # the whole match set was ranked
        if len(hits) < want or hits[want - 1][7] >= ranked[-1][1]:
            return None  # a row not fetched may rank (or tie) within the limit
        return hits[:want]
