"""The plugin as a guest in a host's Alembic history: the real ``alembic`` command, run in a copy
of ``examples/host_app`` (its own models, env.py and two revisions), on a fresh database and on
one that already holds the host's data. What docs/alembic.md says is what runs here."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore, migrate
from openclaw_fts.engine import make_engine
from openclaw_fts.models import AgentSession

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "host_app"
BIN = Path(sys.executable).parent
ALEMBIC = BIN / "alembic"
CLI = BIN / "openclaw-fts"
#: Seconds one alembic / openclaw-fts run may take on a loaded machine.
COMMAND_TIMEOUT = 300
(PLUGIN_HEAD,) = migrate.head_revisions()
#: What ``alembic_version`` holds after ``upgrade heads``: h002 ``depends_on`` the plugin's 0005
#: (which names ``openclaw_sessions``); Alembic records heads only, so with no plugin revision
#: after 0005 it records h002 alone (the CLI then recognises the plugin's head by its tables,
#: ``migrate.host_revisions``), and otherwise h002 and the plugin's head.
AT_HEADS = (
    {"h002_chats"} if PLUGIN_HEAD == "0005_namespaced_tables" else {"h002_chats", PLUGIN_HEAD}
)

sys.path.insert(0, str(EXAMPLE))
import first_day  # noqa: E402  (tests/: the first-day block of docs/alembic.md)
from host_app.models import Chat, Project  # noqa: E402


def run(cmd: Path, *args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(cmd), *args], cwd=cwd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT
    )
    if ok:
        assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture
def app(tmp_path: Path) -> Path:
    dest = tmp_path / "host_app"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite"))
    return dest


def folder_digest(folder: Path) -> str:
    """One hash of every file's path and bytes under ``folder`` (compiled files aside)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def tables(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()


