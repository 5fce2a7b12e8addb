"""Schema migrations on PostgreSQL: the plugin's revisions create every table, the index's
text-search objects and SQLite's two transcript triggers on a fresh database, downgrade to base
and up again, and fail with an error naming ``unaccent`` when the migrating role may not create
it. What both engines share (an idempotent upgrade, autogenerate reporting nothing, a downgrade
to revision 1 keeping transcripts) is tests/test_migration_round_trips.py. Runs against the
test session's own server (tests/conftest_pg.py); skipped with the reason where there is
none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from earlier_release import earlier_release_database
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from test_cli import run

import openclaw_fts
from openclaw_fts import migrate
from openclaw_fts.alembic import VERSION_TABLE, include_name
from openclaw_fts.engine import make_engine
from openclaw_fts.errors import UnsupportedDatabaseError
from openclaw_fts.index import postgresql as pg
from openclaw_fts.models import INDEX_TABLES, TRANSCRIPT_TABLES

REVISION_1 = "0001_transcripts"
HEAD_REVISION = "0006_tsvector_statistics"
PLUGIN_TABLES = set(TRANSCRIPT_TABLES) | set(INDEX_TABLES)
#: Revision 1's tables under the names it gave them (0005 renames two of them).
REVISION_1_TABLES = {"sessions", "transcript_events", "branches"}
REVISION_4 = "0004_host_guest"
#: A role that may create tables in ``public`` but not extensions (a typical application role).
APP_ROLE = "openclaw_app"


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = make_engine(pg_url)
    try:
        yield engine
    finally:
        engine.dispose()


def tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


def search_objects(engine: Engine) -> dict[str, Any]:
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
    """One session, event and index row in plain SQL (what a backend's writer will do)."""
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


# -- upgrade ---------------------------------------------------------------------------------


def test_upgrade_creates_every_table_and_the_search_objects(pg_engine: Engine) -> None:
    migrate.upgrade(pg_engine)
    assert migrate.current_revisions(pg_engine) == (HEAD_REVISION,)
    assert tables(pg_engine) == PLUGIN_TABLES | {VERSION_TABLE}
    objects = search_objects(pg_engine)
    assert objects["config"] == 1 and objects["extension"] == 1
    data_type, generated, expression = objects["column"]
    assert (data_type, generated) == ("tsvector", "ALWAYS")
    assert pg.TEXT_SEARCH_CONFIG in expression and "body" in expression
    assert "USING gin" in objects["gin"] and pg.TSVECTOR_COLUMN in objects["gin"]
    assert plugin_functions(pg_engine) == {
        "openclaw_fts_events_last_seq",
        "openclaw_fts_events_deleted",
        "openclaw_fts_events_edited",
    }
    with pg_engine.connect() as conn:  # booleans default to false, not to an integer
        default = conn.execute(
            text(
                "SELECT column_default FROM information_schema.columns "
                "WHERE table_name = 'openclaw_sessions' AND column_name = 'archived'"
            )
        ).scalar_one()
    assert default == "false"


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


def test_the_store_migrates_a_fresh_database_and_indexes_on_it(pg_url: str) -> None:
    """``TranscriptStore`` on a fresh PostgreSQL database migrates it to head and indexes."""
    engine = make_engine(pg_url)
    try:
        assert tables(engine) == set()
        with openclaw_fts.TranscriptStore(engine, background=False) as store:
            assert tables(engine) == PLUGIN_TABLES | {VERSION_TABLE}
            store.create_session("s1", "agent:main:main")
            store.append(
                "s1",
                {
                    "type": "message",
                    "id": "m1",
                    "message": {"role": "user", "content": "a fresh postgres database"},
                },
            )
            caller = openclaw_fts.Caller("agent:main:main")
            assert [h["messageId"] for h in store.search(caller, "postgres")["results"]] == ["m1"]
    finally:
        engine.dispose()


def test_raw_inserts_keep_last_seq_and_deleted_events_mark_the_session_dirty(
    pg_engine: Engine,
) -> None:
    """The two transcript triggers SQLite has, on PostgreSQL too: events written behind the
    plugin's back leave their session pending instead of looking clean."""
    migrate.upgrade(pg_engine)
    add_message(pg_engine, "s1", "m1", "first")
    add_message(pg_engine, "s1", "m2", "second")
    with pg_engine.begin() as conn:
        assert conn.execute(text("SELECT last_seq FROM openclaw_sessions")).scalar_one() == 1
        conn.execute(
            text("INSERT INTO openclaw_index_state (session_id, indexed_seq) VALUES ('s1', 1)")
        )
        conn.execute(text("DELETE FROM transcript_events WHERE event_id = 'm2'"))
        state = conn.execute(
            text("SELECT needs_rebuild, generation FROM openclaw_index_state")
        ).one()
    assert tuple(state) == (True, 1)
    with pg_engine.begin() as conn:  # the cascade from openclaw_sessions runs through the trigger
        conn.execute(text("DELETE FROM openclaw_sessions WHERE session_id = 's1'"))
    with pg_engine.connect() as conn:
        for table in ("transcript_events", "openclaw_index_state", "message_index"):
            assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one() == 0


def test_raw_edits_mark_the_session_or_are_refused(pg_engine: Engine) -> None:
    """Revision 0004's rules on PostgreSQL: a raw UPDATE of an event's content makes its session
    pending; one that changes what a derived column is computed from while leaving the column
    as it was is refused, as on SQLite."""
    migrate.upgrade(pg_engine)
    add_message(pg_engine, "s1", "m1", "first")
    with pg_engine.begin() as conn:
        conn.execute(
            text("INSERT INTO openclaw_index_state (session_id, indexed_seq) VALUES ('s1', 0)")
        )
    edited = {"type": "message", "id": "m1", "message": {"role": "user", "content": "changed"}}
    with pg_engine.begin() as conn:
        conn.execute(text("UPDATE transcript_events SET event = :e"), {"e": json.dumps(edited)})
        state = conn.execute(
            text("SELECT needs_rebuild, generation FROM openclaw_index_state")
        ).one()
    assert tuple(state) == (True, 1)
    moved = {**edited, "id": "m9"}
    with (
        pytest.raises(DBAPIError, match="derived columns change with it"),
        pg_engine.begin() as conn,
    ):
        conn.execute(text("UPDATE transcript_events SET event = :e"), {"e": json.dumps(moved)})
    with pg_engine.begin() as conn:  # with its column, the same change is accepted
        conn.execute(
            text("UPDATE transcript_events SET event = :e, event_id = 'm9'"),
            {"e": json.dumps(moved)},
        )
        assert conn.execute(text("SELECT event_id FROM transcript_events")).scalar_one() == "m9"


def plugin_functions(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT proname FROM pg_proc WHERE proname LIKE 'openclaw_fts%'")
        ).all()
    return {r[0] for r in rows}


def test_cli_on_an_unmigrated_postgresql_database_says_to_upgrade(
    pg_url: str, tmp_path: Path
) -> None:
    proc = run(tmp_path, "--db", pg_url, "status")
    assert proc.returncode != 0
    (line,) = proc.stderr.strip().splitlines()
    assert "no openclaw-fts schema" in line and "upgrade" in line


# -- downgrade -------------------------------------------------------------------------------


def test_downgrade_to_base_and_upgrade_again(pg_engine: Engine) -> None:
    migrate.upgrade(pg_engine)
    add_message(pg_engine, "s1", "m1", "downword")
    migrate.downgrade(pg_engine, "base")
    assert migrate.current_revisions(pg_engine) == ()
    assert tables(pg_engine) <= {VERSION_TABLE}
    objects = search_objects(pg_engine)
    assert objects["config"] == 0 and objects["column"] is None and objects["gin"] is None
    assert objects["extension"] == 1  # server-wide: left for whoever else uses it
    assert plugin_functions(pg_engine) == set()
    migrate.upgrade(pg_engine)
    assert tables(pg_engine) == PLUGIN_TABLES | {VERSION_TABLE}
    add_message(pg_engine, "s2", "m1", "upagainword")
    assert matching(pg_engine, "upagainword") == ["m1"]
    assert matching(pg_engine, "downword") == []


def test_namespaced_tables_upgrade_and_downgrade_keep_rows_and_triggers(
    pg_engine: Engine,
) -> None:
    """0005 on PostgreSQL: rows survive both ways, and the plpgsql trigger functions name the
    tables of the revision the database is at (raw inserts bump ``last_seq``, raw edits and
    deletes mark the session) — after the upgrade and again after the downgrade."""
    earlier_release_database(pg_engine, REVISION_4)
    event = {"type": "message", "id": "m0", "message": {"role": "user", "content": "old"}}
    with pg_engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO sessions (session_id, session_key, agent_id) "
                "VALUES ('s1', 'agent:main:main', 'main')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, type, role, event) "
                "VALUES ('s1', 0, 'm0', 'message', 'user', :j)"
            ),
            {"j": json.dumps(event)},
        )
        conn.execute(text("INSERT INTO index_state (session_id, indexed_seq) VALUES ('s1', 0)"))
        conn.execute(
            text("INSERT INTO branches (session_id, tip_id, is_active) VALUES ('s1', 'm0', true)")
        )
    migrate.upgrade(pg_engine)
    assert tables(pg_engine) == PLUGIN_TABLES | {VERSION_TABLE}

    def exercise(sessions: str, state: str, seq: int) -> tuple[int, bool, int]:
        edited = {**event, "message": {"role": "user", "content": f"edit{seq}"}}
        with pg_engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO transcript_events (session_id, seq, event_id, type, role, event) "
                    f"VALUES ('s1', {seq}, 'm{seq}', 'message', 'user', :j)"
                ),
                {"j": json.dumps({**event, "id": f"m{seq}"})},
            )
            conn.execute(text(f"UPDATE {state} SET needs_rebuild = false"))
            conn.execute(
                text("UPDATE transcript_events SET event = :e WHERE seq = 0"),
                {"e": json.dumps(edited)},
            )
            last_seq = conn.execute(text(f"SELECT last_seq FROM {sessions}")).scalar_one()
            marked, generation = conn.execute(
                text(f"SELECT needs_rebuild, generation FROM {state}")
            ).one()
        return last_seq, marked, generation

    assert exercise("openclaw_sessions", "openclaw_index_state", 1) == (1, True, 1)
    with pg_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM openclaw_branches")).scalar_one() == 1
    migrate.downgrade(pg_engine, REVISION_4)
    assert tables(pg_engine) >= REVISION_1_TABLES | {"index_state"}
    assert exercise("sessions", "index_state", 2) == (2, True, 2)
    with pg_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM transcript_events")).scalar_one() == 3
        assert conn.execute(text("SELECT count(*) FROM branches")).scalar_one() == 1
    migrate.upgrade(pg_engine)
    assert exercise("openclaw_sessions", "openclaw_index_state", 3) == (3, True, 3)


