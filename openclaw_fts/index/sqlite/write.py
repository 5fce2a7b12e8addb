"""The write side of the SQLite backend: every statement that writes transcripts, index rows,
index state and branch records, and the reads the writers plan from.

Invariant: statements run on the DBAPI cursor of the caller's connection (inside the caller's
transaction; a handful per append, where SQLAlchemy's per-statement overhead would dominate);
``transcript_events`` rows are inserted only by :meth:`SqliteWriter.insert_events` (the store,
the importer and bulk ORM inserts) or by the ORM flush, and ``openclaw_sessions.last_seq`` is
raised with them in the same call; index rows go through :func:`insert_rows` /
:func:`delete_rows`, which keep FTS5 exact. "Pending" is :mod:`..common`'s definition.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from ... import transcript
from ...jsonsafe import stored_event as parse_event
from ...models import INDEX_VERSION
from ...transcript import Tree
from ..base import (
    EVENT_COLUMNS,
    EarlierEvent,
    EventRow,
    Finish,
    NewRow,
    SessionContext,
    StateRow,
    StoredRow,
)
from ..common import PENDING_CONDITION
from . import (
    CONTENT_TABLE,
    FTS_TABLE,
    cursor,
    delete_rows,
    in_lists,
    insert_rows,
    integrity_check,
    read_row_sizes,
    read_rows,
)

_INSERT_EVENTS = (
    f"INSERT INTO transcript_events ({', '.join(EVENT_COLUMNS)}) "
    f"VALUES ({', '.join(':' + c for c in EVENT_COLUMNS)})"
)
_BUMP_SESSION = (
    "UPDATE openclaw_sessions SET last_seq = :seq, updated_at = CURRENT_TIMESTAMP "
    "WHERE session_id = :sid"
)
#: Rows whose derived columns cannot stand in for their JSON: no ``type`` or no ``event_id`` (a
#: row written behind the plugin's back without, or with only some of, the derived columns; the
#: plugin leaves both empty only for events that have neither, which are rare) and every leaf
#: control (its ``appendParentId`` / ``appendMode`` and the shape of its target live only in the
#: JSON; leaf controls are few).
_NEEDS_JSON = f"type IS NULL OR event_id IS NULL OR type = '{transcript.LEAF_TYPE}'"
#: For the other rows with an empty ``parent_id`` column, SQLite tells a null ``parentId`` from a
#: missing or malformed one without the JSON reaching Python (``transcript.column_node``).
_PARENT_JSON_TYPE = (
    "CASE WHEN parent_id IS NULL AND json_valid(event) THEN json_type(event, '$.parentId') END"
)
_INDEXED_ROLES_SQL = ", ".join(f"'{r}'" for r in sorted(transcript.INDEXED_ROLES))
#: Event rows read per fetch while recomputing derived columns (bounds memory per session).
REDERIVE_FETCH_ROWS = 1_000
_DERIVED = ("event_id", "parent_id", "type", "role", "target_id", "side", "timestamp_ms")
#: Tables whose rows belong to a session, swept when the session row is gone.
_SESSION_TABLES = (CONTENT_TABLE, "openclaw_index_state", "openclaw_branches", "transcript_events")


def _state(row: Sequence[Any]) -> StateRow:
    return StateRow(row[0], row[1], row[2], bool(row[3]), row[4], row[5])


class SqliteWriter:
    """:class:`~openclaw_fts.index.base.Writer` for SQLite (FTS5 index)."""

    # ------------------------------------------------------------ sessions and index state

    def session_context(self, conn: Connection, session_id: str) -> SessionContext | None:
        row = (
            cursor(conn)
            .execute(
                "SELECT s.last_seq, s.incognito, st.id, st.indexed_seq, st.indexed_leaf, "
                "st.needs_rebuild, st.generation, st.index_version FROM openclaw_sessions s "
                "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id "
                "WHERE s.session_id = ?",
                (session_id,),
            )
            .fetchone()
        )
        if row is None:
            return None
        state = _state(row[2:]) if row[2] is not None else None
        return SessionContext(int(row[0]), bool(row[1]), state)

    def create_state(self, conn: Connection, session_id: str, *, clean: bool) -> StateRow:
        cur = cursor(conn)
        cur.execute(
            "INSERT INTO openclaw_index_state (session_id, indexed_seq, needs_rebuild, "
            "generation, index_version) VALUES (:sid, -1, :dirty, 0, :v)",
            {"sid": session_id, "dirty": not clean, "v": INDEX_VERSION},
        )
        row = cur.execute(
            "SELECT id, indexed_seq, indexed_leaf, needs_rebuild, generation, index_version "
            "FROM openclaw_index_state WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        return _state(row)

    def mark_dirty(self, conn: Connection, session_ids: Sequence[str]) -> None:
        cursor(conn).executemany(
            "UPDATE openclaw_index_state SET needs_rebuild = 1, generation = generation + 1 "
            "WHERE session_id = ?",
            [(sid,) for sid in session_ids],
        )

    def session_ids(self, conn: Connection, keys: Sequence[str] | None) -> list[str]:
        cur = cursor(conn)
        if keys is None:
            return [r[0] for r in cur.execute("SELECT session_id FROM openclaw_sessions")]
        found: set[str] = set()
        for chunk, marks in in_lists(list(keys)):
            found.update(
                r[0]
                for r in cur.execute(
                    f"SELECT session_id FROM openclaw_sessions WHERE session_key IN ({marks}) "
                    f"OR session_id IN ({marks})",
                    [*chunk, *chunk],
                )
            )
        return sorted(found)

    # ------------------------------------------------------------ transcript events

    def insert_events(self, conn: Connection, rows: Sequence[EventRow], last_seq: int) -> None:
        if not rows:
            return
        cur = cursor(conn)
        try:
            cur.executemany(_INSERT_EVENTS, rows)
        except sqlite3.IntegrityError as exc:  # a taken event id or seq
            raise IntegrityError(_INSERT_EVENTS, None, exc) from None
        cur.execute(_BUMP_SESSION, {"seq": last_seq, "sid": rows[0]["session_id"]})

    def last_seq(self, conn: Connection, session_id: str) -> int | None:
        row = (
            cursor(conn)
            .execute("SELECT last_seq FROM openclaw_sessions WHERE session_id = ?", (session_id,))
            .fetchone()
        )
        return None if row is None else int(row[0])

    def taken_event_ids(self, conn: Connection, session_id: str, ids: list[str]) -> set[str]:
        found: set[str] = set()
        cur = cursor(conn)  # plain DBAPI: 500 SQLAlchemy bind objects per batch cost ~50% of import
        for chunk, marks in in_lists(ids):
            result = cur.execute(
                "SELECT event_id FROM transcript_events WHERE session_id = ? "
                f"AND event_id IN ({marks})",
                [session_id, *chunk],
            )
            found.update(r[0] for r in result)
        return found

    def unkeyed_events(self, conn: Connection, session_id: str) -> list[str]:
        rows = cursor(conn).execute(
            "SELECT event FROM transcript_events WHERE session_id = ? AND event_id IS NULL",
            (session_id,),
        )
        return [stored for (stored,) in rows if isinstance(stored, str)]

    def ensure_session(
        self, conn: Connection, fields: Mapping[str, Any], *, rekey: bool
    ) -> int | None:
        cur = cursor(conn)
        row = cur.execute(
            "SELECT last_seq FROM openclaw_sessions WHERE session_id = :session_id", fields
        ).fetchone()
        if row is not None:
            if rekey:
                cur.execute(
                    "UPDATE openclaw_sessions SET session_key = :session_key, "
                    "agent_id = :agent_id, spawned_by = :spawned_by, "
                    "parent_session_key = :parent_session_key, "
                    "owner_session_key = :owner_session_key WHERE session_id = :session_id",
                    fields,
                )
            return int(row[0])
        cur.execute(
            "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, spawned_by, "
            "parent_session_key, owner_session_key, archived, incognito, last_seq, "
            "created_at, updated_at) VALUES (:session_id, :session_key, :agent_id, :spawned_by, "
            ":parent_session_key, :owner_session_key, 0, 0, -1, :created_at, CURRENT_TIMESTAMP)",
            fields,
        )
        return None

    # ------------------------------------------------------------ reading a session's tree

    def load_tree(
        self, conn: Connection, session_id: str
    ) -> tuple[list[transcript.TreeNode], dict[int, dict[str, Any]]]:
        result = cursor(conn).execute(
            "SELECT seq, event_id, parent_id, type, side, "
            f"CASE WHEN {_NEEDS_JSON} THEN event END, "
            f"CASE WHEN {_NEEDS_JSON} THEN NULL ELSE {_PARENT_JSON_TYPE} END "
            "FROM transcript_events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        nodes: list[transcript.TreeNode] = []
        parsed: dict[int, dict[str, Any]] = {}
        for seq, event_id, parent_id, etype, side, raw, parent_type in result:
            if raw is not None:
                event = parsed[seq] = parse_event(raw)
                nodes.append(transcript.tree_node(seq, event))
            else:
                nodes.append(
                    transcript.column_node(seq, event_id, parent_id, etype, bool(side), parent_type)
                )
        return nodes, parsed

    def load_events(self, conn: Connection, session_id: str) -> list[tuple[int, dict[str, Any]]]:
        result = cursor(conn).execute(
            "SELECT seq, event FROM transcript_events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        return [(int(seq), parse_event(raw)) for seq, raw in result]

    def branch_events(
        self,
        conn: Connection,
        session_id: str,
        seqs: Sequence[int],
        parsed: dict[int, dict[str, Any]],
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        cur = cursor(conn)
        for chunk, _ in in_lists(sorted(seqs)):
            unread = [seq for seq in chunk if seq not in parsed]
            found: dict[int, dict[str, Any]] = {}
            if unread:
                marks = ", ".join("?" * len(unread))
                result = cur.execute(
                    "SELECT seq, event FROM transcript_events WHERE session_id = ? "
                    f"AND type = 'message' AND role IN ({_INDEXED_ROLES_SQL}) AND seq IN ({marks})",
                    (session_id, *unread),
                )
                found = {seq: parse_event(raw) for seq, raw in result}
            for seq in chunk:
                if seq in parsed:
                    yield seq, parsed[seq]
                elif seq in found:
                    yield seq, found[seq]

    def earlier_event(
        self, conn: Connection, session_id: str, event_id: str, before_seq: int
    ) -> EarlierEvent | None:
        row = (
            cursor(conn)
            .execute(
                "SELECT seq, type, side, parent_id, "
                f"CASE WHEN type = '{transcript.LEAF_TYPE}' THEN event END, {_PARENT_JSON_TYPE} "
                "FROM transcript_events WHERE session_id = ? AND event_id = ? AND seq < ?",
                (session_id, event_id, before_seq),
            )
            .fetchone()
        )
        if row is None:
            return None
        return EarlierEvent(row[0], row[1], bool(row[2]), row[3], row[4], row[5])

    def event_seq_type(
        self, conn: Connection, session_id: str, event_id: str
    ) -> tuple[int, str | None] | None:
        row = (
            cursor(conn)
            .execute(
                "SELECT seq, type FROM transcript_events WHERE session_id = ? AND event_id = ?",
                (session_id, event_id),
            )
            .fetchone()
        )
        return None if row is None else (int(row[0]), row[1])

    def has_event_type(self, conn: Connection, session_id: str, type_: str) -> bool:
        found = (
            cursor(conn)
            .execute(
                "SELECT 1 FROM transcript_events WHERE session_id = ? AND type = ? LIMIT 1",
                (session_id, type_),
            )
            .fetchone()
        )
        return found is not None

    # ------------------------------------------------------------ index rows

    def index_rows(self, conn: Connection, session_id: str) -> list[StoredRow]:
        return read_rows(conn, session_id)

    def index_row_sizes(self, conn: Connection, session_id: str) -> list[tuple[int, int, int]]:
        return read_row_sizes(conn, session_id)

    def apply_changes(
        self, conn: Connection, deletes: Sequence[int], inserts: Sequence[NewRow]
    ) -> None:
        delete_rows(conn, deletes)  # first: a changed row is a delete plus an insert
        insert_rows(conn, inserts)

    def extend_index(
        self,
        conn: Connection,
        state_id: int,
        rows: Sequence[NewRow],
        indexed_seq: int,
        leaf: str | None,
    ) -> None:
        insert_rows(conn, rows)
        cursor(conn).execute(
            "UPDATE openclaw_index_state SET indexed_seq = ?, indexed_leaf = ?, "
            "generation = generation + 1 WHERE id = ?",
            (indexed_seq, leaf, state_id),
        )

    def finish(self, conn: Connection, finish: Finish) -> None:
        cur = cursor(conn)
        cur.execute(
            "UPDATE openclaw_sessions SET last_seq = :seq WHERE session_id = :sid "
            "AND last_seq < :seq",
            {"seq": finish.last_seq, "sid": finish.session_id},
        )
        cur.execute(
            "UPDATE openclaw_index_state SET indexed_seq = (SELECT last_seq FROM "
            "openclaw_sessions WHERE session_id = :sid), indexed_leaf = :leaf, "
            "needs_rebuild = 0, index_version = :v, generation = generation + 1 WHERE id = :id",
            {
                "sid": finish.session_id,
                "leaf": finish.leaf,
                "v": INDEX_VERSION,
                "id": finish.state_id,
            },
        )
        self.write_branches(conn, finish.session_id, finish.tree, finish.seq_of_tip)

    def write_branches(
        self, conn: Connection, session_id: str, tree: Tree, seq_of_tip: Mapping[str, int]
    ) -> None:
        cur = cursor(conn)
        cur.execute("DELETE FROM openclaw_branches WHERE session_id = ?", (session_id,))
        rows: list[tuple[str, str | None, int | None, bool]] = [
            (session_id, tip, seq_of_tip.get(tip), tip == tree.active_leaf) for tip in tree.tips
        ]
        if tree.active_leaf is None:
            rows.append((session_id, None, None, True))
        if rows:
            cur.executemany(
                "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )

    def bump_generation(self, conn: Connection, state_id: int) -> None:
        cursor(conn).execute(
            "UPDATE openclaw_index_state SET generation = generation + 1 WHERE id = ?",
            (state_id,),
        )

    def snapshot(self, conn: Connection, session_id: str) -> tuple[int, int] | None:
        row = (
            cursor(conn)
            .execute(
                "SELECT st.generation, (SELECT coalesce(max(seq), -1) FROM transcript_events "
                "WHERE session_id = :sid) FROM openclaw_index_state st "
                "WHERE st.session_id = :sid",
                {"sid": session_id},
            )
            .fetchone()
        )
        return None if row is None else (int(row[0]), int(row[1]))

    # ------------------------------------------------------------ branch records

    def advance_active_branch(
        self, conn: Connection, session_id: str, tip: str | None, tip_seq: int | None
    ) -> None:
        cur = cursor(conn)
        moved = cur.execute(
            "UPDATE openclaw_branches SET tip_id = ?, tip_seq = ? WHERE session_id = ? "
            "AND is_active = 1",
            (tip, tip_seq, session_id),
        )
        if moved.rowcount == 0:
            cur.execute(
                "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
                "VALUES (?, ?, ?, 1)",
                (session_id, tip, tip_seq),
            )

    def add_side_tips(
        self, conn: Connection, session_id: str, tips: Sequence[tuple[str, int, str | None]]
    ) -> None:
        cur = cursor(conn)
        for tip, seq, former_tip in tips:
            if former_tip is not None:
                cur.execute(
                    "DELETE FROM openclaw_branches WHERE session_id = ? AND tip_id = ? "
                    "AND is_active = 0",
                    (session_id, former_tip),
                )
            cur.execute(
                "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
                "VALUES (?, ?, ?, 0)",
                (session_id, tip, seq),
            )

    # ------------------------------------------------------------ the reconciler's view

    def status(self, conn: Connection) -> dict[str, int]:
        row = (
            cursor(conn)
            .execute(
                "SELECT count(*), coalesce(sum(CASE WHEN "
                f"{PENDING_CONDITION} THEN 1 ELSE 0 END), 0) FROM openclaw_sessions s "
                "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id"
            )
            .fetchone()
        )
        total, pending = int(row[0]), int(row[1])
        return {"pending": pending, "indexed": total - pending, "total": total}

    def pending_session_ids(self, conn: Connection) -> list[str]:
        result = cursor(conn).execute(
            "SELECT s.session_id FROM openclaw_sessions s "
            "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id "
            f"WHERE {PENDING_CONDITION} OR s.last_seq < coalesce((SELECT max(e.seq) FROM "
            "transcript_events e WHERE e.session_id = s.session_id), -1) ORDER BY s.session_id"
        )
        return [r[0] for r in result]

    def sweep_orphans(self, conn: Connection) -> None:
        cur = cursor(conn)
        for table in _SESSION_TABLES:
            cur.execute(
                f"DELETE FROM {table} WHERE session_id NOT IN "
                "(SELECT session_id FROM openclaw_sessions)"
            )

    # ------------------------------------------------------------ maintenance and checks

    def rederive(self, conn: Connection, session_id: str) -> int:
        updates = []
        rows = cursor(conn).execute(
            f"SELECT seq, event, {', '.join(_DERIVED)} FROM transcript_events "
            "WHERE session_id = ? ORDER BY seq",
            (session_id,),
        )
        side = _DERIVED.index("side")
        while batch := rows.fetchmany(REDERIVE_FETCH_ROWS):
            for seq, raw, *stored in batch:
                derived = transcript.derived_columns(seq, json.loads(raw))
                fresh = [derived[c] for c in _DERIVED]
                fresh[side] = int(bool(fresh[side]))
                if fresh != [*stored[:side], int(bool(stored[side])), *stored[side + 1 :]]:
                    updates.append((*fresh, session_id, seq))
        if updates:
            cursor(conn).executemany(
                f"UPDATE transcript_events SET {', '.join(f'{c} = ?' for c in _DERIVED)} "
                "WHERE session_id = ? AND seq = ?",
                updates,
            )
        return len(updates)

    def rebuild_all(self, conn: Connection) -> None:
        """FTS5 re-reads its whole index from the content table."""
        cursor(conn).execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")

    def optimize(self, conn: Connection) -> None:
        """Merge the FTS5 index's segments into one (faster queries after many small writes)."""
        cursor(conn).execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")

    def integrity_check(self, conn: Connection) -> None:
        integrity_check(conn)

    def orphan_index_rows(self, conn: Connection) -> int:
        row = (
            cursor(conn)
            .execute(
                f"SELECT count(*) FROM {CONTENT_TABLE} WHERE session_id NOT IN "
                "(SELECT session_id FROM openclaw_sessions)"
            )
            .fetchone()
        )
        return int(row[0])

    def clean_session_ids(self, conn: Connection) -> list[str]:
        return [
            r[0]
            for r in cursor(conn).execute(
                "SELECT s.session_id FROM openclaw_sessions s JOIN openclaw_index_state st "
                f"ON st.session_id = s.session_id WHERE NOT {PENDING_CONDITION}"
            )
        ]
