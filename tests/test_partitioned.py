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
from test_cli import loads, ok, one_line_error, run
from test_migrations import promote_signatures, revision_module

from openclaw_fts import AgentToAgent, Caller, TranscriptStore, migrate
from openclaw_fts.alembic import VERSION_TABLE
from openclaw_fts.cli import EXIT_FAILURE, EXIT_USAGE
from openclaw_fts.engine import make_engine
from openclaw_fts.errors import UnsupportedDatabaseError
from openclaw_fts.models import TIME_INDEX

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


def _schema(engine: Engine) -> dict[str, Any]:
    """What the plugin's revisions make of ``message_index`` (and what the layout adds beside
    it), read from the catalog."""
    with engine.connect() as conn:

        def rows(sql: str) -> list[tuple[Any, ...]]:
            return sorted(tuple(r) for r in conn.execute(text(sql)).all())

        return {
            "kind": rows("SELECT relkind FROM pg_class WHERE oid = 'message_index'::regclass"),
            "columns": rows(
                "SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
                "a.attgenerated, pg_get_expr(d.adbin, d.adrelid), a.attstattarget "
                "FROM pg_attribute AS a LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid "
                "AND d.adnum = a.attnum WHERE a.attrelid = 'message_index'::regclass "
                "AND a.attnum > 0"
            ),
            "constraints": rows(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE conrelid = 'message_index'::regclass"
            ),
            "indexes": rows(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'message_index'"
            ),
            "sequence owner": rows(
                "SELECT d.refobjid::regclass::text FROM pg_depend AS d "
                "WHERE d.objid = 'message_index_id_seq'::regclass AND d.deptype = 'a'"
            ),
            "triggers": rows(
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid IN "
                "('openclaw_sessions'::regclass, 'message_index'::regclass)"
            ),
            "functions": rows(
                "SELECT proname FROM pg_proc WHERE proname LIKE 'openclaw_fts_message_index%'"
            ),
            "other tables": rows(
                "SELECT relname FROM pg_class WHERE relname LIKE 'message_index_by_agent%'"
            ),
        }


def test_unpartitioning_restores_the_plain_table_with_every_row(
    pg_url: str, engine: Engine, tmp_path: Path
) -> None:
    """Partitioned, then back with the CLI: the same catalog as the plugin's revisions made,
    the same rows and ids, the id sequence going on where it was; a store opened while the
    layout existed (its pooled connection remembers it) answers as a fresh one; and the
    database downgrades to base and upgrades again."""
    with TranscriptStore(pg_url, background=False) as store:
        _populate(store)
        before = _answers(store)
    plain = _schema(engine)
    select_rows = text("SELECT id, session_id, event_id, body FROM message_index")
    with engine.connect() as conn:
        rows = set(conn.execute(select_rows).all())
    db = ("--db", pg_url)
    parted = loads(run(tmp_path, *db, "partition", "--partitions", str(PARTITIONS), "--json"))
    assert parted["rows"] == len(rows)
    assert _schema(engine) != plain
    with TranscriptStore(pg_url, background=False) as opened_before:
        assert _answers(opened_before) == before  # its connection remembers the layout now
        opened_before.append_many("alpha-0", chain(["lantern meanwhile"], start=2, parent="m1"))
        unparted = loads(run(tmp_path, *db, "unpartition", "--json"))
        assert unparted["rows"] == len(rows) + 1
        assert _schema(engine) == plain
        with engine.connect() as conn:
            after = set(conn.execute(select_rows).all())
        assert rows < after and len(after) == len(rows) + 1
        stale = _answers(opened_before)
        assert stale["self"] == before["self"]
        opened_before.append_many("alpha-0", chain(["lantern after"], start=3, parent="m2"))
        with engine.connect() as conn:
            newest = conn.execute(
                text(
                    "SELECT id FROM message_index WHERE session_id = 'alpha-0' AND event_id = 'm3'"
                )
            ).scalar_one()
        assert newest > max(r[0] for r in after)
        stale = _answers(opened_before)
    with TranscriptStore(pg_url, background=False) as fresh:
        assert _answers(fresh) == stale
    migrate.downgrade(engine, "base")
    migrate.upgrade(engine)
    assert _schema(engine) == plain


