"""A full disk under an SQLite database (docs/reliability.md, "Disk full").

The database, its WAL and SQLite's temporary files live on a small ``tmpfs`` mounted for the
test; a filler file takes all but a small margin of it, and the plugin writes — appends, a
host's ORM flush, ``import_dir``, the reconciler, ``optimize()``, the background jobs — until
the space runs out. Each write that cannot complete must raise ``StorageFullError`` (never the
driver's own error), leave nothing of itself behind, and leave the index intact; once the
filler is deleted (or the file system remounted larger), the same store — no restart —
accepts writes again, ``check`` is clean and every write acknowledged before is there.
"""

from __future__ import annotations

import errno
import logging
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import msg, transcript_file
from fault_checks import CALLER, KEY, found, stored_ids, words
from smallfs import SmallDisk, small_disk
from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import StorageFullError, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.merge import MERGE_CHECK_WRITES, needs_merge
from openclaw_fts.models import AgentSession, TranscriptEvent

#: The file system's size: the database starts at ~0.3 MB. The import test's store, written
#: again in full once the disk is freed, holds ~96,000 distinct random words, each a row of
#: the writer-kept vocabulary (revision 0015) too: with the WAL, ~11 MB.
DISK_BYTES = 16 * 1024 * 1024
#: Free bytes the filler leaves: the writes under test use them up within a few dozen commits.
MARGIN = 1024 * 1024
#: Writes tried before the test gives up waiting for the disk to fill (it fills in far fewer).
MAX_WRITES = 2_000
#: Events per appended batch, and words per message.
BATCH = 4
SEED = 40
#: Events appended before the full disk's optimize (see the test).
OPTIMIZE_EVENTS = 120


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """The small file system, SQLite's temporary files on it too (``temp_store_directory`` is
    SQLite's process-wide setting, so it is put back afterwards)."""
    with small_disk(tmp_path / "disk", DISK_BYTES) as mounted:
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute(f"PRAGMA temp_store_directory = '{mounted.path}'")
            yield mounted
        finally:
            probe.execute("PRAGMA temp_store_directory = ''")
            probe.close()


@pytest.fixture
def url(disk: SmallDisk) -> str:
    return f"sqlite:///{disk.path / 'openclaw.db'}"


def assert_storage_full(exc: BaseException, disk: SmallDisk) -> None:
    assert isinstance(exc, StorageFullError), repr(exc)
    assert isinstance(exc, OSError) and exc.errno == errno.ENOSPC
    assert str(disk.path / "openclaw.db") in str(exc)
    assert "no space left" in str(exc)


def append_until_full(
    store: TranscriptStore, session_id: str, rng: random.Random, acked: list[str], start: int
) -> tuple[StorageFullError, list[str]]:
    """Append batches (ids ``e{start}``...) until one fails; returns the error and the ids of
    the failed batch."""
    n = start
    for _ in range(MAX_WRITES):
        batch = [
            msg(f"e{n + i}", f"{words(rng)} marker{n + i}", parent=acked[-1] if acked else None)
            for i in range(1)
        ] + [
            msg(f"e{n + i}", f"{words(rng)} marker{n + i}", parent=f"e{n + i - 1}")
            for i in range(1, BATCH)
        ]
        try:
            store.append_many(session_id, batch)
        except StorageFullError as exc:
            return exc, [e["id"] for e in batch]
        acked.extend(e["id"] for e in batch)
        n += BATCH
    raise AssertionError(f"{MAX_WRITES} batches fitted in {MARGIN} bytes")


def test_appends_fail_cleanly_when_full_and_resume_when_freed(disk: SmallDisk, url: str) -> None:
    rng = random.Random(SEED)
    store = TranscriptStore(url, background=False)
    try:
        store.create_session("s1", KEY)
        acked: list[str] = []
        disk.fill(leave=MARGIN)
        exc, failed = append_until_full(store, "s1", rng, acked, 0)
        print(f"sqlite appends: {len(acked)} events acknowledged, then StorageFullError")
        assert_storage_full(exc, disk)
        assert isinstance(exc.__cause__, Exception)  # the driver's error, kept as the cause
        # Nothing of the failed batch is stored; everything acknowledged is.
        assert stored_ids(store, "s1") == acked
        assert not set(failed) & set(stored_ids(store, "s1"))
        # Not a byte left: writes keep failing the same way (a small one may still fit in the
        # WAL space the failed one took), reads work.
        disk.fill_up()
        again, failed = append_until_full(store, "s1", rng, acked, len(acked))
        assert_storage_full(again, disk)
        assert stored_ids(store, "s1") == acked
        assert found(store, acked[-1].replace("e", "marker")) == [acked[-1]]
        # Space freed: the same store writes again.
        disk.free()
        store.append_many("s1", [msg(failed[0], "after the disk was freed", parent=acked[-1])])
        acked.append(failed[0])
        assert stored_ids(store, "s1") == acked
        report = check(store.engine)
        assert report.ok, report
        assert found(store, "freed") == [failed[0]]
    finally:
        store.close()


