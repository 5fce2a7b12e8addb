"""Write until killed, on a database on the power-cut file system (tests/lazyfs.py).

Usage: power_writer.py DB_PATH DURABILITY SESSION_ID

Creates ``SESSION_ID`` and commits pairs of events (``{SESSION_ID}-{n}a`` and ``...b``, one
transaction each), alternating the store's ``append_many`` with a host's ORM commit, and
reconciling every few commits; prints ``ack n`` once commit ``n`` returned (flushed at once,
so the parent knows what was acknowledged before it kills this process).
"""

from __future__ import annotations

import sys

from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import TranscriptStore
from openclaw_fts.models import TranscriptEvent

#: Every how many commits the writer reconciles (a write of its own, under the lease).
RECONCILE_EVERY = 5


def event(event_id: str, parent: str | None, text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "timestamp": 1_790_000_000_000,
        "message": {"role": "user", "content": text},
    }


def main() -> None:
    write(*sys.argv[1:4])


def write(db: str, durability: str, session_id: str) -> None:
    """Write until killed (see the module's docstring)."""
    store = TranscriptStore(f"sqlite:///{db}", background=False, durability=durability)
    host = openclaw_fts.install(sessionmaker(store.engine))
    store.create_session(session_id, f"agent:main:{session_id}")
    print("ack -1", flush=True)
    parent = None
    n = 0
    while True:
        a, b = f"{session_id}-{n}a", f"{session_id}-{n}b"
        pair = [event(a, parent, f"powercut {a} text"), event(b, a, f"powercut {b} reply")]
        if n % 2:
            with host.begin() as db_session:
                for e in pair:
                    db_session.add(TranscriptEvent(session_id=session_id, event=e))
        else:
            store.append_many(session_id, pair)
        print(f"ack {n}", flush=True)
        parent = b
        n += 1
        if n % RECONCILE_EVERY == 0:
            store.reconcile()


if __name__ == "__main__":
    main()
