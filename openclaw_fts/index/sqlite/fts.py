"""The SQLite FTS5 side of the index: its names and DDL, the DBAPI cursor the hot paths run
on, and the statements that write and delete index rows (used by :mod:`.backend`).

Invariant: ``message_fts`` (external content over ``message_index``) holds exactly the
``(body, sess)`` of every ``message_index`` row. Inserts write both tables explicitly in one
``executemany`` each (no insert trigger: a trigger opens a statement savepoint per row, which
makes FTS5 flush one segment per row); deletes go through the ``message_index`` delete trigger,
so FK cascades from ``openclaw_sessions`` keep the FTS entries exact too. Nothing outside this
package writes FTS5 SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar, cast

from sqlalchemy import Connection

from ...rows import NewRow

T = TypeVar("T")

FTS_TABLE = "message_fts"
CONTENT_TABLE = "message_index"
DELETE_TRIGGER = "message_index_fts_delete"
#: The index's vocabulary: an ``fts5vocab`` table over ``message_fts`` (``col``: one row per
#: term and column, with its document count), read by a search that finds nothing for its near
#: words. TEMP: never written to the database file (a read-only database can have it).
VOCAB_TABLE = "temp.openclaw_fts_vocab"
#: Made when a connection gets the plugin's settings, outside any transaction
#: (:func:`~.connect.apply_settings`): made inside a search's read transaction, which ends in a
#: ROLLBACK, it was made again by every search that found nothing, and each time the TEMP
#: schema changed twice, so every statement the connection ran next was prepared again
#: (measured at 100k events, ``all`` caller: a miss 2.1 -> 1.3 ms, a hit right after one 1.4 ->
#: 0.7 ms; bench/NOTES.md). The statements that read it still make it if it is missing (a
#: connection the plugin's settings never reached).
CREATE_VOCAB = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB_TABLE} USING fts5vocab(main, '{FTS_TABLE}', 'col')"
)
#: unicode61 folds case and (with 2) diacritics of every script: `cafe` finds `Café`.
TOKENIZER = "unicode61 remove_diacritics 2"
#: FTS5 shadow tables (autogenerate must ignore them).
FTS_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")
#: Values bound in one ``IN (…)`` list: well under SQLite's bound-parameter limit, and one
#: statement per list rather than per value (a DELETE per row made FTS5 flush a segment per row).
IN_LIST_CHUNK = 500
#: bm25 column weights: the text counts, the session token never does.
BM25_WEIGHTS = "1.0, 0.0"
#: FTS5's structure record (its list of segment levels) is the row with this id of the
#: ``_data`` shadow table.
STRUCTURE_ROWID = 10
#: Bytes of the structure record past which :func:`merge_segments` rebuilds the index from the
#: content table before merging. Each 'optimize' of an index written to since the last one
#: puts the merged segment one level above the highest, and the levels left empty stay in the
#: record (about two levels and four bytes a round, measured); SQLite 3.40.1 could no longer
#: read the index ("database disk image is malformed") at about 2,000 levels: 1,253 rounds of
#: one append then one optimize, a 3.8 KB record. A written index's record is tens of bytes
#: (71 for the bench's 100k events in 16 segments; 22 once merged).
STRUCTURE_MAX_BYTES = 1024
#: Marks a structure record in FTS5's second layout, which FTS5 writes only for
#: ``contentless_delete=1`` tables (SQLite 3.43 and later): these four bytes follow the cookie,
#: then the first layout's fields with :data:`STRUCTURE_V2_SEGMENT_EXTRA` more varints per
#: segment. ``message_fts`` has external content, so its record is always in the first layout;
#: the parser reads both so that a future table option cannot make it misread the record.
STRUCTURE_V2 = b"\xff\x00\x00\x01"
#: Varints the second layout adds to each segment (its origin range, tombstone pages and
#: entries, and its entry count).
STRUCTURE_V2_SEGMENT_EXTRA = 5
#: FTS5's ``usermerge`` for the background merge (:func:`merge_step`): a level's segments are
#: merged once it holds this many. FTS5's own default, 4, leaves up to three segments a level
#: (16 after the bench's live ingest at 100k events); with 2 a merge's output pairs with a
#: segment on the level above and the merges cascade (those 16 became one). A merged index
#: keeps at most one segment a level; a level is added when the top level's two segments are
#: merged, so the levels grow with the log of the index (8 levels of one segment each, in
#: simulated random-sized commits, after 30,000-44,000 rows). FTS5's write-time
#: ``automerge`` keeps its default: the writers' own work does not grow.
MERGE_MIN_LEVEL_SEGMENTS = 2
#: Leaf pages of work one merge step asks for (FTS5's ``'merge'`` command's N): it bounds the
#: write lock a step holds, so a writer waits at most about one step. The bound is soft: FTS5
#: checks it between terms, so a step can overrun it by the doclist of the term it is on.
MERGE_STEP_PAGES = 32
#: Segments from which a writer asks for a background merge (:func:`merge_pending`), if a
#: merge step would merge anything. Every term a search looks up is looked up in each
#: segment; below this the merge would not pay.
MERGE_TRIGGER_SEGMENTS = 8

CREATE_FTS = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    f"body, sess, content='{CONTENT_TABLE}', content_rowid='id', "
    f"tokenize='{TOKENIZER}')"
)
CREATE_DELETE_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {DELETE_TRIGGER} AFTER DELETE ON {CONTENT_TABLE} BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, body, sess) "
    "VALUES ('delete', old.id, old.body, old.sess); END"
)
DROP_DELETE_TRIGGER = f"DROP TRIGGER IF EXISTS {DELETE_TRIGGER}"
DROP_FTS = f"DROP TABLE IF EXISTS {FTS_TABLE}"
#: Keeps ``openclaw_sessions.last_seq`` right even for events written behind the plugin's back (raw
#: SQL), so such a session turns pending (its watermark falls behind) instead of staying "clean".
SEQ_TRIGGER = "transcript_events_last_seq"
CREATE_SEQ_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {SEQ_TRIGGER} AFTER INSERT ON transcript_events BEGIN "
    "UPDATE openclaw_sessions SET last_seq = new.seq "
    "WHERE session_id = new.session_id AND last_seq < new.seq; END"
)
DROP_SEQ_TRIGGER = f"DROP TRIGGER IF EXISTS {SEQ_TRIGGER}"
#: Deleting an event (the transcript is append-only, so only behind the plugin's back) makes
#: its session dirty: its text may be indexed and must be hidden until reconciled.
EVENT_DELETE_TRIGGER = "transcript_events_deleted"
CREATE_EVENT_DELETE_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {EVENT_DELETE_TRIGGER} AFTER DELETE ON transcript_events "
    "BEGIN UPDATE openclaw_index_state SET needs_rebuild = 1, generation = generation + 1 "
    "WHERE session_id = old.session_id; END"
)
DROP_EVENT_DELETE_TRIGGER = f"DROP TRIGGER IF EXISTS {EVENT_DELETE_TRIGGER}"

CREATE_STATEMENTS = (
    CREATE_FTS,
    CREATE_DELETE_TRIGGER,
    CREATE_SEQ_TRIGGER,
    CREATE_EVENT_DELETE_TRIGGER,
)
DROP_STATEMENTS = (
    DROP_EVENT_DELETE_TRIGGER,
    DROP_SEQ_TRIGGER,
    DROP_DELETE_TRIGGER,
    DROP_FTS,
)


def cursor(conn: Connection) -> sqlite3.Cursor:
    """A DBAPI cursor on the connection's current transaction, for the per-append hot path
    (a handful of statements per append: SQLAlchemy's per-statement overhead would dominate).
    Under ``sqlite+aiosqlite`` (a host's ``AsyncSession``, whose ORM events run in SQLAlchemy's
    greenlet) it is SQLAlchemy's synchronous adapter of the aiosqlite cursor."""
    driver = conn.connection.driver_connection
    if isinstance(driver, sqlite3.Connection):
        return driver.cursor()
    adapted = conn.connection.dbapi_connection
    if conn.dialect.name != "sqlite" or adapted is None:
        raise TypeError("the SQLite index needs a sqlite3 or aiosqlite connection")
    return cast(sqlite3.Cursor, _AdaptedCursor(adapted.cursor()))


class _AdaptedCursor:
    """sqlite3's cursor interface (``execute`` returns the cursor) over SQLAlchemy's async
    adapter cursor, whose ``execute`` returns the driver's own result instead."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def execute(self, sql: str, parameters: Any = ()) -> _AdaptedCursor:
        self._inner.execute(sql, parameters)
        return self

    def executemany(self, sql: str, rows: Any) -> _AdaptedCursor:
        self._inner.executemany(sql, list(rows))
        return self

    def fetchone(self) -> Any:
        return self._inner.fetchone()

    def fetchmany(self, size: int = 1) -> Any:
        return self._inner.fetchmany(size)

    def fetchall(self) -> Any:
        return self._inner.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._inner.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._inner.rowcount)

    @property
    def lastrowid(self) -> Any:
        return self._inner.lastrowid

    @property
    def description(self) -> Any:
        return self._inner.description

    def close(self) -> None:
        self._inner.close()


def is_fts_table(name: str) -> bool:
    """True for the FTS5 virtual table and its shadow tables."""
    return name == FTS_TABLE or any(name == FTS_TABLE + s for s in FTS_SHADOW_SUFFIXES)


def insert_rows(conn: Connection, rows: Sequence[NewRow]) -> int:
    """Write rows into the content table and FTS5: two ``executemany`` calls, explicit ids
    (consecutive); returns the first row's id."""
    if not rows:
        return 0
    cur = cursor(conn)
    start = cur.execute(f"SELECT coalesce(max(id), 0) FROM {CONTENT_TABLE}").fetchone()[0]
    ids = range(start + 1, start + 1 + len(rows))
    cur.executemany(
        f"INSERT INTO {CONTENT_TABLE} (id, session_id, seq, event_id, role, timestamp_ms, body, "
        "sess) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (i, r.session_id, r.seq, r.event_id, r.role, r.timestamp_ms, r.body, r.sess)
            for i, r in zip(ids, rows, strict=True)
        ],
    )
    cur.executemany(
        f"INSERT INTO {FTS_TABLE} (rowid, body, sess) VALUES (?, ?, ?)",
        [(i, r.body, r.sess) for i, r in zip(ids, rows, strict=True)],
    )
    return int(start) + 1


