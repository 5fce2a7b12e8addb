"""The rough edges a new user met on the first day (issue #36), each through the installed
``openclaw-fts`` command or the public API, on both engines where the engine matters: an
anchor no event holds, a path that does not exist, JSON errors, a database in a missing folder,
``postgres://`` URLs, the async module without its extra, output at 80 columns, what history
leaves out, engine-neutral ``check``, queries without words, and suggestions that never come
from inside a masked credential."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_history_output, check_search_output
from factories import chain, jsonl_file
from sqlalchemy.engine import make_url
from test_cli import (
    EXAMPLES,
    MAIN_KEY,
    RELEASE_KEY,
    SECRET,
    SUBAGENT_KEY,
    loads,
    ok,
    one_line_error,
    run,
    run_all,
)

from openclaw_fts import Caller, TranscriptStore, tools
from openclaw_fts.redact import KEEP_END_CHARS, KEEP_START_CHARS, mask_secret

pytestmark = pytest.mark.both_engines

REPO = Path(__file__).parents[1]
OPERATOR = Caller(MAIN_KEY, visibility="all")
#: The assistant turn of the main example session made only of a tool call (sessions_spawn),
#: and the tool result that answers it.
TOOL_CALL_TURN = "m9"
TOOL_RESULT = "m10"
EXIT_FAILURE = 1
NO_WORDS = "No matches: the query has no searchable words"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, module_db_url: str) -> tuple[str, str]:
    """The examples imported and indexed in the engine's module database; ``--db URL``."""
    root = tmp_path_factory.mktemp("edges")
    args = ("--db", module_db_url)
    ok(run(root, *args, "import", str(EXAMPLES)))
    ok(run(root, *args, "reconcile"))
    return args


# -- history: an anchor no event holds --------------------------------------------------------


def test_an_anchor_that_is_not_in_the_session_is_an_error(
    db: tuple[str, str], tmp_path: Path
) -> None:
    text, as_json, rewound = run_all(
        tmp_path,
        (*db, "history", MAIN_KEY, "--message-id", "m999"),
        (*db, "history", MAIN_KEY, "--message-id", "m999", "--json"),
        (*db, "history", MAIN_KEY, "--message-id", TOOL_RESULT),
    )
    error = f"Message not found in session {MAIN_KEY}: m999"
    assert one_line_error(text, EXIT_FAILURE) == f"Error: {error}"
    assert text.stdout == ""  # no "0 of 12 messages" header
    assert as_json.returncode == EXIT_FAILURE
    assert json.loads(as_json.stdout) == {"status": "error", "error": error}
    # A message of the session that the window leaves out (a tool result without
    # --include-tools) is no error: an empty window, as for a rewound branch.
    assert ok(rewound).stdout.splitlines()[-1] == (
        "No messages. (the anchor is not on the active branch)"
    )


def test_the_tool_answers_an_unknown_anchor_in_openclaws_error_shape(db_url: str) -> None:
    with TranscriptStore(db_url, background=False) as store:
        store.import_dir(EXAMPLES)
        out = tools.sessions_history(store, OPERATOR, {"sessionKey": MAIN_KEY, "messageId": "nope"})
        assert out == {"status": "error", "error": f"Message not found in session {MAIN_KEY}: nope"}
        known = tools.sessions_history(
            store, OPERATOR, {"sessionKey": MAIN_KEY, "messageId": TOOL_CALL_TURN, "limit": 1}
        )
        assert [m["__openclaw"]["id"] for m in check_history_output(known)["messages"]] == [
            TOOL_CALL_TURN
        ]


# -- history: tool calls stay, tool results go -------------------------------------------------


def test_history_help_says_what_it_leaves_out_and_does_so(
    db: tuple[str, str], tmp_path: Path
) -> None:
    help_text, plain, with_tools = run_all(
        tmp_path,
        ("history", "--help"),
        (*db, "history", MAIN_KEY, "--json"),
        (*db, "history", MAIN_KEY, "--include-tools", "--json"),
    )
    words = " ".join(ok(help_text).stdout.split())
    assert "tool-only messages" not in words
    assert "tool results are left out unless --include-tools" in words
    assert "an assistant turn made only of tool calls stays" in words
    shown = [m["__openclaw"]["id"] for m in check_history_output(loads(plain))["messages"]]
    everything = [
        m["__openclaw"]["id"] for m in check_history_output(loads(with_tools))["messages"]
    ]
    assert TOOL_CALL_TURN in shown  # the turn made only of a tool call stays
    assert TOOL_RESULT not in shown and TOOL_RESULT in everything  # its result does not
    assert [i for i in everything if i not in shown] == ["m3", TOOL_RESULT]


