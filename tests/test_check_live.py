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
#: Most messages the writer appends (it stops by itself); the test stops it much earlier.
MAX_WRITER_APPENDS = 50_000
#: Checks run while the writer runs: through the command line, then through the library.
CLI_CHECKS = 3
LIBRARY_CHECKS = 25
#: Seconds the writer may take to start, and to stop once told.
WRITER_TIMEOUT_S = 120.0


def test_check_reports_no_drift_while_a_writer_appends(
    store: TranscriptStore, db_url: str, tmp_path: Path
) -> None:
    for i, sid in enumerate(SESSIONS):
        store.create_session(sid, f"agent:main:live{i}")
        store.append_many(sid, chain(["kestrel one", "kestrel two"], prefix=f"{sid}-"))
    store.reconcile()
    assert check(store.engine).ok
    stop = tmp_path / "stop-writing"
    writer = subprocess.Popen(
        [
            sys.executable,
            str(WORKERS / "append_for.py"),
            db_url,
            str(stop),
            str(MAX_WRITER_APPENDS),
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
        for _ in range(CLI_CHECKS):
            proc = subprocess.run(
                [str(CLI), "--db", db_url, "check", "--json"],
                capture_output=True,
                text=True,
                timeout=WRITER_TIMEOUT_S,
                check=False,
            )
            if proc.returncode != 0:
                false_alarms.append(proc.stdout + proc.stderr)
        for _ in range(LIBRARY_CHECKS):
            report = check(store.engine)
            if not report.ok:
                false_alarms.append(report.as_dict())
        # Every check ran while the writer was appending (else this test could not fail).
        assert writer.poll() is None, "the writer ended before the checks did"
        stop.touch()
        out, err = writer.communicate(timeout=WRITER_TIMEOUT_S)
        assert writer.returncode == 0, err
        result = json.loads(out.splitlines()[-1])
        assert result["stopped"] is True and result["appended"] > 0
        assert false_alarms == []
    finally:
        stop.touch()
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert check(store.engine).ok
