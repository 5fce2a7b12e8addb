"""PostgreSQL's spellings of what the SQL both engines share needs (:class:`PostgresqlSql`,
the :class:`~..dialect_sql.DialectSql` of ``postgresql`` databases).

Invariant: each method returns SQL text without parameters (constants as escape strings, never
a ``:`` that ``text()`` would read as a parameter), or a value as the driver binds it; nothing
here runs a statement.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from ...caller import INCOGNITO_KEY_COLONS, INCOGNITO_KEY_KINDS, KEY_TRIM_CHARS
from ...jsonsafe import stored_event


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "text"
    return "other"


def _octal(text: str) -> str:
    """``text`` as a PostgreSQL escape string of octal escapes only (``E'\\072'`` is a colon):
    a constant when the statement is parsed, where ``chr(58) || …`` is an expression folded
    again at every planning, and without a ``:`` that ``text()`` would read as a parameter."""
    return "E'" + "".join(c if c.isalnum() or c in "_%-" else f"\\{ord(c):03o}" for c in text) + "'"


class PostgresqlSql:
    """The spellings the shared statements need on PostgreSQL
    (:class:`~..dialect_sql.DialectSql`)."""

    #: The JSON of a row whose ``parent_id`` column is empty (few: roots and malformed rows);
    #: :meth:`parent_type` reads it.
    parent_probe = "CASE WHEN parent_id IS NULL THEN event END"

    @staticmethod
    def parent_type(probe: Any) -> str | None:
        """SQLite's ``json_type`` of ``$.parentId``, from the JSON text: None when missing or
        the row is not a JSON object."""
        if probe is None:
            return None
        event = stored_event(probe)
        return _json_type(event["parentId"]) if "parentId" in event else None

    @staticmethod
    def ids_in(column: str, values: Sequence[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """One array parameter, however many values."""
        if values:
            yield f"{column} = ANY(:in_values)", {"in_values": list(values)}

    @staticmethod
    def time_param(value: datetime) -> Any:
        """The driver binds a ``datetime`` as it is."""
        return value

    @staticmethod
    def byte_length(column: str) -> str:
        return f"octet_length({column})"

    @staticmethod
    def row_lock(of: str | None = None) -> str:
        return "FOR UPDATE" if of is None else f"FOR UPDATE OF {of}"

    @staticmethod
    def unstorable(values: Iterable[object]) -> str | None:
        if any(isinstance(v, str) and "\x00" in v for v in values):
            return "PostgreSQL text cannot hold a NUL character (U+0000)"
        return None

    @staticmethod
    def incognito_key(alias: str) -> str:
        """See the protocol: ``btrim``, constants as escape strings (:func:`_octal`), and the
        cheap first test ``strpos`` of the lower-cased key: a function the planner gives a
        default selectivity, where ``ILIKE`` on the key column is estimated against the
        column's statistics at every planning (together 0.13 ms of a narrow search's 0.63 ms
        of planning at 100k messages, bench/NOTES.md). Each shape below lower-cases the key
        too and holds ``incognito-``, so that first test changes no answer."""
        key = f"lower(btrim({alias}.session_key, {_octal(KEY_TRIM_CHARS)}))"
        shapes = " OR ".join(
            f"{key} LIKE {_octal(f'agent:_%:{kind}:incognito-_%')}" for kind in INCOGNITO_KEY_KINDS
        )
        colons = (
            f"length({key}) - length(replace({key}, {_octal(':')}, '')) = {INCOGNITO_KEY_COLONS}"
        )
        return f"(strpos(lower({alias}.session_key), 'incognito-') > 0 AND ({shapes}) AND {colons})"

    @staticmethod
    def not_flagged(column: str) -> str:
        """Booleans are not integers on PostgreSQL."""
        return f"NOT {column}"

    @staticmethod
    def contains(haystack: str, needle: str) -> str:
        return f"strpos({haystack}, {needle}) > 0"

    @staticmethod
    def cannot_hold(value: str) -> bool:
        """PostgreSQL text cannot hold NUL."""
        return "\x00" in value
