"""The plugin through a real PgBouncer in transaction mode (``TranscriptStore(url,
transaction_pooler=True)``), in front of the suite's PostgreSQL server (tests/pgbouncer.py).

Each client transaction may run on a different server connection, and a server connection
serves several clients in turn, so nothing may live in a server session: appends, searches,
history, reconciles and the reconciler's lease all work through the pooler, no statement is
prepared (two stores sharing the pool's server connections would collide on psycopg's prepared
statement names), the lease leaves no advisory lock on a pooled server connection, is held by
one contender at a time -- pooled or direct -- a killed holder's lease is taken over at once,
and a holder on another host keeps it until its row expires.

Skipped when pgbouncer is not installed (Debian: ``apt-get install pgbouncer``), failed instead
where it is required (``OPENCLAW_FTS_REQUIRE_PGBOUNCER``, set by ``.ci/run``, which installs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from factories import chain, transcript_file
from pgbouncer import REQUIRE_ENV, PgBouncer, unavailable_reason
from pgserver import PgServer

from openclaw_fts import AgentToAgent, Caller, TranscriptStore
from openclaw_fts.errors import UnsupportedDatabaseError
from openclaw_fts.reconcile import Reconciler

ME = "agent:main:main"
ALL = Caller(ME, visibility="all")
#: Searches and appends per store in the shared-connection test: past psycopg's default
#: prepare threshold (5 executions of one statement on one connection).
ROUNDS = 12
#: Reconcilers racing for the lease at once.
CONTENDERS = 6
#: Seconds a killed holder's child process may take to report that it holds the lease.
CHILD_TIMEOUT_S = 60
#: The lease of a holder on another host, in the expiry test.
REMOTE_LEASE_S = 1.5


@pytest.fixture(scope="module")
def bouncer(pg_server: PgServer) -> Iterator[PgBouncer]:
    """PgBouncer in transaction mode in front of the session's server, with one server
    connection per database: every client of a test shares it, turn by turn."""
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            pytest.fail(f"PgBouncer tests not run: {reason} (required here: {REQUIRE_ENV} is set)")
        pytest.skip(f"PgBouncer tests not run: {reason}")
    pooler = PgBouncer(pg_server, pool_size=1).start()
    try:
        yield pooler
    finally:
        pooler.stop()


@pytest.fixture
def urls(pg_url: str, bouncer: PgBouncer) -> tuple[str, str]:
    """(the database through the pooler, the same database directly); migrated to head."""
    TranscriptStore(pg_url, background=False).close()
    return bouncer.url_of(pg_url), pg_url


def _keys(result: Any) -> list[tuple[str, str]]:
    return sorted((hit["sessionKey"], hit["messageId"]) for hit in result["results"])


def _advisory_locks(direct_url: str) -> int:
    with psycopg.connect(direct_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()
    assert row is not None
    return int(row[0])


def test_append_search_and_history_through_the_pooler(urls: tuple[str, str]) -> None:
    """Two stores on the same server connection, each running the same statements past the
    prepare threshold, interleaved: every answer is right and no statement fails (with
    psycopg's prepared statements, the second store's first one would collide with the
    first's: ``prepared statement "_pg3_0" already exists``)."""
    pooled, _direct = urls
    with (
        TranscriptStore(pooled, transaction_pooler=True, background=False) as one,
        TranscriptStore(pooled, transaction_pooler=True, background=False) as two,
    ):
        # Each store runs one statement past the threshold, each in its own committed
        # transaction (a commit keeps psycopg's prepared statements; a rollback drops them).
        for n in range(ROUNDS):
            one.create_session(f"one{n}", f"agent:main:s{n}")
        for n in range(ROUNDS):
            two.create_session(f"two{n}", f"agent:other:s{n}")
        one.create_session("s1", ME)
        two.create_session("s2", "agent:other:main")
        parents: dict[str, str | None] = {"s1": None, "s2": None}
        for i in range(ROUNDS):
            for store, sid in ((one, "s1"), (two, "s2")):
                events = chain([f"walrus{i} in {sid}", f"reply {i}"], start=2 * i)
                events[0]["parentId"] = parents[sid]
                store.append_many(sid, events)
                parents[sid] = events[-1]["id"]
                found = store.search(ALL, f"walrus{i}")
                assert f"m{2 * i}" in {hit["messageId"] for hit in found["results"]}
        everyone = Caller(
            ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["*"])
        )
        assert len(one.search(everyone, "reply", limit=25)["results"]) == 2 * ROUNDS
        history = two.history(Caller("agent:other:main"), "agent:other:main", limit=100)
        assert [m["__openclaw"]["id"] for m in history["messages"]] == [
            f"m{n}" for n in range(2 * ROUNDS)
        ]


def test_a_reconcile_through_the_pooler_indexes_pending_sessions(
    urls: tuple[str, str], tmp_path: Path
) -> None:
    pooled, direct = urls
    path = transcript_file(tmp_path / "imp.jsonl", "imp", ["the quokka ledger", "ok"])
    with TranscriptStore(pooled, transaction_pooler=True, background=False) as store:
        store.import_jsonl(path, session_key=ME)
        assert store.search(ALL, "quokka")["indexing"] is True
        result = store.reconcile()
        assert result["ran"] is True and result["pending"] == 0
        found = store.search(ALL, "quokka")
        assert "indexing" not in found
        assert _keys(found) == [(ME, "m0")]
    assert _advisory_locks(direct) == 0


