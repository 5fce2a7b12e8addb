"""Several processes on one SQLite file (docs/reliability.md): writers, a searcher, a reconciler.

Each test starts every worker (``tests/workers/*.py`` run with ``sys.executable``) before
waiting for any, so they really overlap; each wait has a timeout, so a hang fails the test.
Afterwards the database is compared with what the workers say they committed: every event
exactly once, in each worker's order, and the index equal to the active branches.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from factories import events_file, msg
from sqlalchemy import Engine, text

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.engine import make_engine

WORKERS = Path(__file__).parent / "workers"
N_WRITERS = 4
EVENTS_PER_WRITER = 1000
SHARED_SESSIONS = 4
#: Seconds a worker may take before the test calls it hung.
WORKER_TIMEOUT = 75.0
#: The timestamp of an imported transcript's first message (epoch ms).
IMPORT_T0 = 1_780_000_000_000

pytestmark = pytest.mark.slow


# -- helpers ---------------------------------------------------------------------------------


def start(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKERS / script), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKERS,
    )


def finish(procs: dict[str, subprocess.Popen[str]], deadline: float) -> dict[str, Any]:
    """Wait for every process (killing all on timeout); each must exit 0 with a JSON line."""
    outputs: dict[str, Any] = {}
    failures = []
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in procs.values():
                other.kill()
            pytest.fail(f"{name} hung (no exit within the timeout)")
        if proc.returncode != 0 or "database is locked" in err:
            failures.append(f"{name} exited {proc.returncode}:\n{err[-3000:]}")
            continue
        lines = [line for line in out.splitlines() if line.startswith("{")]
        outputs[name] = json.loads(lines[-1])
    assert not failures, "\n".join(failures)
    return outputs


def stored_ids(engine: Engine) -> list[tuple[str, int, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT session_id, seq, event_id FROM transcript_events ORDER BY session_id, seq")
        ).all()
    return [(r[0], int(r[1]), r[2]) for r in rows]


def indexed_ids(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return [r[0] for r in conn.execute(text("SELECT event_id FROM message_index"))]


def pending_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM openclaw_sessions s LEFT JOIN openclaw_index_state st "
                    "ON st.session_id = s.session_id WHERE st.id IS NULL OR st.needs_rebuild = 1 "
                    "OR st.indexed_seq < s.last_seq"
                )
            ).scalar_one()
        )


def setup_sessions(db_url: str) -> dict[int, list[str]]:
    """Shared sessions (every writer appends to them) plus one own session per writer."""
    with TranscriptStore(db_url, background=False) as store:
        shared = [f"shared-{i}" for i in range(SHARED_SESSIONS)]
        for sid in shared:
            store.create_session(sid, f"agent:main:{sid}")
        plan = {}
        for w in range(N_WRITERS):
            own = f"own-{w}"
            store.create_session(own, f"agent:main:{own}", spawned_by="agent:main:shared-0")
            plan[w] = [*shared, own]
    return plan


def assert_every_event_once(engine: Engine, writers: dict[str, Any]) -> dict[str, list[str]]:
    """Every reported id stored exactly once, seqs 0..n-1, each writer's order kept."""
    rows = stored_ids(engine)
    ids = [r[2] for r in rows if r[2] is not None and r[2].startswith("w")]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, f"events stored more than once: {dupes[:10]}"
    expected: dict[str, list[str]] = {}
    for out in writers.values():
        assert out["appended"] == EVENTS_PER_WRITER
        for sid, sids in out["ids"].items():
            expected.setdefault(sid, []).extend(sids)
    want = {i for lst in expected.values() for i in lst}
    assert len(want) == N_WRITERS * EVENTS_PER_WRITER
    assert set(ids) == want, (
        f"missing {sorted(want - set(ids))[:10]}, unexpected {sorted(set(ids) - want)[:10]}"
    )
    by_session: dict[str, list[tuple[int, str | None]]] = {}
    for sid, seq, eid in rows:
        by_session.setdefault(sid, []).append((seq, eid))
    with engine.connect() as conn:
        last = dict(conn.execute(text("SELECT session_id, last_seq FROM openclaw_sessions")).all())
    for sid, events in by_session.items():
        seqs = [s for s, _ in events]
        assert seqs == list(range(len(seqs))), f"{sid}: seqs not 0..n-1"
        assert last[sid] == seqs[-1]
        where = {eid: s for s, eid in events}
        for out in writers.values():  # each writer's events keep its append order
            mine = [where[i] for i in out["ids"].get(sid, [])]
            assert mine == sorted(mine), f"{sid}: writer {out['worker']} order broken"
    return expected


