"""Schema migrations (docs/alembic.md, docs/host.md): a populated revision-1
database upgrades in well under a second and is backfilled by the reconciler, autogenerate sees
no drift, downgrade removes everything, and the built wheel carries working migrations."""

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
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, text

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore, migrate
from openclaw_fts.alembic import VERSION_TABLE, include_name
from openclaw_fts.engine import READ_ONLY, make_engine

REPO = Path(__file__).resolve().parent.parent
CALLER = Caller("agent:main:main", visibility="all")
REVISION_1 = "0001_transcripts"
#: The plugin's newest revision.
HEAD_REVISION = "0006_tsvector_statistics"
#: Tables of revision 1 under the names it gave them (0005 renames two of them).
REVISION_1_TABLES = {"sessions", "transcript_events", "branches"}
INDEX_TABLES = {"openclaw_index_state", "message_index", "reconcile_lease", "message_fts"}
#: The plugin's tables at head.
PLUGIN_TABLES = {"openclaw_sessions", "transcript_events", "openclaw_branches"} | INDEX_TABLES
SESSIONS = 500
EVENTS_PER_SESSION = 100
WARNING = (
    "Transcript indexing is in progress; results may be incomplete. Retry sessions_search shortly."
)


# -- helpers ---------------------------------------------------------------------------------


def schema(engine: Engine) -> dict[str, set[str]]:
    """Names in sqlite_master by type (SQLite's own objects left out)."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as conn:
        rows = conn.execute(
            text("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        ).all()
    out: dict[str, set[str]] = {}
    for kind, name in rows:
        out.setdefault(kind, set()).add(name)
    return out


def tables(engine: Engine) -> set[str]:
    return schema(engine).get("table", set())


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
                0,
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
            0,
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


def populate_revision_1(engine: Engine) -> None:
    session_rows = []
    event_rows: list[tuple[Any, ...]] = []
    for i in range(SESSIONS):
        s, evs = revision_1_rows(i)
        session_rows.append((s["session_id"], s["session_key"], s["agent_id"], s["last_seq"]))
        event_rows.extend(evs)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO sessions (session_id, session_key, agent_id, last_seq) "
            "VALUES (?, ?, ?, ?)",
            session_rows,
        )
        conn.exec_driver_sql(
            "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, "
            "target_id, side, timestamp_ms, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            event_rows,
        )


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'host.sqlite'}"


@pytest.fixture
def engine(url: str) -> Any:
    e = make_engine(url)
    yield e
    e.dispose()


# -- upgrade of a populated database -----------------------------------------------------------


def test_populated_revision_1_upgrades_fast_then_reconciles(engine: Engine, url: str) -> None:
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

    store = TranscriptStore(url, background=False)
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


def test_store_opens_and_upgrades_a_revision_1_database(engine: Engine, url: str) -> None:
    earlier_release_database(engine, REVISION_1)
    populate_revision_1_small(engine)
    store = TranscriptStore(url, background=False)  # upgrade=True by default
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
        conn.exec_driver_sql(
            "INSERT INTO transcript_events (session_id, seq, event_id, event) "
            "VALUES ('tiny', 0, 't1', ?)",
            (json.dumps(event),),
        )


def test_upgrade_without_upgrade_flag_leaves_schema_alone(engine: Engine, url: str) -> None:
    migrate.upgrade(engine, REVISION_1)
    store = TranscriptStore(url, upgrade=False, background=False)
    store.close()
    assert migrate.current_revisions(engine) == (REVISION_1,)
    assert not (INDEX_TABLES & tables(engine))


# -- the schema itself -------------------------------------------------------------------------


def test_fts5_table_and_trigger_exist_after_upgrade(engine: Engine) -> None:
    migrate.upgrade(engine)
    objects = schema(engine)
    assert objects["table"] >= PLUGIN_TABLES
    assert "message_index_fts_delete" in objects.get("trigger", set())
    with engine.connect() as conn:
        sql = conn.execute(
            text("SELECT sql FROM sqlite_master WHERE name = 'message_fts'")
        ).scalar_one()
        assert "fts5" in sql.lower() and "remove_diacritics 2" in sql
        # it is a working FTS5 table
        conn.execute(text("SELECT count(*) FROM message_fts WHERE message_fts MATCH 'x'")).all()
    # foreign keys cascade from openclaw_sessions
    with engine.connect() as conn:
        for table in (
            "transcript_events",
            "openclaw_branches",
            "openclaw_index_state",
            "message_index",
        ):
            fks = conn.exec_driver_sql(f"PRAGMA foreign_key_list({table})").all()
            assert [(fk[2], fk[3], fk[4], fk[6]) for fk in fks] == [
                ("openclaw_sessions", "session_id", "session_id", "CASCADE")
            ], table


def test_autogenerate_beside_host_metadata(engine: Engine) -> None:
    """A host lists the plugin's metadata beside its own: only the host's change shows."""
    migrate.upgrade(engine)
    host = MetaData()
    Table("host_users", host, Column("id", Integer, primary_key=True), Column("name", String(50)))
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"include_name": include_name})
        diff = compare_metadata(ctx, [host, openclaw_fts.metadata])
    assert [(d[0], d[1].name) for d in diff] == [("add_table", "host_users")]


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


def test_downgrade_to_base_removes_every_plugin_table(engine: Engine, url: str) -> None:
    migrate.upgrade(engine)
    store = TranscriptStore(url, background=False)
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
    left = schema(engine)
    assert left.get("table", set()) <= {VERSION_TABLE}
    assert not left.get("trigger") and not left.get("index") and not left.get("view")
    # and up again: a working, empty store
    migrate.upgrade(engine)
    assert tables(engine) >= PLUGIN_TABLES
    store = TranscriptStore(url, background=False)
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
