"""The baseline: plain ``sqlite3`` (no SQLAlchemy) doing the same logical work on the same data.

Invariant: the baseline database has the plugin's tables, indexes, FTS5 table (external content,
same tokenizer, same delete trigger) and connection settings (WAL, ``synchronous=NORMAL``,
foreign keys, ``BEGIN IMMEDIATE``), and writes the same rows: the same event rows (JSON plus the
derived columns, computed with the same pure functions of ``openclaw_fts.transcript``) and the
same ``message_index`` + ``message_fts`` rows (text through ``tokens.index_body``) with one
``executemany`` per table. Where the plugin must work something out (which events end up on the
active branch), the baseline is told the answer for free — it is the floor the plugin is measured
against, not a second implementation. Search runs the equivalent FTS5 ``MATCH … bm25 … snippet
… LIMIT`` SQL, limit first and snippets only for the returned rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openclaw_fts import transcript
from openclaw_fts.tokens import index_body

BUSY_TIMEOUT_MS = 30_000
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024  # as index/sqlite/connect.py
TOKENIZER = "unicode61 remove_diacritics 2"
FTS_TABLE = "message_fts"

#: The plugin's schema at head (migrations 0001 + 0002), written out by hand.
SCHEMA: tuple[str, ...] = (
    """CREATE TABLE openclaw_sessions (
        session_id VARCHAR(512) NOT NULL, session_key VARCHAR(512) NOT NULL,
        agent_id VARCHAR(512) NOT NULL, spawned_by VARCHAR(512), parent_session_key VARCHAR(512),
        owner_session_key VARCHAR(512), archived BOOLEAN DEFAULT 0 NOT NULL,
        incognito BOOLEAN DEFAULT 0 NOT NULL, last_seq INTEGER DEFAULT (-1) NOT NULL,
        created_at DATETIME DEFAULT CURRENT_TIMESTAMP NOT NULL,
        updated_at DATETIME DEFAULT CURRENT_TIMESTAMP NOT NULL,
        CONSTRAINT pk_openclaw_sessions PRIMARY KEY (session_id))""",
    "CREATE INDEX ix_openclaw_sessions_session_key ON openclaw_sessions (session_key)",
    "CREATE INDEX ix_openclaw_sessions_agent_id ON openclaw_sessions (agent_id)",
    "CREATE INDEX ix_openclaw_sessions_spawned_by ON openclaw_sessions (spawned_by)",
    "CREATE INDEX ix_openclaw_sessions_parent_session_key "
    "ON openclaw_sessions (parent_session_key)",
    "CREATE INDEX ix_openclaw_sessions_owner_session_key ON openclaw_sessions (owner_session_key)",
    """CREATE TABLE transcript_events (
        session_id VARCHAR(512) NOT NULL, seq INTEGER NOT NULL, event_id VARCHAR(512),
        parent_id VARCHAR(512), type VARCHAR(64), role VARCHAR(64), target_id VARCHAR(512),
        side BOOLEAN DEFAULT 0 NOT NULL, timestamp_ms BIGINT, event TEXT NOT NULL,
        CONSTRAINT pk_transcript_events PRIMARY KEY (session_id, seq),
        FOREIGN KEY(session_id) REFERENCES openclaw_sessions (session_id) ON DELETE CASCADE,
        UNIQUE (session_id, event_id))""",
)
INDEX_SCHEMA: tuple[str, ...] = (
    """CREATE TABLE message_index (
        id INTEGER NOT NULL, session_id VARCHAR(512) NOT NULL, seq INTEGER NOT NULL,
        event_id VARCHAR(512) NOT NULL, role VARCHAR(16) NOT NULL, timestamp_ms BIGINT NOT NULL,
        body TEXT NOT NULL, sess VARCHAR(32) NOT NULL,
        CONSTRAINT pk_message_index PRIMARY KEY (id),
        FOREIGN KEY(session_id) REFERENCES openclaw_sessions (session_id) ON DELETE CASCADE,
        UNIQUE (session_id, event_id))""",
    "CREATE INDEX ix_message_index_ts ON message_index (timestamp_ms)",
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(body, sess, content='message_index', "
    f"content_rowid='id', tokenize='{TOKENIZER}')",
    f"CREATE TRIGGER message_index_fts_delete AFTER DELETE ON message_index BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, body, sess) "
    "VALUES ('delete', old.id, old.body, old.sess); END",
)

#: What revision 0002 adds (the baseline of the schema-upgrade figure).
#: What revision 0005 does to a revision-1 database (renames; the indexes named after a
#: renamed table are created again under its new name).
_RENAMED_INDEXES = (
    ("sessions", "session_key"),
    ("sessions", "agent_id"),
    ("sessions", "spawned_by"),
    ("sessions", "parent_session_key"),
    ("sessions", "owner_session_key"),
    ("branches", "session_id"),
)
RENAME_REVISION_1: tuple[str, ...] = (
    "ALTER TABLE sessions RENAME TO openclaw_sessions",
    "ALTER TABLE branches RENAME TO openclaw_branches",
    *(f"DROP INDEX ix_{table}_{column}" for table, column in _RENAMED_INDEXES),
    *(
        f"CREATE INDEX ix_openclaw_{table}_{column} ON openclaw_{table} ({column})"
        for table, column in _RENAMED_INDEXES
    ),
)
#: Revision 1 → head, raw: the renames, then the index tables.
UPGRADE_SCHEMA: tuple[str, ...] = (
    *RENAME_REVISION_1,
    """CREATE TABLE openclaw_index_state (
        id INTEGER NOT NULL, session_id VARCHAR(512) NOT NULL,
        indexed_seq INTEGER DEFAULT (-1) NOT NULL, indexed_leaf VARCHAR(512),
        needs_rebuild BOOLEAN DEFAULT 0 NOT NULL, generation INTEGER DEFAULT 0 NOT NULL,
        index_version INTEGER DEFAULT 1 NOT NULL,
        CONSTRAINT pk_openclaw_index_state PRIMARY KEY (id),
        FOREIGN KEY(session_id) REFERENCES openclaw_sessions (session_id) ON DELETE CASCADE,
        UNIQUE (session_id))""",
    """CREATE TABLE reconcile_lease (
        name VARCHAR(64) NOT NULL, holder VARCHAR(128) NOT NULL, expires_at FLOAT NOT NULL,
        CONSTRAINT pk_reconcile_lease PRIMARY KEY (name))""",
    *INDEX_SCHEMA,
)

INSERT_SESSION = (
    "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, spawned_by, "
    "parent_session_key, owner_session_key) VALUES (?, ?, ?, ?, ?, ?)"
)
INSERT_EVENT = (
    "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, target_id, "
    "side, timestamp_ms, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_INDEX = (
    "INSERT INTO message_index (id, session_id, seq, event_id, role, timestamp_ms, body, sess) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_FTS = f"INSERT INTO {FTS_TABLE} (rowid, body, sess) VALUES (?, ?, ?)"
BUMP_SESSION = "UPDATE openclaw_sessions SET last_seq = ? WHERE session_id = ?"
MAX_ID = "SELECT coalesce(max(id), 0) FROM message_index"

IndexRowTuple = tuple[int, str, int, str, str, int, str, str]


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection with the plugin's settings; transactions are explicit (``BEGIN IMMEDIATE``)."""
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def create_schema(conn: sqlite3.Connection, *, index: bool = True) -> None:
    for statement in SCHEMA + (INDEX_SCHEMA if index else ()):
        conn.execute(statement)


