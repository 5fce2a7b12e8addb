"""Answers remembered on a pooled connection: for one transaction, and what the database's
schema has.

Invariant: a value kept by :func:`keep_for_transaction` is returned by
:func:`kept_for_transaction` only while the SAME SQLAlchemy transaction of the same connection
is open (a weak reference to the transaction is kept with it); outside one nothing is
remembered. In a transaction of the database that is one snapshot (SQLite's read transaction,
PostgreSQL's REPEATABLE READ). On a PostgreSQL connection in autocommit, SQLAlchemy's
transaction is bookkeeping only and each statement reads its own snapshot: what is kept there
is what one search (one checkout of the connection) asks more than once, valid for that search
(the callers say so). The pooled connection never keeps a closed ``Connection`` alive.

What the schema has (:class:`SchemaFeature`: a table, a column, a layout, each declared by
the module that owns it) is read from the catalogue in ONE statement answering every feature
of the connection's dialect, once per pooled DBAPI connection, and read again by every
connection of the process after a change of the schema made here (:func:`schema_changes`: an
Alembic upgrade or downgrade through ``openclaw_fts.migrate``, a conversion of the layout):
the changing connection from its next statement on, every other from the change's commit on
(a connection that read the schema in between reads it again then). A change another process
makes is seen where a caller's own statement reads it (:meth:`SchemaFeature.note`), by
connections pooled after it, and by every connection after a statement failed on a table,
column or function that is gone (:data:`SCHEMA_MISSING`; that statement fails); the owners
say what a stale answer costs until then.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from sqlalchemy import Connection, event, text


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


#: Where a pooled DBAPI connection keeps what its database's schema has: (the
#: :data:`_generation` it was read at, {feature name: present}).
_SCHEMA_MEMO = "openclaw_fts_schema_features"
#: Each dialect's features: {dialect: {name: a boolean SQL expression over the catalogue}}.
_FEATURES: dict[str, dict[str, str]] = {}
#: Bumped by every :func:`schema_changes`: a connection's memo of an older one is read again.
_generation = 0
_GENERATION_LOCK = threading.Lock()


class SchemaFeature:
    """One thing a database's schema may have or not, which searches and writes ask about
    (:meth:`present`): ``sql``, a boolean expression of ``dialect`` that reads the catalogue
    only, declared once by the module that owns the feature. Every feature of a dialect is
    read in one statement, once per pooled connection (the module docstring)."""

    def __init__(self, dialect: str, name: str, sql: str) -> None:
        features = _FEATURES.setdefault(dialect, {})
        if name in features:
            raise ValueError(f"schema feature {name!r} of {dialect} is declared twice")
        features[name] = sql
        self.dialect = dialect
        self.name = name

    def present(self, conn: Connection) -> bool:
        """Whether ``conn``'s database has the feature, as its pooled connection remembers
        it (read with every other feature when it does not)."""
        kept = conn.connection.info.get(_SCHEMA_MEMO)
        if kept is None or kept[0] != _generation or self.name not in kept[1]:
            kept = _read_schema(conn, self.dialect)
        return bool(kept[1][self.name])

    def note(self, conn: Connection, present: bool) -> None:
        """What a caller's own statement just read of the feature (a change another process
        made, seen in a statement that reads it anyway): remembered on ``conn``'s pooled
        connection in place of what it remembered."""
        kept = conn.connection.info.get(_SCHEMA_MEMO)
        if kept is not None and self.name in kept[1]:
            kept[1][self.name] = present


def _read_schema(conn: Connection, dialect: str) -> tuple[int, dict[str, bool]]:
    """Every feature of ``dialect`` (the asking feature's, so ``conn``'s own), in one
    statement, kept on its pooled connection with the generation read BEFORE the statement (a
    change meanwhile: read again)."""
    generation = _generation
    features = _FEATURES[dialect]
    row = conn.execute(text(f"SELECT {', '.join(features.values())}")).one()
    found = {name: bool(value) for name, value in zip(features, row, strict=True)}
    kept = (generation, found)
    conn.connection.info[_SCHEMA_MEMO] = kept
    if not event.contains(conn.engine, "handle_error", _forget_after_missing):
        event.listen(conn.engine, "handle_error", _forget_after_missing)
    return kept


#: SQLSTATEs of a statement that named what the schema does not have (``undefined_table``,
#: ``undefined_column``, ``undefined_function``): another process changed it, perhaps.
SCHEMA_MISSING = frozenset({"42P01", "42703", "42883"})


def _forget_after_missing(context: Any) -> None:
    """On an engine whose connections read the schema: a statement that failed on something
    the schema lacks makes every connection of the process read it again (the failed
    statement still fails)."""
    if getattr(context.original_exception, "sqlstate", None) in SCHEMA_MISSING:
        _forget_schemas()


def _forget_schemas(*_: Any) -> None:
    global _generation
    with _GENERATION_LOCK:
        _generation += 1


def schema_changes(conn: Connection) -> None:
    """``conn`` changed the schema (its transaction, if one is open, holds the change): every
    pooled connection of this process reads it again, this one from its next statement on,
    the others once more when the transaction commits (before, they still see the old one)."""
    _forget_schemas()
    if conn.in_transaction():
        event.listen(conn, "commit", _forget_schemas, once=True)