def assert_index_exact(engine: Engine, writers: dict[str, Any], extra: set[str]) -> None:
    report = check(engine)
    assert report.ok, report.as_dict()
    indexed = indexed_ids(engine)
    assert len(indexed) == len(set(indexed)), "an event indexed twice"
    want = {i for out in writers.values() for i in out["indexable"]}
    got = {i for i in indexed if i.startswith("w")}
    assert got == want, f"missing {sorted(want - got)[:10]}, extra {sorted(got - want)[:10]}"
    assert {i for i in indexed if not i.startswith("w")} == extra


def imported_transcript(path: Path, session_id: str, n: int) -> set[str]:
    """A JSONL transcript with a branch and a rewind; returns the ids its active branch indexes."""
    events: list[dict[str, Any]] = []
    parent = None
    active: list[str] = []
    for i in range(n):
        eid = f"{session_id}-m{i}"
        text = f"imported {session_id} line {i} rollback migration"
        role = "user" if i % 2 == 0 else "assistant"
        events.append(msg(eid, text, parent=parent, role=role, ts=IMPORT_T0 + i))
        active.append(eid)
        parent = eid
        if i == n // 2:
            # rewind to the first message: everything after it is off the active branch
            events.append(
                {"type": "leaf", "id": f"{session_id}-leaf", "parentId": eid, "targetId": active[0]}
            )
            parent = f"{session_id}-leaf"
            active = active[:1]
    events_file(path, session_id, events)
    return set(active)


# -- tests -----------------------------------------------------------------------------------


def test_four_writers_and_a_searcher(tmp_path: Path) -> None:
    db = tmp_path / "concurrent.sqlite"
    url = f"sqlite:///{db}"
    plan = setup_sessions(url)
    stop = tmp_path / "stop"
    began = time.monotonic()
    searcher = start("search_worker.py", db, stop, WORKER_TIMEOUT)
    writers = {
        f"writer-{w}": start(
            "append_worker.py", db, w, EVENTS_PER_WRITER, ",".join(plan[w]), 1000 + w
        )
        for w in range(N_WRITERS)
    }
    deadline = time.monotonic() + WORKER_TIMEOUT
    wrote = finish(writers, deadline)
    stop.touch()
    read = finish({"searcher": searcher}, deadline)
    elapsed = time.monotonic() - began
    engine = make_engine(url)
    try:
        assert_every_event_once(engine, wrote)
        pending = pending_count(engine)
        assert pending == 0, "plain appends (and small side appends) must leave nothing pending"
        assert_index_exact(engine, wrote, extra=set())
        with TranscriptStore(engine, upgrade=False, background=False) as store:
            out = store.search(Caller("agent:main:main", visibility="all"), "tok3x999 OR tok0x0")
            assert "indexing" not in out
    finally:
        engine.dispose()
    assert read["searcher"]["searches"] > 0
    print(
        f"\n[concurrency] {N_WRITERS} writers x {EVENTS_PER_WRITER} events + 1 searcher "
        f"({read['searcher']['searches']} searches): {elapsed:.1f}s, pending after: {pending}, "
        "0 lost, 0 duplicated"
    )


