"""The impact lists on SQLite (:mod:`..impact`): written beside FTS5, walked by search.

Invariant: every tracked word's list holds exactly the ``message_index`` rows whose body FTS5
indexes the word under (as :func:`words` reads it: exact for ASCII text; in other text a
combining mark inside a word, or a private-use or unassigned character, splits or joins words
differently from FTS5 — a row may then miss a list, which only changes an order)
and whose impact reaches the word's ``min_impact``; a row's ``tf`` is the word's occurrences in
the body, ``doc_len`` the row's token count as bm25 reads it (FTS5's own ``docsize`` record:
body and session token), ``impact`` the bm25 factor with the word's fixed average length
(``message_impact_terms.avg_len``, the index's average when the word became tracked), so two
rows with the same ``tf`` and length tie exactly. Rows are added by :func:`add_rows` in the
transaction that inserts the index rows, deleted with them by the foreign key's cascade (and a
trigger, for connections without foreign keys), and a word's list is written by :func:`track`
in the transaction that makes it tracked. :func:`top_hits` re-scores the first rows of a list
with the index's current average length, so the order it returns is bm25's up to the rows
beyond its margin; :func:`list_ranks` ranks any rows of a tracked word the same way (a search
ordered ``recent``, whose rows are not the list's best).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from ...rows import Hit, NewRow
from ...tokens import fold
from ..impact import (
    FREQUENT_TERM_MIN_DOCS,
    IMPACT_TABLE,
    LIST_DIVISOR,
    LIST_MIN_ROWS,
    RESCORE_MARGIN,
    TERMS_TABLE,
    WALK_CAP_ROWS,
    bm25_factor,
    promote_due,
    trackable,
)
from .fts import CONTENT_TABLE, FTS_TABLE, cursor

#: FTS5's shadow tables this module reads: the per-row token counts and the index's totals.
DOCSIZE_TABLE = f"{FTS_TABLE}_docsize"
DATA_TABLE = f"{FTS_TABLE}_data"
#: The row of ``message_fts_data`` holding FTS5's totals (row count, tokens per column).
AVERAGES_ROWID = 1
#: fts5vocab tables over the index (TEMP: never written to the database file).
VOCAB_COLUMNS = "temp.openclaw_fts_vocab"
VOCAB_INSTANCES = "temp.openclaw_fts_instances"
#: SQLite's checkpoint interval (index rows): a checkpoint costs ~0.1 s at 100k events (the
#: sample's words, the candidates counted in FTS5), ~17 µs a row at this interval.
CHECK_EVERY_ROWS = 8192
#: Newest rows whose words a checkpoint reads to find the words that became frequent, and the
#: share of the rate that would make a word frequent at which it is counted in FTS5 (a word's
#: share of a sample varies; counting one costs ~0.3 ms).
SAMPLE_ROWS = 512
SAMPLE_MARGIN = 0.6
#: Row ids bound per statement (as a JSON array).
ID_CHUNK = 5000
#: Widest span of ids (from the row at a ``since`` / ``until`` window's edge to the newest /
#: oldest id) for which a list walk bounds the ids it may keep (:func:`id_bound`: the
#: window's lowest or highest id, read from the time index), so that it skips the list rows
#: outside that range on the walk index alone, without reading their rows. A wider window
#: costs more to read and keeps a larger share of a list, which the walk meets soon enough
#: without the bound. Measured at 100k events (the bench's 7 days: 8,044 rows, ids spanning
#: 8,224): ~0.4-0.7 ms CPU for the bound, against 2-6 ms of list and index rows a common
#: word's walk read without it (bench/NOTES.md, "Filters on the fast paths").
WINDOW_BOUND_ROWS = 16384
#: :func:`id_bound` of a window that holds no index row (no id is negative).
EMPTY_WINDOW = -1

_ASCII_WORD = re.compile(r"[a-z0-9]+")
#: A run with a character from here on (past Latin Extended-B) cannot fold to ASCII.
_FOLDS_BELOW = "\u0250"
#: Runs of letters and digits (Python's word characters without ``_``).
_WORD_RUN = re.compile(r"[^\W_]+")

#: Removes a deleted index row's list rows even on a connection without ``PRAGMA
#: foreign_keys`` (raw SQL), whose delete would not cascade: a later row may take its id.
DELETE_TRIGGER = "message_index_impact_delete"
CREATE_DELETE_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {DELETE_TRIGGER} AFTER DELETE ON {CONTENT_TABLE} BEGIN "
    f"DELETE FROM {IMPACT_TABLE} WHERE row_id = old.id; END"
)
DROP_DELETE_TRIGGER = f"DROP TRIGGER IF EXISTS {DELETE_TRIGGER}"


def _varints(blob: bytes) -> list[int]:
    """SQLite's big-endian varints (the 9th byte carries 8 bits), as FTS5 writes them."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def _size_sum(blob: bytes) -> int:
    """The sum of a ``docsize`` record's varints: its bytes' sum when every count is below 128
    (each one byte), as almost every row's is; else decoded."""
    return sum(blob) if blob.isascii() else sum(_varints(blob))


