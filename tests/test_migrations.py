"""Schema migrations on each engine (docs/alembic.md, docs/host.md, docs/postgresql.md): a
populated revision-1 database upgrades in well under a second and is backfilled by the
reconciler, a fresh one is migrated by the store, autogenerate sees no drift, downgrade removes
everything, raw SQL behind the plugin's back leaves its sessions pending, and the built wheel
carries working migrations.

A ``both_engines`` module: every test that takes ``db_url`` runs on SQLite and on PostgreSQL;
where the engines really differ (the full-text objects each creates, and removes again: FTS5's
table and trigger, PostgreSQL's text search configuration, ``tsvector`` column, GIN index and
trigger functions) the difference is an expectation per engine, not a second test. The tests
that take ``pg_engine`` are about PostgreSQL's own objects (``unaccent``, the ``tsvector``
folding, the statistics target) and run there only; the wheel and ``include_name`` tests need
no database of the suite's. What both engines share across revisions (an idempotent upgrade, a
downgrade to revision 1 keeping transcripts) is tests/test_migration_round_trips.py; revision
0005's renames and a host's own ``sessions`` table, tests/test_namespaced_tables.py."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from earlier_release import earlier_release_database
from sqlalchemy import (
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    inspect,
    text,
)
from sqlalchemy.engine import make_url
from test_cli import run

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore, migrate
from openclaw_fts.alembic import VERSION_TABLE, include_name
from openclaw_fts.check import check
from openclaw_fts.engine import make_engine
from openclaw_fts.errors import UnsupportedDatabaseError
from openclaw_fts.index import postgresql as pg
from openclaw_fts.index.pending import PENDING_TABLE
from openclaw_fts.index.postgresql.pending_marks import FUNCTION_NAMES, VERSION_INDEX
from openclaw_fts.index.sqlite.vocabulary import VOCABULARY_TABLE
from openclaw_fts.models import IMPACT_TABLES, INDEX_TABLES, TIME_INDEX, TRANSCRIPT_TABLES

pytestmark = [
    pytest.mark.both_engines,
    pytest.mark.fresh_database("migrations from an empty database and back"),
]

REPO = Path(__file__).resolve().parent.parent
CALLER = Caller("agent:main:main", visibility="all")
REVISION_1 = "0001_transcripts"
#: The plugin's newest revision.
HEAD_REVISION = "0015_sqlite_vocabulary"
#: Tables of revision 1 under the names it gave them (0005 renames two of them).
REVISION_1_TABLES = {"sessions", "transcript_events", "branches"}
#: The plugin's tables at head, on every engine.
PLUGIN_TABLES = set(TRANSCRIPT_TABLES) | set(INDEX_TABLES) | set(IMPACT_TABLES)
#: FTS5's virtual table and the shadow tables SQLite keeps for it.
FTS_TABLES = {
    "message_fts",
    "message_fts_config",
    "message_fts_data",
    "message_fts_docsize",
    "message_fts_idx",
}
#: The tables an engine's full-text index adds to :data:`PLUGIN_TABLES` (PostgreSQL's is a
#: column and an index of ``message_index``).
SEARCH_TABLES = {"sqlite": FTS_TABLES | {VOCABULARY_TABLE}, "postgresql": {PENDING_TABLE}}
#: What autogenerate would report without ``include_name`` on a database at head, besides the
#: version table: the search objects the models do not declare (on PostgreSQL also the
#: impact-list rows' time, revision 0013, and the pending marks, 0014; on SQLite the
#: writer-kept vocabulary, 0015).
UNFILTERED_DIFF = {
    "sqlite": {("remove_table", name) for name in FTS_TABLES | {VOCABULARY_TABLE}},
    "postgresql": {
        ("remove_index", pg.GIN_INDEX),
        ("remove_column", pg.TSVECTOR_COLUMN),
        ("remove_column", pg.impact.ROW_TIME_COLUMN),
        ("remove_table", PENDING_TABLE),
        ("remove_index", VERSION_INDEX),
    },
}
#: PostgreSQL's plpgsql trigger functions (SQLite's triggers carry their bodies inline).
PG_FUNCTIONS = {
    "openclaw_fts_events_last_seq",
    "openclaw_fts_events_deleted",
    "openclaw_fts_events_edited",
    "openclaw_fts_impact_insert",
    "openclaw_fts_impact_delete",
    "openclaw_fts_impact_promote",
    "openclaw_fts_impact_guard",
    "openclaw_fts_impact_due",
    "openclaw_fts_impact_candidates",
    *FUNCTION_NAMES,
}
SESSIONS = 500
EVENTS_PER_SESSION = 100
WARNING = (
    "Transcript indexing is in progress; results may be incomplete. Retry sessions_search shortly."
)
#: A role that may create tables in ``public`` but not extensions (a typical application role).
APP_ROLE = "openclaw_app"


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def engine(fresh: Engine) -> Engine:
    """This test's empty, unmigrated database (conftest's ``engine`` opens a store first)."""
    return fresh


def tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


def sqlite_objects(engine: Engine) -> dict[str, set[str]]:
    """Names in sqlite_master by type (SQLite's own objects left out)."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        ).all()
    out: dict[str, set[str]] = {}
    for kind, name in rows:
        out.setdefault(kind, set()).add(name)
    return out


def pg_search_objects(engine: Engine) -> dict[str, Any]:
    """What the index's PostgreSQL side consists of, read from the catalogs."""
    with engine.connect() as conn:
        config = conn.execute(
            text("SELECT count(*) FROM pg_ts_config WHERE cfgname = :n"),
            {"n": pg.TEXT_SEARCH_CONFIG},
        ).scalar_one()
        extension = conn.execute(
            text("SELECT count(*) FROM pg_extension WHERE extname = :n"),
            {"n": pg.UNACCENT_EXTENSION},
        ).scalar_one()
        column = conn.execute(
            text(
                "SELECT data_type, is_generated, generation_expression "
                "FROM information_schema.columns "
                "WHERE table_name = 'message_index' AND column_name = :c"
            ),
            {"c": pg.TSVECTOR_COLUMN},
        ).first()
        gin = conn.execute(
            text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": pg.GIN_INDEX}
        ).scalar()
    return {"config": config, "extension": extension, "column": column, "gin": gin}


def add_message(engine: Engine, session_id: str, event_id: str, body: str) -> None:
    """One session, event and index row in plain SQL (what a backend's writer does; PostgreSQL
    computes the row's ``tsvector`` itself, SQLite is given its FTS5 row)."""
    event = {"type": "message", "id": event_id, "message": {"role": "user", "content": body}}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO openclaw_sessions (session_id, session_key, agent_id) "
                "VALUES (:s, 'agent:main:main', 'main') ON CONFLICT DO NOTHING"
            ),
            {"s": session_id},
        )
        seq = conn.execute(
            text("SELECT count(*) FROM transcript_events WHERE session_id = :s"), {"s": session_id}
        ).scalar_one()
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, type, role, event) "
                "VALUES (:s, :q, :e, 'message', 'user', :j)"
            ),
            {"s": session_id, "q": seq, "e": event_id, "j": json.dumps(event)},
        )
        conn.execute(
            text(
                "INSERT INTO message_index (session_id, seq, event_id, role, timestamp_ms, body, "
                "sess) VALUES (:s, :q, :e, 'user', 0, :b, 's1')"
            ),
            {"s": session_id, "q": seq, "e": event_id, "b": body},
        )
        if conn.dialect.name == "sqlite":  # FTS5's external content: its row is written too
            conn.execute(
                text(
                    "INSERT INTO message_fts (rowid, body, sess) SELECT id, body, sess "
                    "FROM message_index WHERE session_id = :s AND seq = :q"
                ),
                {"s": session_id, "q": seq},
            )


