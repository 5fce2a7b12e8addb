"""Revision 0005 (issue #15 item 2, issue #16 "a host with its own sessions table"): the plugin's
generic tables become ``openclaw_sessions``, ``openclaw_branches``, ``openclaw_index_state``.

A database built at revision 0004 (and at 0002, the last release) with data upgrades to head
keeping every row, the triggers that name the renamed tables keep working (raw inserts bump
``last_seq``, raw edits and deletes mark the session), search finds the old messages after one
reconcile and ``check`` is clean; the downgrade renames back. A host with its own ``sessions``
table runs beside the plugin.

A ``both_engines`` module: each test runs on SQLite and on PostgreSQL. What differs is where the
triggers keep the table names (SQLite rewrites its trigger bodies on a rename; PostgreSQL's
plpgsql functions name the tables of the revision the database is at), checked per engine."""

from __future__ import annotations

import json
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from earlier_release import earlier_release_database
from sqlalchemy import Column, Engine, MetaData, String, Table, insert, inspect, select, text
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import Caller, TranscriptEvent, TranscriptStore, migrate
from openclaw_fts.alembic import include_name
from openclaw_fts.check import check

CALLER = Caller("agent:main:main", visibility="all")
REVISION_2 = "0002_index"
REVISION_4 = "0004_host_guest"
HEAD = "0015_sqlite_vocabulary"
OLD_NAMES = {"sessions", "branches", "index_state"}
NEW_NAMES = {"openclaw_sessions", "openclaw_branches", "openclaw_index_state"}


pytestmark = [
    pytest.mark.both_engines,
    pytest.mark.fresh_database("the revisions' table names, from an empty database"),
]


@pytest.fixture
def url(db_url: str) -> str:
    """This test's empty database (no store has migrated it)."""
    return db_url


@pytest.fixture
def engine(fresh: Engine) -> Engine:
    """This test's empty, unmigrated database (conftest's ``engine`` opens a store first)."""
    return fresh


