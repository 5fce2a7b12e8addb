"""Reconciliation (docs/architecture.md): pending sessions, rewinds, backfill, leases, crashes.

Scenarios follow OpenClaw's own (rewind, doctor-style backfill, large dirty sessions) plus the
concurrency promises: one reconciler per database across threads and processes, a killed
reconciler loses nothing, and an append racing a reconcile never leaves a session wrongly clean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from engines import count_matches, full_text_integrity
from factories import chain, events_file, jsonl_file, msg
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.orm import Session, sessionmaker

from openclaw_fts import AgentSession, Caller, ImportFormatError, TranscriptStore, transcript
from openclaw_fts.check import check
from openclaw_fts.engine import READ_ONLY, make_engine
from openclaw_fts.indexer import INLINE_REPAIR_MAX_EVENTS
from openclaw_fts.reconcile import Reconciler
from openclaw_fts.tokens import index_body

pytestmark = pytest.mark.both_engines


FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent
KEY = "agent:main:main"
CALLER = Caller(KEY, visibility="all")
WARNING = (
    "Transcript indexing is in progress; results may be incomplete. Retry sessions_search shortly."
)
BRANCHY_ID = "7f1c2a9e-branchy"


# -- helpers ---------------------------------------------------------------------------------


def reader(engine: Engine) -> Connection:
    return engine.connect().execution_options(**{READ_ONLY: True})


def search(store: TranscriptStore, query: str, **kwargs: Any) -> dict[str, Any]:
    out = store.search(CALLER, query, **kwargs)
    assert "status" not in out, out
    return out


def found(store: TranscriptStore, query: str) -> set[str]:
    return {h["messageId"] for h in search(store, query, limit=25)["results"]}


def load_events(conn: Connection, sid: str) -> list[tuple[int, dict[str, Any]]]:
    return [
        (int(seq), json.loads(raw))
        for seq, raw in conn.execute(
            text("SELECT seq, event FROM transcript_events WHERE session_id = :sid ORDER BY seq"),
            {"sid": sid},
        )
    ]


def is_pending(conn: Connection, sid: str) -> bool:
    row = conn.execute(
        text(
            "SELECT st.id, st.needs_rebuild, st.indexed_seq, s.last_seq, "
            "(SELECT coalesce(max(seq), -1) FROM transcript_events e "
            " WHERE e.session_id = s.session_id) "
            "FROM openclaw_sessions s LEFT JOIN openclaw_index_state st ON st.session_id = "
            "s.session_id "
            "WHERE s.session_id = :sid"
        ),
        {"sid": sid},
    ).one()
    state_id, dirty, indexed_seq, last_seq, max_seq = row
    return state_id is None or bool(dirty) or indexed_seq != last_seq or indexed_seq != max_seq


def expected_rows(conn: Connection, sid: str) -> set[tuple[int, str, str, str]]:
    incognito = bool(
        conn.execute(
            text("SELECT incognito FROM openclaw_sessions WHERE session_id = :sid"), {"sid": sid}
        ).scalar_one()
    )
    rows = transcript.index_rows(load_events(conn, sid), incognito=incognito)
    return {(r.seq, r.event_id, r.role, index_body(r.text)) for r in rows}


def actual_rows(conn: Connection, sid: str) -> set[tuple[int, str, str, str]]:
    return {
        (r[0], r[1], r[2], r[3])
        for r in conn.execute(
            text("SELECT seq, event_id, role, body FROM message_index WHERE session_id = :sid"),
            {"sid": sid},
        )
    }


def assert_exact_or_pending(engine: Engine) -> dict[str, bool]:
    """Every session that is not pending has exactly the index rows of its active branch."""
    pending: dict[str, bool] = {}
    with reader(engine) as conn, conn.begin():
        for (sid,) in conn.execute(text("SELECT session_id FROM openclaw_sessions")).all():
            pending[sid] = is_pending(conn, sid)
            if not pending[sid]:
                assert actual_rows(conn, sid) == expected_rows(conn, sid), sid
    return pending


def assert_all_exact(engine: Engine) -> None:
    pending = assert_exact_or_pending(engine)
    assert not any(pending.values()), pending
    assert_no_duplicates(engine)
    fts_integrity(engine)


def assert_no_duplicates(engine: Engine) -> None:
    with reader(engine) as conn:
        dups = conn.execute(
            text(
                "SELECT session_id, event_id, count(*) FROM message_index "
                "GROUP BY session_id, event_id HAVING count(*) > 1"
            )
        ).all()
        assert dups == []
        if conn.dialect.name == "sqlite":  # FTS5 holds one document per index row
            fts_docs = conn.execute(text("SELECT count(*) FROM message_fts_docsize")).scalar_one()
            rows = conn.execute(text("SELECT count(*) FROM message_index")).scalar_one()
            assert fts_docs == rows


def fts_integrity(engine: Engine) -> None:
    full_text_integrity(engine)


def fts_count(engine: Engine, word: str) -> int:
    with reader(engine) as conn:
        return count_matches(conn, word)


def insert_raw_sessions(
    engine: Engine, sessions: int, events_each: int, *, word: str = "rawword"
) -> None:
    """Sessions and events written with plain SQL, behind the hooks (no index state: pending)."""
    session_rows = [
        {"sid": f"raw-{i:04d}", "key": f"agent:main:raw{i}", "last": events_each - 1}
        for i in range(sessions)
    ]
    event_rows = []
    for i in range(sessions):
        sid = f"raw-{i:04d}"
        texts = [f"{word} session{i} message{j}" for j in range(events_each)]
        for j, ev in enumerate(chain(texts, prefix=f"r{i}-")):
            cols = transcript.derived_columns(j, ev)
            cols.update(session_id=sid, event=json.dumps(ev))
            event_rows.append(cols)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, last_seq) "
                "VALUES (:sid, :key, 'main', :last)"
            ),
            session_rows,
        )
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, "
                "target_id, side, timestamp_ms, event) VALUES (:session_id, :seq, :event_id, "
                ":parent_id, :type, :role, :target_id, :side, :timestamp_ms, :event)"
            ),
            event_rows,
        )


# -- OpenClaw's scenarios --------------------------------------------------------------------


def test_rewind_hides_the_abandoned_branch(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    store.append("s1", msg("m1", "alpha origin"))
    store.append("s1", msg("m2", "beta abandoned", parent="m1", role="assistant"))
    assert found(store, "beta") == {"m2"}
    store.rewind("s1", "m1")
    out = search(store, "beta")
    assert out["results"] == [] and "indexing" not in out
    assert found(store, "alpha") == {"m1"}
    store.append("s1", msg("m3", "gamma replacement", parent="m1", role="assistant"))
    assert found(store, "gamma") == {"m3"}
    assert found(store, "beta") == set()
    # a branch switch back brings beta back and hides gamma
    store.rewind("s1", "m2")
    assert found(store, "beta") == {"m2"}
    assert found(store, "gamma") == set()
    assert_all_exact(store.engine)


def test_backfill_of_imported_transcript(store: TranscriptStore) -> None:
    report = store.import_jsonl(FIXTURES / "branchy.jsonl", session_key=KEY)
    assert report["sessions"] == [BRANCHY_ID]
    assert report["imported"] == 14 and report["errorCount"] == 0
    assert store.index_status() == {"pending": 1, "indexed": 0, "total": 1}
    out = search(store, "café")
    assert out["results"] == []
    assert out["indexing"] is True
    assert out["warning"] == WARNING
    progress: list[dict[str, int]] = []
    result = store.reconcile(progress=progress.append)
    assert result["pending"] == 0 and result["total"] == 1
    assert progress and set(progress[-1]) >= {"pending", "indexed", "total"}
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}
    out = search(store, "cafe")
    assert [h["messageId"] for h in out["results"]] == ["u1"]
    assert "indexing" not in out and "warning" not in out
    assert found(store, "logs") == {"a1"}
    assert found(store, "评审") == {"u3", "a3"}
    (hit,) = search(store, "noted")["results"]
    assert hit["messageId"] == "a3" and "abcdefghijklmnopqrstuvwxyz" not in hit["snippet"]
    for absent in ("abandoned", "reasoning", "total", "side", "helpful"):
        assert found(store, absent) == set(), absent
    assert_all_exact(store.engine)


def test_background_reconcile_started_by_search(db_url: str) -> None:
    store = TranscriptStore(db_url, background=True)
    try:
        store.import_jsonl(FIXTURES / "branchy.jsonl", session_key=KEY)
        out = search(store, "logs")
        assert out.get("indexing") is True and out["warning"] == WARNING
        deadline = time.monotonic() + 30
        while store.index_status()["pending"] and time.monotonic() < deadline:
            store.wait_for_index(timeout=1)
        assert store.index_status()["pending"] == 0
        out = search(store, "logs")
        assert [h["messageId"] for h in out["results"]] == ["a1"]
        assert "indexing" not in out
    finally:
        store.close()


def test_pending_session_hides_rewound_away_text(store: TranscriptStore, tmp_path: Path) -> None:
    """Rows written behind the index (an import) make the session pending: its stale rows,
    which may hold rewound-away text, are hidden until it is reconciled."""
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["keepword start", "staleword reply"]))
    assert found(store, "staleword") == {"m1"}
    path = events_file(
        tmp_path / "s1.jsonl",
        "s1",
        [
            {"type": "leaf", "id": "lx", "parentId": "m1", "targetId": "m0"},
            msg("m2", "freshword after rewind", parent="lx", role="assistant"),
        ],
    )
    store.import_jsonl(path, session_key=KEY)
    out = search(store, "staleword")
    assert out["results"] == [] and out["indexing"] is True
    assert search(store, "keepword")["results"] == []  # the whole session is hidden
    store.reconcile()
    assert found(store, "staleword") == set()
    assert found(store, "keepword") == {"m0"}
    assert found(store, "freshword") == {"m2"}
    assert_all_exact(store.engine)


def _big_dirty_session(
    store: TranscriptStore, *, needles: int = 512, hay: int = 3600, keep_hay: int = 89
) -> None:
    """A session above the inline-repair bound, rewound so ``needles`` needle messages and
    ``keep_hay`` hay messages stay active: the rewind marks it dirty."""
    texts = [f"needle number {i}" for i in range(needles)]
    texts += [f"hay number {i}" for i in range(hay)]
    assert len(texts) > INLINE_REPAIR_MAX_EVENTS
    store.create_session("big", KEY)
    store.append_many("big", chain(texts))
    assert found(store, "needle") and store.index_status()["pending"] == 0
    store.rewind("big", f"m{needles + keep_hay - 1}")


def test_large_dirty_session_reported_then_reconciled(store: TranscriptStore) -> None:
    _big_dirty_session(store)
    assert store.index_status() == {"pending": 1, "indexed": 0, "total": 1}
    started = time.perf_counter()
    out = search(store, "needle")
    assert time.perf_counter() - started < 1.0
    assert out["indexing"] is True and out["warning"] == WARNING
    assert out["results"] == []
    store.reconcile()
    out = search(store, "needle")
    assert len(out["results"]) == 10
    assert out["truncated"] is True
    assert "indexing" not in out
    assert len(search(store, "needle", limit=25)["results"]) == 25
    assert fts_count(store.engine, "needle") == 512
    assert fts_count(store.engine, "hay") == 89
    with reader(store.engine) as conn:
        assert conn.execute(text("SELECT count(*) FROM message_index")).scalar_one() == 601
    assert_all_exact(store.engine)


def test_rewind_in_1000_event_session_repaired_inline(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain([f"thousand item{i}" for i in range(1000)]))
    store.rewind("s1", "m499")
    assert store.index_status()["pending"] == 0
    out = search(store, "item700")
    assert out["results"] == [] and "indexing" not in out
    assert [h["messageId"] for h in search(store, "item499")["results"]] == ["m499"]
    assert fts_count(store.engine, "thousand") == 500
    # continuing after the rewind extends the repaired branch
    store.append("s1", msg("n1", "continuation word", parent="m499"))
    assert found(store, "continuation") == {"n1"}
    assert store.index_status()["pending"] == 0
    assert_all_exact(store.engine)


def test_rewind_in_10000_event_session_left_to_reconciler(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    store.create_session("s2", "agent:main:other")
    store.append("s2", msg("o1", "otherword unaffected"))
    store.append_many("s1", chain([f"tenk item{i}" for i in range(10_000)]))
    assert found(store, "item9999") == {"m9999"}
    store.rewind("s1", "m99")
    assert store.index_status() == {"pending": 1, "indexed": 1, "total": 2}
    out = search(store, "item9999")
    assert out["results"] == [] and out["indexing"] is True
    # other sessions stay searchable while one is pending
    out = search(store, "otherword")
    assert [h["messageId"] for h in out["results"]] == ["o1"] and out["indexing"] is True
    # appends to the dirty session keep it pending (never extend a stale index)
    store.append("s1", msg("n1", "afterrewind word", parent="m99"))
    assert store.index_status()["pending"] == 1
    result = store.reconcile()
    assert result["pending"] == 0
    assert found(store, "item9999") == set()
    assert found(store, "item99") == {"m99"}
    assert found(store, "afterrewind") == {"n1"}
    assert fts_count(store.engine, "tenk") == 100
    assert_all_exact(store.engine)


@pytest.mark.sqlite_only("turns SQLite's foreign keys off to leave orphans behind")
def test_orphaned_index_rows_are_swept(store: TranscriptStore, db_url: str) -> None:
    import sqlite3

    store.create_session("gone", KEY)
    store.append_many("gone", chain(["orphanword one", "orphanword two"]))
    store.create_session("kept", "agent:main:kept")
    store.append("kept", msg("k1", "keptword"))
    path = db_url.removeprefix("sqlite:///")
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute("PRAGMA foreign_keys=OFF")
        raw.execute("DELETE FROM openclaw_sessions WHERE session_id = 'gone'")
    finally:
        raw.close()
    with reader(store.engine) as conn:
        assert (
            conn.execute(
                text("SELECT count(*) FROM message_index WHERE session_id = 'gone'")
            ).scalar_one()
            == 2
        )
    assert found(store, "orphanword") == set()  # never returned, even before the sweep
    store.reconcile()
    with reader(store.engine) as conn:
        for table in ("message_index", "openclaw_index_state", "openclaw_branches"):
            n = conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE session_id = 'gone'")
            ).scalar_one()
            assert n == 0, table
    assert fts_count(store.engine, "orphanword") == 0
    assert found(store, "keptword") == {"k1"}
    fts_integrity(store.engine)


# -- one reconciler at a time ------------------------------------------------------------------


def test_two_reconcilers_in_threads_index_each_session_once(
    store: TranscriptStore, db_url: str
) -> None:
    insert_raw_sessions(store.engine, sessions=60, events_each=40)
    assert store.index_status()["pending"] == 60
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        engine = make_engine(db_url)
        try:
            barrier.wait()
            results.append(Reconciler(engine, batch_rows=100).run())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            engine.dispose()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert len(results) == 2
    assert sum(r["sessions"] for r in results) == 60
    assert sum(r["inserted"] for r in results) == 60 * 40
    assert sum(r["deleted"] for r in results) == 0
    assert store.index_status() == {"pending": 0, "indexed": 60, "total": 60}
    assert fts_count(store.engine, "rawword") == 2400
    assert_all_exact(store.engine)


RECONCILE_SCRIPT = """
import json, sys
from openclaw_fts.engine import make_engine
from openclaw_fts.reconcile import Reconciler
engine = make_engine(sys.argv[1])
r = Reconciler(engine, batch_rows=int(sys.argv[2]), lease_seconds=float(sys.argv[3]))
print("START", flush=True)
print(json.dumps(r.run()), flush=True)
"""


def _spawn(db_url: str, batch_rows: int, lease_seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", RECONCILE_SCRIPT, db_url, str(batch_rows), str(lease_seconds)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_reconcilers_in_processes_index_each_session_once(
    store: TranscriptStore, db_url: str
) -> None:
    insert_raw_sessions(store.engine, sessions=80, events_each=50)
    procs = [_spawn(db_url, 100, 30.0) for _ in range(2)]
    outputs = [p.communicate(timeout=180) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert sum(r["sessions"] for r in results) == 80
    assert sum(r["inserted"] for r in results) == 80 * 50
    assert store.index_status() == {"pending": 0, "indexed": 80, "total": 80}
    assert fts_count(store.engine, "rawword") == 4000
    assert_all_exact(store.engine)


@pytest.mark.slow
def test_killed_reconciler_loses_nothing_and_its_lease_is_taken_over(
    store: TranscriptStore, db_url: str
) -> None:
    insert_raw_sessions(store.engine, sessions=300, events_each=100)
    proc = _spawn(db_url, 50, 2.0)
    try:
        deadline = time.monotonic() + 120
        rows = 0
        while time.monotonic() < deadline and proc.poll() is None:
            with reader(store.engine) as conn:
                rows = conn.execute(text("SELECT count(*) FROM message_index")).scalar_one()
            if rows > 0:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the reconciler finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    killed_at = time.monotonic()
    status = store.index_status()
    assert 0 < status["pending"] <= 300
    # what the killed run committed is exact or still pending; nothing half-done is "clean"
    assert_exact_or_pending(store.engine)
    assert_no_duplicates(store.engine)
    fts_integrity(store.engine)
    # the dead holder's lease (same host, process gone) is taken over at once, not waited out
    result = Reconciler(store.engine, batch_rows=50, lease_seconds=30).run(wait=False)
    assert result["ran"] is True
    assert time.monotonic() - killed_at < 60
    assert store.index_status() == {"pending": 0, "indexed": 300, "total": 300}
    with reader(store.engine) as conn:
        assert conn.execute(text("SELECT count(*) FROM transcript_events")).scalar_one() == 30_000
        assert conn.execute(text("SELECT count(*) FROM message_index")).scalar_one() == 30_000
    assert fts_count(store.engine, "rawword") == 30_000
    assert_all_exact(store.engine)


def test_lease_blocks_a_second_reconciler_until_released(store: TranscriptStore) -> None:
    insert_raw_sessions(store.engine, sessions=3, events_each=5)
    holder = Reconciler(store.engine, lease_seconds=30)
    assert holder.lease.try_acquire()
    try:
        other = Reconciler(store.engine).run(wait=False)
        assert other["ran"] is False and other["pending"] == 3
        out = search(store, "rawword")
        assert out["indexing"] is True
    finally:
        holder.lease.release()
    assert Reconciler(store.engine).run(wait=False)["ran"] is True
    assert store.index_status()["pending"] == 0


# -- import ------------------------------------------------------------------------------------


def test_import_is_idempotent(store: TranscriptStore) -> None:
    first = store.import_jsonl(FIXTURES / "branchy.jsonl", session_key=KEY)
    second = store.import_jsonl(FIXTURES / "branchy.jsonl", session_key=KEY)
    assert first["imported"] == 14
    assert second["imported"] == 0 and second["skippedDuplicates"] == 14
    with reader(store.engine) as conn:
        assert conn.execute(text("SELECT count(*) FROM transcript_events")).scalar_one() == 14
        assert conn.execute(text("SELECT count(*) FROM openclaw_sessions")).scalar_one() == 1
    store.reconcile()
    assert found(store, "logs") == {"a1"}
    third = store.import_jsonl(FIXTURES / "branchy.jsonl", session_key=KEY)
    assert third["imported"] == 0
    assert store.index_status()["pending"] == 0
    assert_all_exact(store.engine)


def test_import_appends_only_new_events(store: TranscriptStore, tmp_path: Path) -> None:
    lines = chain(["growword one", "growword two"])
    store.import_jsonl(events_file(tmp_path / "grow.jsonl", "grow", lines), session_key=KEY)
    store.reconcile()
    assert found(store, "growword") == {"m0", "m1"}
    lines += chain(["growword three"], parent="m1", start=2)
    report = store.import_jsonl(
        events_file(tmp_path / "grow.jsonl", "grow", lines), session_key=KEY
    )
    assert report["imported"] == 1 and report["skippedDuplicates"] == 3
    assert store.index_status()["pending"] == 1
    store.reconcile()
    assert found(store, "growword") == {"m0", "m1", "m2"}


def test_import_reports_malformed_lines_and_keeps_the_rest(
    store: TranscriptStore, tmp_path: Path
) -> None:
    path = events_file(
        tmp_path / "broken.jsonl",
        "broken",
        [
            msg("m1", "goodword first"),
            '{"type": "message", "id": "bad", "message": {',  # line 3: truncated JSON
            msg("m2", "goodword second", parent="m1", role="assistant"),
            '["not", "an", "object"]',  # line 5
            "",  # blank line: not an error
            msg("m3", "goodword third", parent="m2"),
        ],
    )
    report = store.import_jsonl(path, session_key=KEY)
    assert report["imported"] == 4
    assert report["errorCount"] == 2
    assert any(e.startswith(f"{path}:3:") for e in report["errors"]), report["errors"]
    assert any(e.startswith(f"{path}:5:") for e in report["errors"]), report["errors"]
    store.reconcile()
    assert found(store, "goodword") == {"m1", "m2", "m3"}


@pytest.mark.parametrize(
    "content",
    [
        "id,name\n1,alice\n2,bob\n",
        '{"name": "alice"}\n{"name": "bob"}\n',
        "[1, 2, 3]\n",
        "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    ],
    ids=["csv", "json-without-type", "json-arrays", "binary"],
)
def test_non_transcript_file_refused(store: TranscriptStore, tmp_path: Path, content: str) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(
        content.encode("utf-8", "surrogateescape")
        if content.isascii()
        else content.encode("latin-1")
    )
    with pytest.raises(ImportFormatError):
        store.import_jsonl(path, session_key=KEY)
    with reader(store.engine) as conn:
        for table in ("openclaw_sessions", "transcript_events"):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0


def _long_transcript(path: Path, sid: str, events: int) -> Path:
    filler = "lorem ipsum dolor sit amet " * 20
    texts = [f"streamword {i} {filler}" for i in range(events)]
    return events_file(path, sid, chain(texts, prefix="e"))


def _import_peak(store: TranscriptStore, path: Path) -> tuple[dict[str, Any], int]:
    tracemalloc.start()
    try:
        report = store.import_jsonl(path, session_key=KEY)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return report, peak


def test_import_is_streaming(store: TranscriptStore, tmp_path: Path) -> None:
    """Memory used by an import does not grow with the file: a 6x longer file (~8 MB)
    peaks at about the same memory as a short one."""
    store.import_jsonl(_long_transcript(tmp_path / "warm.jsonl", "warm", 600), session_key=KEY)
    small = _long_transcript(tmp_path / "small.jsonl", "small", 2_000)
    large = _long_transcript(tmp_path / "large.jsonl", "large", 12_000)
    small_report, small_peak = _import_peak(store, small)
    large_report, large_peak = _import_peak(store, large)
    assert small_report["imported"] == 2_001 and large_report["imported"] == 12_001
    size = large.stat().st_size
    assert size > 7_000_000
    assert large_peak < small_peak * 1.5, (small_peak, large_peak)
    assert large_peak < size * 0.8, (large_peak, size)  # less than the file itself
    assert store.index_status()["pending"] == 3


def test_import_dir_with_sessions_index(store: TranscriptStore, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    events_file(folder / "aaa.jsonl", "aaa", [msg("x1", "dirword main")])
    events_file(folder / "bbb.jsonl", "bbb", [msg("y1", "dirword child")])
    (folder / "sessions.json").write_text(
        json.dumps(
            {
                "agent:main:main": {"sessionId": "aaa"},
                "agent:main:subagent:1": {"sessionId": "bbb", "spawnedBy": "agent:main:main"},
            }
        )
    )
    report = store.import_dir(folder)
    assert sorted(report["sessions"]) == ["aaa", "bbb"]
    assert store.index_status()["pending"] == 2
    store.reconcile()
    tree_caller = Caller(KEY)  # default visibility "tree": own key + spawned children
    hits = store.search(tree_caller, "dirword")["results"]
    assert {(h["sessionKey"], h["messageId"]) for h in hits} == {
        ("agent:main:main", "x1"),
        ("agent:main:subagent:1", "y1"),
    }


# -- races ---------------------------------------------------------------------------------------


def _on_plan_snapshot(engine: Engine, action: Any) -> None:
    """Run ``action`` once, when the reconciler's read-only planning transaction ends."""
    fired: list[bool] = []

    @event.listens_for(engine, "commit")
    def _hook(conn: Connection) -> None:
        if conn.get_execution_options().get(READ_ONLY) and not fired:
            fired.append(True)
            action()


