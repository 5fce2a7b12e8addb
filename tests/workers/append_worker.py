"""Concurrency writer: append N events to a mix of sessions of one SQLite file.

Usage: append_worker.py DB_PATH WORKER_INDEX N_EVENTS SESSION_ID[,SESSION_ID...] SEED

Default settings (``TranscriptStore(url)``: WAL, busy timeout, BEGIN IMMEDIATE). Events use
no ``parentId`` key (they continue the session's current leaf: a ``parentId: null`` would start
a new root), with a few side appends, tool results,
content-block messages and non-message entries mixed in. Appends one at a time (``append``) or
in small batches (``append_many``). Prints one JSON line at the end:
``{"worker", "appended", "ids": {session: [ids in append order]}, "indexable": [ids]}``.
"""

from __future__ import annotations

import random
import sys
from typing import Any

from _common import emit, message, sentence

from openclaw_fts import TranscriptStore


def make_event(rng: random.Random, worker: int, n: int) -> tuple[dict[str, Any], bool]:
    """An event with a unique id, and whether it must end up in the index."""
    event_id = f"w{worker}-{n}"
    token = f"tok{worker}x{n}"
    roll = rng.random()
    ts = 1_790_000_000_000 + n * 1000
    if roll < 0.60:
        role = rng.choice(("user", "assistant"))
        return message(event_id, sentence(rng, token), role=role, ts=ts), True
    if roll < 0.72:
        return message(event_id, sentence(rng, token), role="assistant", ts=ts, blocks=True), True
    if roll < 0.80:
        event = message(event_id, sentence(rng, token), ts=ts)
        event["message"]["role"] = "toolResult"
        return event, False
    if roll < 0.85:
        return message(event_id, sentence(rng, token), ts=ts, role="assistant"), True
    if roll < 0.88:
        event = message(event_id, sentence(rng, token), ts=ts)
        event["appendMode"] = "side"  # hangs off the tree: never indexed
        return event, False
    kind = rng.choice(("model_change", "thinking_level_change", "custom", "label"))
    return {"type": kind, "id": event_id, "timestamp": ts, "data": n}, False


def main() -> None:
    db, worker, total, sessions, seed = sys.argv[1:6]
    rng = random.Random(int(seed))
    session_ids = sessions.split(",")
    store = TranscriptStore(f"sqlite:///{db}")
    ids: dict[str, list[str]] = {sid: [] for sid in session_ids}
    indexable: list[str] = []
    n = 0
    try:
        while n < int(total):
            sid = rng.choice(session_ids)
            size = 1 if rng.random() < 0.8 else rng.randint(2, 8)
            size = min(size, int(total) - n)
            batch = []
            for _ in range(size):
                event, indexed = make_event(rng, int(worker), n)
                batch.append(event)
                if indexed:
                    indexable.append(event["id"])
                n += 1
            if size == 1:
                store.append(sid, batch[0])
            else:
                store.append_many(sid, batch)
            ids[sid].extend(e["id"] for e in batch)
    finally:
        store.close()
    emit(worker=int(worker), appended=n, ids=ids, indexable=indexable)


if __name__ == "__main__":
    main()