def test_a_host_flush_fails_cleanly_and_the_session_can_commit_after(
    disk: SmallDisk, url: str
) -> None:
    rng = random.Random(SEED + 1)
    store = TranscriptStore(url, background=False)
    host = sessionmaker(store.engine)
    openclaw_fts.install(host)
    try:
        with host.begin() as db:
            db.add(AgentSession(session_id="h1", session_key=KEY))
        disk.fill(leave=MARGIN)
        acked: list[str] = []
        parent: str | None = None
        caught: BaseException | None = None
        for n in range(MAX_WRITES):
            db = host()
            try:
                for i in range(BATCH):
                    event_id = f"h{n}-{i}"
                    db.add(
                        TranscriptEvent(
                            session_id="h1", event=msg(event_id, words(rng), parent=parent)
                        )
                    )
                    parent = event_id
                db.commit()
            except Exception as exc:
                db.rollback()
                caught = exc
                break
            finally:
                db.close()
            acked.extend(f"h{n}-{i}" for i in range(BATCH))
        assert caught is not None, "the disk never filled"
        assert_storage_full(caught, disk)
        assert stored_ids(store, "h1") == acked
        disk.free()
        with host.begin() as db:
            db.add(
                TranscriptEvent(
                    session_id="h1", event=msg("after", "host wrote again", parent=acked[-1])
                )
            )
        assert stored_ids(store, "h1") == [*acked, "after"]
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()


def test_import_dir_stops_with_the_error_and_a_rerun_completes_every_file(
    disk: SmallDisk, url: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED + 2)
    folder = tmp_path / "sessions"  # on the ordinary disk: only the database is on the tmpfs
    folder.mkdir()
    files = 12
    texts = {f"imp{n}": [words(rng, 200) for _ in range(40)] for n in range(files)}
    for sid, lines in texts.items():
        transcript_file(folder / f"{sid}.jsonl", sid, lines)
    store = TranscriptStore(url, background=False)
    try:
        disk.fill(leave=MARGIN)
        with pytest.raises(StorageFullError) as info:
            store.import_dir(folder)
        assert_storage_full(info.value, disk)
        assert check(store.engine).orphans == 0
        disk.free()
        report = store.import_dir(folder)
        assert not report["errors"], report
        # Every file stored exactly as a clean import (on the ordinary disk) stores it.
        control = TranscriptStore(f"sqlite:///{tmp_path / 'control.db'}", background=False)
        try:
            control.import_dir(folder)
            for sid in texts:
                assert stored_ids(store, sid) == stored_ids(control, sid), sid
        finally:
            control.close()
        store.reconcile()
        final = check(store.engine)
        assert final.ok, final
        assert store.index_status()["pending"] == 0
    finally:
        store.close()


def test_the_reconciler_fails_cleanly_when_full_and_finishes_when_freed(
    disk: SmallDisk, url: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED + 3)
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(8):
        transcript_file(folder / f"r{n}.jsonl", f"r{n}", [words(rng, 200) for _ in range(40)])
    store = TranscriptStore(url, background=False)
    try:
        store.import_dir(folder)  # stored, pending: the reconciler indexes them
        assert store.index_status()["pending"] == 8
        disk.fill(leave=64 * 1024)
        with pytest.raises(StorageFullError) as info:
            store.reconcile()
        assert_storage_full(info.value, disk)
        mid = check(store.engine)
        assert mid.fts_ok and not mid.drift and mid.orphans == 0, mid  # clean ones stay exact
        disk.free()
        started = time.monotonic()
        store.reconcile()  # the lease of the failed run was given back: no wait for it
        assert time.monotonic() - started < 10
        assert store.index_status()["pending"] == 0
        final = check(store.engine)
        assert final.ok, final
    finally:
        store.close()