def avg_len(cur: sqlite3.Cursor) -> float:
    """The index's average row length in tokens (all columns), as bm25 computes it."""
    row = cur.execute(f"SELECT block FROM {DATA_TABLE} WHERE id = ?", (AVERAGES_ROWID,)).fetchone()
    return _average(None if row is None else row[0])


def _average(block: bytes | None) -> float:
    """:func:`avg_len` from FTS5's totals record (None: the index has none)."""
    if not block:
        return 1.0
    values = _varints(bytes(block))
    rows, tokens = values[0], sum(values[1:])
    return tokens / rows if rows > 0 and tokens > 0 else 1.0


def _doc_lens(cur: sqlite3.Cursor, ids: Sequence[int]) -> dict[int, int]:
    """Each row's token count (all columns) from FTS5's ``docsize`` records."""
    found: dict[int, int] = {}
    for start in range(0, len(ids), ID_CHUNK):
        chunk = json.dumps(list(ids[start : start + ID_CHUNK]))
        for row_id, size in cur.execute(
            f"SELECT id, sz FROM {DOCSIZE_TABLE} WHERE id IN (SELECT value FROM json_each(?))",
            (chunk,),
        ):
            found[int(row_id)] = _size_sum(bytes(size))
    return found


def words(body: str) -> list[str]:
    """The words of an indexed body as FTS5 folds them, for finding tracked (ASCII) words: runs
    of letters and digits, lower-cased; a run with other than ASCII folded by the tokenizer
    mirror's :func:`~openclaw_fts.tokens.fold` (``Café`` is ``cafe``). C-speed regular
    expressions: the full mirror (:func:`~openclaw_fts.tokens.tokenize`) cost ~0.4 ms a message,
    which tripled the writer's time."""
    lowered = body.lower()
    if lowered.isascii():
        return _ASCII_WORD.findall(lowered)
    return [
        w if w.isascii() else fold(w)
        for w in _WORD_RUN.findall(lowered)
        if w.isascii() or max(w) < _FOLDS_BELOW
    ]


def _fold_table() -> dict[int, str]:
    """:func:`~openclaw_fts.tokens.fold` of each letter and digit :func:`words` folds (below
    :data:`_FOLDS_BELOW`), for ``str.translate``. Each folds to one letter or digit or to
    nothing (tests/test_impact_lists.py checks it), so folding a text keeps its runs apart."""
    table: dict[int, str] = {}
    for code in range(0x80, ord(_FOLDS_BELOW)):
        char = chr(code)
        if _WORD_RUN.fullmatch(char) and fold(char) != char:
            table[code] = fold(char)
    return table


#: :func:`_fold_table`, built once.
_FOLD_TABLE = _fold_table()


#: Every character :data:`_FOLD_TABLE` folds, as one character class compiled once:
#: :func:`_folds_into` reads which of them a text holds. A class per word (the characters
#: folding to its letters), compiled on a word's first search ordered ``recent``, cost that
#: search 0.15-0.7 ms (sre's compiler in Python), most of the first search's excess over
#: the next ones (bench/NOTES.md, "the first recent-first search of a word").
_FOLDING = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_FOLD_TABLE)) + "]")


