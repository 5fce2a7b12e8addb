"""A PostgreSQL engine behind a connection pooler in transaction mode (PgBouncer
``pool_mode = transaction``): what the plugin changes on it.

Invariant: on an engine marked with :func:`use_transaction_pooler` (the mark lives on its pool,
so every ``execution_options`` copy shares it), no connection keeps anything in a server session
past one transaction: psycopg never prepares a statement (``prepare_threshold`` is None on
every connection at checkout, so a named statement is never sent to one server connection and
executed on another), and the reconciler's lease is a row of ``reconcile_lease`` taken under a
transaction-scoped advisory lock (``lease.RowLease``) instead of a session-level advisory lock,
which a pooler would leave held on a server connection it hands to other clients.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event

#: The pool attribute that marks an engine as reaching its server through a transaction pooler.
_POOLED = "_openclaw_fts_transaction_pooler"


def use_transaction_pooler(engine: Engine) -> Engine:
    """Mark ``engine`` (idempotent): its connections stop preparing statements from their next
    checkout on, and its reconciler leases are rows (:func:`is_transaction_pooled`)."""
    if is_transaction_pooled(engine):
        return engine
    setattr(engine.pool, _POOLED, True)
    event.listen(engine, "checkout", _never_prepare)
    return engine


def is_transaction_pooled(engine: Engine) -> bool:
    """True once :func:`use_transaction_pooler` marked ``engine`` or an ``execution_options``
    copy of it."""
    return bool(getattr(engine.pool, _POOLED, False))


def _never_prepare(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    # psycopg 3 reads the attribute at each execute; None: never prepare.
    driver = getattr(dbapi_connection, "driver_connection", dbapi_connection)
    if hasattr(driver, "prepare_threshold"):
        driver.prepare_threshold = None


class TransactionPooler:
    """:class:`~openclaw_fts.index.base.Pooler` of PostgreSQL (PgBouncer in transaction
    mode)."""

    def use(self, engine: Engine) -> Engine:
        return use_transaction_pooler(engine)