def test_a_host_sessions_table_beside_the_plugin(pg_engine: Engine) -> None:
    """The host's own ``sessions`` table and the plugin's live side by side."""
    migrate.upgrade(pg_engine)
    with pg_engine.begin() as conn:
        conn.execute(text("CREATE TABLE sessions (token TEXT PRIMARY KEY)"))
        conn.execute(text("INSERT INTO sessions VALUES ('host-cookie')"))
    add_message(pg_engine, "s1", "m1", "guestword")
    assert matching(pg_engine, "guestword") == ["m1"]
    with pg_engine.connect() as conn:
        assert conn.execute(text("SELECT token FROM sessions")).scalar_one() == "host-cookie"


def raw_writes_mark(engine: Engine, seq: int) -> tuple[int, bool]:
    """Raw SQL on session ``s1`` (made by :func:`add_message`): an insert bumps ``last_seq``,
    an edit marks the session — the plpgsql bodies name the namespaced tables."""
    event = {"type": "message", "id": f"r{seq}", "message": {"role": "user", "content": "raw"}}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO openclaw_index_state (session_id, indexed_seq) VALUES ('s1', 0) "
                "ON CONFLICT (session_id) DO UPDATE SET needs_rebuild = false"
            )
        )
        conn.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, type, role, event) "
                "VALUES ('s1', :q, :e, 'message', 'user', :j)"
            ),
            {"q": seq, "e": f"r{seq}", "j": json.dumps(event)},
        )
        edited = {**event, "message": {"role": "user", "content": "edited"}}
        conn.execute(
            text("UPDATE transcript_events SET event = :j WHERE seq = :q"),
            {"q": seq, "j": json.dumps(edited)},
        )
        last_seq = conn.execute(text("SELECT last_seq FROM openclaw_sessions")).scalar_one()
        marked = conn.execute(text("SELECT needs_rebuild FROM openclaw_index_state")).scalar_one()
    return last_seq, marked


