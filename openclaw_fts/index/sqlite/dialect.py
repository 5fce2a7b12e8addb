"""SQLite's spellings of what the SQL both engines share needs (:class:`SqliteSql`, the
:class:`~..dialect_sql.DialectSql` of ``sqlite`` databases).

Invariant: each method returns SQL text without parameters, or a value as the sqlite3 driver
binds it; nothing here runs a statement.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from ...caller import INCOGNITO_KEY_COLONS, INCOGNITO_KEY_KINDS, KEY_TRIM_CHARS
from .fts import in_lists

#: How timestamps are bound (SQLite stores them as text in this shape).
SQL_TIME = "%Y-%m-%d %H:%M:%S.%f"


class SqliteSql:
    """The spellings the shared statements need on SQLite (:class:`~..dialect_sql.DialectSql`)."""

    #: SQLite tells a null ``parentId`` from a missing or malformed one without the JSON
    #: reaching Python.
    parent_probe = (
        "CASE WHEN parent_id IS NULL AND json_valid(event) THEN json_type(event, '$.parentId') END"
    )

    @staticmethod
    def parent_type(probe: Any) -> str | None:
        """``json_type`` already named it."""
        return probe if probe is None or isinstance(probe, str) else str(probe)

    @staticmethod
    def ids_in(column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """IN-lists of at most :data:`.fts.IN_LIST_CHUNK` values (SQLite's bound-parameter
        limit)."""
        for chunk, _ in in_lists(values):
            params = {f"in{i}": v for i, v in enumerate(chunk)}
            yield f"{column} IN ({', '.join(':' + k for k in params)})", params

    @staticmethod
    def time_param(value: datetime) -> Any:
        """Text in :data:`SQL_TIME`'s shape (how SQLite stores timestamps)."""
        return value.strftime(SQL_TIME)

    @staticmethod
    def byte_length(column: str) -> str:
        return f"length(CAST({column} AS BLOB))"

    @staticmethod
    def row_lock(of: str | None = None) -> str:
        """None: SQLite's write transactions are serialised by its database-wide write lock."""
        return ""

    @staticmethod
    def unstorable(values: Iterable[object]) -> str | None:
        """SQLite text holds any string."""
        return None

    @staticmethod
    def incognito_key(alias: str) -> str:
        """See the protocol: ``trim`` by character codes, and the colons as ``char(58)``
        (a ``:name`` in the statement text would read as a bound parameter); LIKE compares
        ASCII case-insensitively."""
        trim = "char(" + ", ".join(str(ord(c)) for c in KEY_TRIM_CHARS) + ")"
        key = f"lower(trim({alias}.session_key, {trim}))"
        colon = " || char(58) || "
        shapes = " OR ".join(
            f"{key} LIKE ('agent'{colon}'_%'{colon}'{kind}'{colon}'incognito-_%')"
            for kind in INCOGNITO_KEY_KINDS
        )
        colons = f"length({key}) - length(replace({key}, char(58), '')) = {INCOGNITO_KEY_COLONS}"
        # One cheap LIKE first: almost no key holds "incognito-", and then nothing else is
        # computed.
        return f"({alias}.session_key LIKE '%incognito-%' AND ({shapes}) AND {colons})"

    @staticmethod
    def not_flagged(column: str) -> str:
        """Booleans are integers on SQLite."""
        return f"{column} = 0"

    @staticmethod
    def contains(haystack: str, needle: str) -> str:
        return f"instr({haystack}, {needle}) > 0"

    @staticmethod
    def cannot_hold(value: str) -> bool:
        """SQLite text holds any string."""
        return False