def in_lists(values: Sequence[T]) -> Iterator[tuple[list[T], str]]:
    """``values`` in chunks of :data:`IN_LIST_CHUNK`, each with its ``?, ?, …`` placeholders."""
    for start in range(0, len(values), IN_LIST_CHUNK):
        chunk = list(values[start : start + IN_LIST_CHUNK])
        yield chunk, ", ".join("?" * len(chunk))


def delete_rows(conn: Connection, ids: Sequence[int]) -> None:
    """Delete rows by id; the trigger removes their FTS5 entries. One statement per IN-list: a
    statement per row made FTS5 flush a segment per row (measured 4x slower for 1,000 rows)."""
    cur = cursor(conn)
    for chunk, marks in in_lists(ids):
        cur.execute(f"DELETE FROM {CONTENT_TABLE} WHERE id IN ({marks})", chunk)


def merge_segments(conn: Connection) -> bool:
    """Merge the FTS5 index's segments into one ('optimize'); first rebuild it from the
    content table ('rebuild': a fresh structure, every level gone) when its structure record
    has grown past :data:`STRUCTURE_MAX_BYTES`. Returns whether it rebuilt. A rebuild reads
    every row again (1.0 s at 100k events against 0.2 s for the merge, measured): it comes
    once per several hundred optimizes of an index written to between them, never otherwise."""
    cur = cursor(conn)
    found = cur.execute(
        f"SELECT length(block) FROM {FTS_TABLE}_data WHERE id = ?", (STRUCTURE_ROWID,)
    ).fetchone()
    rebuild = found is not None and int(found[0] or 0) > STRUCTURE_MAX_BYTES
    if rebuild:
        cur.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
    cur.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")
    return rebuild


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's variable-length integer at ``pos``: ``(value, position after it)``."""
    value = 0
    for i in range(9):
        byte = data[pos]
        pos += 1
        if i == 8:
            return (value << 8) | byte, pos
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos
    raise AssertionError("unreachable")