def _folds_into(text: str, word: str) -> bool:
    """Whether ``text`` holds a character that :data:`_FOLD_TABLE` folds to a letter of
    ``word`` or to nothing: a run :func:`words` folds to ``word`` holds one of them, or is
    ``word`` itself. (Each folds to one character or none, and ``"" in word`` holds.)"""
    return any(_FOLD_TABLE[ord(char)] in word for char in set(_FOLDING.findall(text)))


def occurrences(body: str, word: str) -> int:
    """``words(body).count(word)`` for a trackable (ASCII) ``word``, without a Python step per
    word of the body: the word is found with ``str.find`` and counted where no letter or digit
    touches it; a body with a character that folds to one of its letters (rare) is folded
    first, in one ``str.translate`` (folding keeps runs apart: :func:`_fold_table`; a run
    :func:`words` drops keeps a character from :data:`_FOLDS_BELOW` on, so never equals the
    word)."""
    text = body.lower()
    if not text.isascii() and _folds_into(text, word):
        text = text.translate(_FOLD_TABLE)
    count, at, end = 0, text.find(word), len(word)
    while at >= 0:
        after = at + end
        if (at == 0 or not text[at - 1].isalnum()) and (
            after == len(text) or not text[after].isalnum()
        ):
            count += 1
        at = text.find(word, after)
    return count


def _tracked(cur: sqlite3.Cursor) -> dict[str, tuple[float, float]]:
    """Every tracked word with its fixed average length and ``min_impact``."""
    return {
        str(term): (float(avg), float(cut))
        for term, avg, cut in cur.execute(f"SELECT term, avg_len, min_impact FROM {TERMS_TABLE}")
    }


def add_rows(
    cur: sqlite3.Cursor, first_id: int, rows: Sequence[NewRow], terms: set[str] | None = None
) -> None:
    """Add the lists' rows of index rows just inserted with ids ``first_id…`` (and their FTS5
    entries), then look for newly frequent words when the ids crossed a checkpoint.
    ``terms``: also collect there the rows' words (:func:`words`, the same read of each body)
    but the tracked ones, for the writer-kept vocabulary (:mod:`.vocabulary`)."""
    if not rows:
        return
    tracked = _tracked(cur)
    counts: list[dict[str, int]] = []
    if tracked or terms is not None:
        for r in rows:
            read = words(r.body)
            if terms is not None:
                terms.update(read)
            if tracked:
                seen = Counter(read)
                counts.append({w: seen[w] for w in seen.keys() & tracked.keys()})
        if terms is not None:
            terms.difference_update(tracked)  # read from their own table (.vocabulary)
    if tracked:
        ids = [first_id + k for k, c in enumerate(counts) if c]
        lens = _doc_lens(cur, ids)
        found = (
            (row_id, term, bm25_factor(tf, lens[row_id], tracked[term][0]), tf, lens[row_id])
            for row_id in ids
            if row_id in lens
            for term, tf in counts[row_id - first_id].items()
        )
        cur.executemany(
            f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len) "
            "VALUES (?, ?, ?, ?, ?)",
            [row for row in found if row[2] >= tracked[row[1]][1]],
        )
    last = first_id + len(rows) - 1
    if promote_due(first_id - 1, last, CHECK_EVERY_ROWS):
        promote_recent(cur, last)


