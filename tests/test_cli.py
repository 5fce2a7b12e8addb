"""The installed ``openclaw-fts`` command, run as a subprocess against temporary databases.

Every test runs the console script that sits next to the interpreter (the editable install),
with ``cwd`` in a temporary folder and a minimal, explicit environment, so the developer's own
``OPENCLAW_FTS_DB`` or terminal never changes the outcome. Starting the CLI costs about a second
of imports, so independent invocations run concurrently (:func:`run_all`) and the read-only ones
share one database (the module fixture) to keep the runtime down.
"""

from __future__ import annotations

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
DB = ("--db", "store.sqlite")

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
    """The module's database folder and the results of the invocations run on it."""

    root: Path
    procs: dict[str, Proc]

    def __getitem__(self, name: str) -> Proc:
        return self.procs[name]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    """The examples imported into ``store.sqlite`` and every read-only invocation's result.

    Order matters only for the first steps: import, re-import, a search that must not index,
    then a plain search that indexes first. Everything after that reads the indexed database.
    """
    root = tmp_path_factory.mktemp("cli")
    sessions = str(copy_examples(root))
    out: dict[str, Proc] = {}
    out["import"] = ok(run(root, *DB, "import", sessions))
    out["reimport"], out["lazy"] = run_all(  # neither indexes: all 4 sessions stay pending
        root,
        (*DB, "import", sessions, "--json"),
        (*DB, "search", "deployment", "--no-reconcile"),
    )
    out["search"] = run(root, *DB, "search", "staging deployment")
    reads = {
        "search_json": (*DB, "search", "staging deployment", "--json"),
        "languages": (*DB, "search", "cafe OR 部署", "--json"),
        "hidden": (*DB, "search", "reboot OR heartbeat OR kubectl", "--json"),
        "history": (*DB, "history", MAIN_KEY),
        "history_tools": (*DB, "history", MAIN_KEY, "--include-tools"),
        "window": (*DB, "history", MAIN_KEY, "--message-id", "m8", "--limit", "4", "--json"),
        "reconcile": (*DB, "reconcile"),
        "status": (*DB, "--json", "status"),
        "check": (*DB, "check"),
        "help": ("search", "--help"),
    }
    out.update(zip(reads, run_all(root, *reads.values()), strict=True))
    return Shared(root, out)


def test_import_then_plain_search_indexes_first(shared: Shared) -> None:
    assert "Imported 32 events into 4 sessions from 4 files" in ok(shared["import"]).stdout
    again = loads(shared["reimport"])  # --json after the subcommand
    assert again["imported"] == 0 and again["skippedDuplicates"] == 32
    assert again["failedFiles"] == [] and again["index"]["pending"] == 4

    # With --no-reconcile the fresh import is hidden, and the output says why.
    lazy = ok(shared["lazy"]).stdout
    assert "No matches." in lazy and "indexing incomplete (4 sessions pending)" in lazy

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
    text = ok(shared["history"]).stdout
    assert "pg_locks" in text and "[image omitted" in text
    assert "reboot the whole staging cluster" not in text  # off the active branch
    assert "subagent heartbeat" not in text  # side append
    assert "readiness probe failed" not in text  # a tool result, shown only on request
    assert "readiness probe failed" in ok(shared["history_tools"]).stdout
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
    for name in ("search", "search_json", "history", "history_tools", "window"):
        text = ok(shared[name]).stdout
        assert "admin console" in text
        assert SECRET not in text and SECRET[6:-4] not in text  # ...its key never shown


def test_reconcile_status_check_help(shared: Shared) -> None:
    assert "4 indexed, 0 pending, 4 total" in ok(shared["reconcile"]).stdout
    status = loads(shared["status"])  # --json before the subcommand
    assert (status["pending"], status["indexed"], status["total"]) == (0, 4, 4)
    assert status["sizes"]["db"] > 0 and "wal" in status["sizes"] and status["schema"]
    assert ok(shared["check"]).stdout.strip().endswith("OK")
    search_help = ok(shared["help"]).stdout
    assert "--no-reconcile" in search_help and "agent:main:main" in search_help


def test_check_fails_on_drift_and_on_fts_corruption(shared: Shared, tmp_path: Path) -> None:
    for suffix in ("", "-wal"):  # no process has the shared database open any more
        source = shared.root / f"store.sqlite{suffix}"
        if source.exists():
            shutil.copy(source, tmp_path / source.name)

    db = sqlite3.connect(tmp_path / "store.sqlite")
    try:
        # Drift: an index row deleted behind the hooks' back (the trigger keeps FTS consistent).
        with db:
            db.execute("DELETE FROM message_index WHERE id = (SELECT min(id) FROM message_index)")
    finally:
        db.close()
    proc = run(tmp_path, *DB, "check", "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["drift"] and report["ftsIntegrity"] == "ok"

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
    proc = run(tmp_path, *DB, "check")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "PROBLEMS FOUND" in proc.stdout and "FTS5 integrity: ok" not in proc.stdout


def test_bad_arguments_exit_2_with_one_line(shared: Shared) -> None:
    procs = run_all(
        shared.root,
        (*DB, "search", "deployment", "--limit", "0"),
        (*DB, "search", "   "),
        (*DB, "history", MAIN_KEY, "--offset", "1", "--message-id", "m7"),
        ("--db", "://nowhere", "status"),
    )
    messages = [one_line_error(proc, 2) for proc in procs]
    assert "query must not be empty" in messages[1]
    assert "offset and messageId cannot be used together" in messages[2]


def test_runtime_failures_exit_1_without_traceback(shared: Shared, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("these are meeting notes,\nnot a transcript and not a database\n")
    before = notes.read_bytes()
    shared_db = str(shared.root / "store.sqlite")
    not_imported, not_db_status, not_db_search, absent, unknown = run_all(
        tmp_path,
        ("--db", "s.sqlite", "import", "nope.jsonl", str(notes)),
        ("--db", str(notes), "status"),
        ("--db", str(notes), "search", "deployment"),
        ("--db", "absent.sqlite", "search", "deployment"),
        # a visible key with no session finds nothing; a session id that names none is an error
        ("--db", shared_db, "search", "deployment", "--session-key", "no-such-session"),
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
    assert "Session not found" in one_line_error(unknown, 1)


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
