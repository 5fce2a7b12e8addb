"""The testing kit a host installs with ``openclaw-fts[testing]`` (docs/testing.md): the pytest
plugin's fixtures (loaded here through its ``pytest11`` entry point, as in a host's run), the
factories and the bundled sessions folder, and ``examples/host_app/tests`` — written with the
kit only — run by pytest in a copy of the example host, on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import text

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.engine import make_engine
from openclaw_fts.pytest_plugin import DATABASE_PREFIX, URL_ENV, fresh_postgresql_database
from openclaw_fts.testing import (
    CompactionEventFactory,
    LeafEventFactory,
    MessageEventFactory,
    fixture_sessions_dir,
    rewound_branch,
    tool_call_pair,
)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "host_app"
#: Seconds the example host's pytest run may take on a loaded machine.
RUN_TIMEOUT = 600


def host_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    app = tmp_path / "host_app"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite"))
    env = {k: v for k, v in os.environ.items() if k not in (URL_ENV, "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


def test_the_example_hosts_kit_tests_pass_on_sqlite(tmp_path: Path) -> None:
    done = host_pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout


def pg_databases(server: str) -> set[str]:
    engine = make_engine(server)
    try:
        with engine.connect() as conn:
            return set(conn.scalars(text("SELECT datname FROM pg_database")))
    finally:
        engine.dispose()


def test_the_example_hosts_kit_tests_pass_on_postgresql(tmp_path: Path, pg_server: object) -> None:
    server = pg_server.url()  # type: ignore[attr-defined]
    before = pg_databases(server)
    done = host_pytest(tmp_path, "--openclaw-fts-url", server)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout, done.stdout
    assert pg_databases(server) == before  # every test's database dropped


def test_a_fresh_postgresql_database_per_use_dropped_after(pg_server: object) -> None:
    server = pg_server.url()  # type: ignore[attr-defined]
    with fresh_postgresql_database(server) as url:
        name = url.rsplit("/", 1)[1].split("?")[0]
        assert name.startswith(DATABASE_PREFIX) and name in pg_databases(server)
        with TranscriptStore(url, background=False) as store:
            store.create_session("s1", "agent:main:main")
            # a connection still open at the drop: the database goes anyway
            held = make_engine(url).connect()
    held.close()
    assert name not in pg_databases(server)


def test_a_url_that_is_no_postgresql_server_is_a_usage_error() -> None:
    with (
        pytest.raises(pytest.UsageError, match="PostgreSQL server"),
        fresh_postgresql_database("sqlite:///x.sqlite"),
    ):
        pass


# -- the fixture in this suite: each test its own database ----------------------------------------


@pytest.mark.parametrize("round_", [1, 2])
def test_transcript_store_is_a_fresh_migrated_database_per_test(
    transcript_store: TranscriptStore, round_: int
) -> None:
    assert transcript_store.index_status()["total"] == 0
    transcript_store.create_session("s1", "agent:main:main")
    transcript_store.append("s1", MessageEventFactory(text=f"round {round_} words"))
    found = transcript_store.search(Caller("agent:main:main"), "words")
    assert [hit["sessionId"] for hit in found.get("results", [])] == ["s1"]


# -- the factories --------------------------------------------------------------------------------


def test_message_events_have_openclaws_shape() -> None:
    first = MessageEventFactory(role="user", text="hello")
    second = MessageEventFactory(role="assistant", text="hi", parent=first)
    third = MessageEventFactory(parent="x9")
    assert set(first) == {"type", "id", "parentId", "timestamp", "message"}
    assert first["type"] == "message" and first["parentId"] is None
    assert first["message"] == {"role": "user", "content": "hello"}
    assert second["parentId"] == first["id"] and third["parentId"] == "x9"
    assert len({first["id"], second["id"], third["id"]}) == 3
    stamps = [
        datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")) for e in (first, second)
    ]
    assert stamps[0] < stamps[1] and first["timestamp"].endswith("Z")


def test_tool_pair_compaction_and_rewind_shapes() -> None:
    asked = MessageEventFactory()
    call, result = tool_call_pair(asked, name="read", arguments={"path": "a"}, result="text")
    (block,) = call["message"]["content"]
    assert call["parentId"] == asked["id"] and result["parentId"] == call["id"]
    assert block == {
        "type": "toolCall",
        "id": block["id"],
        "name": "read",
        "arguments": {"path": "a"},
    }
    assert result["message"]["toolCallId"] == block["id"]
    assert result["message"]["role"] == "toolResult" and result["message"]["toolName"] == "read"
    compaction = CompactionEventFactory(parent=result, first_kept=asked)
    assert compaction["type"] == "compaction" and compaction["firstKeptEntryId"] == asked["id"]
    q, dropped, leaf, kept = rewound_branch(parent=compaction)
    assert q["parentId"] == compaction["id"] and dropped["parentId"] == q["id"]
    assert leaf["type"] == "leaf" and leaf["targetId"] == q["id"] and kept["parentId"] == leaf["id"]
    assert LeafEventFactory(target="m1")["targetId"] == "m1"


def test_the_bundled_sessions_ship_inside_the_package() -> None:
    folder = fixture_sessions_dir()
    assert folder == Path(openclaw_fts.__file__).resolve().parent / "testing" / "sessions"
    assert (folder / "sessions.json").is_file() and len(list(folder.glob("*.jsonl"))) == 4
    # in this checkout, the repository's examples (scripts/demo.sh imports them); the wheel
    # ships the folder itself (scripts/wheel_check.sh)
    assert folder.resolve() == (REPO / "examples" / "sessions").resolve()