def test_append_racing_reconcile_leaves_session_pending(
    store: TranscriptStore, db_url: str
) -> None:
    _big_dirty_session(store, needles=100, hay=3950, keep_hay=10)
    rengine = make_engine(db_url)
    stop = threading.Event()

    def race() -> None:
        store.append("big", msg("racer", "racerword late", parent="m109"))
        stop.set()  # let the reconciler write its (now stale) plan, then stop

    _on_plan_snapshot(rengine, race)
    try:
        Reconciler(rengine).run(stop=stop)
    finally:
        rengine.dispose()
    assert stop.is_set()
    pending = assert_exact_or_pending(store.engine)
    assert pending["big"] is True
    out = search(store, "racerword")
    assert out["results"] == [] and out["indexing"] is True
    store.reconcile()
    assert found(store, "racerword") == {"racer"}
    assert_all_exact(store.engine)


def test_append_racing_reconcile_of_imported_session(
    store: TranscriptStore, db_url: str, tmp_path: Path
) -> None:
    lines = chain([f"impword {i}" for i in range(30)])
    store.import_jsonl(events_file(tmp_path / "imp.jsonl", "imp", lines), session_key=KEY)
    rengine = make_engine(db_url)
    stop = threading.Event()

    def race() -> None:
        store.append("imp", msg("late", "lateword", parent="m29"))
        stop.set()

    _on_plan_snapshot(rengine, race)
    try:
        Reconciler(rengine).run(stop=stop)
    finally:
        rengine.dispose()
    assert_exact_or_pending(store.engine)
    store.reconcile()
    assert found(store, "lateword") == {"late"}
    assert len(found(store, "impword")) == 25
    assert_all_exact(store.engine)


