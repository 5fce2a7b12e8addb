"""The reconcile lease on PostgreSQL (openclaw_fts/index/postgresql/lease.py): one holder at a
time across processes; a SIGKILLed holder's lock is freed by the server at once; ``renew``
notices a lost connection; ``release`` hands the lease on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import Engine, text

from openclaw_fts.index.postgresql.lease import AdvisoryLease

WORKERS = Path(__file__).parent / "workers"
#: A takeover after the holder's SIGKILL must come this fast (measured: well under 0.1 s).
TAKEOVER_SECONDS = 5.0


def hold(url: str, seconds: float = 60) -> tuple[subprocess.Popen[str], str | None]:
    proc = subprocess.Popen(
        [sys.executable, str(WORKERS / "hold_pg_lease.py"), url, str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKERS,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)["held"]


def test_one_holder_and_a_sigkilled_holder_is_replaced_promptly(
    pg_url: str, pg_engine: Engine
) -> None:
    a, a_name = hold(pg_url)
    try:
        assert a_name is not None
        b = AdvisoryLease(pg_engine, "B")
        assert not b.try_acquire()
        assert b.blocked_by is not None and b.blocked_by.holder == a_name[:63]
        c, c_name = hold(pg_url, 0)  # a third process cannot take it either
        assert c_name is None and c.wait(30) == 0
        os.kill(a.pid, signal.SIGKILL)
        a.wait(30)
        started = time.monotonic()
        while not b.try_acquire():
            assert time.monotonic() - started < TAKEOVER_SECONDS, "lock not freed"
            time.sleep(0.01)
        took = time.monotonic() - started
        print(f"takeover after SIGKILL: {took * 1000:.0f} ms")
        with pg_engine.begin() as conn:
            assert b.renew(conn)
        b.release()
        with pg_engine.begin() as conn:
            assert not b.renew(conn)
        d, d_name = hold(pg_url, 0)  # released: the next process takes it
        assert d_name is not None and d.wait(30) == 0
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()


def test_reacquire_renew_and_release_in_process(pg_engine: Engine) -> None:
    a = AdvisoryLease(pg_engine, "A")
    b = AdvisoryLease(pg_engine, "B")
    assert a.try_acquire() and a.try_acquire()  # held: True again, one lock
    assert not b.try_acquire() and b.blocked_by is not None and b.blocked_by.holder == "A"
    a.release()
    a.release()  # idempotent
    assert b.try_acquire()
    b.release()
    with pg_engine.connect() as conn:  # released connections left no lock and no name behind
        assert (
            conn.execute(
                text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
            ).scalar_one()
            == 0
        )


def test_renew_notices_a_lost_connection(pg_engine: Engine) -> None:
    a = AdvisoryLease(pg_engine, "A")
    assert a.try_acquire()
    with pg_engine.connect() as conn:
        pid = conn.execute(
            text("SELECT pid FROM pg_stat_activity WHERE application_name = 'A'")
        ).scalar_one()
        conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
    time.sleep(0.2)
    with pg_engine.begin() as conn:
        assert not a.renew(conn)  # the reconciler raises LeaseLost and stops writing
    b = AdvisoryLease(pg_engine, "B")
    assert b.try_acquire()
    assert not a.try_acquire()  # its dead connection is dropped; B holds the lock now
    b.release()
    assert a.try_acquire()
    a.release()
