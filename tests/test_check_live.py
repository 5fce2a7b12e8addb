"""``check`` while another process writes: it reports no drift that is not there.

A writer process (``tests/workers/append_for.py``) appends to indexed sessions, one message per
transaction (each writes its index rows in the same transaction), while this process runs
``check`` again and again — through ``openclaw_fts.check.check`` and the real command line. A
check that read a session's events and its index rows at different moments would see a
committed append on one side only and call it drift.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from factories import chain

from openclaw_fts import TranscriptStore
from openclaw_fts.check import check

pytestmark = pytest.mark.both_engines

WORKERS = Path(__file__).parent / "workers"
CLI = Path(sys.executable).parent / "openclaw-fts"
SESSIONS = ("live-a", "live-b", "live-c")
#: Messages the writer appends (bounded: it stops by itself).
WRITER_APPENDS = 3000
#: Checks run while the writer runs, through the library and through the command line.
LIBRARY_CHECKS = 25
CLI_CHECKS = 3
#: Seconds the writer may take to start, and to finish.
WRITER_TIMEOUT_S = 120.0


def test_check_reports_no_drift_while_a_writer_appends(store: TranscriptStore, db_url: str) -> None:
    for i, sid in enumerate(SESSIONS):
        store.create_session(sid, f"agent:main:live{i}")
        store.append_many(sid, chain(["kestrel one", "kestrel two"], prefix=f"{sid}-"))
    store.reconcile()
    assert check(store.engine).ok
    writer = subprocess.Popen(
        [
            sys.executable,
            str(WORKERS / "append_for.py"),
            db_url,
            str(WRITER_APPENDS),
            ",".join(SESSIONS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKERS,
    )
    try:
        assert writer.stdout is not None
        started = json.loads(writer.stdout.readline() or "{}")
        assert started == {"started": True}, writer.stderr.read() if writer.stderr else ""
        false_alarms: list[object] = []
        during = 0
        for _ in range(LIBRARY_CHECKS):
            report = check(store.engine)
            running = writer.poll() is None
            during += running
            if not report.ok:
                false_alarms.append(report.as_dict())
        for _ in range(CLI_CHECKS):
            proc = subprocess.run(
                [str(CLI), "--db", db_url, "check", "--json"],
                capture_output=True,
                text=True,
                timeout=WRITER_TIMEOUT_S,
                check=False,
            )
            during += writer.poll() is None
            if proc.returncode != 0:
                false_alarms.append(proc.stdout + proc.stderr)
        assert false_alarms == []
        # The checks overlapped the writes (else this test could not fail).
        assert during >= LIBRARY_CHECKS // 2, during
        out, err = writer.communicate(timeout=WRITER_TIMEOUT_S)
        assert writer.returncode == 0, err
        assert json.loads(out.splitlines()[-1]) == {"appended": WRITER_APPENDS}
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert check(store.engine).ok