def promote_recent(cur: sqlite3.Cursor, newest: int) -> list[str]:
    """Track the words that became frequent (every :data:`CHECK_EVERY_ROWS` rows), judged
    from the newest rows: the trackable words of the last :data:`SAMPLE_ROWS` rows frequent
    enough there to be held by ``FREQUENT_TERM_MIN_DOCS`` rows of the whole index at that rate
    (times :data:`SAMPLE_MARGIN`) are counted in FTS5 (up to the threshold), and tracked when
    they reach it. A word that grew frequent was written while it did, so a checkpoint meets it
    (the full vocabulary scan of :func:`promote`, ~0.4 s at 100k events, is for the migration
    and ``optimize``)."""
    bodies = [
        str(body)
        for (body,) in cur.execute(
            f"SELECT body FROM {CONTENT_TABLE} WHERE id > ? AND id <= ?",
            (newest - SAMPLE_ROWS, newest),
        )
    ]
    if not bodies:
        return []
    seen: Counter[str] = Counter()
    for body in bodies:
        seen.update({w for w in words(body) if trackable(w)})
    bar = FREQUENT_TERM_MIN_DOCS * len(bodies) * SAMPLE_MARGIN / max(newest, 1)
    candidates = sorted(word for word, n in seen.items() if n >= bar)
    if not candidates:
        return []
    known = {
        str(t)
        for (t,) in cur.execute(
            f"SELECT term FROM {TERMS_TABLE} WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(candidates),),
        )
    }
    average = avg_len(cur)
    sizes: dict[int, int] = {}
    added = []
    for word in candidates:
        if word in known:
            continue
        docs = cur.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT ?)",
            (f'body : "{word}"', FREQUENT_TERM_MIN_DOCS),
        ).fetchone()[0]
        if docs >= FREQUENT_TERM_MIN_DOCS:
            track(cur, word, _count(cur, word), average, sizes)
            added.append(word)
    return added


def _count(cur: sqlite3.Cursor, word: str) -> int:
    """Rows holding ``word`` (FTS5 walks its doclist)."""
    return int(
        cur.execute(
            f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ?", (f'body : "{word}"',)
        ).fetchone()[0]
    )


def frequent_words(cur: sqlite3.Cursor, min_docs: int) -> list[tuple[str, int]]:
    """Trackable words of the index held by at least ``min_docs`` rows, with their counts (a
    scan of FTS5's vocabulary)."""
    cur.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB_COLUMNS} "
        f"USING fts5vocab(main, '{FTS_TABLE}', 'col')"
    )
    return [
        (str(term), int(doc))
        for term, doc in cur.execute(
            f"SELECT term, doc FROM {VOCAB_COLUMNS} WHERE col = 'body' AND doc >= ?", (min_docs,)
        )
        if trackable(str(term))
    ]


def promote(cur: sqlite3.Cursor, min_docs: int = FREQUENT_TERM_MIN_DOCS) -> list[str]:
    """Track every trackable word held by at least ``min_docs`` rows that is not tracked yet
    (each list written whole, in the caller's transaction); returns the words."""
    known = {str(t) for (t,) in cur.execute(f"SELECT term FROM {TERMS_TABLE}")}
    new = [(term, docs) for term, docs in frequent_words(cur, min_docs) if term not in known]
    if not new:
        return []
    average = avg_len(cur)
    sizes: dict[int, int] = {}
    for term, docs in new:
        track(cur, term, docs, average, sizes)
    return [term for term, _ in new]


def _occurrences(
    cur: sqlite3.Cursor, term: str, sizes: dict[int, int] | None = None
) -> tuple[dict[int, int], dict[int, int]]:
    """``term``'s occurrences per row of the body (from FTS5's own instances) and those rows'
    lengths (from FTS5's size records; ``sizes``: lengths already read in this transaction,
    extended with the ones read here — words tracked together share most of their rows)."""
    cur.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB_INSTANCES} "
        f"USING fts5vocab(main, '{FTS_TABLE}', 'instance')"
    )
    tfs = dict(
        cur.execute(
            f"SELECT doc, count(*) FROM {VOCAB_INSTANCES} WHERE term = ? AND col = 'body' "
            "GROUP BY doc",
            (term,),
        ).fetchall()
    )
    if sizes is None:
        return tfs, _doc_lens(cur, sorted(tfs))
    sizes.update(_doc_lens(cur, sorted(row for row in tfs if row not in sizes)))
    return tfs, sizes


