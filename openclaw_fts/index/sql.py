"""The statements every backend shares (its reads besides search, and its writes): each
written once, in SQL both SQLite and PostgreSQL run, with the few dialect differences left to
each engine's backend class (a subclass of :class:`SqlBackend`).

Invariant: statements run on the DBAPI cursor of the caller's connection (inside the caller's
transaction; a handful per append, where SQLAlchemy's per-statement overhead would dominate),
written with ``:name`` parameters (sqlite3 takes them as they are; PostgreSQL's writer runs
them through SQLAlchemy ``text()``);
booleans are written as ``TRUE`` / ``FALSE`` and bound as Python ``bool``. ``transcript_events``
rows are inserted only by :meth:`SqlBackend.insert_events` (the store, the importer and bulk ORM
inserts) or by the ORM flush, with ``openclaw_sessions.last_seq`` raised in the same call; index
rows only through a backend's ``insert_rows`` / ``delete_rows``. "Pending" is :mod:`.pending`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from .. import transcript
from ..jsonsafe import stored_event
from ..rows import (
    EVENT_COLUMNS,
    INDEX_VERSION,
    EarlierEvent,
    EventRow,
    Extension,
    Finish,
    NewRow,
    SessionContext,
    StateRow,
    StoredRow,
)
from ..transcript import Tree
from .base import Databases, Partitions, Pooler, Replicas, Segments
from .dialect_sql import DialectSql
from .page import PagedSearch
from .pending import PENDING_CONDITION

#: The table of index rows (its full-text side is the backend's own).
CONTENT_TABLE = "message_index"
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
_INDEXED_ROLES_SQL = ", ".join(f"'{r}'" for r in sorted(transcript.INDEXED_ROLES))
#: Event rows read per fetch while recomputing derived columns (bounds memory per session).
REDERIVE_FETCH_ROWS = 1_000
_DERIVED = ("event_id", "parent_id", "type", "role", "target_id", "side", "timestamp_ms")
#: Tables whose rows belong to a session, swept when the session row is gone.
_SESSION_TABLES = (CONTENT_TABLE, "openclaw_index_state", "openclaw_branches", "transcript_events")
_STATE_COLUMNS = "id, indexed_seq, indexed_leaf, needs_rebuild, generation, index_version"


def _state(row: Sequence[Any]) -> StateRow:
    return StateRow(row[0], row[1], row[2], bool(row[3]), row[4], row[5])


#: A session's ``last_seq``, incognito flag and index state (``:sid``); read by
#: :func:`session_context_of`.
SESSION_CONTEXT = (
    "SELECT s.last_seq, s.incognito, st.id, st.indexed_seq, st.indexed_leaf, "
    "st.needs_rebuild, st.generation, st.index_version FROM openclaw_sessions s "
    "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id "
    "WHERE s.session_id = :sid"
)


def session_context_of(row: Sequence[Any] | None) -> SessionContext | None:
    """The :class:`SessionContext` of a :data:`SESSION_CONTEXT` row (None: no such session)."""
    if row is None:
        return None
    state = _state(row[2:]) if row[2] is not None else None
    return SessionContext(int(row[0]), bool(row[1]), state)


class Statements(Protocol):
    """How the shared statements (``:name`` parameters) reach one engine's driver, on the
    caller's connection and inside its transaction (``SqlBackend.statements``)."""

    def run(self, conn: Connection, statement: str, params: Any) -> Any:
        """Run one statement; a result that can be iterated, ``fetchone()``-ed,
        ``fetchmany()``-ed and has a ``rowcount``."""
        ...

    def run_many(self, conn: Connection, statement: str, rows: Sequence[Any]) -> None:
        """Run one statement once per parameter set of ``rows`` (none: nothing runs)."""
        ...


