"""The second baseline: ``sqlite-utils``, the library a Python user would pick to put FTS5 over
SQLite, searched the way its documentation shows (``table.search(q, limit=10)``).

Invariant: the ``sqlite-utils`` database holds the same index rows as the raw baseline (copied
from the raw baseline's ``message_index``: same messages, same CJK-spaced body text from
``tokens.index_body``) and the sessions they belong to, in a table ``messages`` loaded with
``insert_all`` and indexed with ``enable_fts(["body"], tokenize=<the plugin's tokenizer>)``. A
search passes the raw baseline's FTS5 expression (``body : (…)``) unquoted (``quote=False``), so
both match the same rows, ranked by the same ``bm25`` over ``body``; narrowed visibilities
restrict session ids with ``where=`` / ``where_args=`` (a sub-select on ``sessions``), the way a
``sqlite-utils`` user would. It returns whole rows (no snippet, no session key): the cost of the
library's own query shape, not of the plugin's result format.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench import baseline as raw
from bench.peers import PeerQuery

try:  # an optional dependency: `pip install -e ".[bench]"`
    import sqlite_utils
except ImportError:  # pragma: no cover - the bench runs without the third column
    sqlite_utils = None

TABLE = "messages"
LIMIT = 10
AVAILABLE = sqlite_utils is not None

_VISIBLE = "session_id IN (SELECT session_id FROM sessions WHERE incognito = 0 AND {})"
#: The ``where=`` fragment of each visibility; parameters ``:agent`` or ``:k`` (caller's key).
WHERE: dict[str, str | None] = {
    "all": None,
    "agent": _VISIBLE.format("agent_id = :agent"),
    "tree": _VISIBLE.format(
        "(session_key = :k OR spawned_by = :k OR parent_session_key = :k OR owner_session_key = :k)"
    ),
    "self": _VISIBLE.format("session_key = :k"),
}

_SESSIONS = (
    "SELECT session_id, session_key, agent_id, spawned_by, parent_session_key, "
    "owner_session_key, incognito FROM openclaw_sessions"
)
_MESSAGES = (
    "SELECT id, session_id, seq, event_id, role, timestamp_ms, body FROM message_index ORDER BY id"
)


def version() -> str | None:
    if sqlite_utils is None:
        return None
    from importlib.metadata import version as dist_version

    return dist_version("sqlite-utils")


def _rows(conn: sqlite3.Connection, sql: str) -> Iterator[dict[str, Any]]:
    cursor = conn.execute(sql)
    names = [d[0] for d in cursor.description]
    for row in cursor:
        yield dict(zip(names, row, strict=True))


class SqliteUtilsPeer:
    """A ``sqlite-utils`` database of the raw baseline's index rows, and its ``search()``."""

    label = "sqlite-utils"

    def __init__(self, path: Path) -> None:
        if sqlite_utils is None:
            raise RuntimeError('sqlite-utils is not installed: pip install -e ".[bench]"')
        self.path = path
        self.db = sqlite_utils.Database(str(path))
        self.table = self.db[TABLE]

    def close(self) -> None:
        self.db.close()

    def load(self, source: Path) -> dict[str, Any]:
        """Copy sessions and index rows from the raw baseline's database at ``source`` with
        ``insert_all``, then ``enable_fts``. Returns the row count and the seconds of each."""
        self.db.enable_wal()
        with sqlite3.connect(str(source)) as src:
            t0 = time.perf_counter()
            self.db["sessions"].insert_all(_rows(src, _SESSIONS), pk="session_id")
            self.db[TABLE].insert_all(_rows(src, _MESSAGES), pk="id", batch_size=1000)
            t1 = time.perf_counter()
        self.table.enable_fts(["body"], tokenize=raw.TOKENIZER)
        t2 = time.perf_counter()
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = self.table.count
        return {
            "rows": rows,
            "insertAllSeconds": round(t1 - t0, 3),
            "enableFtsSeconds": round(t2 - t1, 3),
            "sizeBytes": self.size_bytes(),
        }

    def size_bytes(self) -> int:
        """The database file (sessions, index rows, the FTS5 tables), after a checkpoint."""
        return self.path.stat().st_size

    def search(self, q: PeerQuery, vis: str, args: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``table.search(match, limit=10)``, the visibility as ``where=`` / ``where_args=``."""
        return list(
            self.table.search(
                q.match, limit=LIMIT, where=WHERE[vis], where_args=dict(args) or None, quote=False
            )
        )

    def count(self, q: PeerQuery, vis: str, args: Mapping[str, Any]) -> int:
        """Every row ``search()`` matches (its own SQL, ``search_sql``, without the limit)."""
        sql = self.table.search_sql(columns=["id"], where=WHERE[vis])
        row = self.db.execute(
            f"SELECT count(*) FROM ({sql})", {"query": q.match, **args}
        ).fetchone()
        return int(row[0])

    def reference(self, q: PeerQuery) -> str:
        """The raw expression: the same one ``search()`` is given."""
        return q.match