def test_a_partitioned_database_is_not_downgraded_and_converts_once(
    pg_url: str, engine: Engine, tmp_path: Path
) -> None:
    TranscriptStore(pg_url, background=False).close()
    db = ("--db", pg_url)
    error = one_line_error(run(tmp_path, *db, "unpartition"), EXIT_FAILURE)
    assert "does not have the partitioned layout" in error
    said = ok(run(tmp_path, *db, "partition", "--partitions", "2")).stdout
    assert ": partitioned, 0 index rows moved in " in said
    error = one_line_error(run(tmp_path, *db, "partition"), EXIT_FAILURE)
    assert "already has the partitioned layout" in error
    one_line_error(run(tmp_path, *db, "partition", "--partitions", "0"), EXIT_USAGE)
    with pytest.raises(UnsupportedDatabaseError, match="unpartition"):
        migrate.downgrade(engine, "base")
    assert migrate.unpartition_by_agent(engine) == 0
    migrate.downgrade(engine, "base")
    sqlite = f"sqlite:///{tmp_path / 'a.sqlite'}"
    TranscriptStore(sqlite, background=False).close()
    error = one_line_error(run(tmp_path, "--db", sqlite, "unpartition"), EXIT_FAILURE)
    assert "PostgreSQL" in error


def test_revision_0011_indexes_every_partition_by_time(pg_url: str, engine: Engine) -> None:
    """The index rows' time index (revision 0011) on the partitioned layout: the conversion
    makes it on the partitioned table (so on every partition), and a database converted before
    0011 gets it there from the upgrade; a search ordered ``recent`` answers the same."""

    def partitions_indexed() -> set[str]:
        with engine.connect() as conn:
            return {
                str(r[0])
                for r in conn.execute(
                    text(
                        "SELECT tablename FROM pg_indexes WHERE tablename LIKE "
                        "'message_index_by_agent%' AND indexdef LIKE '%(timestamp_ms)'"
                    )
                )
            }

    with TranscriptStore(pg_url, background=False) as store:
        _populate(store)
        before = {n: store.search(c, "lantern", order="recent") for n, c in CALLERS.items()}
    migrate.partition_by_agent(engine, PARTITIONS)
    every = {"message_index_by_agent"} | {f"message_index_by_agent_p{n}" for n in range(PARTITIONS)}
    assert partitions_indexed() == every
    with engine.begin() as conn:
        conn.execute(text(f"DROP INDEX {TIME_INDEX}"))
        conn.execute(
            text(f"UPDATE {VERSION_TABLE} SET version_num = :v"),
            {"v": migrate.SELF_PROMOTING_REVISION},
        )
    assert partitions_indexed() == set()
    migrate.upgrade(engine)
    assert partitions_indexed() == every
    with TranscriptStore(pg_url, background=False) as store:
        after = {n: store.search(c, "lantern", order="recent") for n, c in CALLERS.items()}
    assert after == before


def test_revision_0012_bounds_the_promotion_of_a_partitioned_database(
    pg_url: str, engine: Engine
) -> None:
    """A database partitioned before revision 0012 (0010's promotion functions, stamped 0011)
    gets the bounded promotion from the upgrade (the functions read the index rows through
    the ``message_index`` view), and promotes and answers as before."""

    with TranscriptStore(pg_url, background=False) as store:
        _populate(store)
        before = _answers(store)
    migrate.partition_by_agent(engine, PARTITIONS)
    old = revision_module("0012_impact_promotion_bounded")
    with engine.begin() as conn:
        conn.execute(text(old.DUE_FUNCTION_0010))
        conn.execute(text("DROP FUNCTION openclaw_fts_impact_promote(bigint, integer)"))
        conn.execute(text(old.PROMOTE_FUNCTION_0010))
        conn.execute(text(old.CANDIDATES_FUNCTION_0010))
        conn.execute(
            text(f"UPDATE {VERSION_TABLE} SET version_num = :v"),
            {"v": migrate.TIME_ORDER_REVISION},
        )
    assert promote_signatures(engine) == {"min_docs bigint"}
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == tuple(sorted(migrate.head_revisions()))
    assert promote_signatures(engine) == {"min_docs bigint, max_words integer"}
    with TranscriptStore(pg_url, background=False) as store:
        store.optimize()
        assert _answers(store) == before
        assert store.check().ok
