"""The background segment merge: a store's appends start it once SQLite's FTS5 index is split
into many segments, the reconciler runs it after indexing; it leaves fewer segments, changes
nothing a search finds, and never wears the index out. On PostgreSQL there is nothing to merge.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import chain, msg, transcript_file
from sqlalchemy import text

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.index.sqlite.fts import (
    FTS_TABLE,
    MERGE_MIN_LEVEL_SEGMENTS,
    MERGE_TRIGGER_SEGMENTS,
    STRUCTURE_MAX_BYTES,
    STRUCTURE_ROWID,
    merge_pending,
    merge_step,
    segment_count,
    structure,
)
from openclaw_fts.merge import MERGE_CHECK_WRITES, merge_index, needs_merge

pytestmark = pytest.mark.both_engines

CALLER = Caller("agent:main:main", visibility="all")
#: Sessions the appends go to, one message per append (its own transaction, so FTS5 writes
#: one small segment per append).
SESSIONS = 8
#: Appends per burst: a multiple of the store's check interval, so the last append is checked.
BURST = 12 * MERGE_CHECK_WRITES
#: Bursts a background store may need before its last check finds the merge idle.
MAX_BURSTS = 3
#: Merge-after-every-write rounds: as many as the optimize wear-out test (tests/test_edits.py).
MERGE_ROUNDS = 1_600
#: Seconds a read-only check may take while another connection holds the write lock (far
#: under the store's busy timeout, which a write would wait out).
LOCK_FREE_SECONDS = 2.0
#: Commits of random size, and the sizes, for the trigger's check against FTS5's own merge.
TRIGGER_ROUNDS = 300
COMMIT_SIZES = (1, 1, 2, 5, 20)
WORDS = ("harbor", "violet", "quartz", "ember", "saffron", "meadow", "cobalt", "lantern")
QUERIES = (*WORDS, "quartz lantern", '"harbor violet"', "sa*", "message")


def segments(store: TranscriptStore) -> int:
    with store.engine.connect() as conn:
        return segment_count(conn)


def structure_bytes(store: TranscriptStore) -> int:
    with store.engine.connect() as conn:
        found = conn.execute(
            text(f"SELECT length(block) FROM {FTS_TABLE}_data WHERE id = :id"),
            {"id": STRUCTURE_ROWID},
        ).scalar()
    return int(found or 0)


def append_burst(store: TranscriptStore, start: int) -> None:
    for n in range(start, start + BURST):
        words = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 3 + 1) % len(WORDS)]} message {n}"
        store.append(f"s{n % SESSIONS}", msg(f"e{n}", words))


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[TranscriptStore, TranscriptStore]]:
    """Two stores on two files, one with the background jobs (a host's default) and one
    without, that will receive the same appends."""
    merged = TranscriptStore(f"sqlite:///{tmp_path / 'merged.sqlite'}", background=True)
    split = TranscriptStore(f"sqlite:///{tmp_path / 'split.sqlite'}", background=False)
    try:
        for store in (merged, split):
            for s in range(SESSIONS):
                store.create_session(f"s{s}", f"agent:main:s{s}")
            with store.engine.begin() as conn:
                # FTS5's merging during writes off: each append's segment stays, the way a
                # large index's levels fill up over many commits.
                conn.execute(
                    text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('automerge', 0)")
                )
        yield merged, split
    finally:
        merged.close()
        split.close()


@pytest.mark.sqlite_only("FTS5's segments; a GIN index has none")
def test_appends_start_a_background_merge_that_changes_no_answer(
    twins: tuple[TranscriptStore, TranscriptStore],
) -> None:
    merged, split = twins
    start = 0
    for _ in range(MAX_BURSTS):
        for store in (merged, split):
            append_burst(store, start)
        start += BURST
        merged.wait_for_index()
        if segments(merged) < MERGE_TRIGGER_SEGMENTS:
            break
    assert segments(split) >= MERGE_TRIGGER_SEGMENTS  # the appends did split the index
    assert segments(merged) < MERGE_TRIGGER_SEGMENTS
    assert merged._merger.last_error is None
    for query in QUERIES:
        answer = merged.search(CALLER, query)
        assert answer["results"], query
        assert answer == split.search(CALLER, query), query
    assert check(merged.engine).ok


@pytest.mark.sqlite_only("FTS5's segment levels")
def test_merging_after_every_write_keeps_the_index_small_and_readable(
    store: TranscriptStore,
) -> None:
    """'optimize' moves what it merges one level above the highest, and repeated after every
    write it wore the index out (tests/test_edits.py). The background merge only merges a
    level's segments into the level above, so its record of levels stays small."""
    store.create_session("s1", "agent:main:main")
    parent = None
    for n in range(MERGE_ROUNDS):
        store.append("s1", msg(f"r{n}", f"round{n} words", parent=parent))
        parent = f"r{n}"
        merge_index(store.engine)
        assert segments(store) < MERGE_TRIGGER_SEGMENTS
    assert structure_bytes(store) < STRUCTURE_MAX_BYTES // 4
    found = store.search(CALLER, f"round{MERGE_ROUNDS - 1}")["results"]
    assert [hit["messageId"] for hit in found] == [parent]
    assert len(store.search(CALLER, "words", limit=1)["results"]) == 1
    assert check(store.engine).ok


@pytest.mark.sqlite_only("the reconciler's batches as FTS5 segments")
def test_reconcile_merges_what_its_batches_split(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [f"imported {WORDS[n % len(WORDS)]} line {n}" for n in range(120)]
    path = transcript_file(tmp_path / "imported.jsonl", "imported", texts)
    url = f"sqlite:///{tmp_path / 'imported.sqlite'}"
    with TranscriptStore(url, background=False, reconcile_batch_rows=4) as store:
        store.import_jsonl(path, session_key="agent:main:imported")
        with caplog.at_level(logging.INFO, logger="openclaw_fts.merge"):
            store.reconcile()
        assert any(r.getMessage().startswith("merge: ") for r in caplog.records)
        assert segments(store) < MERGE_TRIGGER_SEGMENTS
        hits = store.search(CALLER, "saffron", limit=20)["results"]
        assert len(hits) == 15
        assert check(store.engine).ok


def test_nothing_to_merge_once_merged_and_never_on_postgresql(
    store: TranscriptStore, db_engine: str
) -> None:
    store.create_session("s1", "agent:main:main")
    for n in range(2 * MERGE_TRIGGER_SEGMENTS):
        store.append_many("s1", chain([f"alpha {n}"], start=n, parent=f"m{n - 1}" if n else None))
    store.optimize()
    assert not needs_merge(store.engine)
    assert merge_index(store.engine) == 0
    if db_engine == "sqlite":
        assert segments(store) == 1
    assert len(store.search(CALLER, "alpha")["results"]) > 0


@pytest.mark.sqlite_only("SQLite's one write lock")
def test_the_segment_check_reads_while_another_writer_holds_the_lock(
    store: TranscriptStore, db_url: str
) -> None:
    """Appends check the segments every few writes: a check that took the write lock would
    wait for (and hold up) other writers."""
    store.create_session("s1", "agent:main:main")
    store.append("s1", msg("m0", "alpha"))
    path = db_url.removeprefix("sqlite:///")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE openclaw_sessions SET archived = archived")
        started = time.monotonic()
        assert not needs_merge(store.engine)
        assert time.monotonic() - started < LOCK_FREE_SECONDS
        other.execute("ROLLBACK")
    finally:
        other.close()


@pytest.mark.sqlite_only("FTS5's structure record")
def test_the_trigger_reads_the_levels_the_way_fts5_merges_them(store: TranscriptStore) -> None:
    """The trigger must not ask for a merge that FTS5 would not do: an index merged down to
    one segment a level can have 8 levels or more, and a merge job started for it would only
    take the write lock. FTS5's own rule, read from its source: a ``'merge'`` step merges
    when some level holds ``usermerge`` segments or more, or a merge is part done. Checked
    here on every state a run of random-sized commits leaves, with steps in between."""
    store.create_session("s1", "agent:main:main")
    rnd = random.Random(24)
    seq = 0
    merged = 0
    for _ in range(TRIGGER_ROUNDS):
        texts = [
            " ".join(rnd.choice(WORDS) + str(rnd.randrange(500)) for _ in range(8))
            for _ in range(rnd.choice(COMMIT_SIZES))
        ]
        store.append_many("s1", chain(texts, start=seq, parent=f"m{seq - 1}" if seq else None))
        seq += len(texts)
        with store.engine.begin() as conn:
            levels = structure(conn)
            assert sum(n for _merging, n in levels) == segment_count(conn)
            would = any(merging or n >= MERGE_MIN_LEVEL_SEGMENTS for merging, n in levels)
            many = segment_count(conn) >= MERGE_TRIGGER_SEGMENTS
            assert merge_pending(conn) == (would and many), levels
            if rnd.random() < 0.5:
                assert merge_step(conn) == would, levels
                merged += would
    assert merged > 10  # the run did go through states a step merges
    assert len(store.search(CALLER, WORDS[0] + "*", limit=5)["results"]) == 5
    assert check(store.engine).ok
