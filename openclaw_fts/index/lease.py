"""The reconciler's lease as a table row (``reconcile_lease``), and how a holder is named and
told dead: the lease of engines without a lock that dies with its holder's connection (SQLite;
PostgreSQL's advisory lock is ``postgresql/lease.py``).

Invariant: at most one holder's row is unexpired at a time; a holder is named
``host:pid:token``, and a holder on this host whose process is gone is dead, so its lease is
taken over at once; any other holder keeps the lease until it releases it or it expires
(``seconds`` without a renewal). Portable SQL through SQLAlchemy, so the driver's own parameter
style is used on every dialect.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, text

from ..errors import shorten
from ..rows import LeaseWait

#: The reconciler's log (a take-over is the reconciler's news).
log = logging.getLogger("openclaw_fts.reconcile")

LEASE_NAME = "reconcile"


def new_holder_name() -> str:
    """``host:pid:token``: who holds a lease, and how to tell whether that process still lives."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_is_dead(holder: str) -> bool:
    """True only when ``holder`` names a process on THIS host that no longer exists (a holder
    elsewhere, or one whose name cannot be read, is presumed alive until its lease expires)."""
    parts = holder.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    return not _process_exists(pid)


def _process_exists(pid: int) -> bool:
    if os.name != "posix" or pid <= 0:
        return True  # no safe probe (os.kill(pid, 0) would signal on Windows): presume alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    try:  # a zombie (killed, not yet reaped) holds nothing
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def read_lease(conn: Connection, name: str) -> tuple[str, float] | None:
    """``(holder, expires_at)`` of the lease ``name``, if any row holds it."""
    row = conn.execute(
        text("SELECT holder, expires_at FROM reconcile_lease WHERE name = :n"), {"n": name}
    ).first()
    return None if row is None else (str(row[0]), float(row[1]))


def take_lease(conn: Connection, name: str, holder: str, expires_at: float) -> None:
    """Write ``holder`` as the lease's holder until ``expires_at`` (insert or overwrite)."""
    conn.execute(
        text(
            "INSERT INTO reconcile_lease (name, holder, expires_at) VALUES (:n, :h, :e) "
            "ON CONFLICT (name) DO UPDATE SET holder = :h, expires_at = :e"
        ),
        {"n": name, "h": holder, "e": expires_at},
    )


def renew_lease(conn: Connection, name: str, holder: str, expires_at: float) -> bool:
    """Extend the lease if ``holder`` still holds it; False if it was taken over."""
    result = conn.execute(
        text("UPDATE reconcile_lease SET expires_at = :e WHERE name = :n AND holder = :h"),
        {"n": name, "h": holder, "e": expires_at},
    )
    return bool(result.rowcount)


def drop_lease(conn: Connection, name: str, holder: str) -> None:
    """Give the lease up (only if ``holder`` holds it)."""
    conn.execute(
        text("DELETE FROM reconcile_lease WHERE name = :n AND holder = :h"),
        {"n": name, "h": holder},
    )


@dataclass
class TableLease:
    """The database-wide reconcile lease as a row of ``reconcile_lease`` (SQLite's)."""

    engine: Engine
    holder: str
    seconds: float
    #: Why the last :meth:`try_acquire` failed (None after a success).
    blocked_by: LeaseWait | None = None

    def try_acquire(self) -> bool:
        with self.engine.begin() as conn:
            return self.acquire_in(conn)

    def acquire_in(self, conn: Connection) -> bool:
        """Take the lease inside ``conn``'s transaction, which must keep every other acquirer
        out until it ends (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped
        advisory lock, ``postgresql/lease.py``)."""
        now = time.time()
        row = read_lease(conn, LEASE_NAME)
        if row is not None and row[0] != self.holder and row[1] > now:
            if not holder_is_dead(row[0]):
                self.blocked_by = LeaseWait(row[0], float(row[1]) - now)
                return False
            log.warning(
                "openclaw-fts: reconcile lease holder %s is gone (no such process on this "
                "host); taking the lease over",
                shorten(row[0]),
            )
        self.blocked_by = None
        take_lease(conn, LEASE_NAME, self.holder, now + self.seconds)
        return True

    def renew(self, conn: Connection) -> bool:
        """Extend the lease inside a write transaction; False if it was taken over."""
        return renew_lease(conn, LEASE_NAME, self.holder, time.time() + self.seconds)

    def release(self) -> None:
        with self.engine.begin() as conn:
            drop_lease(conn, LEASE_NAME, self.holder)