def test_incognito_flip_racing_reconcile_is_not_lost(
    store: TranscriptStore, db_url: str, host: sessionmaker[Session]
) -> None:
    _big_dirty_session(store, needles=100, hay=3950, keep_hay=10)
    rengine = make_engine(db_url)

    def race() -> None:
        with host.begin() as db:
            db.get(AgentSession, "big").incognito = True  # type: ignore[union-attr]

    _on_plan_snapshot(rengine, race)
    try:
        Reconciler(rengine).run()
    finally:
        rengine.dispose()
    pending = assert_exact_or_pending(store.engine)
    if not pending["big"]:
        assert fts_count(store.engine, "needle") == 0
    store.reconcile()
    assert fts_count(store.engine, "needle") == 0
    assert_all_exact(store.engine)


def test_appends_while_reconciling_in_a_thread(store: TranscriptStore, db_url: str) -> None:
    _big_dirty_session(store, needles=200, hay=3900, keep_hay=50)
    errors: list[BaseException] = []
    done = threading.Event()

    def reconcile() -> None:
        engine = make_engine(db_url)
        try:
            Reconciler(engine, batch_rows=25).run()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            engine.dispose()
            done.set()

    thread = threading.Thread(target=reconcile)
    thread.start()
    parent = "m249"
    for i in range(60):
        store.append("big", msg(f"live{i}", f"liveword n{i}", parent=parent))
        parent = f"live{i}"
        assert_exact_or_pending(store.engine)
    thread.join(timeout=120)
    assert errors == []
    assert_exact_or_pending(store.engine)
    store.reconcile()
    assert len(found(store, "liveword")) == 25
    assert fts_count(store.engine, "liveword") == 60
    assert_all_exact(store.engine)


