"""``TranscriptStore(url, durability=...)``: what a commit survives (docs/reliability.md).

SQLite: ``"normal"`` (the default) is WAL with ``synchronous=NORMAL``; ``"full"`` is
``synchronous=FULL`` on every connection of the store's engine — its writes, its reads, its
background jobs and a host's sessions on it. PostgreSQL takes the keyword and leaves the
server's settings alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import chain
from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore, UnsupportedDatabaseError
from openclaw_fts.engine import make_engine
from openclaw_fts.models import AgentSession

KEY = "agent:main:main"
#: ``PRAGMA synchronous`` answers with a number.
NORMAL, FULL = 1, 2
#: Connections checked out at once: each has the setting, not only the first.
CONNECTIONS = 3


def synchronous_levels(engine: Engine) -> set[int]:
    conns = [engine.connect() for _ in range(CONNECTIONS)]
    try:
        return {int(c.exec_driver_sql("PRAGMA synchronous").scalar_one()) for c in conns}
    finally:
        for c in conns:
            c.close()


@pytest.mark.parametrize(
    ("durability", "level"), [(None, NORMAL), ("normal", NORMAL), ("full", FULL)]
)
def test_sqlite_connections_follow_the_durability(
    tmp_path: Path, durability: str | None, level: int
) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = (
        TranscriptStore(url) if durability is None else TranscriptStore(url, durability=durability)
    )
    try:
        store.create_session("s1", KEY)
        store.append_many("s1", chain(["durable puffin", "noted"]))
        assert store.search(Caller(KEY), "puffin")["results"]
        assert synchronous_levels(store.engine) == {level}
        host = sessionmaker(store.engine)
        openclaw_fts.install(host)
        with host.begin() as db:
            db.add(AgentSession(session_id="h1", session_key="agent:main:h1"))
            assert int(db.connection().exec_driver_sql("PRAGMA synchronous").scalar_one()) == level
    finally:
        store.close()


def test_a_host_engine_gets_full_durability_from_the_store(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store = TranscriptStore(engine, durability="full")
    try:
        store.create_session("s1", KEY)
        assert synchronous_levels(engine) == {FULL}
    finally:
        store.close()
        engine.dispose()


def test_an_engine_configured_with_another_durability_is_refused(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")  # "normal"
    try:
        with pytest.raises(UnsupportedDatabaseError, match="durability='normal'"):
            TranscriptStore(engine, durability="full")
        TranscriptStore(engine, durability="normal").close()
        TranscriptStore(engine).close()  # no choice made: the engine's stays
    finally:
        engine.dispose()


def test_an_unknown_durability_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedDatabaseError, match="normal, full"):
        TranscriptStore(f"sqlite:///{tmp_path / 'db.sqlite'}", durability="paranoid")


def test_postgresql_takes_the_keyword_and_keeps_the_servers_settings(pg_url: str) -> None:
    store = TranscriptStore(pg_url, durability="full", background=False)
    try:
        store.create_session("s1", KEY)
        store.append_many("s1", chain(["durable puffin", "noted"]))
        with store.engine.connect() as conn:
            # The test server runs with synchronous_commit=off (tests/pgserver.py): unchanged.
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar_one() == "off"
    finally:
        store.close()