def track(
    cur: sqlite3.Cursor,
    term: str,
    docs: int,
    average: float,
    sizes: dict[int, int] | None = None,
) -> None:
    """Write ``term``'s list (occurrences per row from FTS5's own instances; its best rows, see
    ``impact.LIST_MIN_ROWS``) and make it tracked with ``average`` as its fixed average
    length. ``sizes``: row lengths an earlier :func:`track` of the same transaction read."""
    tfs, lens = _occurrences(cur, term, sizes)
    rows = sorted(
        (
            (row_id, term, bm25_factor(tf, lens[row_id], average), tf, lens[row_id])
            for row_id, tf in tfs.items()
            if row_id in lens
        ),
        key=lambda row: -row[2],
    )
    keep = max(LIST_MIN_ROWS, docs // LIST_DIVISOR)
    cut = rows[keep - 1][2] if len(rows) > keep else 0.0
    cur.execute(f"DELETE FROM {IMPACT_TABLE} WHERE term = ?", (term,))
    cur.executemany(
        f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len) VALUES (?, ?, ?, ?, ?)",
        [row for row in rows if row[2] >= cut],
    )
    cur.execute(
        f"INSERT OR REPLACE INTO {TERMS_TABLE} (term, docs, avg_len, min_impact) "
        "VALUES (?, ?, ?, ?)",
        (term, docs, average, cut),
    )


def _expected(
    cur: sqlite3.Cursor, term: str, average: float, cut: float, sizes: dict[int, int]
) -> set[int]:
    """The rows ``term``'s list should hold, from FTS5's instances and row sizes."""
    tfs, lens = _occurrences(cur, term, sizes)
    return {
        row_id
        for row_id, tf in tfs.items()
        if row_id in lens and bm25_factor(tf, lens[row_id], average) >= cut
    }


def drift(cur: sqlite3.Cursor) -> dict[str, dict[str, int]]:
    """Each tracked word whose list differs from what FTS5 says it should hold."""
    found: dict[str, dict[str, int]] = {}
    terms = cur.execute(f"SELECT term, avg_len, min_impact FROM {TERMS_TABLE}").fetchall()
    sizes: dict[int, int] = {}
    for term, average, cut in terms:
        want = _expected(cur, str(term), float(average), float(cut), sizes)
        have = {
            int(r)
            for (r,) in cur.execute(f"SELECT row_id FROM {IMPACT_TABLE} WHERE term = ?", (term,))
        }
        if want != have:
            found[str(term)] = {"missing": len(want - have), "extra": len(have - want)}
    return found


def rebuild(cur: sqlite3.Cursor) -> None:
    """Rewrite every tracked word's list from FTS5 (after FTS5 was rebuilt from its content)."""
    average = avg_len(cur)
    sizes: dict[int, int] = {}
    for term, docs in cur.execute(f"SELECT term, docs FROM {TERMS_TABLE}").fetchall():
        track(cur, str(term), int(docs), average, sizes)
    promote(cur)


def is_tracked(cur: sqlite3.Cursor, word: str) -> bool:
    return (
        cur.execute(f"SELECT 1 FROM {TERMS_TABLE} WHERE term = ?", (word,)).fetchone() is not None
    )


def _order_key(hit: Hit) -> tuple[float, int, str, str, int]:
    return (hit[7] if hit[7] is not None else 0.0, -hit[5], hit[6], hit[3], hit[0])


