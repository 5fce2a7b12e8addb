"""The words of the SQLite index kept by its writer (revision 0015): where a wide caller's search
that finds nothing takes its near words' candidates from.

Invariant: :data:`VOCABULARY_TABLE` holds every term made of letters only of the bodies indexed
since the table exists but the words tracked when they were written (``message_impact_terms``,
whose words the reader takes from that table, and a tracked word stays tracked), as the impact
lists' :func:`.impact.words` reads them -- exactly FTS5's
terms for ASCII text, Latin runs folded by the tokenizer mirror; a run holding a character from
:data:`LATIN_END` on (Greek, Cyrillic, ...) is not read there, so a misspelt word holding one
is looked up in FTS5's own vocabulary (:func:`holds`) -- and every term of letters only that
the revision found in FTS5's vocabulary when it made the table. Terms only, no counts; a term
is never deleted: a row deleted (a branch switch, a reconcile, a rewind) leaves its words, so
the table is a superset of those words of the index, and a word no index row holds any longer
is dropped by the reader when its count is read (0) -- every suggestion is proved visible by a
statement over the index anyway (:mod:`.read`). Written by the writer in the transaction that
inserts the index rows (:func:`add_words`).

Why (bench/NOTES.md, "Searches that find nothing, seventh pass"): FTS5's ``fts5vocab`` counts a
term by walking its whole doclist, so reading the two-letter range of a misspelt word's
candidates was 0.5-0.9 ms of a ~1 ms miss at 100k events, against a 0.3-0.45 ms hit. A range
of this table is a B-tree read; only the few candidates within the edit distance are counted
in ``fts5vocab`` (:func:`term_counts`). What it costs the writer: the words of a batch that the
process does not know to be in the table (:data:`_KNOWN`: words it found there, committed; at
most :data:`KNOWN_TERMS_CAP` a database) and are not tracked (the most frequent: about
half of a message's words), each inserted by a statement of its own up to
:data:`ONE_BY_ONE_TERMS` of them (so each one's ``rowcount`` says whether it was there), else
looked up then inserted in one statement each; the words come from the read of each body the
impact lists make anyway.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from ..memo import SchemaFeature, keep_for_transaction, kept_for_transaction
from .fts import VOCAB_TABLE

#: The writer-kept vocabulary (revision 0015): one row per term, ``WITHOUT ROWID``.
VOCABULARY_TABLE = "message_vocabulary"
CREATE_VOCABULARY = (
    f"CREATE TABLE IF NOT EXISTS {VOCABULARY_TABLE} (term TEXT NOT NULL, "
    f"CONSTRAINT pk_{VOCABULARY_TABLE} PRIMARY KEY (term)) WITHOUT ROWID"
)
DROP_VOCABULARY = f"DROP TABLE IF EXISTS {VOCABULARY_TABLE}"
#: Words the process remembers to be in a database's table (committed), so that its writes skip
#: them: past this many the memo of that database is emptied and fills again (at 100k events the
#: table holds ~50k terms; each remembered word is ~60 bytes).
KNOWN_TERMS_CAP = 131_072
#: Databases (files, each at one schema version) whose words the process remembers at once.
KNOWN_DATABASES = 8
#: A batch's unknown words up to this many are inserted one statement each (a single append
#: brings 2-3 once the connection knows the common ones); more are looked up, then the missing
#: ones inserted, in two statements.
ONE_BY_ONE_TERMS = 8
#: The words the process remembers, by database file and schema version (``PRAGMA
#: schema_version``, which every change of the file's schema raises, whoever makes it: a table
#: dropped and made again is a new key). Shared by the connections and engines of the process,
#: so a new store on a file the process wrote knows its words (the bench's single appends run
#: on a store opened after the live ingest); a ``:memory:`` database is its connection's own.
_KNOWN: dict[tuple[str, int], set[str]] = {}
#: Where a pooled DBAPI connection remembers its database's file.
_FILE_MEMO = "openclaw_fts_sqlite_database_file"
#: Where it remembers, for one transaction, the words it inserted itself (not committed yet:
#: never remembered as known, a ROLLBACK takes them away).
_OWN_MEMO = "openclaw_fts_sqlite_own_terms"
#: The first code point of a run :func:`.impact.words` does not read: a misspelt word holding
#: one is looked up in FTS5's vocabulary, not in this table.
LATIN_END = "\u0250"

#: Whether the table exists (the catalogue only).
PRESENT_SQL = (
    f"EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{VOCABULARY_TABLE}')"
)
#: The table as one of the schema's features (:class:`~..memo.SchemaFeature`): a store opened
#: with ``upgrade=False`` on a database below 0015 reads ``fts5vocab`` and writes no word.
FEATURE = SchemaFeature("sqlite", "vocabulary", PRESENT_SQL)
_INSERT_ONE = f"INSERT OR IGNORE INTO {VOCABULARY_TABLE} (term) VALUES (?)"


def kept(conn: Connection) -> bool:
    """Whether the database keeps :data:`VOCABULARY_TABLE`, as the pooled connection
    remembers the schema."""
    return FEATURE.present(conn)


def holds(token: str) -> bool:
    """Whether the table holds ``token``'s near words, were they in the index: a token of no
    character from :data:`LATIN_END` on (its near words share its first letters)."""
    return not token or max(token) < LATIN_END


def letter_words(runs: Iterable[str]) -> set[str]:
    """Of ``runs`` (the words :func:`.impact.words` read from bodies), those the table keeps:
    made of letters only."""
    return set(filter(str.isalpha, runs))


def add_words(conn: Connection, cur: sqlite3.Cursor, words: Iterable[str]) -> None:
    """Insert ``words`` (:func:`letter_words` of the rows this transaction indexes) that the
    process does not remember to be in the table (:func:`_known`). Those found there already,
    but for this transaction's own (:data:`_OWN_MEMO`), are remembered as known (committed --
    a writer sees no other writer's uncommitted rows -- and terms are never deleted)."""
    known = _known(conn, cur)
    fresh = set(words) - known
    if not fresh:
        return
    own: set[str] | None = kept_for_transaction(conn, _OWN_MEMO)
    if own is None:
        own = set()
        keep_for_transaction(conn, _OWN_MEMO, own)
    if len(fresh) <= ONE_BY_ONE_TERMS:
        present = set()
        for word in fresh:
            if cur.execute(_INSERT_ONE, (word,)).rowcount:
                own.add(word)
            else:
                present.add(word)
        known.update(present - own)
        return
    present = {
        str(t)
        for (t,) in cur.execute(
            f"SELECT term FROM {VOCABULARY_TABLE} WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(fresh)),),
        )
    }
    known.update(present - own)
    missing = fresh - present
    if missing:
        cur.execute(
            f"INSERT OR IGNORE INTO {VOCABULARY_TABLE} (term) SELECT value FROM json_each(?)",
            (json.dumps(sorted(missing)),),
        )
        own.update(missing)


def _known(conn: Connection, cur: sqlite3.Cursor) -> set[str]:
    """The words the process remembers to be in the table of ``conn``'s database at its
    current schema version (:data:`_KNOWN`): one ``PRAGMA`` a write, the file's name read
    once per pooled connection."""
    info: dict[str, Any] = conn.connection.info
    where: str | None = info.get(_FILE_MEMO)
    if where is None:
        row = cur.execute("SELECT file FROM pragma_database_list WHERE name = 'main'").fetchone()
        named = str(row[0]) if row and row[0] else ""
        where = info[_FILE_MEMO] = named or f"connection {id(conn.connection.dbapi_connection)}"
    key = (where, int(cur.execute("PRAGMA schema_version").fetchone()[0]))
    known = _KNOWN.get(key)
    if known is None or len(known) > KNOWN_TERMS_CAP:
        if key not in _KNOWN and len(_KNOWN) >= KNOWN_DATABASES:
            _KNOWN.clear()
        known = _KNOWN[key] = set()
    return known


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
