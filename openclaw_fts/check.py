"""``openclaw-fts check``: is the index exactly what the transcripts say it should be?

Invariant: reads only, in one transaction that sees one snapshot of the whole database for
every statement of the check (SQLite: a deferred transaction; PostgreSQL: REPEATABLE READ, read
only — READ COMMITTED would take a new snapshot per statement and report as drift whatever a
writer committed between reading a session's events and its index rows). FTS5's integrity
check is issued as an INSERT command, i.e. it needs the write lock: on a database that cannot
be written, or while another connection holds the lock, it is reported as not run (with the
reason the backend gives), never as corruption. Only the backend's read side is used in that
transaction; one write follows it when an impact list is found drifted: the list is marked
untrusted in a short transaction of its own (searches take the exact path for its word until
the reconciler or ``optimize`` rebuilds it), unless the database cannot be written (a hot
standby, a read-only role), which the report says.
Reports FTS5's own integrity check (index vs content table) and, for every session that is not
pending, any difference between its index rows and ``transcript.index_rows(active branch)`` —
the same diff the reconciler would apply, so "check is clean" means "a reconcile would change
nothing" — and, for every tracked frequent word, any difference between its impact list and the
rows the index says it should hold (``index/impact.py``; ``rebuild`` rewrites the lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from . import indexer
from .engine import write_engine
from .index.base import READ_ONLY, Reader, backend, backend_of


@dataclass
class CheckReport:
    fts_ok: bool = True
    fts_error: str | None = None
    #: Why FTS5's own check did not run (a read-only database), None when it ran.
    fts_skipped: str | None = None
    drift: dict[str, dict[str, int]] = field(default_factory=dict)
    orphans: int = 0
    status: dict[str, int] = field(default_factory=dict)
    #: Tracked words whose impact list disagrees with the index: rows missing and extra.
    impact_drift: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Why the drifted lists could not be marked untrusted (None: marked, or none drifted).
    impact_unmarked: str | None = None

    @property
    def ok(self) -> bool:
        return self.fts_ok and not self.drift and self.orphans == 0 and not self.impact_drift

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "ftsIntegrity": (
                f"not run ({self.fts_skipped})"
                if self.fts_skipped
                else "ok"
                if self.fts_ok
                else self.fts_error
            ),
            "drift": self.drift,
            "orphanRows": self.orphans,
            "impactDrift": self.impact_drift,
            **({"impactUnmarked": self.impact_unmarked} if self.impact_unmarked else {}),
            **self.status,
        }


def check(engine: Engine) -> CheckReport:
    """Run every check; see :class:`CheckReport`."""
    report = CheckReport()
    found = backend_of(engine)
    conn = engine.connect().execution_options(
        **{READ_ONLY: True}, **found.connections.snapshot_options(read_only=True)
    )
    with conn, conn.begin():
        backend: Reader = found  # reads only
        try:
            backend.integrity_check(conn)
        except DBAPIError as exc:
            skipped = backend.check_skipped(exc.orig) if exc.orig is not None else None
            if skipped is not None:
                report.fts_skipped = skipped
            else:
                report.fts_ok = False
                report.fts_error = str(exc.orig)
        report.orphans = backend.orphan_index_rows(conn)
        report.impact_drift = found.impact_lists.drift(conn)
        clean = backend.clean_session_ids(conn)
        for sid in clean:
            plan = indexer.plan_session(conn, sid)
            if plan is not None and plan.size:
                report.drift[sid] = {"missing": len(plan.inserts), "extra": len(plan.deletes)}
        report.status = backend.status(conn)
    if report.impact_drift:
        report.impact_unmarked = _distrust(engine, list(report.impact_drift))
    return report


def _distrust(engine: Engine, words: list[str]) -> str | None:
    """Mark the lists of ``words`` untrusted; why not, when the database refuses the write."""
    try:
        with write_engine(engine).begin() as conn:
            found = backend(conn)
            if found.replicas is not None and found.replicas.in_recovery(conn):
                return "hot standby: its primary's check marks them"
            found.impact_lists.distrust(conn, words)
    except DBAPIError as exc:
        return str(exc.orig if exc.orig is not None else exc)
    return None