def id_bound(cur: sqlite3.Cursor, at: int, *, since: bool) -> int | None:
    """The lowest id of the index rows with ``timestamp_ms >= at`` (``since``), or the highest
    of those with ``timestamp_ms <= at``; None when the window's ids span more than
    :data:`WINDOW_BOUND_ROWS` (no bound: the walk meets its rows soon enough);
    :data:`EMPTY_WINDOW` when it holds no row. Read from the time index (ids and times, no
    row): the row at the window's edge nearest ``at`` gives a pivot id, and the window's rows
    on the far side of it (written out of time order) are read for the extreme; the span is
    the pivot's distance to the table's highest (lowest) id."""
    op, order, far, pick, edge = (
        (">=", "", "<", "min", "max") if since else ("<=", " DESC", ">", "max", "min")
    )
    pivot = cur.execute(
        f"SELECT id FROM {CONTENT_TABLE} WHERE timestamp_ms {op} ? "
        f"ORDER BY timestamp_ms{order} LIMIT 1",
        (at,),
    ).fetchone()
    if pivot is None:
        return EMPTY_WINDOW
    ends = cur.execute(f"SELECT {edge}(id) FROM {CONTENT_TABLE}").fetchone()[0]
    if abs(int(ends) - int(pivot[0])) > WINDOW_BOUND_ROWS:
        return None
    # `+id`: the time index scanned over the window (ids only), not the table by id
    stray = cur.execute(
        f"SELECT {pick}(+id) FROM {CONTENT_TABLE} WHERE timestamp_ms {op} ? AND +id {far} ?",
        (at, pivot[0]),
    ).fetchone()[0]
    return int(pivot[0]) if stray is None else int(stray)


def top_hits(
    cur: sqlite3.Cursor,
    word: str,
    where: str,
    params: dict[str, Any],
    want: int,
    pending: str,
    filters: str = "",
    *,
    low: int | None = None,
    high: int | None = None,
) -> list[Hit] | None:
    """The best ``want`` visible hits of the one tracked word ``word`` in bm25 order (``rank``:
    minus the factor, no IDF: lower is better), or None when it is not tracked or its list
    holds fewer than ``want`` visible rows that pass ``filters`` among its first
    :data:`WALK_CAP_ROWS` (the exact path decides).
    ``where``/``params``: the visibility over sessions ``s``; ``pending``: the join that keeps
    only exactly indexed sessions ('' when none is pending); ``filters``: the search's own
    filters over the index rows ``mi`` (``AND …``, their values in ``params``), applied in the
    walking statement before its limit; ``low`` / ``high``: bounds of the ids of every row
    that can pass them (:func:`id_bound` of the search's time window, or None), which the walk
    also applies to the list rows themselves (their ids are in the walk index), so a list row
    outside them is skipped without reading its index row; :data:`EMPTY_WINDOW`: no row
    can pass."""
    if not is_tracked(cur, word):
        return None
    if EMPTY_WINDOW in (low, high):
        return []  # the window holds no index row: nothing can pass it
    ids = ("AND row_id >= :low " if low is not None else "") + (
        "AND row_id <= :high " if high is not None else ""
    )
    fetch = want + RESCORE_MARGIN
    # The list rows' ids and impacts from the walk index alone (it holds the table's key), so
    # the id range drops a row before any read; `tf` and `doc_len` are read for the rows that
    # pass (a WITHOUT ROWID table reads its row before a condition on the key: measured, a
    # common word's 576 list rows each read for a window keeping 55).
    select = (
        "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
        "s.session_key, i.impact, t.tf, t.doc_len "
        f"FROM (SELECT row_id, impact FROM {IMPACT_TABLE} WHERE term = :w {ids}"
        "{extra}ORDER BY impact DESC LIMIT :cap) AS i "
        f"CROSS JOIN {CONTENT_TABLE} AS mi ON mi.id = i.row_id "
        f"CROSS JOIN openclaw_sessions AS s ON s.session_id = mi.session_id {pending}"
        f"CROSS JOIN {IMPACT_TABLE} AS t ON t.row_id = i.row_id AND t.term = :w "
        f"WHERE {where} {filters} LIMIT :outer"
    )
    bound = {**params, "w": word, "cap": WALK_CAP_ROWS, "outer": fetch, "low": low, "high": high}
    rows = cur.execute(select.format(extra=""), bound).fetchall()
    if len(rows) < want:
        return None  # the list's best rows hold too few visible ones: the exact path decides
    if len(rows) == fetch:
        # every row tied with the last one read, so the tie-break below sees them all
        seen = {r[0] for r in rows}
        ties = cur.execute(
            select.format(extra="AND impact = :last "),
            {**bound, "last": rows[-1][7], "outer": WALK_CAP_ROWS},
        ).fetchall()
        rows.extend(r for r in ties if r[0] not in seen)
    average = avg_len(cur)
    hits: list[Hit] = [
        (r[0], r[1], r[2], r[3], r[4], r[5], r[6], list_rank(r[8], r[9], average)) for r in rows
    ]
    hits.sort(key=_order_key)
    return hits[:want]


