"""The installed ``openclaw-fts`` command, run as a subprocess against temporary databases.

Every test runs the console script that sits next to the interpreter (the editable install),
with ``cwd`` in a temporary folder and a minimal, explicit environment, so the developer's own
``OPENCLAW_FTS_DB`` or terminal never changes the outcome. Starting the CLI costs about a second
of imports, so independent invocations run concurrently (:func:`run_all`) and the read-only ones
share one database per engine (``module_db_url``) to keep the runtime down.

A ``both_engines`` module: the same commands and JSON on a SQLite file and on a PostgreSQL
database (``--db postgresql+psycopg://…``); what differs is an expectation per engine (how the
database is named, the file sizes ``status`` reports, FTS5's integrity check). Tests that take
``pg_url`` are about PostgreSQL URLs and servers (one-line errors for a server or database it
cannot reach, other drivers' URLs); FTS5 corruption is SQLite's own; the tests without a
database fixture are about files (not a database, the default database file).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import check_history_output, check_search_output
from sqlalchemy import text
from sqlalchemy.engine import make_url

from openclaw_fts.engine import make_engine

pytestmark = pytest.mark.both_engines

REPO = Path(__file__).parents[1]
EXAMPLES = REPO / "examples" / "sessions"
CLI = Path(sys.executable).with_name("openclaw-fts")
#: Wide enough that no table cell wraps: assertions can look for whole phrases.
TERMINAL_COLUMNS = "1000"
#: Per-invocation guard; a healthy run takes a second or two.
RUN_TIMEOUT_SECONDS = 120
#: CLI processes started at once by :func:`run_all`.
PARALLEL_RUNS = 4
#: The credential planted in a user message of the examples (agent:main:main, message m5).
SECRET = "sk-proj-Q7vX2mR9tK4wL8nB3cF6hJ1pZ5sD0gEy"
MAIN_KEY = "agent:main:main"
SUBAGENT_KEY = "agent:main:subagent:postmortem"
OPS_KEY = "agent:ops:main"
RELEASE_KEY = "agent:main:discord:channel:release"

Proc = subprocess.CompletedProcess[str]


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Proc:
    """Run the CLI; never inherits the caller's environment."""
    assert CLI.exists(), f"{CLI} not found: install the project (pip install -e .)"
    full_env = {"COLUMNS": TERMINAL_COLUMNS, "PYTHONIOENCODING": "utf-8", **(env or {})}
    return subprocess.run(
        [str(CLI), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )


def run_all(cwd: Path, *commands: Sequence[str]) -> list[Proc]:
    """Run independent invocations concurrently; results in the order given."""
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        return list(pool.map(lambda args: run(cwd, *args), commands))


def ok(proc: Proc) -> Proc:
    assert proc.returncode == 0, (proc.args, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc


def loads(proc: Proc) -> Any:
    return json.loads(ok(proc).stdout)


def search_json(proc: Proc) -> Any:
    """``search --json`` output, checked against OpenClaw's sessions_search output schema."""
    return check_search_output(loads(proc))


def history_json(proc: Proc) -> Any:
    """``history --json`` output, checked against OpenClaw's sessions_history output schema."""
    return check_history_output(loads(proc))


def one_line_error(proc: Proc, code: int) -> str:
    assert proc.returncode == code, (proc.args, proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error:"), lines
    return lines[0]


def copy_examples(dest: Path) -> Path:
    target = dest / "sessions"
    shutil.copytree(EXAMPLES, target)
    return target


def ids(history: dict[str, Any]) -> list[str]:
    return [m["__openclaw"]["id"] for m in history["messages"]]


@dataclass
class Shared:
    """The module's database (one per engine) and the results of the invocations run on it."""

    root: Path
    url: str
    procs: dict[str, Proc]

    def __getitem__(self, name: str) -> Proc:
        return self.procs[name]

    @property
    def db(self) -> tuple[str, str]:
        return ("--db", self.url)

    @property
    def engine(self) -> str:
        return make_url(self.url).get_backend_name()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, module_db_url: str) -> Shared:
    """The examples imported into the engine's database and every read-only invocation's result.

    Order matters only for the first steps: upgrade, import, re-import, a search that must not
    index, then a plain search that indexes first. Everything after that reads the indexed
    database.
    """
    root = tmp_path_factory.mktemp("cli")
    sessions = str(copy_examples(root))
    db = ("--db", module_db_url)
    out: dict[str, Proc] = {}
    out["upgrade"] = run(root, *db, "upgrade", "--json")
    out["import"] = ok(run(root, *db, "import", sessions))
    # none of these indexes: all 4 sessions stay pending
    out["reimport"], out["upgrade_again"], out["lazy"], out["lazy_json"] = run_all(
        root,
        (*db, "import", sessions, "--json"),
        (*db, "upgrade", "--json"),
        (*db, "search", "deployment", "--no-reconcile"),
        (*db, "search", "deployment", "--no-reconcile", "--json"),
    )
    out["search"] = run(root, *db, "search", "staging deployment")
    reads = {
        "search_json": (*db, "search", "staging deployment", "--json"),
        "languages": (*db, "search", "cafe OR 部署", "--json"),
        "hidden": (*db, "search", "reboot OR heartbeat OR kubectl", "--json"),
        "history": (*db, "history", MAIN_KEY),
        "history_json": (*db, "history", MAIN_KEY, "--json"),
        "history_tools": (*db, "history", MAIN_KEY, "--include-tools"),
        "window": (*db, "history", MAIN_KEY, "--message-id", "m8", "--limit", "4", "--json"),
        "reconcile": (*db, "reconcile"),
        "reconcile_json": (*db, "reconcile", "--json"),
        "status": (*db, "--json", "status"),
        "check": (*db, "check"),
        "check_json": (*db, "check", "--json"),
        "help": ("search", "--help"),
    }
    out.update(zip(reads, run_all(root, *reads.values()), strict=True))
    return Shared(root, module_db_url, out)


@pytest.mark.fresh_database("the first upgrade starts from no revision")
def test_upgrade_is_idempotent_and_names_the_database(shared: Shared) -> None:
    upgraded = loads(shared["upgrade"])
    assert upgraded["from"] == [] and upgraded["to"]
    again = loads(shared["upgrade_again"])
    assert again["from"] == again["to"] == upgraded["to"]
    if shared.engine != "sqlite":  # the URL, its password masked
        assert "postgresql" in upgraded["database"] and "@" in upgraded["database"]
    else:
        assert upgraded["database"] == make_url(shared.url).database


def test_import_then_plain_search_indexes_first(shared: Shared) -> None:
    assert "Imported 32 events into 4 sessions from 4 files" in ok(shared["import"]).stdout
    again = loads(shared["reimport"])  # --json after the subcommand
    assert again["imported"] == 0 and again["skippedDuplicates"] == 32
    assert again["failedFiles"] == [] and again["index"]["pending"] == 4

    # With --no-reconcile the fresh import is hidden, and the output says why.
    lazy = ok(shared["lazy"]).stdout
    assert "No matches." in lazy and "indexing incomplete (4 sessions pending)" in lazy
    lazy_json = search_json(shared["lazy_json"])
    assert lazy_json["results"] == [] and "indexing" in lazy_json

    # A plain search indexes first: the operator gets answers, not a warning.
    table = ok(shared["search"]).stdout
    assert MAIN_KEY in table and "indexing" not in table
    assert "Found it: the staging deployment hangs in migration" in table
    assert "2026-03-14T09:01:02Z" in table


def test_search_json_and_language(shared: Shared) -> None:
    out = search_json(shared["search_json"])
    keys = {hit["sessionKey"] for hit in out["results"]}
    assert {MAIN_KEY, SUBAGENT_KEY, OPS_KEY} <= keys  # the operator sees every agent
    assert "indexing" not in out
    scores = [hit["score"] for hit in out["results"]]
    assert scores == sorted(scores, reverse=True)

    hits = search_json(shared["languages"])["results"]
    assert any("café" in hit["snippet"] for hit in hits)  # diacritics folded
    assert any(hit["sessionKey"] == RELEASE_KEY and "部署" in hit["snippet"] for hit in hits)
    # Rewound away, a side append, a tool call: never searchable.
    assert search_json(shared["hidden"])["results"] == []


def test_history_text_and_json(shared: Shared) -> None:
    text_out = ok(shared["history"]).stdout
    assert "pg_locks" in text_out and "[image omitted" in text_out
    assert "reboot the whole staging cluster" not in text_out  # off the active branch
    assert "subagent heartbeat" not in text_out  # side append
    assert "readiness probe failed" not in text_out  # a tool result, shown only on request
    assert "readiness probe failed" in ok(shared["history_tools"]).stdout
    messages = str(history_json(shared["history_json"])["messages"])
    assert "pg_locks" in messages and "reboot the whole staging cluster" not in messages
    # Around m8, the tool result m10 left out (the assistant turn m9, only a tool call, stays,
    # as in OpenClaw): one older, one newer, one older.
    assert [m["__openclaw"]["id"] for m in history_json(shared["window"])["messages"]] == [
        "m5",
        "m7",
        "m8",
        "m9",
    ]


def test_credential_never_shown(shared: Shared) -> None:
    hits = loads(shared["search_json"])["results"]
    assert "m5" in [hit["messageId"] for hit in hits]  # the message is found...
    for name in ("search", "search_json", "history", "history_json", "history_tools", "window"):
        text_out = ok(shared[name]).stdout
        assert "admin console" in text_out
        assert SECRET not in text_out and SECRET[6:-4] not in text_out  # ...its key never shown


def test_reconcile_status_check_help(shared: Shared) -> None:
    assert "4 indexed, 0 pending, 4 total" in ok(shared["reconcile"]).stdout
    reconciled = loads(shared["reconcile_json"])
    assert (reconciled["pending"], reconciled["indexed"], reconciled["total"]) == (0, 4, 4)
    status = loads(shared["status"])  # --json before the subcommand
    assert (status["pending"], status["indexed"], status["total"]) == (0, 4, 4)
    assert status["schema"] == loads(shared["upgrade"])["to"]
    if shared.engine == "sqlite":  # the database file and its write-ahead log
        assert status["sizes"]["db"] > 0 and "wal" in status["sizes"]
    else:
        assert "sizes" not in status
    assert ok(shared["check"]).stdout.strip().endswith("OK")
    report = loads(shared["check_json"])
    assert report["ok"] is True and report["drift"] == {}
    search_help = ok(shared["help"]).stdout
    assert "--no-reconcile" in search_help and "agent:main:main" in search_help


def test_check_reports_drift_and_rebuild_and_optimize_repair(shared: Shared) -> None:
    """Runs after the reads above (they were taken by the fixture) and leaves the database
    healthy: rebuild one session, optimize, an index row deleted behind the plugin's back is
    reported (exit 1) and rebuilt."""
    root, db = shared.root, shared.db
    rebuilt, optimized = map(
        loads, run_all(root, (*db, "rebuild", MAIN_KEY, "--json"), (*db, "optimize", "--json"))
    )
    assert len(rebuilt["rebuilt"]) == 1 and rebuilt["pending"] == 0
    assert optimized == {"database": loads(shared["upgrade"])["database"], "optimized": True}
    everything = loads(run(root, *db, "rebuild", "--json"))
    assert len(everything["rebuilt"]) == 4 and everything["indexed"] == 4
    assert loads(run(root, *db, "check", "--json"))["ok"] is True

    # Drift: an index row deleted behind the hooks' back (SQLite's trigger keeps FTS5
    # consistent; PostgreSQL's tsvector is a column of the row).
    engine = make_engine(shared.url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text("DELETE FROM message_index WHERE id = (SELECT min(id) FROM message_index)")
            )
    finally:
        engine.dispose()
    drifted = run(root, *db, "check", "--json")
    assert drifted.returncode == 1 and "Traceback" not in drifted.stderr
    report = json.loads(drifted.stdout)
    assert report["ok"] is False and report["drift"]
    assert report["ftsIntegrity"] == "ok"  # the full-text index itself is consistent
    assert loads(run(root, *db, "rebuild", "--json"))["pending"] == 0
    assert loads(run(root, *db, "check", "--json"))["ok"] is True


@pytest.mark.sqlite_only("FTS5's own index, corrupted on a copy of the database file")
def test_check_fails_on_fts_corruption(shared: Shared, tmp_path: Path) -> None:
    source = Path(str(make_url(shared.url).database))
    for suffix in ("", "-wal"):  # no process has the shared database open any more
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", tmp_path / f"store.sqlite{suffix}")
    db = sqlite3.connect(tmp_path / "store.sqlite")
    try:
        # FTS corruption: remove an entry from the full-text index with the WRONG text.
        with db:
            rowid, sess = db.execute("SELECT id, sess FROM message_index LIMIT 1").fetchone()
            db.execute(
                "INSERT INTO message_fts(message_fts, rowid, body, sess) "
                "VALUES('delete', ?, 'completely unrelated words', ?)",
                (rowid, sess),
            )
    finally:
        db.close()
    proc = run(tmp_path, "--db", "store.sqlite", "check")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "PROBLEMS FOUND" in proc.stdout and "Full-text index integrity: ok" not in proc.stdout


def test_bad_arguments_exit_2_with_one_line(shared: Shared) -> None:
    procs = run_all(
        shared.root,
        (*shared.db, "search", "deployment", "--limit", "0"),
        (*shared.db, "search", "   "),
        (*shared.db, "history", MAIN_KEY, "--offset", "1", "--message-id", "m7"),
        ("--db", "://nowhere", "status"),
    )
    messages = [one_line_error(proc, 2) for proc in procs]
    assert "query must not be empty" in messages[1]
    assert "offset and messageId cannot be used together" in messages[2]


def test_an_unknown_session_is_one_line_error(shared: Shared) -> None:
    # a visible key with no session finds nothing; a session id that names none is an error
    unknown = run(
        shared.root, *shared.db, "search", "deployment", "--session-key", "no-such-session"
    )
    assert "Session not found" in one_line_error(unknown, 1)


def test_runtime_failures_exit_1_without_traceback(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("these are meeting notes,\nnot a transcript and not a database\n")
    before = notes.read_bytes()
    not_imported, not_db_status, not_db_search, absent = run_all(
        tmp_path,
        ("--db", "s.sqlite", "import", "nope.jsonl", str(notes)),
        ("--db", str(notes), "status"),
        ("--db", str(notes), "search", "deployment"),
        ("--db", "absent.sqlite", "search", "deployment"),
    )
    assert not_imported.returncode == 1 and "Traceback" not in not_imported.stderr
    errors = not_imported.stderr.strip().splitlines()
    assert len(errors) == 2 and all(line.startswith("Error:") for line in errors)
    assert "nope.jsonl" in errors[0] and "not an OpenClaw transcript" in errors[1]
    assert "file is not a database" in one_line_error(not_db_status, 1)
    assert "file is not a database" in one_line_error(not_db_search, 1)
    assert notes.read_bytes() == before  # never touched
    assert "does not exist" in one_line_error(absent, 1)
    assert not (tmp_path / "absent.sqlite").exists()


def test_lone_file_line_errors_default_db_and_env(tmp_path: Path) -> None:
    lone = tmp_path / "lone.jsonl"
    good = EXAMPLES / "e8b05d3c-7a21-4f9e-8c64-1d2f3a4b5c6d.jsonl"
    lines = good.read_text(encoding="utf-8").splitlines()
    lone.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")

    # No --db: ./openclaw_fts.sqlite; $OPENCLAW_FTS_DB (a bare path) when set.
    with ThreadPoolExecutor(max_workers=2) as pool:
        imported_job = pool.submit(
            run, tmp_path, "import", str(lone), "--session-key", "agent:night:main"
        )
        env_job = pool.submit(run, tmp_path, "upgrade", env={"OPENCLAW_FTS_DB": "from-env.sqlite"})
    imported, from_env = imported_job.result(), env_job.result()
    assert "1 line error (lines skipped)" in ok(imported).stdout and f"{lone}:2:" in imported.stdout
    assert (tmp_path / "openclaw_fts.sqlite").is_file()
    assert "upgraded" in ok(from_env).stdout and (tmp_path / "from-env.sqlite").is_file()

    hits = search_json(
        run(tmp_path, "search", "cron", "--session-key", "agent:night:main", "--json")
    )
    assert hits["results"] and {h["sessionKey"] for h in hits["results"]} == {"agent:night:main"}


# -- PostgreSQL URLs and servers ----------------------------------------------------------------


def test_unreachable_server_and_wrong_database_are_one_line_errors(
    pg_url: str, tmp_path: Path
) -> None:
    url = make_url(pg_url)
    missing_db = url.set(database="no_such_database").render_as_string(hide_password=False)
    no_socket = url.set(query={**url.query, "host": str(tmp_path)})  # no server listens there
    refused = "postgresql+psycopg://app:s3cret-pw@127.0.0.1:1/app?connect_timeout=5"
    commands = [
        ("--db", missing_db, "search", "deployment", "--json"),
        ("--db", missing_db, "import", str(EXAMPLES)),
        ("--db", no_socket.render_as_string(hide_password=False), "upgrade"),
        ("--db", refused, "status"),
    ]
    no_driver = "postgresql+psycopg2cffi://app@127.0.0.1:1/app"  # a driver nobody installs
    commands.append(("--db", no_driver, "status"))
    searched, imported, upgraded, status, driverless = run_all(tmp_path, *commands)
    if importlib.util.find_spec("psycopg2cffi") is None:
        assert "driver is not installed" in one_line_error(driverless, 1)
    assert 'database "no_such_database" does not exist' in one_line_error(searched, 1)
    assert json.loads(searched.stdout)["error"]["exitCode"] == 1  # --json: still one document
    assert 'database "no_such_database" does not exist' in one_line_error(imported, 1)
    assert "connection" in one_line_error(upgraded, 1) and str(tmp_path) in upgraded.stderr
    line = one_line_error(status, 1)
    assert "Connection refused" in line and "s3cret-pw" not in line  # the password is masked


@pytest.mark.parametrize("driver", ["postgresql", "postgresql+asyncpg"])
def test_other_postgresql_urls_open_the_database_through_psycopg(
    pg_url: str, tmp_path: Path, driver: str
) -> None:
    """A bare ``postgresql://`` URL, and a host's ``postgresql+asyncpg://`` one copied from an
    async application (the command opens the same database through psycopg)."""
    url = make_url(pg_url).set(drivername=driver).render_as_string(hide_password=False)
    assert loads(run(tmp_path, "--db", url, "upgrade", "--json"))["to"]
    assert loads(run(tmp_path, "--db", url, "status", "--json"))["total"] == 0