def test_the_background_reconciler_runs_through_the_pooler(
    urls: tuple[str, str], tmp_path: Path
) -> None:
    pooled, _direct = urls
    path = transcript_file(tmp_path / "bg.jsonl", "bg", ["a narwhal census", "ok"])
    with TranscriptStore(pooled, transaction_pooler=True) as store:
        store.import_jsonl(path, session_key=ME)
        store.search(ALL, "narwhal")  # sees the pending session: starts the reconciler
        store.wait_for_index(30)
        assert store._background.last_error is None
        assert _keys(store.search(ALL, "narwhal")) == [(ME, "m0")]


def test_the_lease_is_a_row_held_by_one_contender_and_no_server_session(
    urls: tuple[str, str],
) -> None:
    pooled, direct = urls
    stores = [
        TranscriptStore(pooled, transaction_pooler=True, background=False)
        for _ in range(CONTENDERS)
    ]
    try:
        reconcilers = [Reconciler(store.write_engine) for store in stores]
        start = threading.Barrier(CONTENDERS)
        won: list[bool] = [False] * CONTENDERS

        def contend(n: int) -> None:
            start.wait()
            won[n] = reconcilers[n].lease.try_acquire()

        threads = [threading.Thread(target=contend, args=(n,)) for n in range(CONTENDERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert won.count(True) == 1
        holder = reconcilers[won.index(True)]
        # Nothing stays on a server connection: the lease is a row, not a lock.
        assert _advisory_locks(direct) == 0
        loser = reconcilers[won.index(False)]
        assert loser.lease.try_acquire() is False
        assert loser.lease.blocked_by is not None
        assert loser.lease.blocked_by.holder == holder.lease.holder  # type: ignore[attr-defined]
        assert loser.run(wait=False)["ran"] is False
        holder.lease.release()
        assert loser.lease.try_acquire() is True
        loser.lease.release()
    finally:
        for store in stores:
            store.close()


def test_pooled_and_direct_reconcilers_exclude_each_other(urls: tuple[str, str]) -> None:
    """One process may reconcile on a direct connection (the session-level advisory lock)
    while pooled stores use the row: neither takes the lease while the other holds it."""
    pooled, direct = urls
    with (
        TranscriptStore(pooled, transaction_pooler=True, background=False) as via_pooler,
        TranscriptStore(direct, background=False) as direct_store,
    ):
        row = Reconciler(via_pooler.write_engine).lease
        lock = Reconciler(direct_store.write_engine).lease
        assert lock.try_acquire() is True
        assert row.try_acquire() is False
        assert row.blocked_by is not None
        lock.release()
        assert row.try_acquire() is True
        assert lock.try_acquire() is False
        assert lock.blocked_by is not None
        assert lock.blocked_by.holder == row.holder  # type: ignore[attr-defined]
        assert _advisory_locks(direct) == 0  # the refused lock was given back
        row.release()
        assert lock.try_acquire() is True
        lock.release()


CHILD = """
import sys, time
from openclaw_fts import TranscriptStore
from openclaw_fts.reconcile import Reconciler
store = TranscriptStore(sys.argv[1], transaction_pooler=True, background=False)
lease = Reconciler(store.write_engine, lease_seconds=3600).lease
assert lease.try_acquire()
print(lease.holder, flush=True)
time.sleep(3600)
"""


def test_a_killed_holders_lease_is_taken_over_at_once(urls: tuple[str, str]) -> None:
    """The holder is SIGKILLed with an hour left on its row: the next reconciler on this host
    sees that the process is gone and takes the lease without waiting for the expiry."""
    pooled, _direct = urls
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, pooled], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        holder = child.stdout.readline().strip()
        assert holder.split(":")[1] == str(child.pid)
    finally:
        child.kill()
        child.wait(CHILD_TIMEOUT_S)
    with TranscriptStore(pooled, transaction_pooler=True, background=False) as store:
        lease = Reconciler(store.write_engine).lease
        assert lease.try_acquire() is True
        lease.release()


def test_transaction_pooler_needs_postgresql(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedDatabaseError, match="transaction_pooler"):
        TranscriptStore(f"sqlite:///{tmp_path / 'a.sqlite'}", transaction_pooler=True)


def test_a_holder_on_another_host_keeps_the_row_until_it_expires(urls: tuple[str, str]) -> None:
    """A holder that cannot be probed (another host) is presumed alive: its row blocks until
    its expiry, then the lease is taken over, and the old holder's renewal fails."""
    pooled, _direct = urls
    with TranscriptStore(pooled, transaction_pooler=True, background=False) as store:
        elsewhere = Reconciler(store.write_engine, lease_seconds=REMOTE_LEASE_S).lease
        elsewhere.holder = "another-host:4242:cafe"  # type: ignore[attr-defined]
        assert elsewhere.try_acquire() is True
        here = Reconciler(store.write_engine).lease
        assert here.try_acquire() is False
        assert here.blocked_by is not None
        assert here.blocked_by.holder == "another-host:4242:cafe"
        assert 0 < here.blocked_by.expires_in <= REMOTE_LEASE_S
        time.sleep(REMOTE_LEASE_S + 0.2)
        assert here.try_acquire() is True
        with store.write_engine.begin() as conn:
            assert elsewhere.renew(conn) is False
        here.release()