def matching(engine: Engine, query: str) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                f"SELECT event_id FROM message_index WHERE {pg.TSVECTOR_COLUMN} @@ "
                f"to_tsquery('{pg.TEXT_SEARCH_CONFIG}', :q) ORDER BY id"
            ),
            {"q": query},
        ).all()
    return [r[0] for r in rows]


def plugin_functions(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT proname FROM pg_proc WHERE proname LIKE 'openclaw_fts%'")
        ).all()
    return {r[0] for r in rows}


def found(store: TranscriptStore, query: str) -> set[tuple[str, str]]:
    out = store.search(CALLER, query, limit=25)
    return {(h["sessionId"], h["messageId"]) for h in out["results"]}


def revision_1_rows(session: int) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """One session of a host that used revision 1: a conversation with a tool call, a rewind
    (every 10th session) and plain SQL rows (derived columns as the old writer filled them)."""
    sid = f"old-{session:04d}"
    events: list[tuple[Any, ...]] = []
    parent: str | None = None
    for seq in range(EVENTS_PER_SESSION):
        eid = f"e{seq}"
        if seq % 10 == 9:
            body: dict[str, Any] = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": 1_790_000_000_000 + seq,
                "message": {
                    "role": "toolResult",
                    "toolCallId": "c",
                    "content": [{"type": "text", "text": "toolword output"}],
                },
            }
            role = "toolResult"
        else:
            role = "user" if seq % 2 == 0 else "assistant"
            content = f"legacyword s{session} n{seq}"
            if seq == EVENTS_PER_SESSION - 1 - 8 and session % 10 == 0:
                content = f"abandonedword s{session}"
            body = {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": 1_790_000_000_000 + seq,
                "message": {"role": role, "content": content},
            }
        events.append(
            (
                sid,
                seq,
                eid,
                parent,
                "message",
                role,
                None,
                False,
                1_790_000_000_000 + seq,
                json.dumps(body),
            )
        )
        parent = eid
    if session % 10 == 0:
        # the last event rewinds to e50: e51.. (with "abandonedword" at e91) fall off the branch
        last = EVENTS_PER_SESSION - 1
        leaf = {"type": "leaf", "id": f"e{last}", "parentId": f"e{last - 1}", "targetId": "e50"}
        events[last] = (
            sid,
            last,
            f"e{last}",
            f"e{last - 1}",
            "leaf",
            None,
            "e50",
            False,
            None,
            json.dumps(leaf),
        )
    # old writers did not always keep last_seq: half the sessions say -1
    session_row = {
        "session_id": sid,
        "session_key": f"agent:main:old{session}",
        "agent_id": "main",
        "last_seq": EVENTS_PER_SESSION - 1 if session % 2 else -1,
    }
    return session_row, events


#: transcript_events' columns, in the order of :func:`revision_1_rows`' tuples.
EVENT_COLUMNS = (
    "session_id",
    "seq",
    "event_id",
    "parent_id",
    "type",
    "role",
    "target_id",
    "side",
    "timestamp_ms",
    "event",
)


def populate_revision_1(engine: Engine) -> None:
    session_rows: list[dict[str, Any]] = []
    event_rows: list[dict[str, Any]] = []
    for i in range(SESSIONS):
        s, evs = revision_1_rows(i)
        session_rows.append(s)
        event_rows.extend(dict(zip(EVENT_COLUMNS, e, strict=True)) for e in evs)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO sessions (session_id, session_key, agent_id, last_seq) "
                "VALUES (:session_id, :session_key, :agent_id, :last_seq)"
            ),
            session_rows,
        )
        conn.execute(
            text(
                f"INSERT INTO transcript_events ({', '.join(EVENT_COLUMNS)}) "
                f"VALUES ({', '.join(':' + c for c in EVENT_COLUMNS)})"
            ),
            event_rows,
        )


# -- upgrade -----------------------------------------------------------------------------------


def revisions_under_host_table(engine: Engine) -> tuple[str, ...]:
    """``migrate.host_revisions`` read while the host's own version table (``alembic_version``,
    holding only the host's revision, as Alembic records heads) hides the plugin's; the table
    is dropped again after."""
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE alembic_version (version_num varchar(64) PRIMARY KEY)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('h002_chats')"))
    try:
        return migrate.host_revisions(engine)
    finally:
        with engine.begin() as conn:
            conn.execute(text("DROP TABLE alembic_version"))


