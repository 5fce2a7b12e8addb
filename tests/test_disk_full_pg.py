"""A full disk under PostgreSQL's tables (docs/reliability.md, "Disk full").

The plugin's tables and indexes live in a tablespace on a small ``tmpfs`` (the database's
``default_tablespace``, so the migrations create them there; the server's WAL stays on its own
disk); a filler file takes all but a small margin, and the plugin writes — appends, a host's
ORM flush, ``import_dir``, the reconciler, the background reconciler — until PostgreSQL
refuses to extend a file (SQLSTATE 53100). Each write that cannot complete must raise
``StorageFullError``, leave nothing of itself behind and leave the index intact; once the filler
is deleted, the same store accepts writes again, ``check`` is clean and every write
acknowledged before is there.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from factories import msg, transcript_file
from pgserver import SERVER_USER, PgServer
from smallfs import SmallDisk, small_disk
from sqlalchemy.orm import sessionmaker
from test_disk_full import (
    BATCH,
    CALLER,
    KEY,
    MARGIN,
    MAX_WRITES,
    SEED,
    found,
    stored_ids,
    wait_for_retry,
    words,
)

import openclaw_fts
from openclaw_fts import StorageFullError, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.models import AgentSession, TranscriptEvent

#: The tablespace's file system: the plugin's empty tables and indexes take ~0.5 MB.
PG_DISK_BYTES = 8 * 1024 * 1024
#: Free bytes left under an import: a few of its files fit, not all ten.
IMPORT_MARGIN = 192 * 1024
_names = itertools.count()


class PgSpace:
    """A database whose plugin tables live on :attr:`disk`."""

    def __init__(self, url: str, disk: SmallDisk, name: str) -> None:
        self.url = url
        self.disk = disk
        self.name = name


@pytest.fixture
def space(pg_server: PgServer) -> Iterator[PgSpace]:
    name = f"full_{os.getpid()}_{next(_names)}"
    admin = pg_server.url().replace("postgresql+psycopg://", "postgresql://")
    with small_disk(pg_server.root / name, PG_DISK_BYTES, owner=SERVER_USER) as disk:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE TABLESPACE {name} LOCATION '{disk.path}'")
            conn.execute(f"CREATE DATABASE {name} TEMPLATE template1")
            conn.execute(f"ALTER DATABASE {name} SET default_tablespace = {name}")
        try:
            yield PgSpace(pg_server.url(name), disk, name)
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                conn.execute(f"DROP TABLESPACE IF EXISTS {name}")


def assert_storage_full(exc: BaseException, space: PgSpace) -> None:
    assert isinstance(exc, StorageFullError), repr(exc)
    assert f"/{space.name}?" in str(exc)  # the database's URL
    assert "no space left" in str(exc).lower()


def append_until_full(
    store: TranscriptStore, session_id: str, rng: random.Random, acked: list[str]
) -> StorageFullError:
    n = len(acked)
    for _ in range(MAX_WRITES):
        batch = []
        for i in range(BATCH):
            parent = batch[-1]["id"] if batch else (acked[-1] if acked else None)
            batch.append(msg(f"e{n + i}", f"{words(rng)} marker{n + i}", parent=parent))
        try:
            store.append_many(session_id, batch)
        except StorageFullError as exc:
            return exc
        acked.extend(e["id"] for e in batch)
        n += BATCH
    raise AssertionError(f"{MAX_WRITES} batches fitted in {MARGIN} bytes")


def test_appends_and_a_host_flush_fail_cleanly_and_resume(space: PgSpace) -> None:
    rng = random.Random(SEED + 10)
    store = TranscriptStore(space.url, background=False)
    host = sessionmaker(store.engine)
    openclaw_fts.install(host)
    try:
        store.create_session("s1", KEY)
        acked: list[str] = []
        space.disk.fill(leave=MARGIN)
        exc = append_until_full(store, "s1", rng, acked)
        print(f"postgresql appends: {len(acked)} events acknowledged, then StorageFullError")
        assert_storage_full(exc, space)
        assert getattr(exc.__cause__, "orig", exc.__cause__).sqlstate == "53100"  # type: ignore[union-attr]
        assert stored_ids(store, "s1") == acked
        assert found(store, f"marker{len(acked) - 1}") == [acked[-1]]
        # A host's flush on the full disk: the same error, nothing stored.
        with pytest.raises(StorageFullError), host.begin() as db:
            for i in range(BATCH * 8):
                parent = f"h{i - 1}" if i else acked[-1]
                db.add(
                    TranscriptEvent(session_id="s1", event=msg(f"h{i}", words(rng), parent=parent))
                )
        assert stored_ids(store, "s1") == acked
        space.disk.free()
        with host.begin() as db:
            db.add(
                TranscriptEvent(session_id="s1", event=msg("h0", "host again", parent=acked[-1]))
            )
        store.append("s1", msg("after", "freed puffin", parent="h0"))
        assert stored_ids(store, "s1") == [*acked, "h0", "after"]
        assert found(store, "puffin") == ["after"]
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()


def test_import_and_reconcile_fail_cleanly_and_complete_when_freed(
    space: PgSpace, tmp_path: Path
) -> None:
    rng = random.Random(SEED + 11)
    folder = tmp_path / "sessions"
    folder.mkdir()
    sessions = [f"imp{n}" for n in range(10)]
    for sid in sessions:
        transcript_file(folder / f"{sid}.jsonl", sid, [words(rng, 200) for _ in range(40)])
    store = TranscriptStore(space.url, background=False)
    try:
        space.disk.fill(leave=IMPORT_MARGIN)
        with pytest.raises(StorageFullError) as info:
            store.import_dir(folder)
        assert_storage_full(info.value, space)
        space.disk.free()
        report = store.import_dir(folder)
        assert not report["errors"], report
        control = TranscriptStore(f"sqlite:///{tmp_path / 'control.db'}", background=False)
        try:
            control.import_dir(folder)
            for sid in sessions:
                assert stored_ids(store, sid) == stored_ids(control, sid), sid
        finally:
            control.close()
        # The index rows the reconciler writes do not fit either.
        space.disk.fill(leave=16 * 1024)
        with pytest.raises(StorageFullError) as info:
            store.reconcile()
        assert_storage_full(info.value, space)
        mid = check(store.engine)
        assert not mid.drift and mid.orphans == 0, mid
        space.disk.free()
        started = time.monotonic()
        store.reconcile()  # the failed run gave its lease back
        assert time.monotonic() - started < 10
        assert store.index_status()["pending"] == 0
        final = check(store.engine)
        assert final.ok, final
    finally:
        store.close()


def test_the_background_reconciler_waits_out_a_full_disk(
    space: PgSpace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="openclaw_fts.background")
    rng = random.Random(SEED + 12)
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(8):
        transcript_file(folder / f"b{n}.jsonl", f"b{n}", [words(rng, 200) for _ in range(40)])
    store = TranscriptStore(space.url)
    try:
        store.import_dir(folder)
        space.disk.fill(leave=16 * 1024)
        answer = store.search(CALLER, "anything")
        assert answer.get("indexing") is True
        assert "no space left" in wait_for_retry(caplog, "openclaw-fts-reconcile").lower()
        space.disk.free()
        store.wait_for_index(timeout=30)
        assert store.index_status()["pending"] == 0
        report = check(store.engine)
        assert report.ok, report
    finally:
        store.close()


def test_a_session_row_that_does_not_fit_is_refused_cleanly(space: PgSpace) -> None:
    store = TranscriptStore(space.url, background=False)
    try:
        space.disk.fill_up()
        created = 0
        with pytest.raises(StorageFullError):
            for n in range(MAX_WRITES):
                store.create_session(f"c{n}", f"agent:main:c{n}")
                created += 1
        space.disk.free()
        with store.read_session() as db:
            assert db.query(AgentSession).count() == created
        store.create_session("fits", KEY)
        assert check(store.engine).ok
    finally:
        store.close()
