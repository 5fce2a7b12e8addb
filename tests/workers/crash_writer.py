"""Crash victim: append large batches with ``append_many`` until killed (SIGKILL by the test).

Usage: crash_writer.py DB_PATH RUN SEED SESSION_ID[,SESSION_ID...]

Prints (one JSON line each, flushed before going on):
``{"ready": 1}`` once the store is open;
``{"begin": b, "sid", "n", "ids": [first, last]}`` right before batch ``b`` is handed to
``append_many`` (event ids ``r<RUN>-b<b>-<i>``, i = 0..n-1);
``{"commit": b, "sid", "n", "seqs": [first, last]}`` right after it committed.
A batch may carry a rewind (leaf control) and a side append, so some commits leave the session
dirty for the reconciler. Exits by itself after 60 s if nobody kills it.
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any

from _common import emit, message, sentence

from openclaw_fts import TranscriptStore


def batch_events(rng: random.Random, run: int, b: int, n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(n):
        eid = f"r{run}-b{b}-{i}"
        roll = rng.random()
        if roll < 0.003 and i > 1:
            target = f"r{run}-b{b}-{rng.randrange(i - 1)}"
            events.append({"type": "leaf", "id": eid, "parentId": None, "targetId": target})
            continue
        event = message(
            eid,
            sentence(rng, f"crash{run}x{b}x{i}"),
            role="user" if i % 2 == 0 else "assistant",
            ts=1_790_000_000_000 + i,
        )
        if roll < 0.006:
            event["appendMode"] = "side"
        events.append(event)
    return events


def main() -> None:
    db, run, seed, sessions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    session_ids = sessions.split(",")
    store = TranscriptStore(f"sqlite:///{db}", background=False)
    emit(ready=1)
    deadline = time.monotonic() + 60
    b = 0
    while time.monotonic() < deadline:
        sid = rng.choice(session_ids)
        n = rng.randint(200, 2000)
        events = batch_events(rng, run, b, n)
        emit(begin=b, sid=sid, n=n, ids=[events[0]["id"], events[-1]["id"]])
        seqs = store.append_many(sid, events)
        emit(commit=b, sid=sid, n=n, seqs=[seqs[0], seqs[-1]])
        b += 1
    store.close()


if __name__ == "__main__":
    main()