def test_populated_revision_1_upgrades_fast_then_reconciles(engine: Engine, db_url: str) -> None:
    earlier_release_database(engine, REVISION_1)
    assert migrate.current_revisions(engine) == (REVISION_1,)
    assert tables(engine) == REVISION_1_TABLES | {VERSION_TABLE}
    populate_revision_1(engine)
    with engine.connect() as conn:
        n_events = conn.execute(text("SELECT count(*) FROM transcript_events")).scalar_one()
    assert n_events == SESSIONS * EVENTS_PER_SESSION >= 50_000

    started = time.perf_counter()
    migrate.upgrade(engine)
    elapsed = time.perf_counter() - started
    print(f"upgrade of {n_events} events took {elapsed:.3f}s")
    assert elapsed < 1.0, f"upgrade took {elapsed:.2f}s"

    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    assert tables(engine) >= PLUGIN_TABLES
    with engine.connect() as conn:  # no backfill inside the migration
        assert conn.execute(text("SELECT count(*) FROM message_index")).scalar_one() == 0
        assert conn.execute(text("SELECT count(*) FROM openclaw_index_state")).scalar_one() == 0

    store = TranscriptStore(db_url, background=False)
    try:
        assert store.index_status() == {"pending": SESSIONS, "indexed": 0, "total": SESSIONS}
        out = store.search(CALLER, "legacyword")
        assert out["results"] == [] and out["indexing"] is True and out["warning"] == WARNING
        result = store.reconcile()
        assert result["pending"] == 0
        assert store.index_status() == {"pending": 0, "indexed": SESSIONS, "total": SESSIONS}
        out = store.search(CALLER, "legacyword s7 n12")
        assert [(h["sessionId"], h["messageId"]) for h in out["results"]] == [("old-0007", "e12")]
        assert "indexing" not in out
        assert found(store, "toolword") == set()
        assert found(store, "abandonedword") == set()  # rewound away in every 10th session
        assert found(store, "s10 n50") == {("old-0010", "e50")}
        assert found(store, "s10 n52") == set()
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT count(*) FROM message_index")).scalar_one()
            # 90 text messages per session; the rewound sessions keep e0..e50 (46 of them)
            assert rows == 450 * 90 + 50 * 46
        # upgraded sessions take live appends afterwards
        seq = store.append(
            "old-0003",
            {
                "type": "message",
                "id": "new1",
                "parentId": "e99",
                "message": {"role": "user", "content": "freshword"},
            },
        )
        assert seq == EVENTS_PER_SESSION
        assert found(store, "freshword") == {("old-0003", "new1")}
        assert store.index_status()["pending"] == 0
    finally:
        store.close()


def test_store_opens_and_upgrades_a_revision_1_database(engine: Engine, db_url: str) -> None:
    earlier_release_database(engine, REVISION_1)
    populate_revision_1_small(engine)
    store = TranscriptStore(db_url, background=False)  # upgrade=True by default
    try:
        assert migrate.current_revisions(engine) == (HEAD_REVISION,)
        assert store.index_status() == {"pending": 1, "indexed": 0, "total": 1}
        store.reconcile()
        assert found(store, "tinyword") == {("tiny", "t1")}
    finally:
        store.close()


def populate_revision_1_small(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO sessions (session_id, session_key, agent_id) "
            "VALUES ('tiny', 'agent:main:main', 'main')"
        )
        event = {"type": "message", "id": "t1", "message": {"role": "user", "content": "tinyword"}}
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, event) "
                "VALUES ('tiny', 0, 't1', :event)"
            ),
            {"event": json.dumps(event)},
        )


def test_the_store_migrates_a_fresh_database_and_indexes_on_it(db_url: str) -> None:
    """``TranscriptStore`` on a fresh database migrates it to head and indexes."""
    engine = make_engine(db_url)
    try:
        assert tables(engine) == set()
        with openclaw_fts.TranscriptStore(engine, background=False) as store:
            search_tables = SEARCH_TABLES[engine.dialect.name]
            assert tables(engine) == PLUGIN_TABLES | {VERSION_TABLE} | search_tables
            store.create_session("s1", "agent:main:main")
            store.append(
                "s1",
                {
                    "type": "message",
                    "id": "m1",
                    "message": {"role": "user", "content": "a fresh database on any engine"},
                },
            )
            caller = openclaw_fts.Caller("agent:main:main")
            assert [h["messageId"] for h in store.search(caller, "engine")["results"]] == ["m1"]
    finally:
        engine.dispose()


def test_upgrade_without_upgrade_flag_leaves_schema_alone(engine: Engine, db_url: str) -> None:
    migrate.upgrade(engine, REVISION_1)
    store = TranscriptStore(db_url, upgrade=False, background=False)
    store.close()
    assert migrate.current_revisions(engine) == (REVISION_1,)
    index_tables = set(INDEX_TABLES) | SEARCH_TABLES[engine.dialect.name]
    assert not (index_tables & tables(engine))


def test_raw_inserts_keep_last_seq_and_deleted_events_mark_the_session_dirty(
    engine: Engine,
) -> None:
    """The two transcript triggers, on each engine: events written behind the plugin's back
    leave their session pending instead of looking clean."""
    migrate.upgrade(engine)
    add_message(engine, "s1", "m1", "first")
    add_message(engine, "s1", "m2", "second")
    with engine.begin() as conn:
        assert conn.execute(text("SELECT last_seq FROM openclaw_sessions")).scalar_one() == 1
        conn.execute(
            text("INSERT INTO openclaw_index_state (session_id, indexed_seq) VALUES ('s1', 1)")
        )
        conn.execute(text("DELETE FROM transcript_events WHERE event_id = 'm2'"))
        state = conn.execute(
            text("SELECT needs_rebuild, generation FROM openclaw_index_state")
        ).one()
    assert tuple(state) == (True, 1)
    with engine.begin() as conn:  # one statement, rows of two sessions, out of seq order
        conn.execute(
            text(
                "INSERT INTO openclaw_sessions (session_id, session_key, agent_id) "
                "VALUES ('s2', 'agent:main:s2', 'main')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, type, event) VALUES "
                "('s1', 7, 'r7', 'custom', '{}'), ('s2', 4, 'r4', 'custom', '{}'), "
                "('s1', 5, 'r5', 'custom', '{}'), ('s2', 2, 'r2', 'custom', '{}')"
            )
        )
        seqs = conn.execute(
            text("SELECT session_id, last_seq FROM openclaw_sessions ORDER BY session_id")
        ).all()
    assert [tuple(r) for r in seqs] == [("s1", 7), ("s2", 4)]  # each raised to its highest
    with engine.begin() as conn:  # never lowered
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, type, event) "
                "VALUES ('s1', 6, 'r6', 'custom', '{}')"
            )
        )
        assert (
            conn.execute(
                text("SELECT last_seq FROM openclaw_sessions WHERE session_id = 's1'")
            ).scalar_one()
            == 7
        )
        conn.execute(text("DELETE FROM openclaw_sessions WHERE session_id = 's2'"))
    with engine.begin() as conn:  # the cascade from openclaw_sessions runs through the trigger
        conn.execute(text("DELETE FROM openclaw_sessions WHERE session_id = 's1'"))
    with engine.connect() as conn:
        for table in ("transcript_events", "openclaw_index_state", "message_index"):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0