# -- import -----------------------------------------------------------------------------------


def test_importing_a_missing_path_prints_no_success_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "path"
    proc = run(tmp_path, "--db", str(tmp_path / "x.sqlite"), "import", str(missing))
    assert one_line_error(proc, EXIT_FAILURE) == (
        f"Error: not imported: {missing}: no such file or folder"
    )
    assert proc.stdout == ""
    assert not (tmp_path / "x.sqlite").exists()


def test_a_malformed_line_says_at_once(db_url: str, tmp_path: Path) -> None:
    unterminated = '{"type": "message", "id": "x'
    broken = jsonl_file(tmp_path / "broken.jsonl", [*chain(["one", "two"]), unterminated])
    with TranscriptStore(db_url, background=False) as store:
        report = store.import_jsonl(broken)
    assert report["errorCount"] == 1 and report["imported"] == 2
    (message,) = report["errors"]
    column = unterminated.index('"x') + 1  # json's columns count from 1
    assert f"malformed JSON (Unterminated string starting at column {column})" in message
    assert " at at " not in message


# -- the database ------------------------------------------------------------------------------


def test_a_database_in_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nonexistent" / "dir"
    db = ("--db", str(folder / "x.sqlite"))
    search, upgrade = run_all(tmp_path, (*db, "search", "deploy"), (*db, "upgrade"))
    read_line = one_line_error(search, EXIT_FAILURE)
    write_line = one_line_error(upgrade, EXIT_FAILURE)
    for line in (read_line, write_line):
        assert f"its folder {folder} does not exist" in line
        assert "unable to open database file" not in line
    assert "upgrade" not in read_line  # no advice that cannot work
    assert not folder.exists()


def test_postgres_urls_are_read_as_postgresql(db_url: str, db_engine: str, tmp_path: Path) -> None:
    if db_engine == "sqlite":
        pytest.skip("postgres:// names a PostgreSQL server")
    url = make_url(db_url)
    assert url.drivername == "postgresql+psycopg"
    plain = url.set(drivername="postgres").render_as_string(hide_password=False)
    with_driver = url.set(drivername="postgres+psycopg").render_as_string(hide_password=False)
    assert ok(run(tmp_path, "--db", plain, "upgrade", "--json"))
    ok(run(tmp_path, "--db", with_driver, "import", str(EXAMPLES)))
    status = loads(run(tmp_path, "--db", plain, "status", "--json"))
    assert status["total"] == 4
    with TranscriptStore(plain, background=False) as store:
        assert store.engine.dialect.name == "postgresql"
        assert store.index_status()["total"] == 4


def test_the_async_module_without_greenlet_names_the_plugins_extras() -> None:
    program = (
        "import sys\n"
        "sys.modules['greenlet'] = None  # what an install without the extra has: no greenlet\n"
        "try:\n"
        "    import openclaw_fts.aio\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=REPO
    )
    out = proc.stdout
    assert out.startswith("MissingDriverError "), out
    assert "pip install 'openclaw-fts[async]'" in out
    assert "pip install 'openclaw-fts[postgresql-async]'" in out
    assert "sqlalchemy[asyncio]" not in out


# -- output at 80 columns ----------------------------------------------------------------------


def _run_at(cwd: Path, columns: int, *args: str) -> subprocess.CompletedProcess[str]:
    return run(cwd, *args, env={"COLUMNS": str(columns)})


@pytest.mark.parametrize("columns", [80, 1000])
def test_no_line_ends_in_padding_and_no_key_is_cut(
    db: tuple[str, str], tmp_path: Path, columns: int
) -> None:
    procs = {
        name: ok(_run_at(tmp_path, columns, *db, *args))
        for name, args in {
            "sessions": ("sessions",),
            "search": ("search", "staging deployment"),
            "history": ("history", MAIN_KEY),
            "batch": ("search", "staging", "-q", "deploy"),
        }.items()
    }
    for name, proc in procs.items():
        lines = proc.stdout.splitlines()
        assert lines, name
        padded = [line for line in lines if line != line.rstrip()]
        assert padded == [], (name, padded)
        assert all(len(line) <= columns for line in lines if " " in line), name
    sessions = procs["sessions"].stdout.splitlines()
    keys = {MAIN_KEY, SUBAGENT_KEY, RELEASE_KEY, "agent:ops:main"}
    # Every key is whole on a line of its own (narrow) or in its table cell (wide).
    assert keys <= {word for line in sessions for word in line.split()}
    if columns >= 160:
        assert sessions[0].split()[:3] == ["Agent", "Session", "key"]