# -- writes behind the hooks ---------------------------------------------------------------------


def test_raw_rows_behind_the_hooks_make_the_session_pending(store: TranscriptStore) -> None:
    """Rows written outside the hooks (docs/editing.md) make a clean session pending, even when
    the writer did not maintain ``sessions.last_seq``."""
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["hiddenword alpha", "hiddenword beta"]))
    leaf = {"type": "leaf", "id": "lraw", "parentId": "m1", "targetId": "m0"}
    cols = transcript.derived_columns(2, leaf)
    cols.update(session_id="s1", event=json.dumps(leaf))
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, "
                "target_id, side, timestamp_ms, event) VALUES (:session_id, :seq, :event_id, "
                ":parent_id, :type, :role, :target_id, :side, :timestamp_ms, :event)"
            ),
            cols,
        )
    assert store.index_status()["pending"] == 1
    out = search(store, "beta")
    assert out["results"] == [] and out.get("indexing") is True
    store.reconcile()
    assert found(store, "hiddenword") == {"m0"}


def test_raw_rows_with_only_some_derived_columns_are_read_from_their_json(
    store: TranscriptStore,
) -> None:
    # A writer behind the hooks that fills type and role but not event_id / parent_id: the
    # tree must come from the JSON for that row, as search and history would otherwise differ.
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["alpha first"]))
    event = msg("m1", "zebra partial", parent="m0", role="assistant")
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, type, role, event) "
                "VALUES ('s1', 1, 'message', 'assistant', :e)"
            ),
            {"e": json.dumps(event)},
        )
    store.reconcile()
    assert found(store, "zebra") == {"m1"}
    assert check(store.engine).ok