def test_cli_on_an_unmigrated_database_says_to_upgrade(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    with engine.begin() as conn:  # a database that exists, with a table of the host's only
        conn.execute(text("CREATE TABLE host_notes (id INTEGER PRIMARY KEY)"))
    proc = run(tmp_path, "--db", db_url, "status")
    assert proc.returncode != 0
    (line,) = proc.stderr.strip().splitlines()
    assert "no openclaw-fts schema" in line and "upgrade" in line


# -- the schema itself -------------------------------------------------------------------------


def test_upgrade_creates_every_table_and_the_engines_search_objects(engine: Engine) -> None:
    """Every table at head, their foreign keys cascading from ``openclaw_sessions`` and a
    working full-text index: FTS5's external-content table and its delete trigger on SQLite;
    the text search configuration, ``unaccent``, the generated ``tsvector`` column, its GIN
    index and the plpgsql trigger functions on PostgreSQL."""
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    dialect = engine.dialect.name
    assert tables(engine) == PLUGIN_TABLES | {VERSION_TABLE} | SEARCH_TABLES[dialect]
    inspector = inspect(engine)
    for table in (
        "transcript_events",
        "openclaw_branches",
        "openclaw_index_state",
        "message_index",
    ):
        fks = inspector.get_foreign_keys(table)
        assert [
            (fk["referred_table"], fk["constrained_columns"], fk["referred_columns"], fk["options"])
            for fk in fks
        ] == [("openclaw_sessions", ["session_id"], ["session_id"], {"ondelete": "CASCADE"})], table
    if dialect == "sqlite":
        assert "message_index_fts_delete" in sqlite_objects(engine).get("trigger", set())
        with engine.connect() as conn:
            sql = conn.execute(
                text("SELECT sql FROM sqlite_master WHERE name = 'message_fts'")
            ).scalar_one()
            assert "fts5" in sql.lower() and "remove_diacritics 2" in sql
            # it is a working FTS5 table
            conn.execute(text("SELECT count(*) FROM message_fts WHERE message_fts MATCH 'x'")).all()
        return
    objects = pg_search_objects(engine)
    assert objects["config"] == 1 and objects["extension"] == 1
    data_type, generated, expression = objects["column"]
    assert (data_type, generated) == ("tsvector", "ALWAYS")
    assert pg.TEXT_SEARCH_CONFIG in expression and "body" in expression
    assert "USING gin" in objects["gin"] and pg.TSVECTOR_COLUMN in objects["gin"]
    assert plugin_functions(engine) == PG_FUNCTIONS
    with engine.connect() as conn:  # booleans default to false, not to an integer
        default = conn.execute(
            text(
                "SELECT column_default FROM information_schema.columns "
                "WHERE table_name = 'openclaw_sessions' AND column_name = 'archived'"
            )
        ).scalar_one()
    assert default == "false"


def test_autogenerate_beside_host_metadata(engine: Engine) -> None:
    """A host lists the plugin's metadata beside its own: only the host's change shows."""
    migrate.upgrade(engine)
    host = MetaData()
    Table("host_users", host, Column("id", Integer, primary_key=True), Column("name", String(50)))
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"include_name": include_name})
        diff = compare_metadata(ctx, [host, openclaw_fts.metadata])
    assert [(d[0], d[1].name) for d in diff] == [("add_table", "host_users")]


def test_without_include_name_the_search_objects_would_show(engine: Engine) -> None:
    """The filter is what hides them (and hides nothing else): on SQLite FTS5's tables, on
    PostgreSQL the ``tsvector`` column and its GIN index; the version table on both."""
    migrate.upgrade(engine)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn)
        diff = compare_metadata(ctx, openclaw_fts.metadata)
    shown = {(d[0], d[-1].name if hasattr(d[-1], "name") else d[3]) for d in diff}
    expected = {("remove_table", VERSION_TABLE)} | UNFILTERED_DIFF[engine.dialect.name]
    assert shown == expected, shown
    assert len(diff) == len(expected)


def test_include_name_hides_only_fts_and_version_tables() -> None:
    for name in (
        "message_fts",
        "message_fts_data",
        "message_fts_idx",
        "message_fts_content",
        "message_fts_docsize",
        "message_fts_config",
        VERSION_TABLE,
    ):
        assert include_name(name, "table", {}) is False, name
    for name in ("sessions", "message_index", "index_state", "host_table", "message_fts_notes"):
        assert include_name(name, "table", {}) is True, name
    assert include_name("ix_anything", "index", {}) is True


# -- downgrade and the version table -----------------------------------------------------------


def test_downgrade_to_base_removes_every_plugin_object_and_upgrades_again(
    engine: Engine, db_url: str
) -> None:
    migrate.upgrade(engine)
    store = TranscriptStore(db_url, background=False)
    try:
        store.create_session("s1", "agent:main:main")
        store.append(
            "s1",
            {"type": "message", "id": "m1", "message": {"role": "user", "content": "downword"}},
        )
    finally:
        store.close()
    migrate.downgrade(engine, "base")
    assert migrate.current_revisions(engine) == ()
    assert tables(engine) <= {VERSION_TABLE}
    if engine.dialect.name == "sqlite":
        left = sqlite_objects(engine)
        assert not left.get("trigger") and not left.get("index") and not left.get("view")
    else:
        objects = pg_search_objects(engine)
        assert objects["config"] == 0 and objects["column"] is None and objects["gin"] is None
        assert objects["extension"] == 1  # server-wide: left for whoever else uses it
        assert plugin_functions(engine) == set()
    # and up again: a working, empty store
    migrate.upgrade(engine)
    assert tables(engine) == PLUGIN_TABLES | {VERSION_TABLE} | SEARCH_TABLES[engine.dialect.name]
    store = TranscriptStore(db_url, background=False)
    try:
        assert store.index_status() == {"pending": 0, "indexed": 0, "total": 0}
        store.create_session("s2", "agent:main:main")
        store.append(
            "s2",
            {"type": "message", "id": "m1", "message": {"role": "user", "content": "upagainword"}},
        )
        assert found(store, "upagainword") == {("s2", "m1")}
        assert found(store, "downword") == set()
    finally:
        store.close()


