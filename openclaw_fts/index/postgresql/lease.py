"""The reconciler's single-runner lease on PostgreSQL: a session-level advisory lock, or, for an
engine behind a pooler in transaction mode, a row of ``reconcile_lease``.

Invariant: at most one process holds the lease on a database, whichever kind each contender
uses. :class:`AdvisoryLease` keeps :data:`LOCK_KEY` on a connection of its own (checked out of
the engine's pool for as long as it holds the lease, in autocommit mode, never returned to the
pool), so the lock does not depend on any transaction; when the holder dies -- SIGKILL included
-- its connection closes and the server frees the lock at once: no expiry, no clock, no
dead-process probe. A pooler in transaction mode (PgBouncer ``pool_mode=transaction``) would
hand that server connection to other clients with the lock still held, so on an engine marked by
``pooling.use_transaction_pooler`` the lease is a :class:`RowLease` instead: the table lease of
SQLite (``index/lease.py``: a row with an expiry, renewed in each write transaction, taken over
at once from a dead holder on this host), its acquiring transaction serialised by the
transaction-scoped ``pg_try_advisory_xact_lock`` on the same key. Each kind respects the other:
a row lease cannot be taken while an advisory holder has the lock, and an advisory lease is
given back at once when a live row holder has an unexpired row. Same interface as
``reconcile.Lease`` (``try_acquire`` / ``renew`` / ``release``, ``blocked_by``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from ...rows import LeaseWait
from ..lease import LEASE_NAME, TableLease, holder_is_dead, read_lease

#: The advisory lock key (bigint form; below 2**31, so ``pg_locks`` shows it as classid 0,
#: objid = the key, objsubid 1): the first four bytes of sha256("openclaw-fts:reconcile"),
#: masked to 31 bits. Any other application using this exact key on the same database would
#: contend with the reconciler.
LOCK_KEY = 0x65B6_9B59
#: ``application_name`` holds the holder's name while it holds the lease (how a waiting
#: reconciler tells who it waits for); PostgreSQL keeps 63 bytes of it.
APPLICATION_NAME_BYTES = 63

_HOLDER_PID_SQL = (
    "SELECT l.pid FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.classid = 0 AND l.objid = :k AND l.objsubid = 1"
)


@dataclass
class AdvisoryLease:
    """The database-wide reconcile lease on PostgreSQL."""

    engine: Engine
    holder: str
    #: Kept for the interface of ``reconcile.Lease``; an advisory lock does not expire.
    seconds: float = 0.0
    #: Why the last :meth:`try_acquire` failed (None after a success).
    blocked_by: LeaseWait | None = None
    key: int = LOCK_KEY
    _conn: Connection | None = field(default=None, init=False, repr=False)
    _pid: int | None = field(default=None, init=False, repr=False)

    @property
    def held(self) -> bool:
        return self._conn is not None

    def try_acquire(self) -> bool:
        """Take the lock without waiting; True when this lease holds it (already held and its
        connection still holds the lock: True; a lost connection is dropped and the lock taken
        anew when free)."""
        if self._conn is not None:
            try:
                if self._conn.execute(
                    text(f"SELECT EXISTS ({_HOLDER_PID_SQL} AND l.pid = pg_backend_pid())"),
                    {"k": self.key},
                ).scalar():
                    return True
            except SQLAlchemyError:
                pass
            self.release()
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        kept = False
        try:
            if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar():
                name = self.holder.encode("utf-8")[:APPLICATION_NAME_BYTES].decode(
                    "utf-8", "ignore"
                )
                if self._row_holder(conn) is not None:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                    return False
                conn.execute(text("SELECT set_config('application_name', :n, false)"), {"n": name})
                self._pid = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
                self._conn, kept = conn, True
                self.blocked_by = None
                return True
            self.blocked_by = LeaseWait(lock_holder(conn, self.key), 0.0)
            return False
        finally:
            if not kept:
                conn.close()

    def _row_holder(self, conn: Connection) -> str | None:
        """The live holder of an unexpired ``reconcile_lease`` row (a :class:`RowLease` of a
        pooled store), if any: set as :attr:`blocked_by`."""
        if not conn.execute(text("SELECT to_regclass('reconcile_lease') IS NOT NULL")).scalar():
            return None  # a database the plugin has not migrated: no pooled store uses it
        now = time.time()
        row = read_lease(conn, LEASE_NAME)
        if row is None or row[1] <= now or holder_is_dead(row[0]):
            return None
        self.blocked_by = LeaseWait(row[0], row[1] - now)
        return row[0]

    def renew(self, conn: Connection) -> bool:
        """Inside a write transaction (any connection): whether this lease still holds the lock
        (False when its connection was lost: the server freed the lock, someone may hold it)."""
        if self._pid is None:
            return False
        return bool(
            conn.execute(
                text(f"SELECT EXISTS ({_HOLDER_PID_SQL} AND l.pid = :pid)"),
                {"k": self.key, "pid": self._pid},
            ).scalar()
        )

    def release(self) -> None:
        """Unlock and drop the dedicated connection (never handed back to the pool with the
        holder's ``application_name`` or a lock on it)."""
        conn, self._conn, self._pid = self._conn, None, None
        if conn is None:
            return
        try:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
        except SQLAlchemyError:
            pass  # a lost connection holds nothing any more
        finally:
            conn.invalidate()
            conn.close()


def lock_holder(conn: Connection, key: int) -> str:
    """Who holds the advisory lock ``key``: its ``application_name``, else its backend."""
    row = conn.execute(
        text(
            "SELECT a.application_name, a.pid FROM pg_stat_activity AS a "
            f"WHERE a.pid IN ({_HOLDER_PID_SQL}) AND a.pid <> pg_backend_pid()"
        ),
        {"k": key},
    ).first()
    return str(row[0] or f"PostgreSQL backend {row[1]}") if row is not None else "unknown"


@dataclass
class RowLease(TableLease):
    """The lease as a ``reconcile_lease`` row, for an engine behind a transaction pooler: every
    statement it runs ends with its transaction, so nothing stays on a pooled server session."""

    key: int = LOCK_KEY

    def try_acquire(self) -> bool:
        """Within one transaction: the transaction-scoped lock on :data:`LOCK_KEY` (not waited
        for: it is held only by another acquiring transaction, or by an advisory holder for as
        long as it holds the lease), then the row."""
        with self.engine.begin() as conn:
            if not conn.execute(
                text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": self.key}
            ).scalar():
                self.blocked_by = LeaseWait(lock_holder(conn, self.key), 0.0)
                return False
            return self.acquire_in(conn)
