"""``SqliteBackend``: the SQLite engine of the index — FTS5 beside ``message_index``.

Invariant: ``message_fts`` holds exactly the ``(body, sess)`` of every ``message_index`` row
after every method returns (:mod:`.fts`); every connection of a configured engine has the
settings of :mod:`.connect` and begins deferred, or with ``BEGIN IMMEDIATE`` when marked
``WRITE`` (``openclaw_fts.engine.write_engine``); a flush takes the write lock before its first
read. What SQLite does differently from the shared statements (:mod:`..sql`): the sqlite3
cursor (:class:`CursorStatements`), its spellings (:mod:`.dialect`: IN-lists in bounded chunks,
``json_type`` for the parent probe), its engines and connections (:mod:`.connect`), the FTS5
rows, FTS5's own maintenance and check; search is :class:`.read.SqliteSearch`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy import DDL, ColumnElement, Connection, Engine, FromClause, event, text

from ...models import MessageImpact, MessageIndex
from ...query import CompiledQuery
from ...rows import NewRow
from ..base import Connections, ImpactLists, Lease, Segments
from ..dialect_sql import DialectSql
from ..lease import TableLease
from ..sql import SqlBackend, Statements
from . import edit_triggers, impact, vocabulary
from .compose import fts_weights, match_parts
from .connect import SqliteConnections
from .dialect import SqliteSql
from .fts import (
    CREATE_STATEMENTS,
    DROP_STATEMENTS,
    FTS_TABLE,
    FtsSegments,
    cursor,
    delete_rows,
    insert_rows,
    merge_segments,
)
from .read import SqliteSearch

log = logging.getLogger(__name__)

#: SQLite's primary result codes that say nothing about the index (sqlite3 names them from
#: Python 3.11 on only).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_FULL = 5, 6, 8, 13
#: SQLite's message for ``SQLITE_FULL`` (what Python before 3.11 gives without the code).
FULL_MESSAGE = "database or disk is full"


class CursorStatements:
    """:class:`~..sql.Statements` on SQLite: straight on the sqlite3 cursor of the caller's
    transaction (:func:`.fts.cursor`; sqlite3 takes ``:name`` parameters as they are), since
    SQLAlchemy's per-statement overhead would dominate the handful of statements per append."""

    def run(self, conn: Connection, statement: str, params: Any) -> Any:
        cur = cursor(conn)
        cur.execute(statement, params)
        return cur

    def run_many(self, conn: Connection, statement: str, rows: Sequence[Any]) -> None:
        if rows:
            cursor(conn).executemany(statement, rows)


class SqliteBackend(SqliteSearch, SqlBackend):
    """:class:`~openclaw_fts.index.base.Backend` of ``sqlite`` databases (FTS5 index)."""

    name = "sqlite"
    packaged_driver: tuple[str, str] | None = None
    connections: Connections = SqliteConnections()
    statements: Statements = CursorStatements()
    spelt: DialectSql = SqliteSql()
    segments: Segments | None = FtsSegments()
    impact_lists: ImpactLists = impact.FtsImpactLists()
    rank_weights = fts_weights()
    INTEGRITY_ERRORS = (sqlite3.IntegrityError,)

    # ------------------------------------------------------------ schema

    def attach_ddl(self) -> None:
        """``metadata.create_all()`` / ``drop_all()`` (hosts without Alembic, quick tests)
        create and drop the FTS5 side and revision 0004's edit triggers with ``message_index``,
        and revision 0007's impact-row delete trigger with ``message_impact``, and revision
        0015's vocabulary (:mod:`.vocabulary`) with ``message_index``, on SQLite (the
        migrations carry frozen copies of the same statements)."""
        table = MessageIndex.__table__
        for when, statements in (
            (
                "after_create",
                (
                    *CREATE_STATEMENTS,
                    *edit_triggers.CREATE_STATEMENTS,
                    vocabulary.CREATE_VOCABULARY,
                ),
            ),
            (
                "before_drop",
                (vocabulary.DROP_VOCABULARY, *edit_triggers.DROP_STATEMENTS, *DROP_STATEMENTS),
            ),
        ):
            for statement in statements:
                ddl = DDL(statement).execute_if(dialect="sqlite")  # type: ignore[no-untyped-call]
                event.listen(table, when, ddl)
        impact_table = MessageImpact.__table__
        for when, statement in (
            ("after_create", impact.CREATE_DELETE_TRIGGER),
            ("before_drop", impact.DROP_DELETE_TRIGGER),
        ):
            ddl = DDL(statement).execute_if(dialect="sqlite")  # type: ignore[no-untyped-call]
            event.listen(impact_table, when, ddl)

    def lease(self, engine: Engine, holder: str, seconds: float) -> Lease:
        return TableLease(engine, holder, seconds)

    def match_parts(
        self, mi: Any, compiled: CompiledQuery
    ) -> tuple[FromClause | None, ColumnElement[bool], ColumnElement[bool], ColumnElement[float]]:
        return match_parts(mi, compiled)

    # ------------------------------------------------------------ statements

    def insert_rows(self, conn: Connection, rows: Sequence[NewRow]) -> None:
        """The rows, their FTS5 entries, their impact-list rows (:mod:`.impact`) and their
        words the vocabulary does not hold yet (:mod:`.vocabulary`), read from the same
        tokenization of each body."""
        first = insert_rows(conn, rows)
        if rows:
            cur = cursor(conn)
            terms: set[str] | None = set() if vocabulary.kept(conn) else None
            impact.add_rows(cur, first, rows, terms)
            if terms:
                vocabulary.add_words(conn, cur, vocabulary.letter_words(terms))

    def delete_rows(self, conn: Connection, ids: Sequence[int]) -> None:
        delete_rows(conn, ids)

    def rebuild_all(self, conn: Connection) -> None:
        """FTS5 re-reads its whole index from the content table."""
        cursor(conn).execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
        impact.rebuild(cursor(conn))

    def optimize(self, conn: Connection) -> None:
        """Merge the FTS5 index's segments into one (rebuilt first when repeated merges have
        grown its list of levels: :func:`.fts.merge_segments`); track the words that became
        frequent."""
        if merge_segments(conn):
            log.info("optimize: the FTS5 index was rebuilt (its structure had grown)")
        impact.promote(cursor(conn))

    # ------------------------------------------------------------ checks

    def integrity_check(self, conn: Connection) -> None:
        """FTS5's own check of the index against the content table; raises on corruption. It
        is an INSERT command: it needs the write lock."""
        conn.execute(
            text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")
        )

    def storage_full(self, error: BaseException) -> bool:
        if not isinstance(error, sqlite3.Error):
            return False
        code = getattr(error, "sqlite_errorcode", None)  # Python >= 3.11
        if isinstance(code, int):
            return code & 0xFF == SQLITE_FULL
        return FULL_MESSAGE in str(error)

    def check_skipped(self, error: BaseException) -> str | None:
        code = getattr(error, "sqlite_errorcode", None)  # Python >= 3.11
        primary = code & 0xFF if isinstance(code, int) else None
        message = str(error)
        if primary == SQLITE_READONLY or "readonly database" in message:
            return "read-only database"
        if primary in (SQLITE_BUSY, SQLITE_LOCKED) or "database is locked" in message:
            return "another connection holds the write lock"
        return None