def list_rank(tf: int, doc_len: int, average: float) -> float:
    """The rank (lower is better) of a row holding a tracked word ``tf`` times in ``doc_len``
    tokens, with ``average`` the index's current average length: minus bm25 without its IDF,
    the score a one-word search answered from the word's list shows (docs/tools.md)."""
    return -bm25_factor(tf, doc_len, average)


def list_ranks(
    cur: sqlite3.Cursor, word: str, ids: Sequence[int], *, tracked: bool = False
) -> dict[int, float] | None:
    """The rank :func:`top_hits` gives each of the index rows ``ids`` (rows that hold the word
    ``word``), or None when ``word`` is not tracked or a row has no FTS5 size record. A row the
    list holds is ranked from its list row; another one from what :func:`add_rows` would have
    written for it (the word's occurrences in the body as :func:`words` reads them, counted by
    :func:`occurrences`; the length from FTS5's ``docsize`` record). No read of the word's
    doclist: bm25's IDF, which FTS5 computes by reading the whole doclist (3.3 ms for a word of
    64,530 rows at 100k), is what this spares a search ordered ``recent``
    (:func:`~.read._newest_hits`). ``tracked``: the caller read the word tracked in this
    transaction (not asked again). One statement reads the rows and FTS5's totals (the
    index's average length), where three did."""
    if not tracked and not is_tracked(cur, word):
        return None
    wanted = set(ids)
    # each row's list row, or its body and FTS5 size record when it has none; then the totals
    found: dict[int, tuple[int, int]] = {}
    totals: bytes | None = None
    for row_id, tf, doc_len, body, size in cur.execute(
        f"SELECT j.value, t.tf, t.doc_len, mi.body, d.sz FROM json_each(?) AS j "
        f"LEFT JOIN {IMPACT_TABLE} AS t ON t.row_id = j.value AND t.term = ? "
        f"LEFT JOIN {CONTENT_TABLE} AS mi ON t.row_id IS NULL AND mi.id = j.value "
        f"LEFT JOIN {DOCSIZE_TABLE} AS d ON t.row_id IS NULL AND d.id = j.value "
        f"UNION ALL SELECT NULL, NULL, NULL, NULL, block FROM {DATA_TABLE} WHERE id = ?",
        (json.dumps(sorted(wanted)), word, AVERAGES_ROWID),
    ):
        if row_id is None:
            totals = size
        elif tf is not None:
            found[int(row_id)] = (int(tf), int(doc_len))
        elif body is not None and size is not None:
            found[int(row_id)] = (occurrences(str(body), word), _size_sum(bytes(size)))
    if len(found) < len(wanted):
        return None
    average = _average(totals)
    return {row_id: list_rank(tf, doc_len, average) for row_id, (tf, doc_len) in found.items()}


class FtsImpactLists:
    """:class:`~openclaw_fts.index.base.ImpactLists` on SQLite: lists written beside FTS5 by
    the writer that holds the database's write lock, so they do not drift under concurrency:
    only :meth:`drift` (``check``) has work; there is nothing to mark, repair or promote
    outside a writer (the writer's checkpoints promote: :func:`promote_recent`)."""

    def drift(self, conn: Connection) -> dict[str, dict[str, int]]:
        return drift(cursor(conn))

    def distrust(self, conn: Connection, words: Sequence[str]) -> None:
        """Nothing: a list that drifted is rebuilt by ``rebuild`` (:func:`rebuild`)."""

    def repair(self, conn: Connection, *, verify: bool) -> list[str]:
        """Nothing to repair (:meth:`distrust`)."""
        return []

    def promote_if_free(self, conn: Connection) -> None:
        """Nothing: SQLite's writer tracks its frequent words itself."""
