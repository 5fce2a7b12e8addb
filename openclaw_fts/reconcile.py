"""The reconciliation job: bring every pending session's index back to its active branch.

Invariant: at most one reconciler works on a database at a time: it holds the lease its engine's
backend gives (SQLite: a lease row with an expiry, renewed every batch, ``index/lease.py``;
PostgreSQL: a session-level advisory lock, ``index/postgresql/lease.py``). A holder is named
``host:pid:token``; a holder on this host whose process is gone is dead and its lease is taken
over at once; any other holder is waited for until it releases the lease or the lease expires
(:data:`RECONCILE_LEASE_SECONDS` without a renewal), and the wait is logged with its reason and
reported to the caller's ``on_wait``. Each
pending session is diffed against its index rows from a snapshot and the changes are written in
bounded batches, each its own short write transaction that first re-checks the snapshot (newest
``seq`` and the state's ``generation``): a session that changed meanwhile is left pending and
re-planned, never marked clean over newer events. A crash loses at most the batch in flight.
On a PostgreSQL hot standby a run takes no lease and writes nothing (``ran: false``): the
standby's index is its primary's, replayed.
After its passes, a run rebuilds the impact lists that ``check`` marked untrusted
(``index/postgresql/impact.py``; nothing to do on SQLite).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from . import indexer, merge
from .engine import write_engine
from .index.base import READ_ONLY, Lease, backend, backend_of, reader, writer
from .index.lease import holder_is_dead as holder_is_dead
from .index.lease import new_holder_name as new_holder_name
from .rows import LeaseWait as LeaseWait

log = logging.getLogger(__name__)

#: Index-row changes written per reconcile transaction: a live writer waits at most this long.
RECONCILE_BATCH_ROWS = 2000
#: Sessions planned per read snapshot before their changes are written.
RECONCILE_PLAN_SESSIONS = 200
#: Seconds a lease lasts without renewal (the setting ``TranscriptStore(lease_seconds=...)`` /
#: ``Reconciler(lease_seconds=...)``): a holder on another host that died, or whose death cannot
#: be seen, is replaced after this. A dead holder on this host is replaced at once.
RECONCILE_LEASE_SECONDS = 30.0
#: Polling interval while waiting for another reconciler's lease (seconds).
LEASE_POLL_SECONDS = 0.2
#: Passes over the pending list before giving up on sessions that keep changing under us.
MAX_PASSES = 50

ProgressFn = Callable[[dict[str, int]], None]


WaitFn = Callable[[LeaseWait], None]


class LeaseLost(RuntimeError):
    """Another reconciler took the lease over (ours expired)."""


@dataclass
class _Work:
    plan: indexer.Plan
    generation: int
    done: int = 0  # changes already written


class Reconciler:
    """Runs reconciliation passes on one engine (see module docstring)."""

    def __init__(
        self,
        engine: Engine,
        *,
        lease_seconds: float = RECONCILE_LEASE_SECONDS,
        batch_rows: int = RECONCILE_BATCH_ROWS,
    ) -> None:
        self.engine = write_engine(engine)  # its transactions write: BEGIN IMMEDIATE
        self.lease: Lease = backend_of(engine).lease(self.engine, new_holder_name(), lease_seconds)
        self.batch_rows = batch_rows
        self.stats = {"sessions": 0, "inserted": 0, "deleted": 0, "retried": 0}

    def run(
        self,
        *,
        wait: bool = True,
        progress: ProgressFn | None = None,
        stop: threading.Event | None = None,
        on_wait: WaitFn | None = None,
        merge_after: bool = True,
    ) -> dict[str, Any]:
        """Index every pending session. Without ``wait``, return at once if the lease is held;
        with it, wait for the lease, telling ``on_wait`` (and the log) why whenever the holder
        changes. With ``merge_after``, then merge the index's segments that its batches split
        (:func:`~openclaw_fts.merge.merge_index`), after giving the lease back: a merge is
        bounded steps any writer may interleave with, and another reconciler need not wait
        for it."""
        if self._on_standby():
            return {"ran": False, **self._status()}  # its primary's reconciler indexes them
        told: str | None = None
        while not self.lease.try_acquire():
            if not wait or (stop is not None and stop.is_set()):
                return {"ran": False, **self._status()}
            blocked = self.lease.blocked_by
            if blocked is not None and blocked.holder != told:
                told = blocked.holder
                log.info("openclaw-fts: reconcile waits: %s", blocked.reason)
                if on_wait is not None:
                    on_wait(blocked)
            time.sleep(LEASE_POLL_SECONDS)
        try:
            for _ in range(MAX_PASSES):
                if stop is not None and stop.is_set():
                    break
                with self.engine.connect() as conn:
                    pending = reader(conn).pending_session_ids(conn)
                if not pending:
                    break
                for start in range(0, len(pending), RECONCILE_PLAN_SESSIONS):
                    if stop is not None and stop.is_set():
                        break
                    self._reconcile_chunk(pending[start : start + RECONCILE_PLAN_SESSIONS])
                    if progress is not None:
                        progress(self._status())
            self._sweep()
        finally:
            self.lease.release()
        self._repair_lists()
        if merge_after:  # an import's batches split the index
            merge.merge_if_needed(self.engine, stop)
        result: dict[str, Any] = {"ran": True, **self._status(), **self.stats}
        log.info("reconcile done: %s", result)
        return result

    def _on_standby(self) -> bool:
        """A hot standby refuses writes (and its index is its primary's): nothing to run."""
        with self.engine.connect() as conn:
            replicas = backend(conn).replicas
            return replicas is not None and replicas.in_recovery(conn)

    def _status(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            return reader(conn).status(conn)

    def _reconcile_chunk(self, session_ids: list[str]) -> None:
        with self.engine.begin() as conn:
            for sid in session_ids:
                context = reader(conn).session_context(conn, sid)
                if context is not None and context.state is None:  # (None: deleted since)
                    writer(conn).create_state(conn, sid, clean=False)
            if not self.lease.renew(conn):
                raise LeaseLost("reconcile lease lost")
        works: list[_Work] = []
        with self.engine.connect().execution_options(**{READ_ONLY: True}) as conn, conn.begin():
            for sid in session_ids:
                plan = indexer.plan_session(conn, sid)
                if plan is not None:
                    works.append(_Work(plan, plan.generation))
        batch: list[tuple[_Work, int]] = []  # (work, number of changes to write now)
        room = self.batch_rows
        for work in works:
            remaining = work.plan.size
            if remaining == 0:
                batch.append((work, 0))
                continue
            while remaining > 0:
                take = min(room, remaining)
                batch.append((work, take))
                remaining -= take
                room -= take
                if room == 0:
                    self._write(batch)
                    batch, room = [], self.batch_rows
        if batch:
            self._write(batch)

    def _write(self, batch: list[tuple[_Work, int]]) -> None:
        """One write transaction: for each session, re-check its snapshot, apply, maybe finish."""
        log.debug(
            "reconcile batch: %d changes in %d sessions", sum(c for _, c in batch), len(batch)
        )
        with self.engine.begin() as conn:
            if not self.lease.renew(conn):
                raise LeaseLost("reconcile lease lost")
            for work, count in batch:
                plan = work.plan
                if work.generation < 0 or not self._unchanged(conn, work):
                    work.generation = -1  # changed under us: leave pending, re-plan next pass
                    self.stats["retried"] += 1
                    continue
                changes_d = plan.deletes[work.done : work.done + count]
                first_insert = max(0, work.done - len(plan.deletes))
                take_i = count - len(changes_d)
                changes_i = plan.inserts[first_insert : first_insert + take_i]
                writer(conn).apply_changes(conn, changes_d, changes_i)
                work.done += count
                self.stats["deleted"] += len(changes_d)
                self.stats["inserted"] += len(changes_i)
                if work.done >= plan.size:
                    indexer.finalize(conn, plan)
                    self.stats["sessions"] += 1
                    log.debug("reconciled session %s", plan.session_id)
                else:
                    backend(conn).bump_generation(conn, plan.state_id)
                work.generation += 1

    @staticmethod
    def _unchanged(conn: Connection, work: _Work) -> bool:
        found = reader(conn).snapshot(conn, work.plan.session_id)
        return found == (work.generation, work.plan.last_seq)

    def _repair_lists(self) -> None:
        """Rebuild the impact lists marked untrusted (``check`` found them drifted), each in
        one short transaction with the writers of index rows held back (PostgreSQL), after
        the lease is given back: it is not the lease's work."""
        with self.engine.begin() as conn:
            repaired = backend(conn).impact_lists.repair(conn, verify=False)
        if repaired:
            log.info("reconcile: rebuilt the impact lists of %s", ", ".join(repaired))
        # its own transaction: an optional promotion that fails must not undo the repair
        with self.engine.begin() as conn:
            backend(conn).impact_lists.promote_if_free(conn)

    def _sweep(self) -> None:
        """Remove index rows and states whose session no longer exists."""
        with self.engine.begin() as conn:
            backend(conn).sweep_orphans(conn)