@pytest.mark.parametrize("host_first", [None, REVISION_1])
def test_a_host_sessions_table_before_the_plugin_migrations(
    pg_engine: Engine, host_first: str | None
) -> None:
    """Issue #16 on PostgreSQL: the host's ``sessions`` table exists before the plugin's
    revisions run (or appears between two of them): they install, the index and the trigger
    functions work, autogenerate sees only the host's table, and no downgrade renames the
    plugin's table onto the host's name — down to base, where the host's row is left."""
    if host_first is not None:
        migrate.upgrade(pg_engine, host_first)
    with pg_engine.begin() as conn:
        conn.execute(text("CREATE TABLE sessions (token TEXT PRIMARY KEY)"))
        conn.execute(text("INSERT INTO sessions VALUES ('host-cookie')"))
    migrate.upgrade(pg_engine)
    assert migrate.current_revisions(pg_engine) == (HEAD_REVISION,)
    assert tables(pg_engine) == PLUGIN_TABLES | {VERSION_TABLE, "sessions"}
    add_message(pg_engine, "s1", "m1", "hostfirstword")
    assert matching(pg_engine, "hostfirstword") == ["m1"]
    assert raw_writes_mark(pg_engine, 5) == (5, True)
    with pg_engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"include_name": include_name})
        diff = compare_metadata(ctx, openclaw_fts.metadata)
    assert [(d[0], d[1].name) for d in diff] == [("remove_table", "sessions")]  # the host's

    migrate.downgrade(pg_engine, REVISION_4)  # "sessions" is taken: the names stay
    assert tables(pg_engine) == PLUGIN_TABLES | {VERSION_TABLE, "sessions"}
    assert raw_writes_mark(pg_engine, 6) == (6, True)
    migrate.upgrade(pg_engine)
    assert raw_writes_mark(pg_engine, 7) == (7, True)
    migrate.downgrade(pg_engine, "base")
    assert tables(pg_engine) == {VERSION_TABLE, "sessions"}
    with pg_engine.connect() as conn:
        assert conn.execute(text("SELECT token FROM sessions")).scalar_one() == "host-cookie"
        functions = conn.execute(
            text("SELECT count(*) FROM pg_proc WHERE proname LIKE 'openclaw_fts_%'")
        ).scalar_one()
    assert functions == 0