def test_migrations_use_their_own_version_table(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        conn.exec_driver_sql("INSERT INTO alembic_version VALUES ('host_rev_1')")
    migrate.upgrade(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").all() == [
            ("host_rev_1",)
        ]
        assert conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").all() == [
            (HEAD_REVISION,)
        ]


def test_version_location_holds_the_revisions() -> None:
    names = {p.name for p in migrate.version_location().glob("*.py")}
    assert {"0001_transcripts.py", "0002_index.py", f"{HEAD_REVISION}.py"} <= names


# -- PostgreSQL's own objects ------------------------------------------------------------------


def test_tsvector_folds_case_and_diacritics_and_keeps_every_word(pg_engine: Engine) -> None:
    migrate.upgrade(pg_engine)
    add_message(pg_engine, "s1", "m1", "Café Crème at the Zürich office")
    add_message(pg_engine, "s1", "m2", "我 们 的 数 据 库 很 好")  # index_body spaces CJK
    add_message(pg_engine, "s1", "m3", "the deployment of node.js")
    assert matching(pg_engine, "cafe & creme") == ["m1"]
    assert matching(pg_engine, "ZURICH") == ["m1"]
    assert matching(pg_engine, "the") == ["m1", "m3"]  # simple: no stop words dropped
    assert matching(pg_engine, "数 <-> 据") == ["m2"]
    assert matching(pg_engine, "deplo:*") == ["m3"]
    with pg_engine.begin() as conn:  # the column follows an update of the text
        conn.execute(text("UPDATE message_index SET body = 'renamed' WHERE event_id = 'm1'"))
    assert matching(pg_engine, "cafe") == []
    assert matching(pg_engine, "renamed") == ["m1"]


# -- the unaccent extension ------------------------------------------------------------------


def test_a_role_that_cannot_create_unaccent_gets_an_error_naming_it(pg_url: str) -> None:
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    database = make_url(pg_url).database
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE ROLE {APP_ROLE} LOGIN")
            conn.exec_driver_sql(f'REVOKE CREATE ON DATABASE "{database}" FROM {APP_ROLE}')
            conn.exec_driver_sql(f"GRANT CREATE ON SCHEMA public TO {APP_ROLE}")
        app_url = make_url(pg_url).set(username=APP_ROLE)
        app = make_engine(app_url)
        try:
            with pytest.raises(UnsupportedDatabaseError) as info:
                migrate.upgrade(app)
            message = str(info.value)
            assert "'unaccent'" in message and "CREATE EXTENSION unaccent" in message
            assert "permission denied" in message
            assert tables(app) == set()  # one transaction: revision 1 rolled back too
            with admin.connect() as conn:  # a superuser installs it once
                conn.exec_driver_sql("CREATE EXTENSION unaccent")
            migrate.upgrade(app)
            assert tables(app) == PLUGIN_TABLES | {VERSION_TABLE, PENDING_TABLE}
            assert pg_search_objects(app)["config"] == 1
        finally:
            app.dispose()
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP OWNED BY {APP_ROLE} CASCADE")
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {APP_ROLE}")
        admin.dispose()


# -- 0006: the tsvector column's statistics target ---------------------------------------------


def stat_target(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT attstattarget FROM pg_attribute WHERE attrelid = "
                    "'message_index'::regclass AND attname = 'body_tsv'"
                )
            ).scalar_one()
        )


def test_0006_sets_the_statistics_target_and_downgrade_restores_the_default(
    pg_engine: Engine,
) -> None:
    migrate.upgrade(pg_engine)
    assert stat_target(pg_engine) == pg.TSVECTOR_STATISTICS_TARGET
    migrate.downgrade(pg_engine, migrate.TABLES_REVISION)
    assert stat_target(pg_engine) == -1  # the server's default
    migrate.upgrade(pg_engine)
    assert stat_target(pg_engine) == pg.TSVECTOR_STATISTICS_TARGET


def last_seq_trigger_per_row(engine: Engine) -> bool:
    with engine.connect() as conn:
        tgtype = conn.execute(
            text(
                "SELECT tgtype FROM pg_trigger WHERE tgname = 'transcript_events_last_seq' "
                "AND tgrelid = 'transcript_events'::regclass"
            )
        ).scalar_one()
    return bool(tgtype & 1)  # TRIGGER_TYPE_ROW


def test_0008_raises_last_seq_once_per_statement_and_downgrade_restores_the_row_trigger(
    pg_engine: Engine,
) -> None:
    """0008 changes no table, only the ``last_seq`` trigger's kind: a host's version table that
    hides the plugin's revisions is read from it (0007 against the head)."""
    migrate.upgrade(pg_engine)
    assert not last_seq_trigger_per_row(pg_engine)
    migrate.downgrade(pg_engine, migrate.IMPACT_REVISION)
    assert last_seq_trigger_per_row(pg_engine)
    add_message(pg_engine, "s1", "m1", "first")
    add_message(pg_engine, "s1", "m2", "second")
    with pg_engine.begin() as conn:
        assert conn.execute(text("SELECT last_seq FROM openclaw_sessions")).scalar_one() == 1
        conn.execute(text(f"DROP TABLE {VERSION_TABLE}"))
        conn.execute(text("CREATE TABLE alembic_version (version_num varchar(64) PRIMARY KEY)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('h002_chats')"))
    assert migrate.host_revisions(pg_engine) == (migrate.IMPACT_REVISION,)


def test_0009_guards_the_impact_lists_and_downgrade_restores_0008(pg_engine: Engine) -> None:
    """0009 changes no table, only the impact lists' functions and triggers (promotion
    serialised against the writers of index rows): a host's version table that hides the
    plugin's revisions is read from them (0008 against the head), and a downgraded database
    still keeps its lists."""
    migrate.upgrade(pg_engine)
    migrate.downgrade(pg_engine, migrate.LAST_SEQ_REVISION)
    add_message(pg_engine, "s1", "m1", "first")
    assert revisions_under_host_table(pg_engine) == (migrate.LAST_SEQ_REVISION,)
    migrate.upgrade(pg_engine)
    assert migrate.current_revisions(pg_engine) == (HEAD_REVISION,)
    add_message(pg_engine, "s1", "m2", "second")
    assert check(pg_engine).ok