class SqlBackend(PagedSearch):
    """:class:`~openclaw_fts.index.base.Reader` (all but search) and
    :class:`~openclaw_fts.index.base.Writer` over plain SQL; an engine's backend class supplies
    how statements reach its driver (:class:`Statements`), the full-text rows, the JSON probe
    and search."""

    # ------------------------------------------------------------ what a dialect supplies

    #: The driver's exceptions for a violated constraint, when statements run on its cursor
    #: (through SQLAlchemy, they already arrive as ``sqlalchemy.exc.IntegrityError``).
    INTEGRITY_ERRORS: tuple[type[Exception], ...] = ()
    #: The engine's spellings of what the statements below need (IN-lists, timestamps, the
    #: parent probe, byte lengths, row locks, unstorable text): :mod:`.dialect_sql`.
    spelt: DialectSql
    #: How the statements below reach the engine's driver.
    statements: Statements

    def insert_rows(self, conn: Connection, rows: Sequence[NewRow]) -> None:
        raise NotImplementedError

    def delete_rows(self, conn: Connection, ids: Sequence[int]) -> None:
        raise NotImplementedError

    def index_row_sizes(self, conn: Connection, session_id: str) -> list[tuple[int, int, int]]:
        """``(id, seq, UTF-8 bytes of the indexed text)`` of every index row of one session."""
        rows = self.run(
            conn,
            f"SELECT id, seq, {self.spelt.byte_length('body')} FROM {CONTENT_TABLE} "
            "WHERE session_id = :sid",
            {"sid": session_id},
        )
        return [(int(a), int(b), int(c)) for a, b, c in rows]

    def unstorable(self, values: Iterable[object]) -> str | None:
        """Why one of these values (ids, keys, derived columns) cannot be stored, or None."""
        return self.spelt.unstorable(values)

    def lock_session(self, conn: Connection, session_id: str) -> None:
        """Serialise appends to one session until the transaction ends: its session row locked
        (SQLite: nothing to lock, its write transactions already are)."""
        lock = self.spelt.row_lock()
        if lock:
            self.run(
                conn,
                f"SELECT 1 FROM openclaw_sessions WHERE session_id = :sid {lock}",
                {"sid": session_id},
            )

    def locked_context(self, conn: Connection, session_id: str) -> SessionContext | None:
        """:meth:`lock_session` and the session's context in one statement (the session row
        locked before ``last_seq`` is read, as the two statements would)."""
        lock = self.spelt.row_lock("s")
        statement = f"{SESSION_CONTEXT} {lock}" if lock else SESSION_CONTEXT
        return session_context_of(self.run(conn, statement, {"sid": session_id}).fetchone())

    def rebuild_all(self, conn: Connection) -> None:
        """Rebuild the whole full-text index from the content table (where the engine can)."""

    def optimize(self, conn: Connection) -> None:
        """Make the full-text index faster to query after many small writes."""

    def integrity_check(self, conn: Connection) -> None:
        """The engine's own check of the full-text index; raises on corruption."""

    def check_skipped(self, error: BaseException) -> str | None:
        """Why :meth:`integrity_check` could not run (None: the error is about the index)."""
        return None

    # ------------------------------------------------------------ engine defaults

    # What an engine without the feature does, the way Alembic's DefaultImpl holds the
    # behaviour its dialects share: an engine's class overrides only what it does otherwise.

    #: No column weights in the rank.
    rank_weights: tuple[float, ...] = ()

    def attach_ddl(self) -> None:
        """Nothing: the migrations make the engine's own objects (``create_all()`` makes the
        tables only)."""

    # ------------------------------------------------------------ helpers

    def run(self, conn: Connection, statement: str, params: Any = None) -> Any:
        """One statement (:attr:`statements`)."""
        return self.statements.run(conn, statement, params if params is not None else {})

    def run_many(self, conn: Connection, statement: str, rows: Sequence[Any]) -> None:
        """One statement per parameter set (:attr:`statements`)."""
        self.statements.run_many(conn, statement, rows)

    # ------------------------------------------------------------ sessions and index state

    def session_context(self, conn: Connection, session_id: str) -> SessionContext | None:
        return session_context_of(self.run(conn, SESSION_CONTEXT, {"sid": session_id}).fetchone())

    def create_state(self, conn: Connection, session_id: str, *, clean: bool) -> StateRow:
        self.run(
            conn,
            "INSERT INTO openclaw_index_state (session_id, indexed_seq, needs_rebuild, "
            "generation, index_version) VALUES (:sid, -1, :dirty, 0, :v)",
            {"sid": session_id, "dirty": not clean, "v": INDEX_VERSION},
        )
        row = self.run(
            conn,
            f"SELECT {_STATE_COLUMNS} FROM openclaw_index_state WHERE session_id = :sid",
            {"sid": session_id},
        ).fetchone()
        return _state(row)

    def mark_dirty(self, conn: Connection, session_ids: Sequence[str]) -> None:
        self.run_many(
            conn,
            "UPDATE openclaw_index_state SET needs_rebuild = TRUE, generation = generation + 1 "
            "WHERE session_id = :sid",
            [{"sid": sid} for sid in session_ids],
        )

    def session_ids(self, conn: Connection, keys: Sequence[str] | None) -> list[str]:
        if keys is None:
            return [r[0] for r in self.run(conn, "SELECT session_id FROM openclaw_sessions")]
        found: set[str] = set()
        for by_key, params in self.spelt.ids_in("session_key", list(keys)):
            by_id = by_key.replace("session_key", "session_id", 1)
            found.update(
                r[0]
                for r in self.run(
                    conn,
                    f"SELECT session_id FROM openclaw_sessions WHERE {by_key} OR {by_id}",
                    params,
                )
            )
        return sorted(found)

    # ------------------------------------------------------------ transcript events

    def insert_events(self, conn: Connection, rows: Sequence[EventRow], last_seq: int) -> None:
        if not rows:
            return
        try:
            self.run_many(conn, _INSERT_EVENTS, rows)
        except self.INTEGRITY_ERRORS as exc:  # a taken event id or seq: SQLAlchemy's error
            raise IntegrityError(_INSERT_EVENTS, None, exc) from None
        self.run(conn, _BUMP_SESSION, {"seq": last_seq, "sid": rows[0]["session_id"]})

    #: What only some engines have (:class:`~.base.Partitions`, :class:`~.base.Replicas`,
    #: :class:`~.base.Pooler`, :class:`~.base.Segments`): none unless an engine's class says
    #: otherwise.
    partitions: Partitions | None = None
    replicas: Replicas | None = None
    pooler: Pooler | None = None
    segments: Segments | None = None
    databases: Databases | None = None

    #: One statement per append is PostgreSQL's (SQLite's write lock is the transaction's).
    one_statement_appends = False

    def append_guarded(
        self,
        conn: Connection,
        rows: Sequence[EventRow],
        last_seq: int,
        extension: Extension,
        known: SessionContext,
    ) -> bool:
        return False

    def append_and_extend(
        self, conn: Connection, rows: Sequence[EventRow], last_seq: int, extension: Extension
    ) -> None:
        """The statements of :meth:`insert_events` then :meth:`extend_index` and
        :meth:`add_side_tips`, as the append path ran them before this method existed."""
        self.insert_events(conn, rows, last_seq)
        self.extend_index(
            conn,
            extension.state_id,
            extension.rows,
            extension.indexed_seq,
            extension.leaf,
            tip=extension.tip,
        )
        if extension.side_tips:
            self.add_side_tips(conn, extension.session_id, extension.side_tips)

    def last_seq(self, conn: Connection, session_id: str) -> int | None:
        row = self.run(
            conn,
            "SELECT last_seq FROM openclaw_sessions WHERE session_id = :sid",
            {"sid": session_id},
        ).fetchone()
        return None if row is None else int(row[0])

    def taken_event_ids(self, conn: Connection, session_id: str, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for where, params in self.spelt.ids_in("event_id", ids):
            result = self.run(
                conn,
                f"SELECT event_id FROM transcript_events WHERE session_id = :sid AND {where}",
                dict(params, sid=session_id),
            )
            found.update(r[0] for r in result)
        return found

    def event_ids(self, conn: Connection, session_id: str) -> set[str]:
        rows = self.run(
            conn,
            "SELECT event_id FROM transcript_events WHERE session_id = :sid "
            "AND event_id IS NOT NULL",
            {"sid": session_id},
        )
        return {r[0] for r in rows}

    def session_owner(self, conn: Connection, session_id: str) -> tuple[str, str] | None:
        row = self.run(
            conn,
            "SELECT agent_id, session_key FROM openclaw_sessions WHERE session_id = :sid",
            {"sid": session_id},
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def unkeyed_events(self, conn: Connection, session_id: str) -> list[str]:
        rows = self.run(
            conn,
            "SELECT event FROM transcript_events WHERE session_id = :sid AND event_id IS NULL",
            {"sid": session_id},
        )
        return [stored for (stored,) in rows if isinstance(stored, str)]

    def ensure_session(
        self, conn: Connection, fields: Mapping[str, Any], *, rekey: bool
    ) -> int | None:
        params = dict(fields, created_at=self.spelt.time_param(fields["created_at"]))
        row = self.run(
            conn, "SELECT last_seq FROM openclaw_sessions WHERE session_id = :session_id", params
        ).fetchone()
        if row is not None:
            if rekey:
                self.run(
                    conn,
                    "UPDATE openclaw_sessions SET session_key = :session_key, "
                    "agent_id = :agent_id, spawned_by = :spawned_by, "
                    "parent_session_key = :parent_session_key, "
                    "owner_session_key = :owner_session_key WHERE session_id = :session_id",
                    params,
                )
            return int(row[0])
        self.run(
            conn,
            "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, spawned_by, "
            "parent_session_key, owner_session_key, archived, incognito, last_seq, "
            "created_at, updated_at) VALUES (:session_id, :session_key, :agent_id, :spawned_by, "
            ":parent_session_key, :owner_session_key, FALSE, FALSE, -1, :created_at, "
            "CURRENT_TIMESTAMP)",
            params,
        )
        return None

    # ------------------------------------------------------------ reading a session's tree

    def load_tree(
        self, conn: Connection, session_id: str
    ) -> tuple[list[transcript.TreeNode], dict[int, dict[str, Any]]]:
        result = self.run(
            conn,
            "SELECT seq, event_id, parent_id, type, side, "
            f"CASE WHEN {_NEEDS_JSON} THEN event END, "
            f"CASE WHEN {_NEEDS_JSON} THEN NULL ELSE {self.spelt.parent_probe} END "
            "FROM transcript_events WHERE session_id = :sid ORDER BY seq",
            {"sid": session_id},
        )
        nodes: list[transcript.TreeNode] = []
        parsed: dict[int, dict[str, Any]] = {}
        for seq, event_id, parent_id, etype, side, raw, probe in result:
            if raw is not None:
                event = parsed[seq] = stored_event(raw)
                nodes.append(transcript.tree_node(seq, event))
            else:
                nodes.append(
                    transcript.column_node(
                        seq, event_id, parent_id, etype, bool(side), self.spelt.parent_type(probe)
                    )
                )
        return nodes, parsed

    def branch_events(
        self,
        conn: Connection,
        session_id: str,
        seqs: Sequence[int],
        parsed: dict[int, dict[str, Any]],
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        wanted = sorted(seqs)
        unread = [seq for seq in wanted if seq not in parsed]
        found: dict[int, dict[str, Any]] = {}
        for where, params in self.spelt.ids_in("seq", unread):
            result = self.run(
                conn,
                "SELECT seq, event FROM transcript_events WHERE session_id = :sid "
                f"AND type = 'message' AND role IN ({_INDEXED_ROLES_SQL}) AND {where}",
                dict(params, sid=session_id),
            )
            found.update((seq, stored_event(raw)) for seq, raw in result)
        for seq in wanted:
            if seq in parsed:
                yield seq, parsed[seq]
            elif seq in found:
                yield seq, found[seq]

    def earlier_event(
        self, conn: Connection, session_id: str, event_id: str, before_seq: int
    ) -> EarlierEvent | None:
        row = self.run(
            conn,
            "SELECT seq, type, side, parent_id, "
            f"CASE WHEN type = '{transcript.LEAF_TYPE}' THEN event END, {self.spelt.parent_probe} "
            "FROM transcript_events WHERE session_id = :sid AND event_id = :eid AND seq < :seq",
            {"sid": session_id, "eid": event_id, "seq": before_seq},
        ).fetchone()
        if row is None:
            return None
        return EarlierEvent(
            row[0], row[1], bool(row[2]), row[3], row[4], self.spelt.parent_type(row[5])
        )

    def event_seq_type(
        self, conn: Connection, session_id: str, event_id: str
    ) -> tuple[int, str | None] | None:
        row = self.run(
            conn,
            "SELECT seq, type FROM transcript_events WHERE session_id = :sid AND event_id = :eid",
            {"sid": session_id, "eid": event_id},
        ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def has_event_type(self, conn: Connection, session_id: str, type_: str) -> bool:
        found = self.run(
            conn,
            "SELECT 1 FROM transcript_events WHERE session_id = :sid AND type = :t LIMIT 1",
            {"sid": session_id, "t": type_},
        ).fetchone()
        return found is not None

    # ------------------------------------------------------------ index rows

    def index_rows(self, conn: Connection, session_id: str) -> list[StoredRow]:
        result = self.run(
            conn,
            f"SELECT id, seq, event_id, role, timestamp_ms, body FROM {CONTENT_TABLE} "
            "WHERE session_id = :sid",
            {"sid": session_id},
        )
        return [StoredRow(*row) for row in result]

    def apply_changes(
        self, conn: Connection, deletes: Sequence[int], inserts: Sequence[NewRow]
    ) -> None:
        self.delete_rows(conn, deletes)  # first: a changed row is a delete plus an insert
        self.insert_rows(conn, inserts)

    def extend_index(
        self,
        conn: Connection,
        state_id: int,
        rows: Sequence[NewRow],
        indexed_seq: int,
        leaf: str | None,
        *,
        tip: tuple[str, int | None] | None = None,
    ) -> None:
        self.insert_rows(conn, rows)
        self.run(
            conn,
            "UPDATE openclaw_index_state SET indexed_seq = :seq, indexed_leaf = :leaf, "
            "generation = generation + 1 WHERE id = :id",
            {"seq": indexed_seq, "leaf": leaf, "id": state_id},
        )
        if tip is not None:
            self.advance_active_branch(conn, tip[0], leaf, tip[1])

    def finish(self, conn: Connection, finish: Finish) -> None:
        self.run(
            conn,
            "UPDATE openclaw_sessions SET last_seq = :seq WHERE session_id = :sid "
            "AND last_seq < :seq",
            {"seq": finish.last_seq, "sid": finish.session_id},
        )
        self.run(
            conn,
            "UPDATE openclaw_index_state SET indexed_seq = (SELECT last_seq FROM "
            "openclaw_sessions WHERE session_id = :sid), indexed_leaf = :leaf, "
            "needs_rebuild = FALSE, index_version = :v, generation = generation + 1 "
            "WHERE id = :id",
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
        self.run(conn, "DELETE FROM openclaw_branches WHERE session_id = :sid", {"sid": session_id})
        rows: list[dict[str, Any]] = [
            {
                "sid": session_id,
                "tip": tip,
                "seq": seq_of_tip.get(tip),
                "on": tip == tree.active_leaf,
            }
            for tip in tree.tips
        ]
        if tree.active_leaf is None:
            rows.append({"sid": session_id, "tip": None, "seq": None, "on": True})
        self.run_many(
            conn,
            "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
            "VALUES (:sid, :tip, :seq, :on)",
            rows,
        )

    def bump_generation(self, conn: Connection, state_id: int) -> None:
        self.run(
            conn,
            "UPDATE openclaw_index_state SET generation = generation + 1 WHERE id = :id",
            {"id": state_id},
        )

    def snapshot(self, conn: Connection, session_id: str) -> tuple[int, int] | None:
        row = self.run(
            conn,
            "SELECT st.generation, (SELECT coalesce(max(seq), -1) FROM transcript_events "
            "WHERE session_id = :sid) FROM openclaw_index_state st WHERE st.session_id = :sid",
            {"sid": session_id},
        ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    # ------------------------------------------------------------ branch records

    def advance_active_branch(
        self, conn: Connection, session_id: str, tip: str | None, tip_seq: int | None
    ) -> None:
        params = {"sid": session_id, "tip": tip, "seq": tip_seq}
        moved = self.run(
            conn,
            "UPDATE openclaw_branches SET tip_id = :tip, tip_seq = :seq "
            "WHERE session_id = :sid AND is_active = TRUE",
            params,
        )
        if moved.rowcount == 0:
            self.run(
                conn,
                "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
                "VALUES (:sid, :tip, :seq, TRUE)",
                params,
            )

    def add_side_tips(
        self, conn: Connection, session_id: str, tips: Sequence[tuple[str, int, str | None]]
    ) -> None:
        for tip, seq, former_tip in tips:
            if former_tip is not None:
                self.run(
                    conn,
                    "DELETE FROM openclaw_branches WHERE session_id = :sid AND tip_id = :tip "
                    "AND is_active = FALSE",
                    {"sid": session_id, "tip": former_tip},
                )
            self.run(
                conn,
                "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
                "VALUES (:sid, :tip, :seq, FALSE)",
                {"sid": session_id, "tip": tip, "seq": seq},
            )

    # ------------------------------------------------------------ the reconciler's view

    def status(self, conn: Connection) -> dict[str, int]:
        row = self.run(
            conn,
            f"SELECT count(*), coalesce(sum(CASE WHEN {PENDING_CONDITION} THEN 1 ELSE 0 END), 0) "
            "FROM openclaw_sessions s "
            "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id",
        ).fetchone()
        total, pending = int(row[0]), int(row[1])
        return {"pending": pending, "indexed": total - pending, "total": total}

    def pending_session_ids(self, conn: Connection) -> list[str]:
        result = self.run(
            conn,
            "SELECT s.session_id FROM openclaw_sessions s "
            "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id "
            f"WHERE {PENDING_CONDITION} OR s.last_seq < coalesce((SELECT max(e.seq) FROM "
            "transcript_events e WHERE e.session_id = s.session_id), -1) ORDER BY s.session_id",
        )
        return [r[0] for r in result]

    def sweep_orphans(self, conn: Connection) -> None:
        for table in _SESSION_TABLES:
            self.run(
                conn,
                f"DELETE FROM {table} WHERE session_id NOT IN "
                "(SELECT session_id FROM openclaw_sessions)",
            )

    # ------------------------------------------------------------ maintenance and checks

    def rederive(self, conn: Connection, session_id: str) -> int:
        updates = []
        rows = self.run(
            conn,
            f"SELECT seq, event, {', '.join(_DERIVED)} FROM transcript_events "
            "WHERE session_id = :sid ORDER BY seq",
            {"sid": session_id},
        )
        side = _DERIVED.index("side")
        while batch := rows.fetchmany(REDERIVE_FETCH_ROWS):
            for seq, raw, *stored in batch:
                derived = transcript.derived_columns(seq, stored_event(raw))
                fresh = [derived[c] for c in _DERIVED]
                fresh[side] = bool(fresh[side])
                stored[side] = bool(stored[side])
                if fresh != stored:
                    updates.append(dict(zip(_DERIVED, fresh, strict=True), sid=session_id, seq=seq))
        self.run_many(
            conn,
            f"UPDATE transcript_events SET {', '.join(f'{c} = :{c}' for c in _DERIVED)} "
            "WHERE session_id = :sid AND seq = :seq",
            updates,
        )
        return len(updates)

    def orphan_index_rows(self, conn: Connection) -> int:
        row = self.run(
            conn,
            f"SELECT count(*) FROM {CONTENT_TABLE} WHERE session_id NOT IN "
            "(SELECT session_id FROM openclaw_sessions)",
        ).fetchone()
        return int(row[0])

    def clean_session_ids(self, conn: Connection) -> list[str]:
        return [
            r[0]
            for r in self.run(
                conn,
                "SELECT s.session_id FROM openclaw_sessions s JOIN openclaw_index_state st "
                f"ON st.session_id = s.session_id WHERE NOT {PENDING_CONDITION}",
            )
        ]
