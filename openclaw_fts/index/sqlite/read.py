"""The search side of the SQLite FTS5 index: :class:`SqliteReader`, the :class:`~..base.Reader`
of ``sqlite`` databases.

Invariant: visibility, the pending filter and every user filter are in the same statement as
the full-text MATCH, before ranking and LIMIT — hidden sessions never consume the limit. Every
statement runs on the DBAPI cursor of the caller's transaction (:func:`cursor`), so all of one
search reads one snapshot. Nothing here writes.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection

from ... import transcript
from ...models import INDEX_VERSION
from ...reconcile import PENDING_CONDITION
from ...tokens import body_is_clean_text, clean_text
from ...visibility import Caller, incognito_key_sql, visible
from ..base import Hit, SearchRequest
from . import BM25_WEIGHTS, CONTENT_TABLE, FTS_TABLE, cursor

#: Where a pooled DBAPI connection remembers whether its last snapshot had pending sessions.
_PENDING_MEMO = "openclaw_fts_any_pending"

#: Rows beyond ``limit + 1`` the score-only ranking fetches, so that the rows tied on the score
#: at the limit are all in hand (equal scores are common: short messages of equal length); a
#: longer tie falls back to the full ORDER BY. Measured: a LIMIT of 75 costs what 11 does.
TIE_PROBE_ROWS = 64


def _visible_sql(caller: Caller, session_key: str | None) -> tuple[str, dict[str, Any]]:
    """Visibility (plus the explicit ``sessionKey`` filter) over alias ``s``."""
    pred = visible(caller, "s")
    params: dict[str, Any] = dict(pred.params)
    if session_key is None:
        return pred.sql, params
    params["only_key"] = session_key
    return f"({pred.sql} AND s.session_key = :only_key)", params


def _order_key(hit: Hit) -> tuple[float, int, str, str, int]:
    return (hit[7] if hit[7] is not None else 0.0, -hit[5], hit[6], hit[3], hit[0])


class SqliteReader:
    """:class:`~openclaw_fts.index.base.Reader` over ``message_fts`` / ``message_index``."""

    def any_pending(self, conn: Connection) -> bool:
        """Whether any session at all is pending in this transaction's snapshot.

        Remembered per DBAPI connection and recomputed only when the database changed: ``PRAGMA
        data_version`` (frozen for the life of a read transaction, bumped by other connections'
        commits) plus the connection's own ``total_changes``. It is read first, so it starts the
        snapshot every later statement of the search sees."""
        version = conn.exec_driver_sql("PRAGMA data_version").scalar()
        driver = conn.connection.driver_connection
        key = (version, getattr(driver, "total_changes", None))
        memo = conn.connection.info.get(_PENDING_MEMO)
        if memo is not None and memo[0] == key and key[1] is not None:
            return bool(memo[1])
        found = (
            cursor(conn)
            .execute(
                "SELECT EXISTS (SELECT 1 FROM openclaw_sessions AS s LEFT JOIN "
                "openclaw_index_state st ON st.session_id = s.session_id "
                f"WHERE {PENDING_CONDITION})"
            )
            .fetchone()[0]
        )
        conn.connection.info[_PENDING_MEMO] = (key, bool(found))
        return bool(found)

    def pending_visible(self, conn: Connection, caller: Caller, session_key: str | None) -> bool:
        """Whether any session the caller may see is pending (not yet exactly indexed)."""
        where, params = _visible_sql(caller, session_key)
        sql = (
            "SELECT EXISTS (SELECT 1 FROM openclaw_sessions AS s "
            "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id "
            f"WHERE {where} AND {PENDING_CONDITION})"
        )
        return bool(cursor(conn).execute(sql, params).fetchone()[0])

    def ranked_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[Hit]:
        """Up to ``limit + 1`` hits in result order (one more than asked: ``truncated``)."""
        if (
            exact
            and visible(caller, "s").everything
            and req.session_key is None
            and req.role is None
            and req.since is None
            and req.until is None
            and req.order == "relevance"
        ):
            top = self._top_of_everything(conn, req)
            if top is not None:
                return top
        sql, params = self._hits_sql(caller, req, exact=exact)
        # The DBAPI cursor (sqlite3 takes the same :name parameters): SQLAlchemy's statement
        # handling cost ~0.3 ms a search, a third of a narrow search's SQL time.
        hits: list[Hit] = cursor(conn).execute(sql, params).fetchall()
        return hits

    def hit_texts(self, conn: Connection, hits: list[Hit]) -> dict[int, str]:
        """Each hit's searchable text (clean), by index row id. The indexed body IS that text
        unless CJK was spaced for the index; only those messages are re-read through the one
        predicate."""
        if not hits:
            return {}
        marks = ", ".join("?" * len(hits))
        bodies = dict(
            cursor(conn)
            .execute(
                f"SELECT id, body FROM {CONTENT_TABLE} WHERE id IN ({marks})",
                [h[0] for h in hits],
            )
            .fetchall()
        )
        texts = {}
        for hit in hits:
            body = bodies.get(hit[0])
            if body is not None and body_is_clean_text(body):
                texts[hit[0]] = body
            else:
                texts[hit[0]] = self._original_text(conn, hit[1], hit[2])
        return texts

    @staticmethod
    def _hits_sql(caller: Caller, req: SearchRequest, *, exact: bool) -> tuple[str, dict[str, Any]]:
        """The ranked statement; ``exact`` (no session is pending in this snapshot) drops the
        per-row pending filter, which then holds for every row."""
        where, params = _visible_sql(caller, req.session_key)
        assert req.compiled is not None
        params.update(q=req.compiled.match, v=INDEX_VERSION, lim=req.limit + 1)
        match = ":q"
        if caller.is_narrow:
            # FTS5 intersects the text doclist with the visible sessions' tokens, so ranking
            # only scores rows the caller may see (8 ms instead of 268 ms measured). The
            # subquery re-uses the visibility SQL: its own alias `s` shadows the outer one.
            match = (
                "'(' || :q || ') AND sess : (' || coalesce((SELECT group_concat('s' || st2.id, "
                "' OR ') FROM openclaw_sessions AS s JOIN openclaw_index_state AS st2 ON "
                "st2.session_id = s.session_id "
                f"WHERE {where}), 's0') || ')'"
            )
        filters = []
        if req.role is not None:
            filters.append("AND mi.role = :role")
            params["role"] = req.role
        if req.since is not None:
            filters.append("AND mi.timestamp_ms >= :since")
            params["since"] = req.since
        if req.until is not None:
            filters.append("AND mi.timestamp_ms <= :until")
            params["until"] = req.until
        score = f"bm25({FTS_TABLE}, {BM25_WEIGHTS})"
        # mi.id last: two incarnations of one session key may hold the same message id.
        if req.order == "recent":
            order = "mi.timestamp_ms DESC, s.session_key, mi.event_id, mi.id"
        else:
            order = "rank, mi.timestamp_ms DESC, s.session_key, mi.event_id, mi.id"
        pending = (
            ""
            if exact
            else "CROSS JOIN openclaw_index_state AS st ON st.session_id = s.session_id "
            "AND st.needs_rebuild = 0 AND st.indexed_seq >= s.last_seq AND st.index_version = :v "
        )
        sql = (
            f"SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
            f"s.session_key, {score} AS rank "
            f"FROM {FTS_TABLE} CROSS JOIN {CONTENT_TABLE} AS mi "
            f"ON mi.id = {FTS_TABLE}.rowid "
            f"CROSS JOIN openclaw_sessions AS s ON s.session_id = mi.session_id {pending}"
            f"WHERE {FTS_TABLE} MATCH {match} AND {where} "
            f"{' '.join(filters)} ORDER BY {order} LIMIT :lim"
        )
        return sql, params

    @staticmethod
    def _top_of_everything(conn: Connection, req: SearchRequest) -> list[Hit] | None:
        """The ranked hits of a caller who sees every session that is not incognito (by flag
        or by key), in a snapshot where no session is pending: FTS5 alone ranks (no join per
        match, as raw SQL would), then only the top rows are joined. None when a tie on the
        score at the limit runs past :data:`TIE_PROBE_ROWS`, or a top row is not visible after
        all: the full statement then decides."""
        assert req.compiled is not None
        want = req.limit + 1
        ranked = (
            cursor(conn)
            .execute(
                f"SELECT rowid, bm25({FTS_TABLE}, {BM25_WEIGHTS}) AS rank "
                f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? ORDER BY rank LIMIT ?",
                (req.compiled.match, want + TIE_PROBE_ROWS),
            )
            .fetchall()
        )
        if not ranked:
            return []
        if len(ranked) > want:
            boundary = ranked[want - 1][1]
            if len(ranked) == want + TIE_PROBE_ROWS and ranked[-1][1] == boundary:
                return None  # the tie may go on past what was fetched
            ranked = [r for r in ranked if r[1] <= boundary]  # every row tied at the limit
        score = dict(ranked)
        marks = ", ".join("?" * len(ranked))
        rows = (
            cursor(conn)
            .execute(
                "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
                f"s.session_key FROM {CONTENT_TABLE} AS mi JOIN openclaw_sessions AS s "
                f"ON s.session_id = mi.session_id WHERE mi.id IN ({marks}) AND s.incognito = 0 "
                f"AND NOT {incognito_key_sql('s')}",
                list(score),
            )
            .fetchall()
        )
        if len(rows) != len(ranked):
            return None
        hits: list[Hit] = [(r[0], r[1], r[2], r[3], r[4], r[5], r[6], score[r[0]]) for r in rows]
        return sorted(hits, key=_order_key)[:want]

    @staticmethod
    def _original_text(conn: Connection, session_id: str, seq: int) -> str:
        """The message's searchable text, re-read through the one predicate."""
        found = (
            cursor(conn)
            .execute(
                "SELECT event FROM transcript_events WHERE session_id = ? AND seq = ?",
                (session_id, seq),
            )
            .fetchone()
        )
        try:
            event = json.loads(found[0]) if found is not None else None
        except (ValueError, RecursionError):
            event = None
        row = transcript.index_row(seq, event) if isinstance(event, dict) else None
        return clean_text(row.text) if row is not None else ""


#: One reader serves every connection (it holds no state; per-connection memos live on the
#: DBAPI connection's ``info``).
READER = SqliteReader()
