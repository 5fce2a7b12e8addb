"""The PostgreSQL write side's own limits: what PostgreSQL cannot store is refused clearly or
indexed as far as it can be, never a failed append."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from factories import msg

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.index.postgresql.backend import MAX_INDEXED_BODY_BYTES

ALL = Caller("agent:main:main", visibility="all")


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[TranscriptStore]:
    with TranscriptStore(pg_url, background=False) as store:
        yield store


def test_a_message_too_large_for_a_tsvector_is_stored_and_its_start_indexed(
    pg_store: TranscriptStore,
) -> None:
    words = [f"w{i:07d}x" for i in range(3 * MAX_INDEXED_BODY_BYTES // 10)]  # ~1.5 MB, distinct
    pg_store.create_session("s1", "agent:main:main")
    pg_store.append("s1", msg("big", "firstword " + " ".join(words) + " lastword"))
    assert [h["messageId"] for h in pg_store.search(ALL, "firstword")["results"]] == ["big"]
    assert pg_store.search(ALL, "lastword")["results"] == []  # beyond the indexed part
    history = pg_store.history(ALL, "agent:main:main")
    assert [m["__openclaw"]["id"] for m in history["messages"]] == ["big"]  # stored whole
    assert pg_store.index_status()["pending"] == 0