def versions(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT version_num FROM alembic_version")}
    finally:
        con.close()


def test_heads_lists_the_host_and_the_plugin_branch(app: Path) -> None:
    out = run(ALEMBIC, "heads", cwd=app).stdout
    assert "h002_chats (host_app) (head)" in out
    # "effective head" while h002 depends on the plugin's newest revision itself
    assert re.search(rf"^{PLUGIN_HEAD} \(openclaw_fts\) \((effective )?head\)$", out, re.M)


def test_fresh_database_upgrade_heads_then_check_is_clean(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    db = app / "app.sqlite"
    assert versions(db) == AT_HEADS
    assert {"projects", "chats", "openclaw_sessions", "transcript_events", "message_fts"} <= tables(
        db
    )
    assert "openclaw_fts_version" not in tables(db)
    # the host's own `sessions` (h001) beside the plugin's, whichever branch Alembic ran first
    assert "sessions" in tables(db) and not {"branches", "index_state"} & tables(db)
    check = run(ALEMBIC, "check", cwd=app)
    assert "No new upgrade operations detected" in check.stdout + check.stderr


def test_host_rows_link_to_plugin_sessions_and_follow_their_deletion(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    with TranscriptStore(f"sqlite:///{app / 'app.sqlite'}", upgrade=False, background=False) as s:
        s.create_session("s1", "agent:main:main")
        s.append("s1", {"type": "message", "id": "m1", "message": {"role": "user", "content": "x"}})
        with Session(s.engine) as db, db.begin():
            project = Project(name="p7")
            db.add(project)
            db.flush()
            db.add(Chat(project_id=project.id, session_id="s1"))
        hits = s.search(Caller("agent:main:main"), "x")
        assert [h["sessionId"] for h in hits["results"]] == ["s1"]
        assert s.delete_session("s1")
        with Session(s.engine) as db:
            assert db.scalars(select(Chat)).all() == []
            assert [p.name for p in db.scalars(select(Project))] == ["p7"]


def test_existing_database_with_data_gains_the_plugin_and_loses_it_again(app: Path) -> None:
    # The host's database before it used the plugin: its own revision and rows, including its
    # own web-login `sessions` table (issue #16: it exists before the plugin's revisions run).
    run(ALEMBIC, "upgrade", "h001_projects", cwd=app)
    db = app / "app.sqlite"
    con = sqlite3.connect(db)
    con.execute("INSERT INTO projects (id, name) VALUES (1, 'kept')")
    con.execute("INSERT INTO sessions (token, user_name) VALUES ('cookie', 'ada')")
    con.commit()
    con.close()

    run(ALEMBIC, "upgrade", "heads", cwd=app)
    assert versions(db) == AT_HEADS
    url = f"sqlite:///{db}"
    with TranscriptStore(url, upgrade=False, background=False) as s:
        s.create_session("s1", "agent:main:main")
        s.append("s1", {"type": "message", "id": "m1", "message": {"role": "user", "content": "y"}})
    con = sqlite3.connect(db)
    con.execute("INSERT INTO chats (project_id, session_id) VALUES (1, 's1')")
    con.commit()
    con.close()
    assert "No new upgrade operations" in "".join(
        (r := run(ALEMBIC, "check", cwd=app)).stdout + r.stderr
    )

    # The plugin's branch down to base: h002 depends on it and goes first; projects and the
    # host's sessions stay (0005's downgrade never renames the plugin's table onto them).
    run(ALEMBIC, "downgrade", "openclaw_fts@base", cwd=app)
    assert versions(db) == {"h001_projects"}
    left = tables(db)
    assert {"projects", "sessions"} <= left
    assert not left & {
        "chats",
        "openclaw_sessions",
        "transcript_events",
        "message_index",
        "message_fts",
    }
    con = sqlite3.connect(db)
    assert con.execute("SELECT id, name FROM projects").fetchall() == [(1, "kept")]
    assert con.execute("SELECT token, user_name FROM sessions").fetchall() == [("cookie", "ada")]
    con.close()

    run(ALEMBIC, "upgrade", "heads", cwd=app)
    assert versions(db) == AT_HEADS


def test_host_branch_downgrade_leaves_the_plugin_alone(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    run(ALEMBIC, "downgrade", "host_app@-1", cwd=app)
    db = app / "app.sqlite"
    assert versions(db) == {"h001_projects", PLUGIN_HEAD}
    assert {"projects", "openclaw_sessions", "message_fts"} <= tables(db)
    assert "chats" not in tables(db)


def test_autogenerate_writes_into_the_hosts_folder(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    plugin_before = folder_digest(migrate.version_location())
    # No --head: env.py's hook (configure_options) extends the host's branch, not the plugin's.
    run(ALEMBIC, "revision", "--autogenerate", "-m", "note", cwd=app)
    new = [p for p in (app / "migrations" / "versions").glob("*_note.py")]
    assert len(new) == 1
    text = new[0].read_text()
    assert "down_revision: str | None = 'h002_chats'" in text
    assert "op." not in text  # the database matches both metadata collections: empty revision
    # naming the host's branch, as before the hook, still works; so does an empty revision
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    run(ALEMBIC, "revision", "--head", "host_app@head", "-m", "named", cwd=app)
    (named,) = (app / "migrations" / "versions").glob("*_named.py")
    assert f"down_revision: str | None = '{new[0].name.split('_')[0]}'" in named.read_text()
    assert folder_digest(migrate.version_location()) == plugin_before


@pytest.mark.parametrize(
    "args",
    [
        ["--autogenerate", "--head", "openclaw_fts@head"],
        ["--head", "openclaw_fts@head"],
        ["--head", PLUGIN_HEAD],
        ["--version-path", str(migrate.version_location())],
    ],
)
def test_a_revision_on_the_plugins_branch_stops_naming_the_command(
    app: Path, args: list[str]
) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    plugin_before = folder_digest(migrate.version_location())
    result = run(ALEMBIC, "revision", *args, "-m", "oops", cwd=app, ok=False)
    assert result.returncode != 0
    command = "alembic revision --autogenerate" if "--autogenerate" in args else "alembic revision"
    assert f'Run instead: {command} -m "oops"' in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert folder_digest(migrate.version_location()) == plugin_before
    assert not list((app / "migrations" / "versions").glob("*_oops.py"))


@pytest.mark.parametrize("heads", [["heads"], ["host_app@head", "openclaw_fts@head"]])
def test_a_merge_with_the_plugins_branch_stops(app: Path, heads: list[str]) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    plugin_before = folder_digest(migrate.version_location())
    result = run(ALEMBIC, "merge", "-m", "tie", *heads, cwd=app, ok=False)
    assert result.returncode != 0
    assert "do not merge the plugin's branch" in result.stderr, result.stderr
    assert folder_digest(migrate.version_location()) == plugin_before
    assert not list((app / "migrations" / "versions").glob("*_tie.py"))


def test_without_revision_environment_the_hook_names_the_setting(app: Path) -> None:
    ini = app / "alembic.ini"
    ini.write_text(ini.read_text().replace("revision_environment = true\n", ""))
    result = run(ALEMBIC, "upgrade", "heads", cwd=app, ok=False)
    assert result.returncode != 0
    assert "set revision_environment = true" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_the_first_day_runs_as_docs_alembic_md_writes_it(
    tmp_path: Path, request: pytest.FixtureRequest, engine: str
) -> None:
    """docs/alembic.md's first-day block, verbatim, on a host with no revision of its own: the
    first revision starts the host's branch in its own folder and depends on the plugin's
    head (its chats point at the plugin's sessions); the plugin's folder never changes."""
    url = str(request.getfixturevalue("pg_url")) if engine == "postgresql" else None
    plugin_before = folder_digest(migrate.version_location())
    seen = first_day.run(ALEMBIC, tmp_path, url)
    assert folder_digest(migrate.version_location()) == plugin_before
    first, last = seen["first"], seen["last"]
    assert isinstance(first, Path) and isinstance(last, Path)
    assert first.parent == tmp_path / "host_app" / "migrations" / "versions"
    text = first.read_text()
    assert "down_revision: str | None = None" in text
    assert "branch_labels: tuple[str, ...] | None = ('host_app',)" in text
    assert f"depends_on: str | None = '{PLUGIN_HEAD}'" in text
    assert "'openclaw_sessions.session_id'" in text
    later = last.read_text()
    assert f"down_revision: str | None = '{first.name.split('_')[0]}'" in later
    assert "depends_on: str | None = None" in later  # no foreign key to the plugin's tables
    assert "project_notes" in later
    # step 4 undid the later revision only; the plugin's head hides behind the first one
    assert seen["versions"] == {first.name.split("_")[0]}
    left = seen["tables"]
    assert isinstance(left, set)
    assert "project_notes" not in left
    assert {"projects", "sessions", "chats"} | set(openclaw_fts.metadata.tables) <= left


def documented_tables(page: Path) -> tuple[set[str], str, str]:
    """The plugin's tables a page lists, and the FTS5 table and the writer-kept vocabulary it
    names for SQLite."""
    text = " ".join(page.read_text(encoding="utf-8").split())
    found = re.search(
        r"The plugin's tables are (.+?) and, on SQLite, the FTS5 table `(\w+)` .*? "
        r"and the writer-kept vocabulary `(\w+)`",
        text,
    )
    assert found is not None, f"{page.name}: no sentence listing the plugin's tables"
    return set(re.findall(r"`(\w+)`", found.group(1))), found.group(2), found.group(3)


@pytest.mark.parametrize("page", ["alembic.md", "host.md"])
def test_the_docs_list_the_tables_upgrade_heads_creates(app: Path, page: str) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    listed, fts, vocabulary = documented_tables(REPO / "docs" / page)
    assert listed == set(openclaw_fts.metadata.tables)
    created = tables(app / "app.sqlite") - {"alembic_version", "projects", "sessions", "chats"}
    assert {t for t in created if not t.startswith(f"{fts}_")} == listed | {fts, vocabulary}


def test_ini_only_form_with_a_newline_separator(app: Path) -> None:
    """Without pyproject.toml: version_locations in alembic.ini, one per line."""
    (app / "pyproject.toml").unlink()
    ini = app / "alembic.ini"
    ini.write_text(
        ini.read_text().replace(
            "path_separator = os\n",
            "path_separator = newline\n"
            "version_locations =\n"
            "    %(here)s/migrations/versions\n"
            "    openclaw_fts:migrations/versions\n",
        )
    )
    out = run(ALEMBIC, "heads", cwd=app).stdout
    assert "h002_chats (host_app) (head)" in out
    # "effective head" while h002 depends on the plugin's newest revision itself
    assert re.search(rf"^{PLUGIN_HEAD} \(openclaw_fts\) \((effective )?head\)$", out, re.M)


def test_package_form_names_the_shipped_revisions() -> None:
    assert openclaw_fts.migrate.PACKAGE_VERSION_LOCATION == "openclaw_fts:migrations/versions"
    names = {p.name for p in migrate.version_location().glob("*.py")}
    assert f"{PLUGIN_HEAD}.py" in names


def test_plugin_session_delete_by_orm_cascades_to_host_rows(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    with TranscriptStore(f"sqlite:///{app / 'app.sqlite'}", upgrade=False, background=False) as s:
        s.create_session("s2", "agent:main:main")
        with Session(s.engine) as db, db.begin():
            db.add(Project(id=3, name="p"))
            db.flush()
            db.add(Chat(project_id=3, session_id="s2"))
        with s.sessions.begin() as db:
            db.execute(delete(AgentSession).where(AgentSession.session_id == "s2"))
        with Session(s.engine) as db:
            assert db.scalars(select(Chat)).all() == []


# -- the command line and the store on a host-managed database ------------------------------------


def test_cli_uses_a_host_managed_database(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    db = app / "app.sqlite"
    with TranscriptStore(f"sqlite:///{db}", background=False) as s:  # upgrade=True: no-op here
        s.create_session("s1", "agent:main:main")
        s.append("s1", {"type": "message", "id": "m1", "message": {"role": "user", "content": "z"}})
    status = run(CLI, "--db", str(db), "--json", "status", cwd=app)
    assert json.loads(status.stdout)["schema"] == [PLUGIN_HEAD]
    found = json.loads(run(CLI, "--db", str(db), "--json", "search", "z", cwd=app).stdout)
    assert [h["sessionId"] for h in found["results"]] == ["s1"]
    assert run(CLI, "--db", str(db), "check", cwd=app).returncode == 0
    up = json.loads(run(CLI, "--db", str(db), "--json", "upgrade", cwd=app).stdout)
    assert up["from"] == up["to"] == [PLUGIN_HEAD]
    assert versions(db) == AT_HEADS
    assert "openclaw_fts_version" not in tables(db)


def test_a_host_version_table_hiding_the_plugin_is_read_from_its_tables_on_sqlite(
    app: Path,
) -> None:
    """h002 depends on 0005 and hides it in the version table once the plugin's later
    revisions are downgraded: the plugin's tables tell where it is (0006 changes nothing on
    SQLite, so 0005's tables read as 0006), and the CLI, behind head, asks for the host's
    upgrade instead of migrating a database the host's Alembic owns."""
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    run(ALEMBIC, "downgrade", f"openclaw_fts@{migrate.TABLES_REVISION}", cwd=app)
    db = app / "app.sqlite"
    assert versions(db) == {"h002_chats"}
    assert migrate.host_revisions(make_engine(f"sqlite:///{db}")) == (migrate.STATISTICS_REVISION,)
    result = run(CLI, "--db", str(db), "search", "anything", cwd=app, ok=False)
    assert result.returncode == 1, result
    assert "alembic upgrade heads" in result.stderr
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    status = run(CLI, "--db", str(db), "--json", "status", cwd=app)
    assert json.loads(status.stdout)["schema"] == [PLUGIN_HEAD]


def test_cli_refuses_to_migrate_a_host_managed_database_behind_head(app: Path) -> None:
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    # Below the newest revision that changes tables (later ones change none on SQLite): the
    # version table then names the plugin's revision, and h002, which depends on 0005, goes too.
    run(ALEMBIC, "downgrade", f"openclaw_fts@{migrate.TABLES_REVISION}-1", cwd=app)
    db = app / "app.sqlite"
    before = versions(db)
    assert PLUGIN_HEAD not in before and "h002_chats" not in before
    for args in (["upgrade"], ["search", "anything"]):
        result = run(CLI, "--db", str(db), *args, cwd=app, ok=False)
        assert result.returncode == 1, result
        assert "alembic upgrade heads" in result.stderr
        assert "Traceback" not in result.stderr
    with pytest.raises(openclaw_fts.HostManagedSchemaError, match="alembic upgrade heads"):
        TranscriptStore(f"sqlite:///{db}", background=False)
    assert versions(db) == before
    assert "openclaw_fts_version" not in tables(db)


def test_cli_reads_a_plugin_head_hidden_by_a_host_depends_on(app: Path) -> None:
    """A host revision depending on the plugin's head leaves only the host's id in
    alembic_version: the plugin's tables tell the CLI it is at head."""
    (app / "migrations" / "versions" / "h003_after_index.py").write_text(
        '"""Needs the index tables."""\n'
        'revision = "h003_after_index"\n'
        'down_revision = "h002_chats"\n'
        "branch_labels = None\n"
        f'depends_on = "{PLUGIN_HEAD}"\n\n\n'
        "def upgrade() -> None:\n    pass\n\n\n"
        "def downgrade() -> None:\n    pass\n"
    )
    run(ALEMBIC, "upgrade", "heads", cwd=app)
    db = app / "app.sqlite"
    assert versions(db) == {"h003_after_index"}
    status = json.loads(run(CLI, "--db", str(db), "--json", "status", cwd=app).stdout)
    assert status["schema"] == [PLUGIN_HEAD]
    assert "openclaw_fts_version" not in tables(db)