def table_names(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


def plugin_trigger_sql(engine: Engine) -> str:
    """The text of the plugin's triggers: SQLite's trigger bodies, PostgreSQL's plpgsql
    functions (the triggers call them) — what must name the tables the database has."""
    query = {
        "sqlite": "SELECT sql FROM sqlite_master WHERE type = 'trigger'",
        "postgresql": "SELECT prosrc FROM pg_proc WHERE proname LIKE 'openclaw_fts_%'",
    }[engine.dialect.name]
    with engine.connect() as conn:
        return " ".join(r[0] for r in conn.execute(text(query)))


def found(store: TranscriptStore, query: str) -> set[tuple[str, str]]:
    out = store.search(CALLER, query, limit=25)
    return {(h["sessionId"], h["messageId"]) for h in out["results"]}


def message(eid: str, parent: str | None, body: str, ts: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": "user", "content": body},
    }


def write_old(engine: Engine, sid: str, bodies: list[str]) -> None:
    """A session as a writer of the old schema left it (plain SQL, old table names): events
    with their derived columns, an active branch, no index state (pending)."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO sessions (session_id, session_key, agent_id) VALUES (:s, :k, 'main')"
            ),
            {"s": sid, "k": f"agent:main:{sid}"},
        )
        parent = None
        for seq, body in enumerate(bodies):
            eid = f"{sid}-e{seq}"
            ts = 1_790_000_000_000 + seq
            conn.execute(
                text(
                    "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, "
                    "type, role, side, timestamp_ms, event) "
                    "VALUES (:s, :q, :e, :p, 'message', 'user', false, :t, :j)"
                ),
                {
                    "s": sid,
                    "q": seq,
                    "e": eid,
                    "p": parent,
                    "t": ts,
                    "j": json.dumps(message(eid, parent, body, ts)),
                },
            )
            parent = eid
        conn.execute(
            text(
                "INSERT INTO branches (session_id, tip_id, tip_seq, is_active) "
                "VALUES (:s, :e, :q, true)"
            ),
            {"s": sid, "e": parent, "q": len(bodies) - 1},
        )


def counts(engine: Engine, names: dict[str, str]) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            key: conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
            for key, table in names.items()
        }


OLD = {"sessions": "sessions", "branches": "branches", "state": "index_state"}
NEW = {
    "sessions": "openclaw_sessions",
    "branches": "openclaw_branches",
    "state": "openclaw_index_state",
}
BOTH = {"events": "transcript_events", "index": "message_index", "lease": "reconcile_lease"}


@pytest.mark.parametrize("revision", [REVISION_2, REVISION_4])
def test_old_database_with_data_upgrades_to_head(engine: Engine, url: str, revision: str) -> None:
    # Indexed data made by the plugin (rewind included), taken back to the old revision...
    with TranscriptStore(url, background=False) as store:
        store.create_session("live", "agent:main:live")
        store.append("live", message("a", None, "alphaword first", 1))
        store.append("live", message("b", "a", "betaword second", 2))
        store.rewind("live", "a")
        store.append("live", message("c", "a", "gammaword third", 3))
        assert found(store, "gammaword") == {("live", "c")}
    migrate.downgrade(engine, revision)
    assert table_names(engine) >= OLD_NAMES and not NEW_NAMES & table_names(engine)
    # ...plus sessions an old writer stored in plain SQL (pending: never indexed).
    for i in range(20):
        write_old(engine, f"old{i:02d}", [f"oldword{i} hello", f"deltaword reply {i}", "bye"])
    before = counts(engine, {**OLD, **BOTH})
    assert before["sessions"] == 21 and before["events"] > 60 and before["index"] > 0

    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD,)
    names = table_names(engine)
    assert names >= NEW_NAMES and not OLD_NAMES & names
    assert counts(engine, {**NEW, **BOTH}) == before  # every row kept

    with TranscriptStore(url, background=False) as store:
        assert store.index_status()["pending"] == 20
        store.reconcile()
        assert store.index_status() == {"pending": 0, "indexed": 21, "total": 21}
        assert found(store, "oldword7") == {("old07", "old07-e0")}
        assert len(found(store, "deltaword")) == 20
        assert found(store, "gammaword") == {("live", "c")}
        assert found(store, "betaword") == set()  # rewound away, still
        assert [b["tipId"] for b in store.branches("live") if b["active"]] == ["c"]
        store.append("old03", message("x", "old03-e2", "epsilonword after", 9))
        assert found(store, "epsilonword") == {("old03", "x")}
    assert check(engine).ok


def test_triggers_follow_the_rename_both_ways(engine: Engine) -> None:
    """The triggers follow the renamed tables (SQLite rewrites their bodies; 0005 recreates
    PostgreSQL's functions each way): raw SQL behind the plugin's back still bumps
    ``last_seq`` and marks the session, at head and after a downgrade, and every row and
    branch survives both ways."""
    earlier_release_database(engine, REVISION_4)
    write_old(engine, "s1", ["one"])

    def exercise(names: dict[str, str], seq: int) -> tuple[int, int, int]:
        with engine.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO {names['state']} (session_id, indexed_seq) VALUES ('s1', 0) "
                    "ON CONFLICT (session_id) DO UPDATE SET needs_rebuild = false"
                )
            )
            body = message(f"n{seq}", None, "raw", seq)
            conn.execute(
                text(
                    "INSERT INTO transcript_events (session_id, seq, event_id, type, role, "
                    "side, timestamp_ms, event) VALUES ('s1', :q, :e, 'message', 'user', false, "
                    ":q, :j)"
                ),
                {"q": seq, "e": f"n{seq}", "j": json.dumps(body)},
            )
            edited = {**body, "message": {"role": "user", "content": "edited"}}
            conn.execute(
                text("UPDATE transcript_events SET event = :j WHERE seq = :q"),
                {"q": seq, "j": json.dumps(edited)},
            )
            last_seq = conn.execute(text(f"SELECT last_seq FROM {names['sessions']}")).scalar_one()
            marked, generation = conn.execute(
                text(f"SELECT needs_rebuild, generation FROM {names['state']}")
            ).one()
        return last_seq, marked, generation

    migrate.upgrade(engine)
    assert exercise(NEW, 1) == (1, 1, 1)
    assert counts(engine, {"branches": "openclaw_branches"}) == {"branches": 1}
    with engine.begin() as conn:  # a raw delete marks it too
        conn.execute(text("UPDATE openclaw_index_state SET needs_rebuild = false"))
        conn.execute(text("DELETE FROM transcript_events WHERE seq = 1"))
        assert conn.execute(text("SELECT needs_rebuild FROM openclaw_index_state")).scalar() == 1
    sql = plugin_trigger_sql(engine)
    assert "openclaw_sessions" in sql and "openclaw_index_state" in sql
    migrate.downgrade(engine, REVISION_4)
    assert table_names(engine) >= OLD_NAMES | {"transcript_events"}
    assert exercise(OLD, 2) == (2, 1, 3)
    assert counts(engine, {"events": "transcript_events", "branches": "branches"}) == {
        "events": 2,  # seq 0 and 2 (the raw delete took seq 1)
        "branches": 1,
    }
    migrate.upgrade(engine)
    assert exercise(NEW, 3) == (3, 1, 4)


def test_autogenerate_is_clean_after_upgrading_an_old_database(engine: Engine) -> None:
    earlier_release_database(engine, REVISION_2)
    write_old(engine, "s1", ["one"])
    migrate.upgrade(engine)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"include_name": include_name})
        assert compare_metadata(ctx, openclaw_fts.metadata) == []


# -- a host with its own ``sessions`` table ----------------------------------------------------

host_metadata = MetaData()
host_sessions = Table(
    "sessions",
    host_metadata,
    Column("token", String(64), primary_key=True),
    Column("user_name", String(64)),
)


def test_a_host_with_its_own_sessions_table_uses_the_plugin(engine: Engine, url: str) -> None:
    """The host's web-login ``sessions`` table and the plugin's transcripts side by side: the
    store, ``install()`` on the host's own ORM sessions, search, delete — the host's rows are
    never touched."""
    migrate.upgrade(engine)
    host_metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(host_sessions), [{"token": "t1", "user_name": "ada"}])
    with TranscriptStore(url, background=False) as store:
        store.create_session("s1", "agent:main:main")
        store.append("s1", message("m1", None, "guestword in transcript", 1))
        assert found(store, "guestword") == {("s1", "m1")}
    maker = sessionmaker(engine)
    openclaw_fts.install(maker)
    with maker.begin() as db:
        db.add(
            openclaw_fts.AgentSession(session_id="s2", session_key="agent:main:s2", agent_id="main")
        )
        db.add(TranscriptEvent(session_id="s2", event=message("m2", None, "hostword orm", 2)))
        db.execute(insert(host_sessions).values(token="t2", user_name="bob"))
    with TranscriptStore(url, background=False) as store:
        assert found(store, "hostword") == {("s2", "m2")}
        assert store.delete_session("s1")
    with Session(engine) as db:
        assert db.execute(select(host_sessions.c.token).order_by("token")).scalars().all() == [
            "t1",
            "t2",
        ]
    assert check(engine).ok


def raw_writes_reach_the_index_state(engine: Engine, names: dict[str, str], seq: int) -> Any:
    """Raw SQL behind the plugin's back on session ``r1``: an insert bumps ``last_seq``, an edit
    marks the session — proof the triggers name the tables the database has."""
    with engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO {names['state']} (session_id, indexed_seq) VALUES ('r1', 0) "
                "ON CONFLICT (session_id) DO UPDATE SET needs_rebuild = false"
            )
        )
        body = message(f"r{seq}", None, "raw", seq)
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, type, role, side, "
                "timestamp_ms, event) VALUES ('r1', :q, :e, 'message', 'user', false, :q, :j)"
            ),
            {"q": seq, "e": f"r{seq}", "j": json.dumps(body)},
        )
        edited = {**body, "message": {"role": "user", "content": "edited"}}
        conn.execute(
            text("UPDATE transcript_events SET event = :j WHERE session_id = 'r1' AND seq = :q"),
            {"q": seq, "j": json.dumps(edited)},
        )
        last_seq = conn.execute(
            text(f"SELECT last_seq FROM {names['sessions']} WHERE session_id = 'r1'")
        ).scalar_one()
        marked = conn.execute(
            text(f"SELECT needs_rebuild FROM {names['state']} WHERE session_id = 'r1'")
        ).scalar_one()
    return last_seq, marked


def host_tokens(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(select(host_sessions.c.token).order_by("token")).scalars())


@pytest.mark.parametrize("host_first", [None, "0001_transcripts", REVISION_2, REVISION_4])
def test_a_host_sessions_table_before_the_plugin_migrations(
    engine: Engine, url: str, host_first: str | None
) -> None:
    """Issue #16: the host's ``sessions`` table exists before the plugin's revisions run (or
    is created between two of them, as Alembic may order two branches): they install, the
    plugin works, autogenerate is clean, and no downgrade renames the plugin's table onto the
    host's name — down to base, where only the host's table and rows are left."""
    if host_first is not None:
        migrate.upgrade(engine, host_first)
    host_metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(host_sessions), [{"token": "t1", "user_name": "ada"}])
    migrate.upgrade(engine)
    assert set(migrate.current_revisions(engine)) == set(migrate.head_revisions())
    assert table_names(engine) >= NEW_NAMES | {"sessions"}
    assert not {"branches", "index_state"} & table_names(engine)
    with TranscriptStore(url, background=False) as store:
        store.create_session("s1", "agent:main:s1")
        store.append("s1", message("m1", None, "hostfirstword", 1))
        assert found(store, "hostfirstword") == {("s1", "m1")}
        store.create_session("r1", "agent:main:r1")
    assert raw_writes_reach_the_index_state(engine, NEW, 5) == (5, 1)
    assert check(engine).ok
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"include_name": include_name})
        assert compare_metadata(ctx, [host_metadata, openclaw_fts.metadata]) == []

    # Down to 0004: the old names are not free, so the namespaced ones stay; the triggers
    # still work, and up again 0005 finds nothing to rename.
    migrate.downgrade(engine, REVISION_4)
    assert table_names(engine) >= NEW_NAMES and not {"branches", "index_state"} & table_names(
        engine
    )
    assert raw_writes_reach_the_index_state(engine, NEW, 6) == (6, 1)
    migrate.upgrade(engine)
    with TranscriptStore(url, background=False) as store:
        store.reconcile()
        assert found(store, "hostfirstword") == {("s1", "m1")}
    assert raw_writes_reach_the_index_state(engine, NEW, 7) == (7, 1)
    # Down to base: every plugin table goes, the host's stays with its rows.
    migrate.downgrade(engine, "base")
    assert table_names(engine) == {"sessions", "openclaw_fts_version"}
    assert host_tokens(engine) == ["t1"]
    assert plugin_trigger_sql(engine) == ""  # no trigger (function) of the plugin's is left


def test_a_fresh_database_gets_the_namespaced_names_from_revision_1(engine: Engine) -> None:
    """0001 of this release never creates ``sessions`` or ``branches``: a host table of that
    name made after it (Alembic may run the host's branch second) cannot collide."""
    migrate.upgrade(engine, "0001_transcripts")
    assert table_names(engine) == {
        "openclaw_sessions",
        "openclaw_branches",
        "transcript_events",
    } | {"openclaw_fts_version"}
    migrate.upgrade(engine, REVISION_2)
    assert "openclaw_index_state" in table_names(engine)
    assert not OLD_NAMES & table_names(engine)


def test_downgrade_renames_back_only_when_every_old_name_is_free(engine: Engine) -> None:
    """With no host table in the way, going down from 0005 gives the old names back (what an
    earlier release's code expects); a host ``branches`` table alone is enough to keep all
    three namespaced."""
    migrate.upgrade(engine)
    migrate.downgrade(engine, REVISION_4)
    assert table_names(engine) >= OLD_NAMES and not NEW_NAMES & table_names(engine)
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE branches (git_ref TEXT PRIMARY KEY)"))
    migrate.downgrade(engine, REVISION_4)
    assert table_names(engine) >= NEW_NAMES and not {"sessions", "index_state"} & table_names(
        engine
    )


def test_a_half_renamed_database_is_refused(engine: Engine) -> None:
    earlier_release_database(engine, REVISION_4)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE openclaw_branches (id INTEGER PRIMARY KEY)"))
    with pytest.raises(Exception, match="openclaw_branches") as raised:
        migrate.upgrade(engine)
    assert "half renamed" in str(raised.value)
    assert migrate.current_revisions(engine) == (REVISION_4,)
    assert "sessions" in table_names(engine)