# -- autogenerate ----------------------------------------------------------------------------


def test_without_include_name_the_search_objects_would_show(pg_engine: Engine) -> None:
    """The filter is what hides them (and hides nothing else)."""
    migrate.upgrade(pg_engine)
    with pg_engine.connect() as conn:
        ctx = MigrationContext.configure(conn)
        diff = compare_metadata(ctx, openclaw_fts.metadata)
    shown = {(d[0], d[-1].name if hasattr(d[-1], "name") else d[3]) for d in diff}
    assert ("remove_table", VERSION_TABLE) in shown
    assert ("remove_index", pg.GIN_INDEX) in shown
    assert ("remove_column", pg.TSVECTOR_COLUMN) in shown
    assert len(shown) == 3, shown


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
            assert tables(app) == PLUGIN_TABLES | {VERSION_TABLE}
            assert search_objects(app)["config"] == 1
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


def test_a_host_version_table_hiding_the_plugin_is_read_from_the_schema(
    pg_engine: Engine,
) -> None:
    """A host revision that depends on 0005 hides it from the host's ``alembic_version``:
    0005 and 0006 have the same tables, so the statistics target tells them apart."""
    migrate.upgrade(pg_engine)
    with pg_engine.begin() as conn:
        conn.execute(text(f"DROP TABLE {VERSION_TABLE}"))
        conn.execute(text("CREATE TABLE alembic_version (version_num varchar(64) PRIMARY KEY)"))
        conn.execute(text("INSERT INTO alembic_version VALUES ('h002_chats')"))
    assert migrate.host_revisions(pg_engine) == (HEAD_REVISION,)
    with pg_engine.begin() as conn:
        conn.execute(text("ALTER TABLE message_index ALTER COLUMN body_tsv SET STATISTICS -1"))
    assert migrate.host_revisions(pg_engine) == (migrate.TABLES_REVISION,)