# -- branches and status ---------------------------------------------------------------------


def test_branches_lists_tips_with_the_active_one(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    assert store.branches("s1") == [{"tipId": None, "tipSeq": None, "active": True}]
    store.append_many("s1", chain(["one", "two", "three"]))
    assert store.branches("s1") == [{"tipId": "m2", "tipSeq": 2, "active": True}]
    store.rewind("s1", "m0")
    store.append("s1", msg("f1", "fork", parent="m0", role="assistant"))
    assert store.branches("s1") == [
        {"tipId": "m2", "tipSeq": 2, "active": False},
        {"tipId": "f1", "tipSeq": 4, "active": True},
    ]
    store.rewind("s1", "m2")
    assert store.branches("s1") == [
        {"tipId": "m2", "tipSeq": 2, "active": True},
        {"tipId": "f1", "tipSeq": 4, "active": False},
    ]
    store.rewind("s1", None)
    tips = store.branches("s1")
    assert [t for t in tips if t["active"]] == [{"tipId": None, "tipSeq": None, "active": True}]
    assert {t["tipId"] for t in tips if not t["active"]} == {"m2", "f1"}


def test_branches_of_an_imported_session_after_reconcile(store: TranscriptStore) -> None:
    store.import_jsonl(FIXTURES / "branchy.jsonl", session_key=KEY)
    store.reconcile()
    assert store.branches(BRANCHY_ID) == [
        {"tipId": "b2", "tipSeq": 7, "active": False},
        {"tipId": "s1", "tipSeq": 9, "active": False},
        {"tipId": "s2", "tipSeq": 10, "active": False},
        {"tipId": "a3", "tipSeq": 13, "active": True},
    ]


def test_index_status_counts(store: TranscriptStore, tmp_path: Path) -> None:
    assert store.index_status() == {"pending": 0, "indexed": 0, "total": 0}
    store.create_session("clean", KEY)
    store.append("clean", msg("c1", "clean"))
    store.create_session("empty", "agent:main:empty")
    assert store.index_status() == {"pending": 0, "indexed": 2, "total": 2}
    store.import_jsonl(FIXTURES / "branchy.jsonl", session_key="agent:main:imported")
    assert store.index_status() == {"pending": 1, "indexed": 2, "total": 3}
    # No header: more events of the stored session "clean", named by the import
    path = jsonl_file(tmp_path / "clean.jsonl", [msg("c2", "behind", parent="c1")])
    store.import_jsonl(path, session_key=KEY, session_id="clean")
    assert store.index_status() == {"pending": 2, "indexed": 1, "total": 3}
    store.reconcile()
    assert store.index_status() == {"pending": 0, "indexed": 3, "total": 3}
    store.delete_session("empty")
    assert store.index_status() == {"pending": 0, "indexed": 2, "total": 2}
    assert_all_exact(store.engine)