def test_four_writers_a_searcher_and_a_reconciler(tmp_path: Path) -> None:
    db = tmp_path / "concurrent.sqlite"
    url = f"sqlite:///{db}"
    plan = setup_sessions(url)
    imported: dict[str, set[str]] = {}
    with TranscriptStore(url, background=False) as store:
        for i in range(12):
            sid = f"imported-{i}"
            path = tmp_path / f"{sid}.jsonl"
            # imported-0 is too large for an inline repair: live appends only mark it dirty
            imported[sid] = imported_transcript(path, sid, 5000 if i == 0 else 300 + 50 * i)
            report = store.import_jsonl(path, session_key=f"agent:main:imported-{i}")
            assert report["errorCount"] == 0
        seeded = store.index_status()["pending"]
    assert seeded == 12
    # two imported (pending) sessions also receive live appends from every writer
    for w in plan:
        plan[w] = [*plan[w], "imported-0", "imported-1"]
    stop = tmp_path / "stop"
    began = time.monotonic()
    # The searcher's own background reconciler is off here, so the reconciler process does
    # the work (with it on, the two share the lease; test_four_writers_and_a_searcher runs it).
    searcher = start("search_worker.py", db, stop, WORKER_TIMEOUT, 0)
    reconciler = start("reconcile_worker.py", db, stop, WORKER_TIMEOUT)
    writers = {
        f"writer-{w}": start(
            "append_worker.py", db, w, EVENTS_PER_WRITER, ",".join(plan[w]), 2000 + w
        )
        for w in range(N_WRITERS)
    }
    deadline = time.monotonic() + WORKER_TIMEOUT
    wrote = finish(writers, deadline)
    stop.touch()
    others = finish({"searcher": searcher, "reconciler": reconciler}, deadline)
    elapsed = time.monotonic() - began
    engine = make_engine(url)
    try:
        assert_every_event_once(engine, wrote)
        # No session may be wrongly clean: every clean session's index equals its branch...
        before = check(engine)
        assert before.ok, before.as_dict()
        # ... and the reconciler's last pass (after the writers) left nothing pending.
        pending = pending_count(engine)
        assert pending == 0
        with TranscriptStore(engine, upgrade=False, background=False) as store:
            store.reconcile()
            assert store.index_status()["pending"] == 0
        # Live appends to an imported session chain to its current leaf (the rewound-to
        # first message), so that session's indexed set is its branch plus the live messages.
        extra = set().union(*imported.values())
        assert_index_exact(engine, wrote, extra=extra)
    finally:
        engine.dispose()
    stats = others["reconciler"]
    assert stats["runs"] >= 1
    print(
        f"\n[concurrency] {N_WRITERS} writers x {EVENTS_PER_WRITER} events + searcher "
        f"({others['searcher']['searches']} searches) + reconciler ({stats['runs']} runs, "
        f"{stats['sessions']} sessions, {stats['retried']} retried) with {seeded} imported "
        f"sessions pending at start: {elapsed:.1f}s, pending after: {pending}, 0 lost"
    )


def test_four_processes_open_a_fresh_file_at_once(tmp_path: Path) -> None:
    """First open migrates the file: four processes doing it at the same moment must not fail."""
    db = tmp_path / "fresh.sqlite"
    script = (
        "import sys\n"
        "from openclaw_fts import TranscriptStore, SessionExistsError\n"
        "s = TranscriptStore('sqlite:///' + sys.argv[1])\n"
        "try:\n"
        "    s.create_session('s', 'agent:main:main')\n"
        "except SessionExistsError:\n"
        "    pass\n"
        "for i in range(50):\n"
        "    s.append('s', {'type': 'message', 'id': sys.argv[2] + str(i), 'parentId': None,\n"
        "                   'message': {'role': 'user', 'content': 'fresh ' + str(i)}})\n"
        "s.close()\n"
        "print('{\"ok\": 1}')\n"
    )
    procs = {
        f"opener-{w}": subprocess.Popen(
            [sys.executable, "-c", script, str(db), f"p{w}-"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    }
    finish(procs, time.monotonic() + WORKER_TIMEOUT)
    engine = make_engine(f"sqlite:///{db}")
    try:
        assert len(stored_ids(engine)) == 200
        assert pending_count(engine) == 0
        assert check(engine).ok
    finally:
        engine.dispose()
