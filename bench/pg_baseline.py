"""The PostgreSQL baseline: raw psycopg 3 (no SQLAlchemy, no plugin) doing the same logical work
on the same data. Sibling of :mod:`bench.baseline` (plain ``sqlite3``), whose
:class:`~bench.baseline.RawBaseline` keeps the bookkeeping both share (the sessions folder
read once, the rows of an append or a file, the ``sess`` tokens); this module gives the
psycopg connection and the one write transaction.

Invariant: the baseline database has the plugin's tables, indexes, generated ``tsvector``
column and GIN index, because its schema is created by the plugin's own migrations (setup, not
timed: "same table"); from then on only psycopg statements written here touch it. It writes the
same rows as the plugin: the same event rows (JSON plus the derived columns, computed with the
same pure functions of ``openclaw_fts.transcript``) and the same ``message_index`` rows (text
through ``tokens.index_body``; the server computes ``body_tsv``) with one ``executemany`` per
table in one transaction. As on SQLite, the baseline is told which events end on the active
branch for free: it is the floor the plugin is measured against. Search is one statement:
``body_tsv @@ to_tsquery(cfg, q)``, ``ts_rank`` with the plugin's normalisation, the
visibility predicate on ``openclaw_sessions`` in the same statement, ``ORDER BY`` +
``LIMIT``, and the returned rows' session key and body (the plugin's snippet source).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg

from bench.baseline import RawBaseline, Write, event_row
from openclaw_fts import transcript
from openclaw_fts.index.postgresql import TEXT_SEARCH_CONFIG
from openclaw_fts.tokens import index_body

#: The search's plan setting, as the plugin's read transaction sets it (read.FORCE_CUSTOM_PLAN):
#: psycopg prepares a statement from its 5th execution and a generic plan would not see the
#: ``to_tsquery`` constant. Set for the baseline's whole connection.
PLAN_CACHE_MODE = "force_custom_plan"

INSERT_SESSION = (
    "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, spawned_by, "
    "parent_session_key, owner_session_key) VALUES (%s, %s, %s, %s, %s, %s)"
)
INSERT_EVENT = (
    "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, target_id, "
    "side, timestamp_ms, event) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
INSERT_INDEX = (
    "INSERT INTO message_index (session_id, seq, event_id, role, timestamp_ms, body, sess) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s)"
)
BUMP_SESSION = "UPDATE openclaw_sessions SET last_seq = %s WHERE session_id = %s"

IndexRowTuple = tuple[str, int, str, str, int, str, str]


def conninfo(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://…``) as a libpq connection string."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    conn = psycopg.connect(conninfo(url), autocommit=autocommit)
    if autocommit:
        conn.execute(f"SET plan_cache_mode = {PLAN_CACHE_MODE}")
    else:
        with conn.transaction():
            conn.execute(f"SET plan_cache_mode = {PLAN_CACHE_MODE}")
    return conn


def index_tuple(
    session_id: str, row: transcript.IndexRow, token: str, now_ms: int
) -> IndexRowTuple:
    ts = row.timestamp if row.timestamp is not None else now_ms
    body = index_body(row.text).replace("\x00", " ")
    return (session_id, row.seq, row.event_id, row.role, ts, body, token)


def _pg_event_row(
    session_id: str, seq: int, event: Mapping[str, Any], dumped: str
) -> tuple[Any, ...]:
    r = event_row(session_id, seq, event, dumped)
    return (*r[:7], bool(r[7]), *r[8:])


class Baseline(RawBaseline):
    """Raw psycopg writer over its own database (schema already created)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.conn = connect(url)

    def close(self) -> None:
        self.conn.close()

    def checkpoint(self) -> None:
        """Nothing to do (kept for :class:`bench.baseline.Baseline`'s interface)."""

    def create_sessions(self, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.executemany(INSERT_SESSION, list(rows))

    def event_row(
        self, session_id: str, seq: int, event: Mapping[str, Any], dumped: str
    ) -> tuple[Any, ...]:
        return _pg_event_row(session_id, seq, event, dumped)

    def write(self, w: Write) -> None:
        token = self.token(w.session_id)
        rows = [index_tuple(w.session_id, r, token, w.now_ms) for r in w.index_rows]
        with self.conn.transaction(), self.conn.cursor() as cur:
            if w.session_row is not None:
                cur.execute(INSERT_SESSION, w.session_row)
            cur.executemany(INSERT_EVENT, w.event_rows)
            if rows:
                cur.executemany(INSERT_INDEX, rows)
            cur.execute(BUMP_SESSION, (w.last_seq, w.session_id))

    def rebuild_session(self, session_id: str, rows: Sequence[transcript.IndexRow]) -> None:
        """The full rebuild the rewind repair is compared with: delete all the session's index
        rows, insert all of ``rows`` (the server regenerates their tsvectors); one transaction."""
        token = self.token(session_id)
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("DELETE FROM message_index WHERE session_id = %s", (session_id,))
            cur.executemany(INSERT_INDEX, [index_tuple(session_id, r, token, 0) for r in rows])


# -- search ------------------------------------------------------------------------------------

TSQUERY = f"to_tsquery('{TEXT_SEARCH_CONFIG}'::regconfig, %(q)s)"
#: ``ts_rank`` normalisation 1, as the plugin (read.RANK_NORMALIZATION).
SCORE = f"ts_rank(mi.body_tsv, {TSQUERY}, 1)"
_VISIBLE = {
    "all": "NOT s.incognito",
    "agent": "s.agent_id = %(agent)s AND NOT s.incognito",
    "tree": "(s.session_key = %(k)s OR s.owner_session_key = %(k)s OR s.spawned_by = %(k)s "
    "OR s.parent_session_key = %(k)s) AND NOT s.incognito",
    "self": "s.session_key = %(k)s AND NOT s.incognito",
}


def search_sql(visibility: str) -> str:
    """The raw ranked search for one visibility; parameters ``%(q)s`` (``to_tsquery`` input),
    ``%(lim)s`` and ``%(k)s`` / ``%(agent)s``: the match, the visibility join on
    ``openclaw_sessions``, ``ts_rank``, ``LIMIT``, and the rows with key and body."""
    if visibility not in _VISIBLE:
        raise ValueError(f"unknown visibility {visibility!r}")
    return (
        "SELECT mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, s.session_key, "
        f"{SCORE} AS score, mi.body FROM message_index AS mi "
        "JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
        f"WHERE mi.body_tsv @@ {TSQUERY} AND {_VISIBLE[visibility]} "
        "ORDER BY score DESC, mi.timestamp_ms DESC LIMIT %(lim)s"
    )


def count_sql(visibility: str | None = None) -> str:
    """Documents matching ``%(q)s``, visible to ``visibility`` (``None``: any session)."""
    if visibility is None:
        return f"SELECT count(*) FROM message_index AS mi WHERE mi.body_tsv @@ {TSQUERY}"
    return (
        "SELECT count(*) FROM message_index AS mi "
        "JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
        f"WHERE mi.body_tsv @@ {TSQUERY} AND {_VISIBLE[visibility]}"
    )


def _operand(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery(kind: str, words: Sequence[str], *, prefix_all: bool = False) -> str:
    """The hand-written ``to_tsquery`` input of a query class (CJK spaced like the index: a
    word of two characters is a phrase of two lexemes). ``prefix_all``: every lexeme a prefix
    (``:*``), what SQLAlchemy-Searchable's ``search()`` makes of the same words."""
    star = ":*" if prefix_all else ""

    def phrase(text: str) -> str:
        tokens = [_operand(t) + star for t in index_body(text).split()]
        return tokens[0] if len(tokens) == 1 else "(" + " <-> ".join(tokens) + ")"

    if kind == "phrase":
        return phrase(" ".join(words))
    if kind == "prefix":
        return _operand(words[0]) + ":*"
    return " & ".join(phrase(w) for w in words)