def event_row(session_id: str, seq: int, event: Mapping[str, Any], dumped: str) -> tuple[Any, ...]:
    c = transcript.derived_columns(seq, event)
    return (
        session_id,
        seq,
        c["event_id"],
        c["parent_id"],
        c["type"],
        c["role"],
        c["target_id"],
        c["side"],
        c["timestamp_ms"],
        dumped,
    )


def dump(event: Mapping[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def index_tuple(
    row_id: int, session_id: str, row: transcript.IndexRow, token: str, now_ms: int
) -> IndexRowTuple:
    ts = row.timestamp if row.timestamp is not None else now_ms
    return (row_id, session_id, row.seq, row.event_id, row.role, ts, index_body(row.text), token)


@dataclass(frozen=True)
class SessionFile:
    """One ``<session id>.jsonl`` of a sessions folder: its lines as written, the parsed events,
    and the session row from ``sessions.json`` (a file it does not name is ``agent:main:main``)."""

    session_id: str
    session_key: str
    entry: Mapping[str, Any]
    lines: list[str]
    events: list[dict[str, Any]]

    @property
    def session_row(self) -> tuple[Any, ...]:
        """``INSERT_SESSION``'s parameters: id, key, agent, spawnedBy, parent key, owner key."""
        key = self.session_key
        return (
            self.session_id,
            key,
            key.split(":")[1] if key.startswith("agent:") else "main",
            self.entry.get("spawnedBy"),
            self.entry.get("parentSessionKey"),
            self.entry.get("ownerSessionKey"),
        )


def read_folder(folder: Path) -> Iterator[SessionFile]:
    """The sessions folder's JSONL files in name order, as both raw importers (this module's and
    :mod:`bench.pg_baseline`'s) read them: blank lines skipped, each line parsed once."""
    meta: dict[str, tuple[str, dict[str, Any]]] = {}
    index_file = folder / "sessions.json"
    if index_file.is_file():
        for key, entry in json.loads(index_file.read_text(encoding="utf-8")).items():
            meta[entry["sessionId"]] = (key, entry)
    for path in sorted(folder.glob("*.jsonl")):
        sid = path.stem
        key, entry = meta.get(sid, ("agent:main:main", {}))
        lines: list[str] = []
        events: list[dict[str, Any]] = []
        with path.open("rb") as handle:
            for raw in handle:
                if raw.strip():
                    line = raw.decode("utf-8").strip()
                    lines.append(line)
                    events.append(json.loads(line))
        yield SessionFile(sid, key, entry, lines, events)


@dataclass(frozen=True)
class Write:
    """One raw write transaction: the session row (when given: a file's backfill), the event
    rows, the index rows (text through ``index_body``; ``now_ms`` where an event has no
    timestamp), and the session's new ``last_seq``."""

    session_id: str
    session_row: tuple[Any, ...] | None
    event_rows: Sequence[tuple[Any, ...]]
    index_rows: Sequence[transcript.IndexRow]
    last_seq: int
    now_ms: int = 0


class RawBaseline:
    """What both raw baselines (this module's ``sqlite3`` one and :mod:`bench.pg_baseline`'s
    psycopg one) do alike, written once: the per-session ``sess`` tokens, the event and index
    rows of a live append or of a sessions folder's file (``read_folder``), the watermark, the
    counts. An engine gives only its connection and :meth:`write`, one transaction."""

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}

    def token(self, session_id: str) -> str:
        found = self.tokens.get(session_id)
        if found is None:
            found = self.tokens[session_id] = f"s{len(self.tokens) + 1}"
        return found

    def event_row(
        self, session_id: str, seq: int, event: Mapping[str, Any], dumped: str
    ) -> tuple[Any, ...]:
        """``INSERT_EVENT``'s parameters in the engine's types."""
        return event_row(session_id, seq, event, dumped)

    def write(self, w: Write) -> None:
        """:class:`Write`'s rows in one transaction of the engine."""
        raise NotImplementedError

    def append(
        self,
        session_id: str,
        first_seq: int,
        events: Sequence[Mapping[str, Any]],
        indexed: Iterable[int],
        now_ms: int = 0,
    ) -> int:
        """One live append transaction: event rows, their index rows (for the seqs in
        ``indexed``, the events that end on the active branch), the session watermark.
        Returns the number of index rows written."""
        wanted = set(indexed)
        event_rows = []
        pending: list[transcript.IndexRow] = []
        seq = first_seq - 1
        for event in events:
            seq += 1
            event_rows.append(self.event_row(session_id, seq, event, dump(event)))
            if seq in wanted:
                row = transcript.index_row(seq, event)
                if row is not None:
                    pending.append(row)
        self.write(Write(session_id, None, event_rows, pending, seq, now_ms))
        return len(pending)

    def import_dir(self, folder: Path, *, index: bool = True) -> tuple[int, int]:
        """Backfill a sessions folder: per file, session, events and (with ``index``) index rows
        in one transaction. Returns ``(events, index rows)``."""
        n_events = n_rows = 0
        for f in read_folder(folder):
            event_rows = [
                self.event_row(f.session_id, seq, e, line)
                for seq, (e, line) in enumerate(zip(f.events, f.lines, strict=True))
            ]
            wanted = transcript.index_rows(list(enumerate(f.events))) if index else []
            self.write(Write(f.session_id, f.session_row, event_rows, wanted, len(f.events) - 1))
            n_events += len(f.events)
            n_rows += len(wanted)
        return n_events, n_rows


class Baseline(RawBaseline):
    """Plain-``sqlite3`` writer and reader over its own database file."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        super().__init__()
        self.path = path
        self.conn = connect(path)
        if create:
            create_schema(self.conn)

    def close(self) -> None:
        self.conn.close()

    def create_sessions(self, rows: Iterable[Sequence[Any]]) -> None:
        """``(session_id, session_key, agent_id, spawned_by, parent_key, owner_key)`` rows."""
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        c.executemany(INSERT_SESSION, rows)
        c.execute("COMMIT")

    def write(self, w: Write) -> None:
        c = self.conn
        token = self.token(w.session_id)
        c.execute("BEGIN IMMEDIATE")
        if w.session_row is not None:
            c.execute(INSERT_SESSION, w.session_row)
        c.executemany(INSERT_EVENT, w.event_rows)
        if w.index_rows:
            self._insert_index(w.session_id, w.index_rows, token, w.now_ms)
        c.execute(BUMP_SESSION, (w.last_seq, w.session_id))
        c.execute("COMMIT")

    def _insert_index(
        self, session_id: str, rows: Sequence[transcript.IndexRow], token: str, now_ms: int
    ) -> None:
        """``message_index`` rows with the next ids, and their FTS5 rows (inside a transaction)."""
        c = self.conn
        start = c.execute(MAX_ID).fetchone()[0]
        tuples = [
            index_tuple(start + i + 1, session_id, r, token, now_ms) for i, r in enumerate(rows)
        ]
        c.executemany(INSERT_INDEX, tuples)
        c.executemany(INSERT_FTS, [(r[0], r[6], r[7]) for r in tuples])

    def rebuild_session(self, session_id: str, rows: Sequence[transcript.IndexRow]) -> None:
        """The full rebuild the rewind repair is compared with: delete all the session's index
        rows (the trigger removes their FTS entries), insert all of ``rows``; one transaction."""
        c = self.conn
        token = self.token(session_id)
        c.execute("BEGIN IMMEDIATE")
        c.execute("DELETE FROM message_index WHERE session_id = ?", (session_id,))
        self._insert_index(session_id, rows, token, 0)
        c.execute("COMMIT")

    def checkpoint(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


# -- search ------------------------------------------------------------------------------------

#: Snippet of the returned rows only (FTS5's own ``snippet()``, ~48 tokens, no markers).
_SNIPPET = (
    f"(SELECT snippet({FTS_TABLE}, 0, '', '', ' … ', 48) FROM {FTS_TABLE} "
    f"WHERE {FTS_TABLE} MATCH :q AND rowid = top.id)"
)
_OUTER = (
    "SELECT mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, s.session_key, "
    f"top.score, {_SNIPPET} FROM top JOIN message_index mi ON mi.id = top.id "
    "JOIN openclaw_sessions s ON s.session_id = mi.session_id ORDER BY top.score"
)
_SCORE = f"bm25({FTS_TABLE}, 1.0, 0.0)"
#: The visible sessions' FTS tokens, for narrow callers (``tree``: own key and its children).
_TREE_TOKENS = (
    "SELECT group_concat('s' || st.id, ' OR ') FROM openclaw_sessions s "
    "JOIN openclaw_index_state st ON st.session_id = s.session_id WHERE s.incognito = 0 AND "
    "(s.session_key = :k OR s.spawned_by = :k OR s.parent_session_key = :k "
    "OR s.owner_session_key = :k)"
)
_SELF_TOKENS = (
    "SELECT group_concat('s' || st.id, ' OR ') FROM openclaw_sessions s "
    "JOIN openclaw_index_state st ON st.session_id = s.session_id "
    "WHERE s.incognito = 0 AND s.session_key = :k"
)


def search_sql(visibility: str) -> str:
    """The raw ranked search for one visibility; parameters ``:q`` (an FTS5 expression),
    ``:lim``, and ``:agent`` (agent) or ``:k`` (tree, self: the caller's key).

    ``all`` sees every session; ``agent`` joins ``sessions`` and filters on ``agent_id``;
    ``tree`` / ``self`` AND the query with the visible sessions' tokens in the ``sess`` column
    (the plugin keeps them in ``index_state``), so FTS5 only ranks visible rows."""
    return f"WITH top AS ({_top_sql(visibility)}) {_OUTER}"


def count_sql(visibility: str) -> str:
    """How many rows :func:`search_sql` matches before its limit (same parameters, ``:lim``
    -1): the match set the other baselines are checked against."""
    return f"WITH top AS ({_top_sql(visibility)}) SELECT count(*) FROM top"


def _top_sql(visibility: str) -> str:
    if visibility == "all":
        top = (
            f"SELECT rowid AS id, {_SCORE} AS score FROM {FTS_TABLE} "
            f"WHERE {FTS_TABLE} MATCH :q ORDER BY score LIMIT :lim"
        )
    elif visibility == "agent":
        top = (
            f"SELECT {FTS_TABLE}.rowid AS id, {_SCORE} AS score FROM {FTS_TABLE} "
            f"JOIN message_index m2 ON m2.id = {FTS_TABLE}.rowid "
            "JOIN openclaw_sessions s2 ON s2.session_id = m2.session_id "
            f"WHERE {FTS_TABLE} MATCH :q AND s2.agent_id = :agent AND s2.incognito = 0 "
            "ORDER BY score LIMIT :lim"
        )
    elif visibility in ("tree", "self"):
        tokens = _TREE_TOKENS if visibility == "tree" else _SELF_TOKENS
        top = (
            f"SELECT rowid AS id, {_SCORE} AS score FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH "
            f"'(' || :q || ') AND sess : (' || coalesce(({tokens}), 's0') || ')' "
            "ORDER BY score LIMIT :lim"
        )
    else:
        raise ValueError(f"unknown visibility {visibility!r}")
    return top


def fts_word(word: str) -> str:
    """An FTS5 string for one term (quoted; CJK characters spaced like the index)."""
    return '"' + index_body(word).strip().replace('"', '""') + '"'


def raw_match(kind: str, words: Sequence[str]) -> str:
    """The hand-written FTS5 expression of a query class, on the ``body`` column."""
    if kind == "phrase":
        expr = fts_word(" ".join(words))
    elif kind == "prefix":
        expr = fts_word(words[0]) + "*"
    else:
        expr = " AND ".join(fts_word(w) for w in words)
    return f"body : ({expr})"