def test_optimize_fails_cleanly_when_full(disk: SmallDisk, url: str) -> None:
    rng = random.Random(SEED + 4)
    store = TranscriptStore(url, background=False)
    try:
        store.create_session("o1", KEY)
        acked: list[str] = []
        # Many small commits (many FTS5 segments), and fewer pages in all than SQLite's
        # automatic checkpoint (1,000 pages): a checkpointed WAL file is written again from its
        # start, and the merge could then fit in the bytes the file already has, needing none.
        for n in range(0, OPTIMIZE_EVENTS, BATCH):
            batch = [
                msg(f"e{n + i}", words(rng, 60), parent=f"e{n + i - 1}" if n + i else None)
                for i in range(BATCH)
            ]
            store.append_many("o1", batch)
            acked.extend(e["id"] for e in batch)
        wal = disk.path / "openclaw.db-wal"
        assert (disk.path / "openclaw.db").stat().st_size < wal.stat().st_size  # not checkpointed
        disk.fill_up()
        with pytest.raises(StorageFullError) as info:
            store.optimize()
        assert_storage_full(info.value, disk)
        disk.free()
        store.optimize()
        assert stored_ids(store, "o1") == acked
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()


def wait_for_retry(caplog: pytest.LogCaptureFixture, job: str, timeout: float = 10) -> str:
    """The log line of ``job`` (a thread name) waiting out a transient failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in caplog.records:
            text = record.message
            ours = record.name == "openclaw_fts.background" and text.startswith(job)
            if ours and "running again" in text:
                return text
        time.sleep(0.05)
    raise AssertionError(f"{job} never waited out a failure")


def test_the_background_reconciler_waits_out_a_full_disk_and_resumes(
    disk: SmallDisk, url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="openclaw_fts.background")
    rng = random.Random(SEED + 5)
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(6):
        transcript_file(folder / f"b{n}.jsonl", f"b{n}", [words(rng, 200) for _ in range(40)])
    store = TranscriptStore(url)  # background jobs on
    try:
        store.import_dir(folder)
        disk.fill(leave=32 * 1024)
        answer: Any = store.search(CALLER, "anything")  # sessions pending: starts the reconciler
        assert answer.get("indexing") is True
        message = wait_for_retry(caplog, "openclaw-fts-reconcile")
        assert "no space left" in message
        assert store.index_status()["pending"] > 0
        disk.free()
        # No other call: the job runs again by itself and finishes.
        store.wait_for_index(timeout=30)
        assert store.index_status()["pending"] == 0
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()


def test_the_background_merge_waits_out_a_full_disk_and_resumes(
    disk: SmallDisk, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="openclaw_fts.background")
    rng = random.Random(SEED + 7)
    quiet = TranscriptStore(url, background=False)
    acked: list[str] = []
    try:
        quiet.create_session("m1", KEY)
        for n in range(150):  # one commit each: many FTS5 segments
            quiet.append("m1", msg(f"e{n}", words(rng, 40), parent=acked[-1] if acked else None))
            acked.append(f"e{n}")
        assert needs_merge(quiet.engine)
    finally:
        quiet.close()
    store = TranscriptStore(url)
    try:
        for n in range(150, 150 + MERGE_CHECK_WRITES):  # the 16th append starts the merge
            store.append("m1", msg(f"e{n}", words(rng, 5), parent=acked[-1]))
            acked.append(f"e{n}")
        disk.fill_up()  # before its first step (it waits for a pause in the appends)
        message = wait_for_retry(caplog, "openclaw-fts-merge")
        assert "no space left" in message
        disk.free()
        store.wait_for_index(timeout=30)
        assert not needs_merge(store.engine)
        assert stored_ids(store, "m1") == acked
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()


def test_a_remount_larger_frees_the_space_too(disk: SmallDisk, url: str) -> None:
    rng = random.Random(SEED + 6)
    store = TranscriptStore(url, background=False)
    try:
        store.create_session("g1", KEY)
        acked: list[str] = []
        disk.fill(leave=MARGIN)
        exc, failed = append_until_full(store, "g1", rng, acked, 0)
        assert_storage_full(exc, disk)
        disk.grow(2 * DISK_BYTES)
        store.append_many("g1", [msg(failed[0], "grown", parent=acked[-1])])
        assert stored_ids(store, "g1") == [*acked, failed[0]]
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()