# -- check -------------------------------------------------------------------------------------


def test_check_names_no_engine(db: tuple[str, str], tmp_path: Path) -> None:
    out = ok(run(tmp_path, *db, "check")).stdout
    assert "Full-text index integrity: ok" in out
    assert "FTS5" not in out


# -- queries without words, and which query has more ------------------------------------------


def test_a_query_without_words_says_so(db: tuple[str, str], tmp_path: Path) -> None:
    text, as_json, batch = run_all(
        tmp_path,
        (*db, "search", "!!!???..."),
        (*db, "search", "!!!???...", "--json"),
        (*db, "search", "staging", "-q", "???", "-q", "deploy", "--limit", "1"),
    )
    assert ok(text).stdout.splitlines() == [
        f"{NO_WORDS} (punctuation and symbols are not indexed)."
    ]
    # The tool's answer stays OpenClaw's: no results, nothing else.
    assert check_search_output(loads(as_json)) == {"results": []}
    lines = ok(batch).stdout.splitlines()
    assert lines[lines.index("Query 2: ???") + 1] == (
        f"{NO_WORDS} (punctuation and symbols are not indexed)."
    )
    assert tools.has_searchable_words("deploy!!!") and not tools.has_searchable_words("!!!???")
    assert (
        lines[-1]
        == "More matches exist for query 1, 3: refine the query or raise --limit (max 25)."
    )


# -- suggestions never come from inside a masked credential -----------------------------------


def test_no_suggestion_is_a_fragment_of_a_masked_credential(
    db: tuple[str, str], tmp_path: Path
) -> None:
    head, tail = SECRET[:KEEP_START_CHARS], SECRET[-KEEP_END_CHARS:]
    assert mask_secret(SECRET) == f"{head}…{tail}"  # sk-pro…0gEy: "sk", "pro", "0gey"
    proj, tail_prefix, as_json = run_all(
        tmp_path,
        (*db, "search", "sk-proj"),
        (*db, "search", tail.lower()[:3]),
        (*db, "search", "sk-proj", "--json"),
    )
    assert ok(proj).stdout.splitlines() == ["No matches."]
    assert ok(tail_prefix).stdout.splitlines() == ["No matches."]
    assert "warning" not in loads(as_json)


def test_a_word_written_outside_a_mask_is_still_suggested(db_url: str) -> None:
    with TranscriptStore(db_url, background=False) as store:
        store.import_dir(EXAMPLES)
        store.reconcile()
        assert "pro" not in store.suggest(OPERATOR, "proj")
        store.create_session("s-pro", "agent:main:pro")
        store.append_many("s-pro", chain(["we moved to the pro plan"], prefix="p"))
        store.reconcile()
        assert "pro" in store.suggest(OPERATOR, "proj")
        out = store.search(OPERATOR, "sk-proj")
        assert out["results"] == [] and "pro" in out.get("warning", "")


# -- the docs say one thing about the mask -----------------------------------------------------


def test_security_and_redaction_docs_describe_the_same_mask() -> None:
    kept = f"first {KEEP_START_CHARS} and last {KEEP_END_CHARS} characters"
    for page in ("security.md", "redaction.md"):
        words = " ".join((REPO / "docs" / page).read_text(encoding="utf-8").split())
        assert re.search(rf"keeps (only )?its {kept}", words), page
        assert "no part of a secret is shown" not in words, page


# -- the store methods the command line goes through ------------------------------------------


def test_import_paths_imports_files_and_folders_into_one_report(
    db_url: str, tmp_path: Path
) -> None:
    lone = jsonl_file(tmp_path / "lone.jsonl", chain(["one lone message"], prefix="l"))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a transcript\n")
    missing = tmp_path / "missing"
    seen: list[str] = []
    with TranscriptStore(db_url, background=False) as store:
        report = store.import_paths(
            [EXAMPLES, lone, notes, missing],
            session_key="agent:main:lone",
            on_file=lambda path: seen.append(path.name),
        )
        assert report["imported"] == 33 and len(report["sessions"]) == 5
        assert report["failedFiles"][0] == f"{missing}: no such file or folder"
        assert report["failedFiles"][1].startswith(f"{notes}: not an OpenClaw transcript")
        assert seen[-2:] == ["lone.jsonl", "notes.txt"] and len(seen) == 6
        # What import_dir reports of the same folder, merged.
        again = store.import_dir(EXAMPLES)
        assert again["skippedDuplicates"] == 32 and again["failedFiles"] == []
        assert store.schema_at_head() and store.schema_revisions()
        assert store.upgrade_schema() == store.schema_revisions()
        store.reconcile()
        assert store.check().ok