def test_0010_promotes_from_the_plugins_own_counts_and_downgrade_restores_0009(
    pg_engine: Engine,
) -> None:
    """0010 changes no table, only the promotion's functions (its candidates from the newest
    index rows, not the planner's statistics): a host's version table that hides the plugin's
    revisions is read from them (0009 against the head), and a downgraded database still
    keeps its lists and is upgraded again."""
    migrate.upgrade(pg_engine)
    migrate.downgrade(pg_engine, migrate.GUARD_REVISION)
    assert migrate.current_revisions(pg_engine) == (migrate.GUARD_REVISION,)
    add_message(pg_engine, "s1", "m1", "first")
    assert revisions_under_host_table(pg_engine) == (migrate.GUARD_REVISION,)
    migrate.upgrade(pg_engine)
    assert migrate.current_revisions(pg_engine) == (HEAD_REVISION,)
    add_message(pg_engine, "s1", "m2", "second")
    assert check(pg_engine).ok


def time_indexed(engine: Engine) -> bool:
    """Whether the index rows' time index of revision 0011 exists (read through the engine's
    own inspector: an index of the plain table)."""
    return any(
        i["name"] == TIME_INDEX and i["column_names"] == ["timestamp_ms"]
        for i in inspect(engine).get_indexes("message_index")
    )


def test_0011_orders_the_index_rows_by_time_and_downgrade_drops_it(engine: Engine) -> None:
    """0011 adds one index (the index rows' ``timestamp_ms``, what a search ordered ``recent``
    walks); downgrade to 0010 drops it and keeps every row; a host's version table that hides
    the plugin's revisions is read from it (0010 without it, the head with it); a search
    ordered ``recent`` answers the same before and after."""
    migrate.upgrade(engine)
    assert time_indexed(engine)
    with TranscriptStore(engine, background=False) as store:
        store.create_session("s1", "agent:main:main")
        for n, words in enumerate(("first lantern", "second lantern"), start=1):
            event = {"type": "message", "id": f"m{n}", "timestamp": 1_700_000_000_000 + n}
            store.append("s1", {**event, "message": {"role": "user", "content": words}})
        newest = store.search(CALLER, "lantern", order="recent")
    assert [r["messageId"] for r in newest["results"]] == ["m2", "m1"]
    migrate.downgrade(engine, migrate.SELF_PROMOTING_REVISION)
    assert migrate.current_revisions(engine) == (migrate.SELF_PROMOTING_REVISION,)
    assert not time_indexed(engine)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE alembic_version (version_num varchar(64) PRIMARY KEY)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('h002_chats')"))
    assert migrate.host_revisions(engine) == (migrate.SELF_PROMOTING_REVISION,)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE INDEX {TIME_INDEX} ON message_index (timestamp_ms)"))
    # 0011's index without 0012's functions (PostgreSQL; 0012 changes nothing on SQLite).
    with_index = (
        migrate.TIME_ORDER_REVISION
        if engine.dialect.name == "postgresql"
        else migrate.PENDING_REVISION
    )
    assert migrate.host_revisions(engine) == (with_index,)
    with engine.begin() as conn:
        conn.execute(text(f"DROP INDEX {TIME_INDEX}"))
        conn.execute(text("DROP TABLE alembic_version"))
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    assert time_indexed(engine)
    with TranscriptStore(engine, background=False) as store:
        assert store.search(CALLER, "lantern", order="recent") == newest
    assert check(engine).ok


def promote_signatures(engine: Engine) -> set[str]:
    """The argument lists of the promotion function(s) in ``pg_proc``."""
    with engine.connect() as conn:
        return {
            str(r[0])
            for r in conn.execute(
                text(
                    "SELECT pg_get_function_identity_arguments(oid) FROM pg_proc "
                    "WHERE proname = 'openclaw_fts_impact_promote'"
                )
            )
        }


#: The promotion function's arguments before revision 0012 and after it.
PROMOTE_0010 = {"min_docs bigint"}
PROMOTE_0012 = {"min_docs bigint, max_words integer"}


def test_0012_bounds_the_promotion_and_downgrade_restores_0011(engine: Engine) -> None:
    """0012 changes no table, only the promotion's functions on PostgreSQL (a bound on the
    words one promotion tracks; nothing on SQLite): downgrade to 0011 restores the unbounded
    function, which ``optimize`` and a reconciler's pass still call; a host's version table
    that hides the plugin's revisions is read from ``pg_proc`` (0011 against the head; on
    SQLite the two are the same schema, read as 0014: 0015 added the one table SQLite tells
    apart); upgrading again restores the
    bound and the store keeps working."""
    postgresql = engine.dialect.name == "postgresql"
    migrate.upgrade(engine)
    if postgresql:
        assert promote_signatures(engine) == PROMOTE_0012
    migrate.downgrade(engine, migrate.TIME_ORDER_REVISION)
    assert migrate.current_revisions(engine) == (migrate.TIME_ORDER_REVISION,)
    if postgresql:
        assert promote_signatures(engine) == PROMOTE_0010
    add_message(engine, "s1", "m1", "first lantern")
    with TranscriptStore(engine, upgrade=False, background=False) as store:
        store.optimize()
        assert store.reconcile()["ran"]
        assert [r["messageId"] for r in store.search(CALLER, "lantern")["results"]] == ["m1"]
    hidden = migrate.TIME_ORDER_REVISION if postgresql else migrate.PENDING_REVISION
    assert revisions_under_host_table(engine) == (hidden,)
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    if postgresql:
        assert promote_signatures(engine) == PROMOTE_0012
    add_message(engine, "s1", "m2", "second lantern")
    with TranscriptStore(engine, background=False) as store:
        assert store.reconcile()["ran"]
        store.optimize()
        found = store.search(CALLER, "lantern")["results"]
        assert sorted(r["messageId"] for r in found) == ["m1", "m2"]
    assert check(engine).ok


