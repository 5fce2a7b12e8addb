"""SIGKILL at random points (docs/reliability.md: a crash loses nothing but the unfinished batch).

A worker (``tests/workers/crash_*.py``, forked by ``tests/workers/forkserver.py`` so that a
round does not pay for a new interpreter) is killed with SIGKILL after a random delay, many
times over on the same database file (seeded RNG: the points differ, the run is reproducible).
After every kill:
the file opens cleanly (SQLite's integrity check, the store opens and answers), every batch the
worker reported committed is there, no batch is there in part, no session is wrongly clean
(``check`` before any repair), and one reconcile makes ``check(engine).ok``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from factories import events_file, msg
from sqlalchemy import Engine, text

from openclaw_fts import TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.engine import make_engine
from openclaw_fts.reconcile import Reconciler

WORKERS = Path(__file__).parent / "workers"
KILLS = 20
#: The reconciler is killed within this many seconds of being ready (a run takes ~0.05-0.2 s,
#: since the tree is planned from the derived columns).
RECONCILE_KILL_WITHIN_S = 0.05
SEED = 20260917
#: The timestamp of each reconciler-crash transcript's first message (epoch ms).
CRASH_T0 = 1_785_000_000_000
SESSIONS = ("crash-0", "crash-1", "crash-2")

pytestmark = pytest.mark.slow


class ForkServer:
    """``tests/workers/forkserver.py``: forks each job from a warm interpreter (a fresh one
    costs seconds per kill). One job at a time; its stdout JSON lines are read by a thread."""

    def __init__(self, tmp_path: Path) -> None:
        self.stderr_path = tmp_path / "forkserver.stderr"
        self._stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKERS / "forkserver.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=WORKERS,
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        self.pid: int | None = None
        self.seen: list[dict[str, Any]] = []
        self.exit_code: int | None = None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))
        self.lines.put(None)

    def _next(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        try:
            item = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            self.close()
            pytest.fail(f"no {waiting_for!r} line from the job in time")
        if item is None:
            pytest.fail(f"fork server died:\n{self.stderr_path.read_text()[-3000:]}")
        if "pid" in item:
            self.pid = item["pid"]
        elif "exited" in item:
            self.exit_code = item["code"]
        else:
            self.seen.append(item)
        return item

    def start(self, script: str, *args: object) -> None:
        assert self.proc.stdin is not None
        self.pid, self.seen, self.exit_code = None, [], None
        self.proc.stdin.write(json.dumps({"script": script, "argv": [str(a) for a in args]}))
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def wait_for(self, key: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            item = self._next(deadline, key)
            if key in item:
                return
            if "exited" in item:
                pytest.fail(
                    f"job exited ({item['code']}) before {key!r}:\n"
                    f"{self.stderr_path.read_text()[-3000:]}"
                )

    def kill(self) -> tuple[list[dict[str, Any]], bool]:
        """SIGKILL the job; returns every line it printed and whether it was still running."""
        deadline = time.monotonic() + 30
        while self.pid is None:
            self._next(deadline, "pid")
        if self.exit_code is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        while self.exit_code is None:
            self._next(deadline, "exited")
        killed = self.exit_code == -signal.SIGKILL
        assert killed or self.exit_code == 0, (
            f"job failed ({self.exit_code}):\n{self.stderr_path.read_text()[-3000:]}"
        )
        return self.seen, killed

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._thread.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def assert_opens_cleanly(db: Path, url: str) -> None:
    raw = sqlite3.connect(db)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        raw.close()
    with TranscriptStore(url, background=False) as store:  # opens (and upgrades) fine
        store.index_status()


def session_seqs_contiguous(engine: Engine) -> None:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT s.session_id, s.last_seq, count(e.seq), coalesce(max(e.seq), -1) "
                "FROM openclaw_sessions s LEFT JOIN transcript_events e ON e.session_id = "
                "s.session_id "
                "GROUP BY s.session_id"
            )
        ).all()
    for sid, last_seq, count, max_seq in rows:
        assert count == max_seq + 1 == last_seq + 1, f"{sid}: seqs have a gap or last_seq drifts"


def reconcile_and_check(engine: Engine) -> dict[str, Any]:
    """One reconcile (a killed holder's lease is taken over at once), then the index is
    exact."""
    out = Reconciler(engine, lease_seconds=1.0).run()
    report = check(engine)
    assert report.ok, report.as_dict()
    assert report.status["pending"] == 0, report.status
    return out


# -- writer killed inside append_many --------------------------------------------------------


def test_writer_killed_mid_append_many(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite"
    url = f"sqlite:///{db}"
    with TranscriptStore(url, background=False) as store:
        for sid in SESSIONS:
            store.create_session(sid, f"agent:main:{sid}")
    rng = random.Random(SEED)
    committed: dict[tuple[int, int], dict[str, Any]] = {}  # (run, batch) -> commit line
    begun: dict[tuple[int, int], dict[str, Any]] = {}
    in_flight_kills = 0
    began = time.monotonic()
    engine = make_engine(url)
    worker = ForkServer(tmp_path)
    try:
        for run in range(KILLS):
            worker.start("crash_writer", db, run, rng.randrange(2**31), ",".join(SESSIONS))
            worker.wait_for("ready")
            time.sleep(rng.uniform(0.02, 0.45))
            lines, alive = worker.kill()
            assert alive, "the writer finished before it was killed"
            for line in lines:
                if "begin" in line:
                    begun[(run, line["begin"])] = line
                if "commit" in line:
                    committed[(run, line["commit"])] = line
            last = lines[-1]
            in_flight_kills += "begin" in last

            assert_opens_cleanly(db, url)
            engine.dispose()
            with engine.connect() as conn:
                stored = conn.execute(
                    text(
                        "SELECT session_id, seq, event_id FROM transcript_events "
                        "WHERE event_id LIKE 'r%'"
                    )
                ).all()
            batches: dict[tuple[int, int], list[tuple[str, int]]] = defaultdict(list)
            for sid, seq, eid in stored:
                r, b, _ = eid[1:].split("-")
                batches[(int(r), int(b[1:]))].append((sid, int(seq)))
            # nothing stored that was never handed to append_many
            assert set(batches) <= set(begun), sorted(set(batches) - set(begun))[:5]
            for key, rows in batches.items():  # all of a batch or none of it
                assert len(rows) == begun[key]["n"], f"batch {key} half-written: {len(rows)}"
                sids = {sid for sid, _ in rows}
                assert sids == {begun[key]["sid"]}
                seqs = sorted(seq for _, seq in rows)
                assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            for key, line in committed.items():  # nothing reported committed is lost
                assert key in batches, f"committed batch {key} lost"
                seqs = sorted(seq for _, seq in batches[key])
                assert [seqs[0], seqs[-1]] == line["seqs"]
            session_seqs_contiguous(engine)
            before = check(engine)  # no session wrongly clean, before any repair
            assert before.ok, before.as_dict()
            reconcile_and_check(engine)
    finally:
        worker.close()
        engine.dispose()
    elapsed = time.monotonic() - began
    print(
        f"\n[crash] writer SIGKILLed {KILLS}x ({in_flight_kills} inside append_many), "
        f"{len(committed)} committed batches / "
        f"{sum(line['n'] for line in committed.values())} events all kept, "
        f"0 half-written: {elapsed:.1f}s"
    )
    assert in_flight_kills >= KILLS // 4, "kills should land inside a transaction"


# -- reconciler killed in the middle of a batch ----------------------------------------------


def write_transcript(path: Path, sid: str, n: int, rng: random.Random) -> None:
    """A transcript with branches: a rewind, a branch switch back, and text on every branch."""
    events: list[dict[str, Any]] = []
    ids: list[str] = []
    parent: str | None = None
    for i in range(n):
        eid = f"{sid}-{i}"
        text = f"reconcile crash {sid} message {i} " + "lorem " * rng.randint(1, 9)
        role = "user" if i % 2 == 0 else "assistant"
        events.append(msg(eid, text, parent=parent, role=role, ts=CRASH_T0 + i * 1000))
        ids.append(eid)
        parent = eid
        if rng.random() < 0.01 and len(ids) > 3:
            target = rng.choice(ids[:-1])
            events.append(
                {"type": "leaf", "id": f"{sid}-leaf{i}", "parentId": eid, "targetId": target}
            )
            parent = f"{sid}-leaf{i}"
    events_file(path, sid, events)


def event_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM transcript_events")).scalar_one())


def test_reconciler_killed_mid_batch(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite"
    url = f"sqlite:///{db}"
    rng = random.Random(SEED + 1)
    mid_run_kills = 0
    batches_before_kill = 0
    began = time.monotonic()
    store = TranscriptStore(url, background=False)
    engine = make_engine(url)
    worker = ForkServer(tmp_path)
    try:
        for run in range(KILLS):
            # fresh pending work each round: new transcripts, and more lines for an old one
            for k in range(3):
                sid = f"rc{run}-{k}"
                path = tmp_path / f"{sid}.jsonl"
                write_transcript(path, sid, rng.randint(150, 500), rng)
                assert store.import_jsonl(path)["errorCount"] == 0
            if run:
                grown = tmp_path / f"rc{run - 1}-0.jsonl"
                write_transcript(grown, f"rc{run - 1}-0", 700, random.Random(run))
                store.import_jsonl(grown)
            pending = store.index_status()["pending"]
            assert pending >= 3
            events = event_count(engine)

            worker.start("crash_reconciler", db)
            worker.wait_for("ready")
            time.sleep(rng.uniform(0.0, RECONCILE_KILL_WITHIN_S))
            lines, alive = worker.kill()
            finished = any("done" in line for line in lines)
            mid_run_kills += alive and not finished
            batches_before_kill += sum("progress" in line for line in lines)

            assert_opens_cleanly(db, url)
            engine.dispose()
            assert event_count(engine) == events, "a reconciler must never touch events"
            before = check(engine)  # a killed reconciler leaves nothing wrongly clean
            assert before.ok, before.as_dict()
            reconcile_and_check(engine)
    finally:
        worker.close()
        store.close()
        engine.dispose()
    elapsed = time.monotonic() - began
    print(
        f"\n[crash] reconciler SIGKILLed {KILLS}x ({mid_run_kills} in the middle of a run), "
        f"index exact after each: {elapsed:.1f}s"
    )
    assert mid_run_kills >= KILLS // 4, "kills should land inside a reconcile run"
