"""Crash victim: import transcripts in small batches until done or killed (SIGKILL by the test).

Usage: crash_importer.py DB_PATH PREFIX BATCH_EVENTS FILE...

Each FILE is imported into session ``PREFIX + <file stem>`` with ``BATCH_EVENTS`` entries per
transaction. Prints (one JSON line each, flushed): ``{"ready": 1}`` once the store is open,
``{"batch": n}`` after each committed batch of n entries, ``{"done": 1}`` when every file is in.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _common import emit

from openclaw_fts import TranscriptStore


def main() -> None:
    db, prefix, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = TranscriptStore(f"sqlite:///{db}", background=False)
    emit(ready=1)
    for name in sys.argv[4:]:
        path = Path(name)
        store.import_jsonl(
            path,
            session_key="agent:main:main",  # every file one key, as before lone files
            session_id=prefix + path.stem,
            batch_events=batch,
            progress=lambda n: emit(batch=n),
        )
    emit(done=1)
    store.close()


if __name__ == "__main__":
    main()