def pending_marks(engine: Engine) -> set[str] | None:
    """The sessions revision 0014's table marks pending (None: no table, as on SQLite)."""
    with engine.connect() as conn:
        if (
            engine.dialect.name != "postgresql"
            or not conn.execute(
                text("SELECT to_regclass(:t) IS NOT NULL"), {"t": PENDING_TABLE}
            ).scalar()
        ):
            return None
        return {r[0] for r in conn.execute(text(f"SELECT session_id FROM {PENDING_TABLE}"))}


def test_0014_marks_the_pending_sessions_and_downgrade_restores_0012(engine: Engine) -> None:
    """0014 adds the pending marks on PostgreSQL (nothing on SQLite): a database at 0012 with
    exact and pending sessions gets its pending ones marked by the upgrade, and searches answer
    the same (``indexing`` included); downgrade to 0012 drops the table (a host's version table
    that hides the plugin's revisions is read from the catalogue: 0012 without it, the head
    with it; on SQLite the two are one schema, read as 0014: 0015's table is gone)."""
    postgresql = engine.dialect.name == "postgresql"
    migrate.upgrade(engine)
    for sid in ("s1", "s2", "s3"):
        add_message(engine, sid, f"{sid}m", f"lantern {sid}")
    with TranscriptStore(engine, background=False) as store:
        store.reconcile()
    migrate.downgrade(engine, migrate.BOUNDED_REVISION)
    assert migrate.current_revisions(engine) == (migrate.BOUNDED_REVISION,)
    assert pending_marks(engine) is None
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM transcript_events WHERE session_id = 's2'"))
        conn.execute(text("DELETE FROM openclaw_index_state WHERE session_id = 's3'"))
    with TranscriptStore(engine, upgrade=False, background=False) as store:
        before = store.search(CALLER, "lantern")
    assert before.get("indexing") is True
    hidden = migrate.BOUNDED_REVISION if postgresql else migrate.PENDING_REVISION
    assert revisions_under_host_table(engine) == (hidden,)
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    assert pending_marks(engine) == ({"s2", "s3"} if postgresql else None)
    with TranscriptStore(engine, background=False) as store:
        assert store.search(CALLER, "lantern") == before
        store.reconcile()
        assert not store.search(CALLER, "lantern").get("indexing")
    assert pending_marks(engine) == (set() if postgresql else None)
    assert check(engine).ok


def list_rows(engine: Engine) -> list[tuple[Any, ...]]:
    """Every impact-list row (with its time from revision 0013 on PostgreSQL, when it has it),
    and whether each list row's time is its index row's."""
    timed = engine.dialect.name == "postgresql" and pg_row_time(engine)
    time = ", i.timestamp_ms, i.timestamp_ms = mi.timestamp_ms" if timed else ""
    with engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    f"SELECT i.row_id, i.term, i.impact{time} FROM message_impact AS i "
                    "JOIN message_index AS mi ON mi.id = i.row_id ORDER BY i.term, i.row_id"
                )
            )
        ]


def pg_row_time(engine: Engine) -> bool:
    """Whether ``message_impact`` has revision 0013's column."""
    return any(c["name"] == "timestamp_ms" for c in inspect(engine).get_columns("message_impact"))


#: ``since`` windows of :func:`test_0013_gives_the_list_rows_their_time_and_downgrade_drops_it`'s
#: messages (message ``n`` at ``T0 + n`` ms).
WINDOWS_0013 = (0, 5, 17, 30)


def test_0013_gives_the_list_rows_their_time_and_downgrade_drops_it(engine: Engine) -> None:
    """0013 adds the impact-list rows' time on PostgreSQL (nothing on SQLite): an upgrade of a
    database holding lists fills it with each row's index row's time, on the flat layout and
    on the partitioned one; downgrade to 0012 drops it and keeps every list row; a host's
    version table that hides the plugin's revisions is read from it (0012 without it, the head
    with it); windowed searches answer the same at either revision, and lists written after
    the upgrade (a new message, a change of agent on the partitioned layout) carry the time."""
    postgresql = engine.dialect.name == "postgresql"
    migrate.upgrade(engine)
    t0 = 1_700_000_000_000
    with TranscriptStore(engine, background=False) as store:
        store.create_session("s1", "agent:main:main")
        for n in range(40):
            event = {"type": "message", "id": f"m{n}", "timestamp": t0 + n}
            words = "lantern " * (1 + n % 3) + "filler " * (n % 5)
            store.append("s1", {**event, "message": {"role": "user", "content": words}})
        if postgresql:
            with engine.begin() as conn:  # a word of 8 messages is frequent here
                pg.impact.promote(conn, 8)
        else:
            from openclaw_fts.index.sqlite import impact as sqlite_impact
            from openclaw_fts.index.sqlite.fts import cursor

            with engine.begin() as conn:
                sqlite_impact.promote(cursor(conn), 8)

    def windows() -> list[Any]:
        with TranscriptStore(engine, upgrade=False, background=False) as store:
            return [store.search(CALLER, "lantern", since=t0 + w)["results"] for w in WINDOWS_0013]

    listed = list_rows(engine)
    assert listed and (not postgresql or all(r[4] for r in listed))
    found = windows()
    assert all(found)
    migrate.downgrade(engine, migrate.BOUNDED_REVISION)  # pooled connections read it again
    assert migrate.current_revisions(engine) == (migrate.BOUNDED_REVISION,)
    if postgresql:
        assert not pg_row_time(engine)
    assert [r[:3] for r in list_rows(engine)] == [r[:3] for r in listed]
    assert windows() == found
    hidden = migrate.BOUNDED_REVISION if postgresql else migrate.PENDING_REVISION
    assert revisions_under_host_table(engine) == (hidden,)
    if postgresql:  # 0012's partitioned layout (its change-of-agent function: 0009's)
        with engine.begin() as conn:
            pg.partition.partition_by_agent(conn, 4)
            conn.execute(text(revision_module("0013_impact_row_time").MOVE_FUNCTION_0012))
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    assert list_rows(engine) == listed
    assert windows() == found
    assert check(engine).ok
    with TranscriptStore(engine, background=False) as store:
        event = {"type": "message", "id": "m40", "timestamp": t0 + 40, "parentId": "m39"}
        store.append("s1", {**event, "message": {"role": "user", "content": "lantern " * 4}})
    if postgresql:
        with engine.begin() as conn:  # the partitioned layout moves the rows, relisted
            conn.execute(text("UPDATE openclaw_sessions SET agent_id = 'ops'"))
    added = list_rows(engine)
    assert len(added) > len(listed) and (not postgresql or all(r[4] for r in added))
    assert check(engine).ok


