"""Answers remembered for one transaction on a pooled connection.

Invariant: a value kept by :func:`keep_for_transaction` is returned by
:func:`kept_for_transaction` only while the SAME SQLAlchemy transaction of the same connection
is open (a weak reference to the transaction is kept with it); outside one nothing is
remembered. In a transaction of the database that is one snapshot (SQLite's read transaction,
PostgreSQL's REPEATABLE READ). On a PostgreSQL connection in autocommit, SQLAlchemy's
transaction is bookkeeping only and each statement reads its own snapshot: what is kept there
is what one search (one checkout of the connection) asks more than once, valid for that search
(the callers say so). The pooled connection never keeps a closed ``Connection`` alive.
"""

from __future__ import annotations

import weakref
from typing import Any

from sqlalchemy import Connection


def keep_for_transaction(conn: Connection, key: str, value: Any) -> None:
    """Keep ``value`` under ``key`` on the pooled connection for the current transaction only."""
    txn = conn.get_transaction()
    conn.info[key] = None if txn is None else (weakref.ref(txn), value)


def kept_for_transaction(conn: Connection, key: str, *, pop: bool = False) -> Any:
    """What :func:`keep_for_transaction` kept under ``key`` in THIS transaction, else None
    (``pop``: and forget it)."""
    kept = conn.info.pop(key, None) if pop else conn.info.get(key)
    txn = conn.get_transaction()
    if kept is None or txn is None or kept[0]() is not txn:
        return None
    return kept[1]


def predicate_key(sql: str, params: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a caller's answers are remembered by within one transaction: its visibility
    predicate (``sql``) and that predicate's parameters."""
    return sql, tuple(sorted((k, repr(v)) for k, v in params.items()))
