"""Searches served by a real PostgreSQL hot standby (``TranscriptStore(url, read_url=...)``):
a standby streaming from a primary, both started by the test (tests/pgserver.py).

A committed message becomes searchable on the standby, and the store's own or a caller's
just-committed message is always found (the read waits for the standby's replay, or reads from
the primary); a standby is never written -- not by a search that finds pending sessions, not by
opening a store on it, not by a reconcile -- and reports pending sessions as it sees them;
after a failover (``pg_ctl promote``) every committed message is searchable."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from factories import chain, transcript_file
from pgserver import PgServer
from sqlalchemy import Engine, event

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.engine import make_engine
from openclaw_fts.errors import UnsupportedDatabaseError
from openclaw_fts.index.postgresql.replica import (
    LONG_PAGE_HEADER,
    SHORT_PAGE_HEADER,
    parse_lsn,
    records_end,
)

#: Longest wait for the standby to replay what the test wrote on the primary.
REPLAY_TIMEOUT_S = 30.0
POLL_S = 0.02
#: A store's replica_wait_ms where a test needs the standby to answer (a loaded CI machine).
REPLAY_WAIT_MS = 30_000
ALL = Caller("agent:main:main", visibility="all")


@pytest.fixture(scope="module")
def pair(pg_server: PgServer) -> Iterator[tuple[PgServer, PgServer]]:
    """A primary and a hot standby streaming from it (pg_server: the skip-or-fail gate)."""
    primary = PgServer(pg_server.bindir).start()
    try:
        standby = primary.standby()
        try:
            yield primary, standby
        finally:
            standby.stop()
    finally:
        primary.stop()


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def wait_replayed(primary: PgServer, standby: PgServer, database: str = "postgres") -> None:
    """Until the standby replayed everything the primary wrote so far."""
    with psycopg.connect(_libpq(primary.url(database))) as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        assert row is not None
        target = row[0]
    deadline = time.monotonic() + REPLAY_TIMEOUT_S
    while True:
        try:
            with psycopg.connect(_libpq(standby.url(database))) as conn:
                done = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if done is not None and done[0]:
                    return
        except psycopg.OperationalError:  # the database is not replayed yet
            pass
        assert time.monotonic() < deadline, "the standby did not catch up"
        time.sleep(POLL_S)


@pytest.fixture
def database(pair: tuple[PgServer, PgServer]) -> Iterator[str]:
    """A fresh database on the primary, migrated, already on the standby."""
    primary, standby = pair
    name = f"r{time.monotonic_ns()}"
    with psycopg.connect(_libpq(primary.url()), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    TranscriptStore(primary.url(name), background=False).close()  # migrated to head
    wait_replayed(primary, standby, name)
    try:
        yield name
    finally:
        with psycopg.connect(_libpq(standby.url()), autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")
        with psycopg.connect(_libpq(primary.url()), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Counted:
    """A real engine on the standby that counts the statements it ran."""

    def __init__(self, url: str) -> None:
        self.engine: Engine = make_engine(url)
        self.statements: list[str] = []
        event.listen(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.statements.append(statement)

    def searches(self) -> int:
        return sum("ts_rank" in s for s in self.statements)


@pytest.fixture
def standby_engine(pair: tuple[PgServer, PgServer], database: str) -> Iterator[Counted]:
    counted = Counted(pair[1].url(database))
    try:
        yield counted
    finally:
        counted.engine.dispose()


def _on_standby(standby: PgServer, database: str, sql: str) -> Any:
    with psycopg.connect(_libpq(standby.url(database)), autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
        return None if row is None else row[0]


def _keys(result: Any) -> list[tuple[str, str]]:
    return sorted((hit["sessionKey"], hit["messageId"]) for hit in result["results"])


def write_jsonl(path: Path, session_id: str, texts: list[str]) -> Path:
    return transcript_file(path, session_id, texts, prefix=f"{session_id}-")


def test_a_committed_message_becomes_searchable_on_the_standby(
    pair: tuple[PgServer, PgServer], database: str, standby_engine: Counted
) -> None:
    primary, standby = pair
    with TranscriptStore(primary.url(database), background=False) as writer:
        writer.create_session("s1", "agent:main:main")
        writer.append_many("s1", chain(["the heliotrope ledger", "noted"]))
    with TranscriptStore(
        primary.url(database), read_url=standby_engine.engine, background=False
    ) as reader:
        reader.read_after()  # the writer is another process: the caller says it committed
        found = reader.search(ALL, "heliotrope")
        assert _keys(found) == [("agent:main:main", "m0")]
        assert "indexing" not in found
        assert standby_engine.searches() == 1
        history = reader.history(ALL, "agent:main:main")
        assert [m["__openclaw"]["id"] for m in history["messages"]] == ["m0", "m1"]
        assert reader.index_status() == {"pending": 0, "indexed": 1, "total": 1}
        # Served by the standby alone: with the primary gone, the same reads still answer.
        primary.shutdown()
        try:
            assert _keys(reader.search(ALL, "heliotrope")) == [("agent:main:main", "m0")]
            assert reader.branches("s1")[0]["tipId"] == "m1"
        finally:
            primary.start_again()
    assert _on_standby(standby, database, "SELECT pg_is_in_recovery()") is True


@pytest.fixture(params=["off", "on"])
def synchronous_commit(pair: tuple[PgServer, PgServer], request: Any) -> Iterator[str]:
    """The primary's ``synchronous_commit`` for one test (the fence reads the insert position
    when it is off, the flush position when it is on)."""
    primary, _ = pair

    def set_to(value: str) -> None:
        with psycopg.connect(_libpq(primary.url()), autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET synchronous_commit = {value}")
            conn.execute("SELECT pg_reload_conf()")

    set_to(str(request.param))
    try:
        yield str(request.param)
    finally:
        set_to("off")


def test_the_stores_own_write_is_found_at_once(
    pair: tuple[PgServer, PgServer], database: str, standby_engine: Counted, synchronous_commit: str
) -> None:
    primary, _ = pair
    with TranscriptStore(
        primary.url(database),
        read_url=standby_engine.engine,
        background=False,
        replica_wait_ms=REPLAY_WAIT_MS,
    ) as store:
        store.create_session("s1", "agent:main:main")
        for i in range(20):  # each search right after its own commit
            store.append("s1", {**chain([f"marigold number{i}"])[0], "id": f"x{i}"})
            hits = store.search(ALL, f"number{i}")
            assert _keys(hits) == [("agent:main:main", f"x{i}")]
        assert standby_engine.searches() == 20  # all on the standby (it caught up in time)


def test_a_lagging_standby_falls_back_to_the_primary(
    pair: tuple[PgServer, PgServer], database: str, standby_engine: Counted
) -> None:
    primary, standby = pair
    with TranscriptStore(
        primary.url(database), read_url=standby_engine.engine, background=False, replica_wait_ms=50
    ) as store:
        store.create_session("s1", "agent:main:main")
        wait_replayed(primary, standby, database)
        _on_standby(standby, database, "SELECT pg_wal_replay_pause()")
        store.append_many("s1", chain(["the obsidian compass"]))
        started = time.monotonic()
        assert _keys(store.search(ALL, "obsidian")) == [("agent:main:main", "m0")]
        assert time.monotonic() - started < 5  # waited 50 ms, then asked the primary
        assert standby_engine.searches() == 0
        assert _on_standby(standby, database, "SELECT count(*) FROM message_index") == 0
        # A host's own commit (not through the store): read_after() with its position.
        with psycopg.connect(_libpq(primary.url(database))) as conn:
            conn.execute("UPDATE openclaw_sessions SET archived = false")
            conn.commit()
            row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            assert row is not None
        store.read_after(row[0])
        assert _keys(store.search(ALL, "obsidian")) == [("agent:main:main", "m0")]
        assert standby_engine.searches() == 0
        _on_standby(standby, database, "SELECT pg_wal_replay_resume()")
        wait_replayed(primary, standby, database)
        assert _keys(store.search(ALL, "obsidian")) == [("agent:main:main", "m0")]
        assert standby_engine.searches() == 1  # caught up: back on the standby


def test_pending_sessions_are_reported_as_the_standby_sees_them_and_nothing_writes(
    pair: tuple[PgServer, PgServer], database: str, standby_engine: Counted, tmp_path: Path
) -> None:
    primary, standby = pair
    with TranscriptStore(primary.url(database), background=False) as writer:
        writer.import_jsonl(
            write_jsonl(tmp_path / "a.jsonl", "imp", ["the quokka ledger", "ok"]),
            session_key="agent:main:main",
        )
        wait_replayed(primary, standby, database)
        _on_standby(standby, database, "SELECT pg_wal_replay_pause()")
        assert writer.reconcile()["pending"] == 0  # indexed on the primary only
    # A store reading from the standby: background reconciles on (they run on the primary).
    with TranscriptStore(primary.url(database), read_url=standby_engine.engine) as reader:
        found = reader.search(ALL, "quokka")
        assert found["indexing"] is True  # the standby has not replayed the reconcile
        assert reader.index_status()["pending"] == 1
        reader.wait_for_index(10)
        assert reader._background.last_error is None
    # A store opened ON the standby (its url): opens at head without a write, searches, and
    # neither its background reconcile nor an explicit one writes or fails.
    with TranscriptStore(standby.url(database)) as on_standby:
        found = on_standby.search(ALL, "quokka")
        assert found["indexing"] is True
        on_standby.wait_for_index(10)
        assert on_standby._background.last_error is None
        assert on_standby.reconcile()["ran"] is False
    _on_standby(standby, database, "SELECT pg_wal_replay_resume()")
    wait_replayed(primary, standby, database)
    with TranscriptStore(primary.url(database), read_url=standby.url(database)) as reader:
        found = reader.search(ALL, "quokka")
        assert "indexing" not in found
        assert _keys(found) == [("agent:main:main", "imp-0")]


def test_a_standby_behind_the_plugins_schema_is_refused_clearly(
    pair: tuple[PgServer, PgServer], standby_engine: Counted
) -> None:
    primary, standby = pair
    name = f"e{time.monotonic_ns()}"
    with psycopg.connect(_libpq(primary.url()), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        wait_replayed(primary, standby, name)
        with pytest.raises(UnsupportedDatabaseError, match="hot standby"):
            TranscriptStore(standby.url(name))
        with TranscriptStore(standby.url(name), upgrade=False, background=False) as store:
            assert store.engine.url.database == name
    finally:
        with psycopg.connect(_libpq(primary.url()), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_read_url_needs_postgresql(tmp_path: Path, pg_url: str) -> None:
    with pytest.raises(UnsupportedDatabaseError, match="read_url"):
        TranscriptStore(f"sqlite:///{tmp_path / 'a.sqlite'}", read_url=pg_url)
    with pytest.raises(ValueError, match="replica_wait_ms"):
        TranscriptStore(pg_url, read_url=pg_url, replica_wait_ms=-1)


def test_failover_keeps_every_committed_message_searchable(
    pg_server: PgServer, tmp_path: Path
) -> None:
    primary = PgServer(pg_server.bindir).start()
    standby: PgServer | None = None
    try:
        standby = primary.standby()
        words = [f"zircon{i}" for i in range(30)]
        with TranscriptStore(primary.url(), read_url=standby.url(), background=False) as store:
            for i, word in enumerate(words):
                store.create_session(f"s{i}", f"agent:main:s{i}")
                store.append_many(f"s{i}", chain([word, "ok"]))
            store.import_jsonl(
                write_jsonl(tmp_path / "p.jsonl", "pend", ["zircon pending one"]),
                session_key="agent:main:pending",
            )
            found = store.search(ALL, "zircon*", limit=25)
            assert found["indexing"] is True  # the import is pending
        # The primary goes away (a fast shutdown sends its last WAL first); promote.
        primary.shutdown()
        standby.promote()
        with TranscriptStore(standby.url(), background=False) as promoted:
            assert promoted.reconcile()["pending"] == 0  # the new primary indexes the rest
            for i, word in enumerate(words):
                assert _keys(promoted.search(ALL, word)) == [(f"agent:main:s{i}", "m0")]
            assert _keys(promoted.search(ALL, "pending")) == [("agent:main:pending", "pend-0")]
            promoted.append_many("s0", chain(["after failover"], start=2, parent="m1"))
            assert _keys(promoted.search(ALL, "failover")) == [("agent:main:s0", "m2")]
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()


def test_a_fence_just_past_a_page_header_is_the_page_boundary() -> None:
    """``pg_current_wal_insert_lsn()`` right after a record that filled its page points past
    the next page's header, where no standby's replay position ever stops: the fence is the
    boundary (a read would otherwise wait, then leave the standby, until more WAL came)."""
    page, segment = 8192, 16 * 2**20
    assert records_end(5 * page + SHORT_PAGE_HEADER, page, segment) == 5 * page
    assert records_end(3 * segment + LONG_PAGE_HEADER, page, segment) == 3 * segment
    assert records_end(5 * page + 64, page, segment) == 5 * page + 64
    assert records_end(5 * page + LONG_PAGE_HEADER, page, segment) == 5 * page + LONG_PAGE_HEADER
    assert parse_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    with pytest.raises(ValueError, match="WAL position"):
        parse_lsn("nonsense")
