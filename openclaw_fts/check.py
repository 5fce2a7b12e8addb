"""``openclaw-fts check``: is the index exactly what the transcripts say it should be?

Invariant: reads only. Reports FTS5's own integrity check (index vs content table) and, for every
session that is not pending, any difference between its index rows and
``transcript.index_rows(active branch)`` — the same diff the reconciler would apply, so "check is
clean" means "a reconcile would change nothing".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from . import indexer
from .engine import READ_ONLY
from .index import sqlite as fts
from .reconcile import PENDING_CONDITION, status


@dataclass
class CheckReport:
    fts_ok: bool = True
    fts_error: str | None = None
    drift: dict[str, dict[str, int]] = field(default_factory=dict)
    orphans: int = 0
    status: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.fts_ok and not self.drift and self.orphans == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "ftsIntegrity": "ok" if self.fts_ok else self.fts_error,
            "drift": self.drift,
            "orphanRows": self.orphans,
            **self.status,
        }


def check(engine: Engine) -> CheckReport:
    """Run every check; see :class:`CheckReport`."""
    report = CheckReport()
    with engine.connect().execution_options(**{READ_ONLY: True}) as conn, conn.begin():
        try:
            fts.integrity_check(conn)
        except DBAPIError as exc:
            report.fts_ok = False
            report.fts_error = str(exc.orig)
        report.orphans = int(
            conn.execute(
                text(
                    f"SELECT count(*) FROM {fts.CONTENT_TABLE} WHERE session_id NOT IN "
                    "(SELECT session_id FROM sessions)"
                )
            ).scalar_one()
        )
        clean = [
            r[0]
            for r in conn.execute(
                text(
                    "SELECT s.session_id FROM sessions s JOIN index_state st "
                    f"ON st.session_id = s.session_id WHERE NOT {PENDING_CONDITION}"
                )
            )
        ]
        for sid in clean:
            plan = indexer.plan_session(conn, sid)
            if plan is not None and plan.size:
                report.drift[sid] = {"missing": len(plan.inserts), "extra": len(plan.deletes)}
        report.status = status(conn)
    return report
