"""Concurrency reconciler: call ``store.reconcile()`` in a loop until STOP_FILE exists, then
once more (so every append that finished before the stop file is covered).

Usage: reconcile_worker.py DB_PATH STOP_FILE MAX_SECONDS

Prints one JSON line at the end: ``{"runs", "sessions", "inserted", "deleted", "retried"}``.
"""

from __future__ import annotations

import os
import sys
import time

from _common import emit

from openclaw_fts import TranscriptStore


def main() -> None:
    db, stop_file, max_seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    store = TranscriptStore(f"sqlite:///{db}", background=False)
    totals = {"runs": 0, "sessions": 0, "inserted": 0, "deleted": 0, "retried": 0}
    deadline = time.monotonic() + max_seconds
    try:
        while True:
            stopping = os.path.exists(stop_file) or time.monotonic() >= deadline
            out = store.reconcile()
            totals["runs"] += 1
            for name in ("sessions", "inserted", "deleted", "retried"):
                totals[name] += int(out.get(name, 0))
            if stopping:
                break
            time.sleep(0.05)
    finally:
        store.close()
    emit(**totals)


if __name__ == "__main__":
    main()
