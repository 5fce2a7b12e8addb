"""The PostgreSQL layout partitioned by agent (``migrate.partition_by_agent``, docs/scale.md).

Converting a populated database keeps every index row and id and answers every search as
before; each row lives in the partition of its session's agent (also after the session moves
to another agent); the statement a ``self`` / ``tree`` / ``agent`` search runs reads ONE
partition (EXPLAIN of the statement the store ran, with its parameters), and only ``all`` under
an agent-to-agent policy reads them all. The search / history / edit / reconcile modules run on
this layout too (tests/conftest.py, ``postgresql-partitioned``)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import chain
from sqlalchemy import Engine, event, text

from openclaw_fts import AgentToAgent, Caller, TranscriptStore, migrate
from openclaw_fts.engine import make_engine
from openclaw_fts.errors import UnsupportedDatabaseError

#: Agents of the corpus, and sessions per agent.
AGENTS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
SESSIONS_PER_AGENT = 3
PARTITIONS = 4
_PARTITION = re.compile(r"message_index_by_agent_p\d+")


def _populate(store: TranscriptStore) -> None:
    for agent in AGENTS:
        for n in range(SESSIONS_PER_AGENT):
            sid = f"{agent}-{n}"
            store.create_session(sid, f"agent:{agent}:s{n}")
            store.append_many(sid, chain([f"lantern report {agent} {n}", "acknowledged lantern"]))
    # A subagent of alpha's s0 that lives in bravo: alpha's tree reaches two agents.
    store.create_session("spawned", "agent:bravo:subagent:x", spawned_by="agent:alpha:s0")
    store.append_many("spawned", chain(["lantern from the spawned one"]))


CALLERS = {
    "self": Caller("agent:alpha:s1", visibility="self"),
    "tree": Caller("agent:alpha:s0", visibility="tree"),
    "agent": Caller("agent:charlie:s0", visibility="agent"),
    "all": Caller("agent:delta:s0", visibility="all"),
    "all_a2a": Caller(
        "agent:delta:s0", visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["*"])
    ),
}


def _answers(store: TranscriptStore) -> dict[str, Any]:
    return {name: store.search(caller, "lantern", limit=25) for name, caller in CALLERS.items()}


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    e = make_engine(pg_url)
    try:
        yield e
    finally:
        e.dispose()


def test_converting_keeps_every_row_and_answer(pg_url: str, engine: Engine) -> None:
    with TranscriptStore(pg_url, background=False) as store:
        _populate(store)
        before = _answers(store)
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, session_id, event_id FROM message_index")).all()
    started = time.perf_counter()
    moved = migrate.partition_by_agent(engine, PARTITIONS)
    took = time.perf_counter() - started
    assert moved == len(rows) == len(AGENTS) * SESSIONS_PER_AGENT * 2 + 1
    assert took < 60
    with engine.connect() as conn:
        after_rows = conn.execute(text("SELECT id, session_id, event_id FROM message_index")).all()
        assert sorted(after_rows) == sorted(rows)
        # Every row sits in the partition its session's agent hashes to: one per agent.
        placed = conn.execute(
            text(
                "SELECT s.agent_id, count(DISTINCT m.tableoid) FROM message_index_by_agent AS m "
                "JOIN openclaw_sessions AS s ON s.session_id = m.session_id "
                "WHERE m.agent_id = s.agent_id GROUP BY s.agent_id"
            )
        ).all()
        assert sorted(a for a, _ in placed) == sorted({*AGENTS})
        assert all(n == 1 for _, n in placed)
    with TranscriptStore(pg_url, background=False) as store:
        assert _answers(store) == before
        # Writes after the conversion land in their agent's partition and are found.
        store.append_many("echo-0", chain(["lantern late"], start=2, parent="m1"))
        hits = store.search(Caller("agent:echo:s0", visibility="self"), "late")
        assert [h["messageId"] for h in hits["results"]] == ["m2"]
        assert store.delete_session("echo-1") is True
        with engine.connect() as conn:
            assert (
                conn.execute(
                    text("SELECT count(*) FROM message_index WHERE session_id = 'echo-1'")
                ).scalar_one()
                == 0
            )


class Statements:
    """The ranked statements a store ran, with their parameters."""

    def __init__(self, engine: Engine) -> None:
        self.ranked: list[tuple[str, Any]] = []
        event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        if "ts_rank" in statement:
            self.ranked.append((statement, params))


def _partitions_read(engine: Engine, statement: str, params: Any) -> set[str]:
    with engine.connect() as conn:
        conn.exec_driver_sql("SET plan_cache_mode = force_custom_plan")
        plan = conn.exec_driver_sql("EXPLAIN (COSTS OFF) " + statement, params).scalars().all()
    return set(_PARTITION.findall("\n".join(plan)))


def test_narrow_searches_read_one_partition_and_only_all_fans_out(
    pg_url: str, engine: Engine
) -> None:
    with TranscriptStore(pg_url, background=False) as store:
        _populate(store)
    migrate.partition_by_agent(engine, PARTITIONS)
    with engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
        homes = dict(
            conn.execute(
                text(
                    "SELECT DISTINCT agent_id, tableoid::regclass::text FROM message_index_by_agent"
                )
            ).all()
        )
    with TranscriptStore(pg_url, background=False) as store:
        seen = Statements(store.engine)
        read: dict[str, set[str]] = {}
        for name, caller in CALLERS.items():
            found = store.search(caller, "lantern", limit=25)
            assert found["results"], name
            statement, params = seen.ranked[-1]
            read[name] = _partitions_read(engine, statement, params)
    assert read["self"] == {homes["alpha"]}
    assert read["agent"] == {homes["charlie"]}
    assert read["tree"] == {homes["alpha"], homes["bravo"]}  # its subagent lives in bravo
    assert read["all"] == {homes["delta"]}  # no agent-to-agent: its own agent (and tree)
    assert len(read["all_a2a"]) == PARTITIONS  # the one search that reads every partition


def test_a_session_that_changes_agent_takes_its_rows_along(pg_url: str, engine: Engine) -> None:
    with TranscriptStore(pg_url, background=False) as store:
        _populate(store)
    migrate.partition_by_agent(engine, PARTITIONS)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE openclaw_sessions SET agent_id = 'golf' WHERE session_id = 'alpha-2'")
        )
    with engine.connect() as conn:
        moved = (
            conn.execute(
                text(
                    "SELECT DISTINCT agent_id FROM message_index_by_agent "
                    "WHERE session_id = 'alpha-2'"
                )
            )
            .scalars()
            .all()
        )
        assert moved == ["golf"]
    with TranscriptStore(pg_url, background=False) as store:
        golf = store.search(Caller("agent:golf:main", visibility="agent"), "lantern")
        assert [h["sessionId"] for h in golf["results"]] == ["alpha-2", "alpha-2"]
        alpha = store.search(Caller("agent:alpha:main", visibility="agent"), "lantern")
        assert "alpha-2" not in {h["sessionId"] for h in alpha["results"]}


def test_partitioning_is_refused_clearly(pg_url: str, engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedDatabaseError, match="head"):
        migrate.partition_by_agent(engine)  # not migrated yet
    TranscriptStore(pg_url, background=False).close()
    with pytest.raises(ValueError, match="partitions"):
        migrate.partition_by_agent(engine, 0)
    migrate.partition_by_agent(engine, 2)
    with pytest.raises(ValueError, match="already"):
        migrate.partition_by_agent(engine, 2)
    sqlite = make_engine(f"sqlite:///{tmp_path / 'a.sqlite'}")
    try:
        with pytest.raises(UnsupportedDatabaseError, match="PostgreSQL"):
            migrate.partition_by_agent(sqlite)
    finally:
        sqlite.dispose()
