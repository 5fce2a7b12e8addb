"""The write side of the SQLite backend: what SQLite does differently from the shared writer
(:mod:`openclaw_fts.index.sqlwriter`) — the sqlite3 cursor, IN-lists in bounded chunks, the
FTS5 rows beside the content rows, ``json_type`` for the parent probe, FTS5's own maintenance.

Invariant: ``message_fts`` holds exactly the ``(body, sess)`` of every ``message_index`` row
after every method returns (see :mod:`openclaw_fts.index.sqlite`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from ...rows import NewRow
from ..sqlwriter import SqlWriter
from . import (
    FTS_TABLE,
    cursor,
    delete_rows,
    in_lists,
    insert_rows,
    integrity_check,
    read_row_sizes,
    session_token,
)

#: How timestamps are bound (SQLite stores them as text in this shape).
SQL_TIME = "%Y-%m-%d %H:%M:%S.%f"


class SqliteWriter(SqlWriter):
    """:class:`~openclaw_fts.index.base.Writer` for SQLite (FTS5 index)."""

    INTEGRITY_ERRORS = (sqlite3.IntegrityError,)
    #: SQLite tells a null ``parentId`` from a missing or malformed one without the JSON
    #: reaching Python.
    PARENT_PROBE = (
        "CASE WHEN parent_id IS NULL AND json_valid(event) THEN json_type(event, '$.parentId') END"
    )

    def cursor(self, conn: Connection) -> Any:
        return cursor(conn)

    def session_token(self, state_id: int) -> str:
        return session_token(state_id)

    def ids_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        for chunk, _ in in_lists(values):
            params = {f"in{i}": v for i, v in enumerate(chunk)}
            yield f"{column} IN ({', '.join(':' + k for k in params)})", params

    def time_param(self, value: datetime) -> Any:
        return value.strftime(SQL_TIME)

    def insert_rows(self, conn: Connection, rows: Sequence[NewRow]) -> None:
        insert_rows(conn, rows)

    def delete_rows(self, conn: Connection, ids: Sequence[int]) -> None:
        delete_rows(conn, ids)

    def index_row_sizes(self, conn: Connection, session_id: str) -> list[tuple[int, int, int]]:
        return read_row_sizes(conn, session_id)

    def rebuild_all(self, conn: Connection) -> None:
        """FTS5 re-reads its whole index from the content table."""
        cursor(conn).execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")

    def optimize(self, conn: Connection) -> None:
        """Merge the FTS5 index's segments into one."""
        cursor(conn).execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")

    def integrity_check(self, conn: Connection) -> None:
        integrity_check(conn)
