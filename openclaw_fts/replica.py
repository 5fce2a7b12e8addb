"""Reads from a PostgreSQL hot standby: :class:`ReadRouter` picks the server a read runs on.

Invariant: a read is served by the standby only once the standby has replayed the fence -- the
primary's WAL position read after the last write the store knows of committed (its own writes,
counted by :meth:`ReadRouter.note_write`, and any position a caller hands to
:meth:`ReadRouter.read_after`) -- so a caller never misses a message whose commit it saw
return. A standby that is behind for longer than the wait, or cannot be reached, is skipped:
that read runs on the primary. The replay check runs in a transaction of its own, BEFORE the
read's snapshot is taken (a snapshot taken first could predate the replayed commit). Nothing
here writes, on either server. How far a server replayed is remembered per pooled DBAPI
connection (each is tied to one server, even when the read URL names several standbys).
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from .errors import UnsupportedDatabaseError
from .index.base import backend_of, dialect_of

log = logging.getLogger(__name__)

#: How long a read waits for the standby to replay the fence before it reads from the primary
#: instead (ms; a store's ``replica_wait_ms``).
REPLICA_WAIT_MS = 1_000
#: Seconds between two looks at the standby's replay position while a read waits.
REPLICA_POLL_S = 0.005
#: Where a pooled DBAPI connection remembers the replay position its server was seen at.
_REPLAYED = "openclaw_fts_replayed_lsn"


class ReadRouter:
    """The standby's engine for reads, the primary's for the fence and the fallback."""

    def __init__(self, primary: Engine, standby: Engine, *, wait_ms: int = REPLICA_WAIT_MS):
        if isinstance(wait_ms, bool) or not isinstance(wait_ms, int) or wait_ms < 0:
            raise ValueError("replica_wait_ms must be a non-negative integer")
        replicas = backend_of(primary).replicas
        if replicas is None:
            raise UnsupportedDatabaseError(
                f"openclaw-fts: {dialect_of(primary)} has no hot standbys to read from"
            )
        self._replicas = replicas
        self.primary = primary
        self.standby = standby
        self.wait_s = wait_ms / 1000
        self._lock = threading.Lock()
        self._writes = 0  # writes the store finished (committed or failed)
        self._fenced_writes = 0  # writes the fence covers
        self._fence = 0  # WAL position every read must see
        self._unreachable = False  # the standby failed its last connect (logged once)

    def note_write(self) -> None:
        """A write of the store finished: the next read fences it (one look at the primary)."""
        with self._lock:
            self._writes += 1

    def read_after(self, lsn: str | None = None) -> None:
        """Reads from now on see every commit up to ``lsn`` (a WAL position such as
        ``'0/3001148'``); None: up to the primary's position now, so every commit that returned
        before this call, by any process."""
        position = self._replicas.parse_lsn(lsn) if lsn is not None else self._primary_position()
        with self._lock:
            self._fence = max(self._fence, position)

    def _primary_position(self) -> int:
        with self.primary.connect() as conn:
            return self._replicas.current_lsn(conn) or 0  # None: the "primary" is a standby itself

    def fence(self) -> int:
        """The WAL position a read must see (asks the primary only after a new write)."""
        with self._lock:
            writes = self._writes
            if writes == self._fenced_writes:
                return self._fence
        position = self._primary_position()
        with self._lock:
            self._fenced_writes = max(self._fenced_writes, writes)
            self._fence = max(self._fence, position)
            return self._fence

    def connect(self) -> Connection:
        """A connection for one read, with no transaction begun: the standby's when it has
        replayed :meth:`fence` (waiting up to the store's ``replica_wait_ms``), else the
        primary's."""
        fence = self.fence()
        try:
            conn = self.standby.connect()
        except OperationalError as exc:
            self._tell_unreachable(exc)
            return self.primary.connect()
        try:
            if self._caught_up(conn, fence):
                self._unreachable = False
                return conn
        except OperationalError as exc:
            self._tell_unreachable(exc)
        conn.close()
        return self.primary.connect()

    def _caught_up(self, conn: Connection, fence: int) -> bool:
        info = conn.connection.info
        if info.get(_REPLAYED, -1) >= fence:
            return True
        deadline = time.monotonic() + self.wait_s
        while True:
            replayed = self._replicas.replayed_lsn(conn)
            conn.rollback()  # the read's snapshot starts after this look, never before
            if replayed is None or replayed >= fence:  # None: no longer a standby
                info[_REPLAYED] = fence if replayed is None else replayed
                return True
            if time.monotonic() >= deadline:
                log.info(
                    "openclaw-fts: the standby has not replayed %s after %.3fs: read from "
                    "the primary",
                    fence,
                    self.wait_s,
                )
                return False
            time.sleep(REPLICA_POLL_S)

    def _tell_unreachable(self, exc: BaseException) -> None:
        if not self._unreachable:
            self._unreachable = True
            log.warning(
                "openclaw-fts: the standby cannot be reached, reads go to the primary: %s", exc
            )
