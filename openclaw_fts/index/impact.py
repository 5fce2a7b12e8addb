"""The impact lists of frequent words: top-k for a common word without scoring every match.

A search for one very common word used to rank every message holding it (bm25 on SQLite,
``ts_rank`` on PostgreSQL, ~1-4 µs a match) before its ``LIMIT``. For each *tracked* word
(:data:`TERMS_TABLE`: words in at least :data:`FREQUENT_TERM_MIN_DOCS` messages, plain ASCII
letters and digits) :data:`IMPACT_TABLE` holds one row per message that contains it and scores
at least the word's ``min_impact`` (its best rows, :data:`LIST_MIN_ROWS`), with the word's
single-word score factor in that message (its *impact*), indexed by ``(term, impact)``. For a
one-word query the order of the matches by the engine's score depends on that factor alone, so
the top rows are the first rows of the word's list in descending impact: a search walks the
list, joins each row to its index row and session for visibility and the search's own filters
(``role``, ``since``, ``until``: columns of the index row) in the same statement, and stops at
the limit (:mod:`.sqlite.impact`, :mod:`.postgresql.impact`); a list without enough visible
rows that pass the filters sends the search to the exact path. A filter only removes rows, so
the rows a list omits (each ranked below every row it holds) stay below the ones it returns.

Invariant: for every word in :data:`TERMS_TABLE`, :data:`IMPACT_TABLE` holds exactly one row per
``message_index`` row whose indexed text contains the word with an impact of at least the
word's ``min_impact``, and no other row of that word, at every commit: rows are written in the
same transaction as the index rows (SQLite: by the
writer, from the tokenizer mirror and FTS5's own row sizes; PostgreSQL: by triggers on the
index rows, from the row's ``tsvector``), removed with them (a foreign key, or a trigger), and
a word becomes tracked only in the transaction that fills its whole list. A search that cannot
use a list (a word not tracked, several words, a phrase, a prefix, a ``sessionKey``, the
``recent`` order, a narrow caller) takes the exact path, unchanged, except that on SQLite
a search of one tracked word ordered ``recent`` scores the rows it returns as the word's list
scores them (``sqlite.impact.list_ranks``: no bm25 IDF, whose doclist read cost more than the
walk). This module holds names, thresholds and arithmetic; no SQL.
"""

from __future__ import annotations

import re

from ..query import CompiledQuery
from ..rows import SearchRequest

#: One row per (tracked word, index row holding it): ``term``, ``row_id`` (``message_index.id``),
#: ``impact`` (higher ranks first), ``tf`` (occurrences of the word in the row), ``doc_len``
#: (the row's length as the engine's score counts it).
IMPACT_TABLE = "message_impact"
#: The tracked words: ``term`` and ``docs`` (messages holding it when it became tracked).
TERMS_TABLE = "message_impact_terms"
#: Index over :data:`IMPACT_TABLE` in list order.
WALK_INDEX = "ix_message_impact_walk"

#: A word is tracked once this many messages hold it. Ranking every match costs ~1.5 µs a
#: match on SQLite and ~4 µs on PostgreSQL (measured at 100k events), so below this the exact
#: path stays within a few milliseconds; above it the list's walk is cheaper. An absolute count,
#: not a share: the exact path's cost is per match, whatever the size of the index.
FREQUENT_TERM_MIN_DOCS = 2000
#: Most characters of a tracked word (longer words are never that frequent).
MAX_TERM_CHARS = 64
#: The words that can be tracked: what both engines index as the same single term.
TERM_PATTERN = re.compile(f"[a-z0-9]{{1,{MAX_TERM_CHARS}}}")
#: The writer looks for newly frequent words whenever the newest index row id crosses a
#: multiple of this (PostgreSQL; SQLite's writer every ``sqlite.impact.CHECK_EVERY_ROWS``),
#: from the plugin's own counts on both engines: the words frequent in the newest rows, each
#: counted in the index up to the threshold (no ``ANALYZE``, no ``optimize`` needed), so a
#: growing index starts tracking a word soon after it becomes frequent. ``optimize``, a
#: reconciler's pass (``store.reconcile()``, or the background pass a search starts when it
#: finds sessions pending; inline appends start none) and the migration look too.
PROMOTE_EVERY_ROWS = 4096
#: Most words one commit at a boundary, or one reconciler's pass, tracks (PostgreSQL): each
#: word is counted, ranked and listed in the committing writer's transaction (or under the
#: lock every writer needs), ~50-100 ms for a word near the threshold at 5m rows, ~1 s for one
#: in 50k, and one autovacuum ``ANALYZE`` of a big store can name hundreds of newly frequent
#: words at once (bench/NOTES.md: 2,689 at 5m, minutes inside one ``append_many``). The most
#: frequent candidates go first; the rest wait for the next boundary or pass (their searches
#: take the exact path meanwhile: the same answers, slower). ``optimize`` tracks every one.
PROMOTE_MAX_WORDS = 8
#: A word's list holds its best rows only: those whose impact reaches the word's
#: ``min_impact``, set when it becomes tracked to the impact of its
#: ``max(LIST_MIN_ROWS, docs // LIST_DIVISOR)``-th best row (ties included), and every later row
#: that reaches it. A search that finds too few visible rows in the list takes the exact path.
#: Measured at 100k events: complete lists of the 177 words held by 2,000 messages or more
#: were 1.44 million rows (69 MB, four times FTS5's index); these shares keep about a tenth.
LIST_MIN_ROWS = 512
LIST_DIVISOR = 16
#: Rows of a list read at most by one search before it gives up and takes the exact path (a
#: caller who sees few of the word's messages: the exact path joins visibility first).
WALK_CAP_ROWS = 4096
#: Candidates beyond ``limit + 1`` read from a SQLite list and re-scored with the index's
#: current average length (the stored impact used the average when the row was written).
RESCORE_MARGIN = 32

#: FTS5's bm25 parameters.
BM25_K1 = 1.2
BM25_B = 0.75


def bm25_factor(tf: int, doc_len: int, avg_len: float) -> float:
    """FTS5's bm25 for one word without its IDF (a constant for one query):
    ``tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))``."""
    if avg_len <= 0:
        avg_len = 1.0
    return tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * doc_len / avg_len))


def trackable(term: str) -> bool:
    """Whether ``term`` (a folded index token) can be a tracked word."""
    return TERM_PATTERN.fullmatch(term) is not None


def single_word(compiled: CompiledQuery | None) -> str | None:
    """The query's one word when it is exactly one plain word (no phrase, no prefix, no OR)
    that could be tracked, else None."""
    if compiled is None or len(compiled.terms) != 1:
        return None
    term = compiled.terms[0]
    if term.prefix or len(term.tokens) != 1 or not trackable(term.tokens[0]):
        return None
    return term.tokens[0]


def fast_path_word(req: SearchRequest) -> str | None:
    """The word whose impact list can answer ``req`` (ranked by relevance; ``role``, ``since``
    and ``until`` are applied while the list is walked), else None."""
    if req.order != "relevance" or req.session_key is not None:
        return None
    return single_word(req.compiled)


def promote_due(before: int, after: int, every: int = PROMOTE_EVERY_ROWS) -> bool:
    """Whether index row ids growing from ``before`` to ``after`` crossed a multiple of
    ``every``."""
    return after // every > before // every


def overlap(fast: list[int], exact: list[int]) -> float:
    """Top-k overlap: the share of ``exact``'s ids that ``fast`` holds too (1.0 when both are
    empty)."""
    if not exact:
        return 1.0 if not fast else 0.0
    return len(set(fast) & set(exact)) / len(exact)
