"""The words of the SQLite index kept by its writer (revision 0015): where a wide caller's search
that finds nothing takes its near words' candidates from.

Invariant: :data:`VOCABULARY_TABLE` holds every word-like term (letters only, at least
:data:`MIN_TERM_CHARS` of them) of the bodies indexed since the table exists, as
:func:`body_words` reads them -- exactly FTS5's terms for ASCII text; in other text the
tokenizer mirror's :func:`~openclaw_fts.tokens.fold` of each run of letters, which differs from
FTS5 only where the mirror does (a word missing then only changes a suggestion) -- and the
terms the revision found in FTS5's own vocabulary when it made the table. Terms only, no
counts; a term is never deleted: a row deleted (a branch switch, a reconcile, a rewind)
leaves its words, so the table is a superset of the index's words, and a word no index row
holds any longer is dropped by the reader when its count is read (0) -- every suggestion is
proved visible by a statement over the index anyway (:mod:`.read`). Written by the writer
in the transaction that inserts the index rows (:func:`add_words`).

Why (bench/NOTES.md, "Searches that find nothing, fifth pass"): FTS5's ``fts5vocab`` counts a
term by walking its whole doclist, so reading the two-letter range of a misspelt word's
candidates was 0.5-0.9 ms of a ~1 ms miss at 100k events, against a 0.3-0.45 ms hit. A range
of this table is a B-tree read; only the few candidates within the edit distance are counted
in ``fts5vocab`` (:func:`term_counts`). What it costs the writer: one ``INSERT OR IGNORE`` per
batch, of the words that the connection does not know to be in the table already
(:data:`_KNOWN_MEMO`: words it found there, committed), from the read of each body the
impact lists make anyway; at most :data:`KNOWN_TERMS_CAP` of them kept.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from ...tokens import fold
from ..memo import SchemaFeature, keep_for_transaction, kept_for_transaction
from .fts import VOCAB_TABLE

#: The writer-kept vocabulary (revision 0015): one row per term, ``WITHOUT ROWID``.
VOCABULARY_TABLE = "message_vocabulary"
CREATE_VOCABULARY = (
    f"CREATE TABLE IF NOT EXISTS {VOCABULARY_TABLE} (term TEXT NOT NULL, "
    f"CONSTRAINT pk_{VOCABULARY_TABLE} PRIMARY KEY (term)) WITHOUT ROWID"
)
DROP_VOCABULARY = f"DROP TABLE IF EXISTS {VOCABULARY_TABLE}"
#: Shortest term kept: a near word shares its misspelt word's first two letters
#: (``read.NEAR_PREFIX_CHARS``), so a shorter term is never a candidate.
MIN_TERM_CHARS = 2
#: Words a connection remembers to be in the table (committed), so that its writes skip them:
#: past this many the memo is emptied and fills again (at 100k events the table holds ~78k
#: terms; each remembered word is ~60 bytes).
KNOWN_TERMS_CAP = 131_072
#: Where a pooled DBAPI connection remembers those words.
_KNOWN_MEMO = "openclaw_fts_sqlite_known_terms"
#: Where it remembers, for one transaction, the words it inserted itself (not committed yet:
#: never remembered as known, a ROLLBACK takes them away).
_OWN_MEMO = "openclaw_fts_sqlite_own_terms"

#: Whether the table exists (the catalogue only).
PRESENT_SQL = (
    f"EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{VOCABULARY_TABLE}')"
)
#: The table as one of the schema's features (:class:`~..memo.SchemaFeature`): a store opened
#: with ``upgrade=False`` on a database below 0015 reads ``fts5vocab`` and writes no word.
FEATURE = SchemaFeature("sqlite", "vocabulary", PRESENT_SQL)

_ASCII_WORD = re.compile(r"[a-z0-9]+")
#: Runs of letters and digits (Python's word characters without ``_``).
_WORD_RUN = re.compile(r"[^\W_]+")


def kept(conn: Connection) -> bool:
    """Whether the database keeps :data:`VOCABULARY_TABLE`, as the pooled connection
    remembers the schema."""
    return FEATURE.present(conn)


def body_words(body: str, ascii_words: Sequence[str] | None = None) -> set[str]:
    """The word-like terms of one indexed body this table keeps: runs of letters and digits,
    lower-cased, folded by the tokenizer mirror when not ASCII, made of letters only and at
    least :data:`MIN_TERM_CHARS` long. ``ascii_words``: the body's runs as
    :func:`.impact.words` read them already, used when the body is ASCII (the same runs)."""
    if body.isascii():
        runs: Sequence[str] = (
            ascii_words if ascii_words is not None else _ASCII_WORD.findall(body.lower())
        )
    else:
        runs = [w if w.isascii() else fold(w) for w in _WORD_RUN.findall(body.lower())]
    return {w for w in runs if len(w) >= MIN_TERM_CHARS and w.isalpha()}


def add_words(conn: Connection, cur: sqlite3.Cursor, words: Iterable[str]) -> None:
    """Insert ``words`` (:func:`body_words` of rows this transaction indexes) that the
    connection does not remember to be in the table: one ``INSERT OR IGNORE`` of them. When it
    inserted none, every one was there already, committed unless this transaction inserted it
    (:data:`_OWN_MEMO`): those are remembered as known (terms are never deleted). When it
    inserted some, which ones is not known: all of them count as this transaction's own (asked
    again by a later write, which costs a statement, never a word)."""
    info: dict[str, Any] = conn.connection.info
    known: set[str] | None = info.get(_KNOWN_MEMO)
    if known is None or len(known) > KNOWN_TERMS_CAP:
        known = info[_KNOWN_MEMO] = set()
    fresh = set(words) - known
    if not fresh:
        return
    inserted = cur.execute(
        f"INSERT OR IGNORE INTO {VOCABULARY_TABLE} (term) SELECT value FROM json_each(?)",
        (json.dumps(sorted(fresh)),),
    ).rowcount
    own: set[str] | None = kept_for_transaction(conn, _OWN_MEMO)
    if inserted == 0:
        known.update(fresh - own if own else fresh)
        return
    if own is None:
        own = set()
        keep_for_transaction(conn, _OWN_MEMO, own)
    own.update(fresh)


def range_terms(cur: sqlite3.Cursor, ranges: Sequence[tuple[str, str]], cap: int) -> list[str]:
    """The terms of ``ranges`` (``[start, end)``, read in turn), at most ``cap`` in all."""
    if not ranges:
        return []
    part = f"SELECT term FROM {VOCABULARY_TABLE} WHERE term >= ? AND term < ?"
    return [
        str(t)
        for (t,) in cur.execute(
            " UNION ALL ".join([part] * len(ranges)) + " LIMIT ?",
            (*(v for r in ranges for v in r), cap),
        )
    ]


def term_counts(cur: sqlite3.Cursor, terms: Sequence[str]) -> dict[str, int]:
    """Each of ``terms`` that the index holds, with the number of rows whose body does
    (``fts5vocab``, as the range read of the whole vocabulary counted them): one statement,
    one doclist walked per term. A term no row holds any longer is missing."""
    if not terms:
        return {}
    marks = ", ".join("?" * len(terms))
    return {
        str(term): int(doc)
        for term, doc in cur.execute(
            f"SELECT term, doc FROM {VOCAB_TABLE} WHERE col = 'body' AND term IN ({marks})",
            tuple(terms),
        )
        if int(doc) > 0
    }
