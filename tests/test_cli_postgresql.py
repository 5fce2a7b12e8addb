"""The installed ``openclaw-fts`` command on a real PostgreSQL database (``--db
postgresql+psycopg://…``): the same commands and JSON as on SQLite (tests/test_cli.py), and a
one-line error, never a traceback, for a server or database it cannot reach."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url
from test_cli import (
    EXAMPLES,
    MAIN_KEY,
    OPS_KEY,
    SECRET,
    SUBAGENT_KEY,
    history_json,
    loads,
    ok,
    one_line_error,
    run,
    run_all,
    search_json,
)


def test_upgrade_import_and_every_command_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    db = ("--db", pg_url)
    upgraded = loads(run(tmp_path, *db, "upgrade", "--json"))
    assert upgraded["from"] == [] and upgraded["to"]
    assert "postgresql" in upgraded["database"] and "@" in upgraded["database"]
    imported_proc, again_proc = run_all(
        tmp_path, (*db, "import", str(EXAMPLES), "--json"), (*db, "upgrade", "--json")
    )
    again = loads(again_proc)
    assert again["from"] == again["to"] == upgraded["to"]

    imported = loads(imported_proc)
    assert imported["imported"] == 32 and imported["failedFiles"] == []
    assert imported["index"]["pending"] == 4

    lazy = search_json(run(tmp_path, *db, "search", "deployment", "--no-reconcile", "--json"))
    assert lazy["results"] == [] and "indexing" in lazy

    reconciled = loads(run(tmp_path, *db, "reconcile", "--json"))
    assert (reconciled["pending"], reconciled["indexed"], reconciled["total"]) == (0, 4, 4)

    reads = {
        "search": (*db, "search", "staging deployment", "--json"),
        "languages": (*db, "search", "cafe OR 部署", "--json"),
        "hidden": (*db, "search", "reboot OR heartbeat OR kubectl", "--json"),
        "table": (*db, "search", "staging deployment"),
        "history": (*db, "history", MAIN_KEY, "--json"),
        "window": (*db, "history", MAIN_KEY, "--message-id", "m8", "--limit", "4", "--json"),
        "status": (*db, "--json", "status"),
        "check": (*db, "check", "--json"),
        "check_text": (*db, "check"),
    }
    out = dict(zip(reads, run_all(tmp_path, *reads.values()), strict=True))

    found = search_json(out["search"])
    assert {MAIN_KEY, SUBAGENT_KEY, OPS_KEY} <= {h["sessionKey"] for h in found["results"]}
    assert "indexing" not in found
    assert "m5" in [h["messageId"] for h in found["results"]]
    hits = search_json(out["languages"])["results"]
    assert any("café" in h["snippet"] for h in hits)
    assert any("部署" in h["snippet"] for h in hits)
    assert search_json(out["hidden"])["results"] == []
    assert "Found it: the staging deployment hangs in migration" in ok(out["table"]).stdout

    history = history_json(out["history"])
    texts = str(history["messages"])
    assert "pg_locks" in texts and "reboot the whole staging cluster" not in texts
    window = history_json(out["window"])["messages"]
    # The tool result m10 is left out; m9, an assistant turn of tool calls only, stays (OpenClaw).
    assert [m["__openclaw"]["id"] for m in window] == ["m5", "m7", "m8", "m9"]
    for name in ("search", "table", "history", "window"):
        assert SECRET not in out[name].stdout

    status = loads(out["status"])
    assert (status["pending"], status["indexed"], status["total"]) == (0, 4, 4)
    assert status["schema"] == upgraded["to"] and "sizes" not in status
    report = loads(out["check"])
    assert report["ok"] is True and report["drift"] == {}
    assert ok(out["check_text"]).stdout.strip().endswith("OK")

    rebuilt, optimized = map(
        loads,
        run_all(tmp_path, (*db, "rebuild", MAIN_KEY, "--json"), (*db, "optimize", "--json")),
    )
    assert len(rebuilt["rebuilt"]) == 1 and rebuilt["pending"] == 0
    assert optimized == {"database": upgraded["database"], "optimized": True}
    everything = loads(run(tmp_path, *db, "rebuild", "--json"))
    assert len(everything["rebuilt"]) == 4 and everything["indexed"] == 4
    assert loads(run(tmp_path, *db, "check", "--json"))["ok"] is True

    # Drift: an index row deleted behind the plugin's back is reported (exit 1), and fixed.
    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        conn.execute("DELETE FROM message_index WHERE id = (SELECT min(id) FROM message_index)")
    drifted = run(tmp_path, *db, "check", "--json")
    assert drifted.returncode == 1 and "Traceback" not in drifted.stderr
    report = json.loads(drifted.stdout)
    assert report["ok"] is False and report["drift"]
    assert loads(run(tmp_path, *db, "rebuild", "--json"))["pending"] == 0
    assert loads(run(tmp_path, *db, "check", "--json"))["ok"] is True


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