def structure_levels(block: bytes) -> list[tuple[int, int]]:
    """``(segments being merged, segments)`` of each level a structure record lists (FTS5's
    file format): the 4-byte cookie (and the second layout's marker), the varints *levels*,
    *segments* and *write counter*, then per level *merging* and *segments* followed by each
    segment's id, first page and last page (and the second layout's extra varints)."""
    pos = 4
    extra = 0
    if block[4:8] == STRUCTURE_V2:
        pos, extra = 8, STRUCTURE_V2_SEGMENT_EXTRA
    levels, pos = _varint(block, pos)
    for _ in range(2):  # the total of segments and the write counter
        pos = _varint(block, pos)[1]
    found = []
    for _ in range(levels):
        merging, pos = _varint(block, pos)
        segments, pos = _varint(block, pos)
        for _ in range(segments * (3 + extra)):
            pos = _varint(block, pos)[1]
        found.append((merging, segments))
    return found


def structure(conn: Connection) -> list[tuple[int, int]]:
    """The index's levels (:func:`structure_levels`); none before its first write."""
    found = (
        cursor(conn)
        .execute(f"SELECT block FROM {FTS_TABLE}_data WHERE id = ?", (STRUCTURE_ROWID,))
        .fetchone()
    )
    return structure_levels(bytes(found[0])) if found is not None and found[0] else []


