"""Dropped connections on PostgreSQL (docs/reliability.md, "Dropped connections").

The server ends the plugin's backends (``pg_terminate_backend``, what an administrator, a
pooler's timeout or an out-of-memory kill does) in the middle of an append, an import and a
reconcile, and is restarted with ``pg_ctl -m immediate`` (a crash: recovery from the WAL) in the
middle of a long ``import_dir``. The call that was cut fails with the connection error; nothing
it did is there in part (an import's retry stores exactly what a clean import stores,
docs/import.md); the reconciler's lease is free again at once; the store's next call of every
kind works without the caller reconnecting; the background reconciler waits out the cut and
finishes.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from factories import chain, msg, transcript_file
from fault_checks import CALLER, KEY, found, stored_ids, words
from pgserver import PgServer
from sqlalchemy.exc import DBAPIError

from openclaw_fts import TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.models import AgentSession
from openclaw_fts.reconcile import LeaseLost

SEED = 41
#: Files and messages per file of the imports that are cut.
FILES = 3
MESSAGES = 120
#: Imports and reconciles cut at a random moment, one round each.
IMPORT_ROUNDS = 3
#: Rounds each random-cut test may add until one cut has landed inside a call: the moment is
#: drawn from a timed clean round, so on a loaded machine a cut can fall after the call ends.
MAX_ROUNDS = 15
RECONCILE_ROUNDS = 3
#: Rows per reconciler batch: many batches, so a cut lands between two of them.
BATCH_ROWS = 20


def admin_url(pg_server: PgServer) -> str:
    return pg_server.url().replace("postgresql+psycopg://", "postgresql://")


def database_of(url: str) -> str:
    return url.split("@/", 1)[1].split("?", 1)[0]


#: How long ``pg_terminate_backend`` waits for a backend to be gone (ms): a cut connection is
#: closed before the next call, as it is when an administrator or a timeout ends it.
TERMINATE_WAIT_MS = 5_000


def terminate(pg_server: PgServer, url: str) -> int:
    """End every backend on ``url``'s database but the caller's, waiting until they are gone;
    returns how many."""
    with psycopg.connect(admin_url(pg_server), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, %s) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (TERMINATE_WAIT_MS, database_of(url)),
        ).fetchall()
    return len(rows)


def make_folder(path: Path, prefix: str, rng: random.Random) -> Path:
    """``FILES`` transcripts of ``MESSAGES`` messages, sessions ``{prefix}0``..."""
    path.mkdir(parents=True)
    for n in range(FILES):
        texts = [words(rng, 12) for _ in range(MESSAGES)]
        transcript_file(path / f"{prefix}{n}.jsonl", f"{prefix}{n}", texts)
    return path


def assert_imported_like(store: TranscriptStore, control: TranscriptStore, prefix: str) -> None:
    for n in range(FILES):
        sid = f"{prefix}{n}"
        assert stored_ids(store, sid) == stored_ids(control, sid), sid


def cut_after(delay: float, action: Callable[[], object]) -> threading.Timer:
    timer = threading.Timer(delay, action)
    timer.daemon = True
    timer.start()
    return timer


def test_a_terminated_append_is_not_half_there_and_the_next_call_works(
    pg_server: PgServer, pg_url: str
) -> None:
    store = TranscriptStore(pg_url, background=False)
    try:
        store.create_session("s1", KEY)
        store.append_many("s1", chain(["puffin one", "puffin two"]))
        # Hold the session's row so the next append waits inside its transaction, then end
        # every plugin backend while it waits: the append is cut mid-transaction.
        blocker = psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://"))
        blocker.execute("SELECT 1 FROM openclaw_sessions WHERE session_id = 's1' FOR UPDATE")
        outcome: list[BaseException | None] = []

        def cut_append() -> None:
            try:
                store.append_many(
                    "s1", [msg("m2", "puffin three", parent="m1"), msg("m3", "four", parent="m2")]
                )
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        writer = threading.Thread(target=cut_append)
        writer.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with psycopg.connect(admin_url(pg_server), autocommit=True) as conn:
                waiting = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                    "AND wait_event_type = 'Lock'",
                    (database_of(pg_url),),
                ).fetchone()
            if waiting and waiting[0]:
                break
            time.sleep(0.02)
        with psycopg.connect(admin_url(pg_server), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND wait_event_type = 'Lock'",
                (database_of(pg_url),),
            )
        writer.join(30)
        blocker.close()
        assert len(outcome) == 1 and isinstance(outcome[0], DBAPIError), outcome
        assert stored_ids(store, "s1") == ["m0", "m1"]  # nothing of the cut batch
        # The next calls of every kind work on the same store.
        store.append_many(
            "s1", [msg("m2", "puffin three", parent="m1"), msg("m3", "four", parent="m2")]
        )
        assert stored_ids(store, "s1") == ["m0", "m1", "m2", "m3"]
        assert found(store, "puffin") == ["m2", "m1", "m0"] or len(found(store, "puffin")) == 3
        terminate(pg_server, pg_url)  # the pool's idle connections too: pre-ping replaces them
        assert len(store.history(CALLER, KEY)["messages"]) == 4
        store.append("s1", msg("m4", "after the pool was cut", parent="m3"))
        assert check(store.engine).ok
    finally:
        store.close()


def test_imports_cut_at_random_moments_are_completed_by_their_retry(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    """Each round imports a new folder while a timer ends the plugin's backends at a seeded
    random moment of the import (timed by an uncut round first): the cut import fails with the
    connection error (or finishes, if the cut fell between two transactions), and running it
    again stores exactly what a clean import stores."""
    rng = random.Random(SEED + 1)
    store = TranscriptStore(pg_url, background=False)
    control = TranscriptStore(f"sqlite:///{tmp_path / 'control.db'}", background=False)
    try:
        started = time.monotonic()
        store.import_dir(make_folder(tmp_path / "r0", "r0f", rng))
        took = time.monotonic() - started
        cut = 0
        rounds = 0
        for round_ in range(1, MAX_ROUNDS + 1):
            if round_ > IMPORT_ROUNDS and cut >= 1:
                break
            rounds = round_
            prefix = f"r{round_}f"
            folder = make_folder(tmp_path / f"r{round_}", prefix, rng)
            control.import_dir(folder)
            timer = cut_after(rng.uniform(0.05, 0.9) * took, lambda: terminate(pg_server, pg_url))
            try:
                store.import_dir(folder)
            except DBAPIError:
                cut += 1
            timer.join()
            report = store.import_dir(folder)  # the retry, on the same store
            assert not report["errors"], report
            assert_imported_like(store, control, prefix)
        print(f"imports: {cut} of {rounds} cut mid-import, every retry exact")
        assert cut >= 1, "no cut landed inside an import"
        store.reconcile()
        assert check(store.engine).ok
    finally:
        store.close()
        control.close()


def test_reconciles_cut_at_random_moments_give_the_lease_back(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    """Each round imports new (pending) sessions and reconciles them while a timer ends the
    plugin's backends — the lease's own connection included — at a seeded random moment; the
    next reconcile takes the lease at once (the server freed the advisory lock with its
    connection) and finishes; the index is exact after every round."""
    rng = random.Random(SEED + 2)
    store = TranscriptStore(pg_url, background=False, reconcile_batch_rows=BATCH_ROWS)
    try:
        store.import_dir(make_folder(tmp_path / "r0", "r0f", rng))
        started = time.monotonic()
        store.reconcile()
        took = time.monotonic() - started
        cut = 0
        rounds = 0
        for round_ in range(1, MAX_ROUNDS + 1):
            if round_ > RECONCILE_ROUNDS and cut >= 1:
                break
            rounds = round_
            store.import_dir(make_folder(tmp_path / f"r{round_}", f"r{round_}f", rng))
            timer = cut_after(rng.uniform(0.05, 0.9) * took, lambda: terminate(pg_server, pg_url))
            try:
                store.reconcile()
            except (DBAPIError, LeaseLost):
                cut += 1
                mid = check(store.engine)
                assert not mid.drift and mid.orphans == 0, mid
            timer.join()
            waits: list[Any] = []
            started = time.monotonic()
            store.reconcile(on_wait=waits.append)
            assert not waits and time.monotonic() - started < 30
            assert store.index_status()["pending"] == 0
            assert check(store.engine).ok
        print(f"reconciles: {cut} of {rounds} cut mid-run, lease free at once")
        assert cut >= 1, "no cut landed inside a reconcile"
    finally:
        store.close()


def test_an_immediate_restart_during_import_dir(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    """``pg_ctl stop -m immediate`` (a crash: no checkpoint, recovery replays the WAL, and
    under the test server's ``synchronous_commit=off`` the last commits may be gone) and a
    start, between two files of an ``import_dir``: the import goes on on fresh connections or
    fails with the connection error, and its retry stores exactly what a clean import does."""
    rng = random.Random(SEED + 3)
    store = TranscriptStore(pg_url, background=False)
    control = TranscriptStore(f"sqlite:///{tmp_path / 'control.db'}", background=False)
    try:
        folder = make_folder(tmp_path / "r1", "r1f", rng)
        control.import_dir(folder)
        files = 0

        def crash(_done: int) -> None:
            nonlocal files
            files += 1
            if files == 1:
                pg_server.shutdown("immediate")
                pg_server.start_again()

        with contextlib.suppress(DBAPIError):
            store.import_dir(folder, progress=crash)
        assert files >= 1
        report = store.import_dir(folder)
        assert not report["errors"], report
        assert_imported_like(store, control, "r1f")
        store.reconcile()
        assert check(store.engine).ok
        with store.read_session() as db:
            assert db.query(AgentSession).count() == FILES
    finally:
        store.close()
        control.close()


def test_the_background_reconciler_survives_its_connections_being_cut(
    pg_server: PgServer, pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="openclaw_fts.background")
    store = TranscriptStore(pg_url, reconcile_batch_rows=BATCH_ROWS)
    try:
        cuts = 0
        retried: list[logging.LogRecord] = []
        # A cut can fall between two of the job's transactions (nothing to retry): new pending
        # sessions and new cuts until one lands inside a run, as the random-cut tests do.
        for round_ in range(MAX_ROUNDS):
            folder = make_folder(tmp_path / f"b{round_}", f"b{round_}f", random.Random(SEED + 4))
            store.import_dir(folder)
            answer: Any = store.search(CALLER, "anything")  # starts the background reconciler
            assert answer.get("indexing") is True
            deadline = time.monotonic() + 20
            while store.index_status()["pending"] == FILES and time.monotonic() < deadline:
                time.sleep(0.005)
            landed = 0
            while landed < 3 and store.index_status()["pending"] > 0:
                landed += 1
                terminate(pg_server, pg_url)
                time.sleep(0.05)
            cuts += landed
            store.wait_for_index(timeout=60)
            assert store.index_status()["pending"] == 0
            assert check(store.engine).ok
            retried = [r for r in caplog.records if "running again" in r.getMessage()]
            if retried:
                break
        print(f"background reconciler: {cuts} cuts, {len(retried)} waits, finished")
        assert cuts and retried, (cuts, caplog.text)
    finally:
        store.close()


#: Messages holding one common word: enough for ``optimize()`` to start tracking its impact
#: list (``index.impact.FREQUENT_TERM_MIN_DOCS`` is 2,000).
FREQUENT_DOCS = 2_100


def wait_for_lock_waiter(pg_server: PgServer, url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg.connect(admin_url(pg_server), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                "AND wait_event_type = 'Lock'",
                (database_of(url),),
            ).fetchone()
        if row and row[0]:
            return
        time.sleep(0.02)
    raise AssertionError("nothing waited for the lock")


def terminate_lock_waiters(pg_server: PgServer, url: str) -> None:
    with psycopg.connect(admin_url(pg_server), autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid, %s) FROM pg_stat_activity "
            "WHERE datname = %s AND wait_event_type = 'Lock'",
            (TERMINATE_WAIT_MS, database_of(url)),
        )


def test_an_impact_list_merge_cut_midway_leaves_no_trace(pg_server: PgServer, pg_url: str) -> None:
    """``optimize()`` starts tracking a frequent word's impact list; its backend is ended while
    it waits to write the list's rows (the word itself already recorded in its transaction):
    nothing of it stays, the lists match the index rows, and the next ``optimize()`` does it."""
    store = TranscriptStore(pg_url, background=False)
    try:
        store.create_session("s1", KEY)
        texts = [f"walrus note {n}" for n in range(FREQUENT_DOCS)]
        store.append_many("s1", chain(texts))
        blocker = psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://"))
        blocker.execute("LOCK TABLE message_impact IN SHARE MODE")
        outcome: list[BaseException | None] = []

        def optimize() -> None:
            try:
                store.optimize()
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=optimize)
        worker.start()
        wait_for_lock_waiter(pg_server, pg_url)
        terminate_lock_waiters(pg_server, pg_url)
        worker.join(60)
        blocker.close()
        assert len(outcome) == 1 and isinstance(outcome[0], DBAPIError), outcome
        mid = check(store.engine)
        assert mid.ok and not mid.impact_drift, mid
        with store.engine.connect() as conn:
            tracked = conn.exec_driver_sql("SELECT count(*) FROM message_impact_terms").scalar()
        assert tracked == 0  # the cut transaction left no word half-tracked
        store.optimize()
        with store.engine.connect() as conn:
            tracked = conn.exec_driver_sql("SELECT count(*) FROM message_impact_terms").scalar()
        assert tracked and tracked >= 1
        final = check(store.engine)
        assert final.ok and not final.impact_drift, final
        assert len(found(store, "walrus")) > 0
    finally:
        store.close()