def revision_module(name: str) -> Any:
    """A revision's module, loaded from its file (its frozen DDL)."""
    path = Path(migrate.version_location()) / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"openclaw_fts_revision_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_host_version_table_hiding_the_plugin_is_read_from_the_schema(engine: Engine) -> None:
    """A host revision that depends on 0005 hides it from the host's ``alembic_version``:
    every table present is the head (0007 added the impact lists' tables; 0008 changes none:
    on PostgreSQL the ``last_seq`` trigger's kind tells 0007 and 0008 apart); without those,
    0005 and 0006 have the same tables, and on PostgreSQL the statistics target tells them
    apart (0006 changes nothing else, and nothing at all on SQLite, where 0005's tables read
    as 0006). The real ``alembic`` command doing this in a host's app: tests/test_host_app.py."""
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text(f"DROP TABLE {VERSION_TABLE}"))
        conn.execute(text("CREATE TABLE alembic_version (version_num varchar(64) PRIMARY KEY)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('h002_chats')"))
    assert migrate.host_revisions(engine) == (HEAD_REVISION,)
    with engine.begin() as conn:
        for table in ("message_impact", "message_impact_terms"):
            conn.execute(text(f"DROP TABLE {table}"))
    assert migrate.host_revisions(engine) == (migrate.STATISTICS_REVISION,)
    if engine.dialect.name != "postgresql":
        return
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE message_index ALTER COLUMN body_tsv SET STATISTICS -1"))
    assert migrate.host_revisions(engine) == (migrate.TABLES_REVISION,)


# -- the built wheel -----------------------------------------------------------------------------


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(kwargs.pop("env", {}))
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, **kwargs)
    assert result.returncode == 0, f"{args}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


@pytest.mark.slow
def test_wheel_installs_and_upgrades_a_database(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # Without hatchling in this environment, build in an isolated one (fetches it from PyPI).
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-isolation"]
    _run(
        [sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(dist), str(REPO)],
        cwd=tmp_path,
    )
    wheels = list(dist.glob("openclaw_fts-*.whl"))
    assert len(wheels) == 1
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
    assert "openclaw_fts/migrations/env.py" in names
    assert "openclaw_fts/migrations/versions/0002_index.py" in names
    assert "openclaw_fts/py.typed" in names

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", str(wheels[0])], cwd=tmp_path)

    db = tmp_path / "x.sqlite"
    cli = venv / "bin" / "openclaw-fts"
    assert cli.exists()
    _run([str(cli), "--db", f"sqlite:///{db}", "upgrade"], cwd=tmp_path)
    con = sqlite3.connect(db)
    try:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        (version,) = con.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
    finally:
        con.close()
    assert names >= PLUGIN_TABLES
    assert version == HEAD_REVISION

    # the installed package (not the checkout) works end to end
    script = (
        "import json, sys, openclaw_fts\n"
        "from openclaw_fts import TranscriptStore, Caller\n"
        "s = TranscriptStore(sys.argv[1], background=False)\n"
        "s.create_session('w1', 'agent:main:main')\n"
        "s.append('w1', {'type': 'message', 'id': 'm1',"
        " 'message': {'role': 'user', 'content': 'wheelword works'}})\n"
        "out = s.search(Caller('agent:main:main'), 'wheelword')\n"
        "print(json.dumps({'file': openclaw_fts.__file__,"
        " 'ids': [r['messageId'] for r in out['results']]}))\n"
    )
    result = _run([str(python), "-c", script, f"sqlite:///{db}"], cwd=tmp_path)
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["ids"] == ["m1"]
    assert str(venv) in data["file"] and str(REPO) not in data["file"]


def vocabulary_terms(engine: Engine) -> set[str] | None:
    """The terms of revision 0015's writer-kept vocabulary (None: no table, as on PostgreSQL)."""
    if VOCABULARY_TABLE not in tables(engine):
        return None
    with engine.connect() as conn:
        return {r[0] for r in conn.execute(text(f"SELECT term FROM {VOCABULARY_TABLE}"))}


def test_0015_keeps_the_vocabulary_and_downgrade_drops_it(engine: Engine) -> None:
    """0015 adds SQLite's writer-kept vocabulary (nothing on PostgreSQL): a database at 0014
    with indexed words gets its terms of letters only from FTS5's vocabulary (no identifier,
    no number), the writer adds the words of rows indexed after it, and the
    suggestions are the same at 0014, at head and after a downgrade, which drops the table (a
    host's version table that hides the plugin's revisions: 0014 without the table on SQLite,
    the head on PostgreSQL, where the two are one schema)."""
    postgresql = engine.dialect.name == "postgresql"
    migrate.upgrade(engine, migrate.PENDING_REVISION)
    assert vocabulary_terms(engine) is None
    add_message(engine, "s1", "m1", "the lantern glows w0g0n1q 1234 a")
    with TranscriptStore(engine, upgrade=False, background=False) as store:
        store.reconcile()
        before = store.suggest(CALLER, "lanterm")
    assert before == ["lantern"]
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == (HEAD_REVISION,)
    assert vocabulary_terms(engine) == (None if postgresql else {"the", "lantern", "glows", "a"})
    with TranscriptStore(engine, background=False) as store:
        assert store.suggest(CALLER, "lanterm") == before
        store.create_session("s2", "agent:main:main")
        store.append(
            "s2",
            {
                "type": "message",
                "id": "m2",
                "message": {"role": "user", "content": "lanterns 99 x"},
            },
        )
        assert store.suggest(CALLER, "lanternz") == ["lantern", "lanterns"]
    if not postgresql:
        assert vocabulary_terms(engine) == {"the", "lantern", "glows", "a", "lanterns", "x"}
    assert revisions_under_host_table(engine) == (HEAD_REVISION,)
    migrate.downgrade(engine, migrate.PENDING_REVISION)
    assert migrate.current_revisions(engine) == (migrate.PENDING_REVISION,)
    assert vocabulary_terms(engine) is None
    hidden = HEAD_REVISION if postgresql else migrate.PENDING_REVISION
    assert revisions_under_host_table(engine) == (hidden,)
    with TranscriptStore(engine, upgrade=False, background=False) as store:
        assert store.suggest(CALLER, "lanternz") == ["lantern", "lanterns"]
    assert check(engine).ok