def segment_count(conn: Connection) -> int:
    """How many segments the FTS5 index is in (0 before its first write)."""
    return sum(segments for _merging, segments in structure(conn))


def merge_pending(conn: Connection) -> bool:
    """Whether the index is in :data:`MERGE_TRIGGER_SEGMENTS` segments or more and
    :func:`merge_step` would merge some of them: a level holds
    :data:`MERGE_MIN_LEVEL_SEGMENTS` segments or more, or a merge is part done (FTS5's own
    test for its ``'merge'`` command). An index merged down to one segment a level is left
    alone, however many levels it has."""
    levels = structure(conn)
    return sum(segments for _merging, segments in levels) >= MERGE_TRIGGER_SEGMENTS and any(
        merging or segments >= MERGE_MIN_LEVEL_SEGMENTS for merging, segments in levels
    )


def merge_step(conn: Connection) -> bool:
    """One bounded step of merging the index's segments: FTS5's ``'merge'`` command with
    :data:`MERGE_STEP_PAGES` pages and ``usermerge`` :data:`MERGE_MIN_LEVEL_SEGMENTS` (set on
    the first step: FTS5 keeps it in its ``_config`` table). Returns whether it merged
    anything (FTS5's documented test: two or more rows changed). Unlike ``'optimize'``, which
    puts its output one level above the highest on every call, it adds a level only when the
    top level's segments are merged, so steps repeated between writes cannot wear the index
    out (:data:`STRUCTURE_MAX_BYTES`)."""
    cur = cursor(conn)
    setting = cur.execute(f"SELECT v FROM {FTS_TABLE}_config WHERE k = 'usermerge'").fetchone()
    if setting is None or setting[0] != MERGE_MIN_LEVEL_SEGMENTS:
        cur.execute(
            f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('usermerge', ?)",
            (MERGE_MIN_LEVEL_SEGMENTS,),
        )
    before = cur.execute("SELECT total_changes()").fetchone()[0]
    cur.execute(
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('merge', ?)", (MERGE_STEP_PAGES,)
    )
    return bool(cur.execute("SELECT total_changes()").fetchone()[0] - before >= 2)


class FtsSegments:
    """:class:`~openclaw_fts.index.base.Segments` of FTS5: :func:`merge_pending` and
    :func:`merge_step`."""

    def needs_merge(self, conn: Connection) -> bool:
        """Whether the FTS5 index is in many segments that a merge step would merge."""
        return merge_pending(conn)

    def merge_step(self, conn: Connection) -> bool:
        """One bounded step of FTS5's segment merge."""
        return merge_step(conn)
