"""Crash victim: reconcile pending sessions in small batches until killed (SIGKILL by the test).

Usage: crash_reconciler.py DB_PATH

``Reconciler(engine, batch_rows=50, lease_seconds=1.0)``: the test's own reconcile takes the
killed worker's lease over at once (same host, process gone); the short lease bounds the wait
should that detection ever fail. Prints (one JSON line each, flushed):
``{"ready": 1}`` once the engine is up; ``{"progress": {...}}`` after each planned chunk;
``{"done": {...}}`` when a run finished (then runs again until nothing is pending, then exits).
"""

from __future__ import annotations

import sys
from typing import Any

from _common import emit

from openclaw_fts.engine import make_engine
from openclaw_fts.reconcile import Reconciler


def main() -> None:
    engine = make_engine(f"sqlite:///{sys.argv[1]}")
    reconciler = Reconciler(engine, batch_rows=50, lease_seconds=1.0)
    emit(ready=1)

    def progress(status: dict[str, Any]) -> None:
        emit(progress=status)

    while True:
        out = reconciler.run(progress=progress)
        emit(done=out)
        if out.get("pending", 0) == 0:
            break
    engine.dispose()


if __name__ == "__main__":
    main()
