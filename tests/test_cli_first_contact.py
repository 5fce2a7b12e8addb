"""The installed ``openclaw-fts`` command as a new user meets it, on both engines: what a lone
file is imported as, errors that name the command line's own fixes, read-only commands that
never create a schema, and search output whose numbers say what they are."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_history_output
from sqlalchemy import create_engine, inspect
from test_cli import (
    EXAMPLES,
    MAIN_KEY,
    OPS_KEY,
    RELEASE_KEY,
    SUBAGENT_KEY,
    history_json,
    loads,
    ok,
    one_line_error,
    run,
    run_all,
    search_json,
)

from openclaw_fts import Caller, TranscriptStore, tools

pytestmark = pytest.mark.both_engines

MAIN_FILE = EXAMPLES / "7d3f6a2e-1b4c-4e8a-9c51-2f6b8d0e4a17.jsonl"
MAIN_ID = MAIN_FILE.stem
OPS_FILE = EXAMPLES / "e8b05d3c-7a21-4f9e-8c64-1d2f3a4b5c6d.jsonl"
OPS_ID = OPS_FILE.stem
#: A session id no session has (UUID-shaped: looked up as an id).
UNKNOWN_ID = "123e4567-e89b-12d3-a456-426614174000"
#: Advice the tools give in OpenClaw's words (its configuration), never on the command line.
OPENCLAW_CONFIG_WORDS = ("tools.sessions", "tools.agentToAgent", "sessions_list")


def _tables(db_url: str) -> list[str]:
    engine = create_engine(db_url)
    try:
        return inspect(engine).get_table_names()
    finally:
        engine.dispose()


@pytest.fixture
def imported(db_url: str, tmp_path: Path) -> tuple[str, str]:
    """The example folder imported and indexed; ``(--db, url)``."""
    db = ("--db", db_url)
    ok(run(tmp_path, *db, "import", str(EXAMPLES)))
    ok(run(tmp_path, *db, "reconcile"))
    return db


# -- a lone file's key ------------------------------------------------------------------------


def test_a_lone_file_never_takes_over_a_key_another_session_holds(
    db_url: str, tmp_path: Path
) -> None:
    db = ("--db", db_url)
    first = loads(run(tmp_path, *db, "import", str(MAIN_FILE), "--json"))
    assert [(o["sessionKey"], o["sessionId"], o["as"]) for o in first["outcomes"]] == [
        (MAIN_KEY, MAIN_ID, "current")
    ]
    text = ok(run(tmp_path, *db, "import", str(OPS_FILE)))
    orphan = f"agent:main:orphan:{OPS_ID}"
    assert f"→ {orphan}" in text.stdout  # the key used is printed
    assert "--session-key agent:main:main" in text.stdout  # and how to choose the other one
    # agent:main:main still reads its own transcript; the lone file is readable as the orphan.
    main_history, orphan_history = run_all(
        tmp_path, (*db, "history", MAIN_KEY, "--json"), (*db, "history", orphan, "--json")
    )
    assert {m["__openclaw"]["id"] for m in history_json(main_history)["messages"]} >= {"m1", "m5"}
    assert history_json(orphan_history)["messages"]
    # A re-import keeps the stored key; an explicit key makes the file that key's newest
    # incarnation (asked for, so no longer silent).
    again = loads(run(tmp_path, *db, "import", str(OPS_FILE), "--json"))
    assert again["outcomes"][0]["sessionKey"] == orphan and again["imported"] == 0
    chosen = loads(
        run(
            tmp_path,
            *db,
            "import",
            str(EXAMPLES / f"{SUBAGENT_ID}.jsonl"),
            "--session-key",
            MAIN_KEY,
            "--json",
        )
    )
    assert chosen["outcomes"][0]["sessionKey"] == MAIN_KEY
    assert chosen["outcomes"][0]["matchedBy"] == "sessionKey"
    newest = history_json(run(tmp_path, *db, "history", MAIN_KEY, "--json"))
    assert {m["__openclaw"]["id"] for m in newest["messages"]}.isdisjoint({"m1", "m5"})


SUBAGENT_ID = "c2a91f04-58e7-4b1d-a3f6-90d4e2b7c815"


def test_the_python_api_reports_the_key_of_a_lone_file(db_url: str) -> None:
    with TranscriptStore(db_url, background=False) as store:
        assert store.import_jsonl(MAIN_FILE)["outcomes"][0]["sessionKey"] == MAIN_KEY
        second = store.import_jsonl(OPS_FILE)["outcomes"][0]
        assert (second["sessionKey"], second["as"]) == (f"agent:main:orphan:{OPS_ID}", "orphan")
        assert MAIN_ID in second["note"]


# -- errors say the command line's fix --------------------------------------------------------


def test_refusals_name_cli_flags_and_the_tools_keep_openclaws_words(
    db_url: str, tmp_path: Path, imported: tuple[str, str]
) -> None:
    db = imported
    cross, a2a_off, narrow, not_found, not_found_json = run_all(
        tmp_path,
        (*db, "history", OPS_KEY, "--visibility", "agent"),
        (*db, "search", "deploy", "--session-key", OPS_KEY, "--no-agent-to-agent"),
        (*db, "history", MAIN_KEY, "--as", SUBAGENT_KEY, "--visibility", "self"),
        (*db, "history", UNKNOWN_ID),
        (*db, "history", UNKNOWN_ID, "--json"),
    )
    assert "--visibility all --agent-to-agent" in one_line_error(cross, 1)
    assert "Run with --agent-to-agent" in one_line_error(a2a_off, 1)
    assert "--visibility self; widen it with" in one_line_error(narrow, 1)
    assert "`openclaw-fts sessions`" in one_line_error(not_found, 1)
    for proc in (cross, a2a_off, narrow, not_found, not_found_json):
        assert not any(word in proc.stderr for word in OPENCLAW_CONFIG_WORDS), proc.stderr
    # With --json, stdout is the tool's own result (OpenClaw's text), stderr the CLI's line.
    assert not_found_json.returncode == 1
    assert "sessions_list" in check_history_output(json.loads(not_found_json.stdout))["error"]
    assert "`openclaw-fts sessions`" in not_found_json.stderr
    # The tool adapters answer in OpenClaw's words.
    with TranscriptStore(db_url, background=False) as store:
        denied = tools.sessions_history(
            store, Caller(MAIN_KEY, visibility="agent"), {"sessionKey": OPS_KEY}
        )
        assert "Set tools.sessions.visibility=all" in denied["error"]
        missing = tools.sessions_history(store, Caller(MAIN_KEY), {"sessionKey": UNKNOWN_ID})
        assert missing["error"].endswith("(use the full sessionKey from sessions_list)")


def test_a_missing_postgresql_driver_names_the_extra(tmp_path: Path, db_engine: str) -> None:
    """psycopg made unimportable (a ``sitecustomize`` that blocks it), from the CLI and from
    Python; the SQLite half checks that a SQLite URL never needs it."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['psycopg'] = None\nsys.modules['psycopg2'] = None\n"
    )
    env = {"PYTHONPATH": str(tmp_path)}
    url = "postgresql+psycopg://app@127.0.0.1:1/app"
    if db_engine == "sqlite":
        ok(run(tmp_path, "--db", "fresh.sqlite", "upgrade", env=env))
        return
    for given in (url, "postgresql://app@127.0.0.1:1/app"):
        line = one_line_error(run(tmp_path, "--db", given, "status", env=env), 1)
        assert "pip install 'openclaw-fts[postgresql]'" in line, line
    program = (
        "from openclaw_fts import TranscriptStore, MissingDriverError\n"
        f"try:\n    TranscriptStore({url!r})\n"
        "except MissingDriverError as exc:\n    print(isinstance(exc, ImportError), exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.startswith("True ") and "openclaw-fts[postgresql]" in proc.stdout


# -- read-only commands never create the schema -----------------------------------------------

READ_ONLY_COMMANDS = (
    ("search", "deploy"),
    ("history", MAIN_KEY),
    ("status",),
    ("check",),
    ("sessions",),
)


@pytest.mark.fresh_database("a database without the schema")
def test_read_only_commands_refuse_a_database_without_the_schema(
    db_url: str, db_engine: str, tmp_path: Path
) -> None:
    if db_engine == "sqlite":
        path = tmp_path / "empty.sqlite"
        path.touch()  # a 0-byte file
        db_url = f"sqlite:///{path}"
    procs = run_all(
        tmp_path,
        *[("--db", db_url, *command) for command in READ_ONLY_COMMANDS],
        *[("--db", db_url, *command, "--json") for command in READ_ONLY_COMMANDS],
    )
    for proc in procs:
        line = one_line_error(proc, 1)
        assert "has no openclaw-fts schema" in line and "openclaw-fts upgrade" in line, line
    for proc in procs[len(READ_ONLY_COMMANDS) :]:
        assert loads_error(proc)["exitCode"] == 1
    if db_engine == "sqlite":
        assert path.stat().st_size == 0
        assert not (tmp_path / "empty.sqlite-wal").exists()
    assert _tables(db_url) == []
    # The way out the message names works.
    assert loads(run(tmp_path, "--db", db_url, "upgrade", "--json"))["from"] == []
    assert loads(run(tmp_path, "--db", db_url, "status", "--json"))["total"] == 0


def loads_error(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    error: dict[str, object] = json.loads(proc.stdout)["error"]
    return error


@pytest.mark.sqlite_only("an SQLite file that holds other tables")
def test_a_sqlite_file_of_another_application_is_not_given_the_schema(
    db_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    line = one_line_error(run(tmp_path, "--db", str(path), "search", "deploy"), 1)
    assert "has no openclaw-fts schema" in line
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert names == ["notes"]


# -- sessions ---------------------------------------------------------------------------------


def test_sessions_lists_what_the_caller_may_see(
    db_url: str, tmp_path: Path, imported: tuple[str, str]
) -> None:
    db = imported
    everything, main_only, table, fresh = run_all(
        tmp_path,
        (*db, "sessions", "--json"),
        (*db, "sessions", "--visibility", "agent", "--json"),
        (*db, "sessions"),
        (*db, "import", str(OPS_FILE), "--session-key", "agent:ops:fresh", "--json"),
    )
    # The file's session is stored already: it keeps its key, and the report says so.
    kept = loads(fresh)["outcomes"][0]
    assert kept["sessionKey"] == OPS_KEY and "already stored under" in kept["note"]
    transcript = tmp_path / "fresh.jsonl"
    transcript.write_text(OPS_FILE.read_text().replace(OPS_ID, "fresh-session"))
    fresh = run(tmp_path, *db, "import", str(transcript), "--session-key", "agent:ops:fresh")
    rows = loads(everything)["sessions"]
    assert {r["key"] for r in rows} == {MAIN_KEY, SUBAGENT_KEY, OPS_KEY, RELEASE_KEY}
    times = [r["updatedAt"] for r in rows]
    assert times == sorted(times, reverse=True)  # most recently active first
    main = next(r for r in rows if r["key"] == MAIN_KEY)
    assert (main["agentId"], main["sessionId"], main["indexing"]) == ("main", MAIN_ID, "indexed")
    assert main["messageCount"] > 0
    assert {r["agentId"] for r in loads(main_only)["sessions"]} == {"main"}
    lines = ok(table).stdout.splitlines()
    assert "Last activity (UTC)" in lines[0] and "Messages" in lines[0]
    ops_line = next(line for line in lines if OPS_KEY in line)
    assert ops_line.split()[:3] == ["ops", OPS_KEY, OPS_ID] and ops_line.split()[-1] == "indexed"
    assert "→ agent:ops:fresh (--session-key" in ok(fresh).stdout
    pending = loads(run(tmp_path, *db, "sessions", "--agent", "ops", "--search", "FRESH", "--json"))
    assert [(r["key"], r["indexing"]) for r in pending["sessions"]] == [
        ("agent:ops:fresh", "pending")
    ]


# -- what the numbers mean --------------------------------------------------------------------


def test_search_ranks_are_shown_and_explained(
    db_url: str, tmp_path: Path, imported: tuple[str, str]
) -> None:
    db = imported
    table, as_json, search_help, history_help = run_all(
        tmp_path,
        (*db, "search", "deployment OR staging OR release"),
        (*db, "search", "deployment OR staging OR release", "--json"),
        ("search", "--help"),
        ("history", "--help"),
    )
    hits = search_json(as_json)["results"]
    assert len(hits) >= 2
    lines = ok(table).stdout.splitlines()
    header = next(line for line in lines if "Session key" in line)
    assert header.split()[0] == "#" and "Match" in header and "Score" not in header
    rows = [line.split() for line in lines if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == [str(n) for n in range(1, len(hits) + 1)]
    assert rows[0][5] == "100%"  # the best hit of the query
    best = hits[0]["score"]
    for row, hit in zip(rows, hits, strict=True):
        assert row[1] == hit["sessionKey"]
        assert row[5] == f"{hit['score'] / best:.0%}"
    help_text = " ".join(ok(search_help).stdout.split())
    assert "100% is the best hit of the query" in help_text
    assert "position in the transcript" in " ".join(ok(history_help).stdout.split())
