"""What the fault tests (disk full, dropped connections) write and read back: random words
that grow the index, the events a session has stored, the messages a search finds. One copy
for tests/test_disk_full.py, test_disk_full_pg.py and test_pg_faults.py."""

from __future__ import annotations

import random
from typing import Any

from sqlalchemy import select

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.models import TranscriptEvent

KEY = "agent:main:main"
#: The fault tests search as a caller who sees every session.
CALLER = Caller(KEY, visibility="all")
#: Words per message, by default: every message adds new terms to the index.
WORDS = 300


def words(rng: random.Random, n: int = WORDS) -> str:
    """``n`` random words: every message adds new terms to the index."""
    return " ".join(
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 9)))
        for _ in range(n)
    )


def stored_ids(store: TranscriptStore, session_id: str) -> list[str]:
    """The event ids the session has stored, in order."""
    with store.read_session() as db:
        return list(
            db.scalars(
                select(TranscriptEvent.event_id)
                .where(TranscriptEvent.session_id == session_id)
                .order_by(TranscriptEvent.seq)
            )
        )


def found(store: TranscriptStore, query: str) -> list[str]:
    """The message ids a search by :data:`CALLER` finds."""
    answer: Any = store.search(CALLER, query)
    return [hit["messageId"] for hit in answer["results"]]
