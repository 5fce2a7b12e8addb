"""The plugin's migrations on each engine (a both_engines module: every test runs on SQLite
and on PostgreSQL): an upgrade run twice changes nothing, autogenerate against a migrated
database reports nothing (types and server defaults compared), and a downgrade to revision 1
keeps the transcripts, which are indexed again after the next upgrade and a reconcile.
Engine-specific checks of the same scenarios stay beside them, named by the engine."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore, migrate
from openclaw_fts.alembic import VERSION_TABLE, include_name

pytestmark = [
    pytest.mark.both_engines,
    pytest.mark.fresh_database("the revisions against the models, and downgrades"),
]

CALLER = Caller("agent:main:main", visibility="all")
REVISION_1 = "0001_transcripts"
#: Revision 1's tables under the names it gave them (0005 renames two of them).
REVISION_1_TABLES = {"sessions", "transcript_events", "branches"}


def schema(engine: Engine) -> dict[str, object]:
    """Every table, index and trigger of the database, and on PostgreSQL the plugin's functions
    and text-search configurations."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            rows = conn.execute(
                text("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
            ).all()
        else:
            rows = conn.execute(
                text(
                    "SELECT 'table', tablename FROM pg_tables WHERE schemaname = 'public' "
                    "UNION ALL SELECT 'index', indexname FROM pg_indexes "
                    "WHERE schemaname = 'public' "
                    "UNION ALL SELECT 'trigger', tgname FROM pg_trigger WHERE NOT tgisinternal "
                    "UNION ALL SELECT 'function', proname FROM pg_proc "
                    "WHERE proname LIKE 'openclaw_fts%' "
                    "UNION ALL SELECT 'config', cfgname FROM pg_ts_config "
                    "WHERE cfgname LIKE 'openclaw_fts%'"
                )
            ).all()
    out: dict[str, set[str]] = {}
    for kind, name in rows:
        out.setdefault(str(kind), set()).add(str(name))
    return dict(out)


def found(store: TranscriptStore, query: str) -> set[tuple[str, str]]:
    out = store.search(CALLER, query, limit=25)
    return {(h["sessionId"], h["messageId"]) for h in out["results"]}


def test_upgrade_is_idempotent(fresh: Engine) -> None:
    migrate.upgrade(fresh)
    before = schema(fresh)
    assert before["table"]
    migrate.upgrade(fresh)
    migrate.upgrade(fresh, migrate.HEAD)
    assert schema(fresh) == before


def test_autogenerate_reports_no_changes(fresh: Engine) -> None:
    migrate.upgrade(fresh)
    with fresh.connect() as conn:
        ctx = MigrationContext.configure(
            conn,
            opts={
                "include_name": include_name,
                "compare_type": True,
                "compare_server_default": True,
            },
        )
        assert compare_metadata(ctx, openclaw_fts.metadata) == []


def test_downgrade_to_revision_1_keeps_transcripts(fresh: Engine, db_url: str) -> None:
    with TranscriptStore(db_url, background=False) as store:
        store.create_session("s1", "agent:main:main")
        store.append(
            "s1",
            {"type": "message", "id": "m1", "message": {"role": "user", "content": "keptword"}},
        )
    migrate.downgrade(fresh, REVISION_1)
    assert set(inspect(fresh).get_table_names()) == REVISION_1_TABLES | {VERSION_TABLE}
    left = schema(fresh)
    assert not left.get("function") and not left.get("config")  # PostgreSQL's search objects
    with fresh.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM transcript_events")).scalar_one() == 1
    migrate.upgrade(fresh)
    with TranscriptStore(db_url, background=False) as store:
        # No backfill in the migration: the session is pending until reconciled.
        assert store.index_status() == {"pending": 1, "indexed": 0, "total": 1}
        store.reconcile()
        assert found(store, "keptword") == {("s1", "m1")}
