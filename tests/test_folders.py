"""Importing OpenClaw folders (docs/import.md): agents, sessions.json matching, orphans and
reset archives, through ``store.import_dir`` and the public search/history API.

The fixture ``openclaw_state`` is an OpenClaw state folder in OpenClaw's real layout: agent
``main`` with an entry found only by its absolute ``sessionFile`` (file named after a topic), one
found by a Windows ``sessionFile``, one by header id (file renamed), one by file name (no header
line), a reset archive of ``agent:main:main`` (linked through ``usageFamilySessionIds``) and one
no entry names; agent ``ops`` with an entry, a transcript no entry names, and an entry whose key
names agent ``main`` (not used: an ops transcript never joins another agent).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES

from openclaw_fts import Caller, TranscriptStore, folders

STATE = FIXTURES / "openclaw_state"
MAIN_DIR = Path("agents") / "main" / "sessions"
OPS_DIR = Path("agents") / "ops" / "sessions"
M1 = "3f1c9a20-0d4e-4b7a-9c11-aa0000000001"
M2 = "3f1c9a20-0d4e-4b7a-9c11-aa0000000002"
Z = "3f1c9a20-0d4e-4b7a-9c11-aa0000000006"
O7 = "9b0e7d51-6c2a-4f3e-8d44-bb0000000007"
O9 = "9b0e7d51-6c2a-4f3e-8d44-bb0000000009"
#: What each file of the fixture becomes: file name -> (agent, key, kind, matched by).
EXPECTED = {
    f"{M1}.jsonl.reset.1790000500000": (
        "main",
        "agent:main:main",
        folders.AS_RESET_ARCHIVE,
        folders.BY_LINEAGE,
    ),
    f"{M2}-topic-42.jsonl": ("main", "agent:main:main", folders.AS_CURRENT, "sessionFile"),
    "win-chat.jsonl": ("main", "agent:main:telegram:direct:4242", "current", "sessionFile"),
    "renamed-by-hand.jsonl": ("main", "agent:main:subagent:heron", "current", "headerId"),
    "legacy-5.jsonl": ("main", "agent:main:cron:nightly", "current", "fileName"),
    f"{Z}.jsonl.reset.1790000900000": ("main", f"agent:main:orphan:{Z}", "resetArchive", None),
    "9b0e7d51-6c2a-4f3e-8d44-bb0000000001.jsonl": ("ops", "agent:ops:main", "current", "headerId"),
    "stray.jsonl": ("ops", f"agent:ops:orphan:{O9}", folders.AS_ORPHAN, None),
    f"{O7}.jsonl": ("ops", f"agent:ops:orphan:{O7}", folders.AS_ORPHAN, None),
}
SEARCH_LIMIT = 25


@pytest.fixture
def state(tmp_path: Path) -> Path:
    target = tmp_path / ".openclaw"
    shutil.copytree(STATE, target)
    return target


def outcomes(report: dict[str, Any]) -> dict[str, tuple[str, str, str, str | None]]:
    return {
        Path(o["file"]).name: (o["agentId"], o["sessionKey"], o["as"], o["matchedBy"])
        for o in report["outcomes"]
    }


def found(store: TranscriptStore, caller: Caller, word: str) -> set[tuple[str, str]]:
    out = store.search(caller, word, limit=SEARCH_LIMIT)
    assert "indexing" not in out
    return {(r["sessionKey"], r["messageId"]) for r in out["results"]}


def self_caller(key: str) -> Caller:
    return Caller(key, visibility="self")


@pytest.mark.parametrize("where", [".", "agents"], ids=["state-folder", "agents-folder"])
def test_every_agent_is_imported_and_the_report_says_what_each_file_became(
    store: TranscriptStore, state: Path, where: str
) -> None:
    report = store.import_dir(state / where)
    assert report["agents"] == ["main", "ops"]
    assert report["errorCount"] == 0 and report["failedFiles"] == []
    assert outcomes(report) == EXPECTED
    assert report["files"] == len(EXPECTED)


def test_an_entry_naming_another_agent_is_not_used_and_the_report_says_why(
    store: TranscriptStore, state: Path
) -> None:
    report = store.import_dir(state / OPS_DIR)
    (item,) = [o for o in report["outcomes"] if Path(o["file"]).name == f"{O7}.jsonl"]
    assert item["as"] == folders.AS_ORPHAN and item["agentId"] == "ops"
    assert "'agent:main:sneaky' names agent 'main'" in item["note"]
    assert all("note" not in o for o in report["outcomes"] if o is not item)


def test_an_agents_sessions_folder_imports_that_agent_only(
    store: TranscriptStore, state: Path
) -> None:
    report = store.import_dir(state / OPS_DIR)
    assert report["agents"] == ["ops"]
    assert set(outcomes(report)) == {n for n, v in EXPECTED.items() if v[0] == "ops"}


def test_a_transcript_without_entry_stays_with_its_agent(
    store: TranscriptStore, state: Path
) -> None:
    store.import_dir(state)
    store.reconcile()
    # The bug: main's own session could read ops' stray transcript. Not any more.
    assert found(store, self_caller("agent:main:main"), "albatross") == set()
    assert found(store, self_caller("agent:main:sneaky"), "kestrel") == set()
    orphan = f"agent:ops:orphan:{O9}"
    assert found(store, self_caller(orphan), "albatross") == {(orphan, "s1")}
    every = Caller("agent:ops:main", visibility="all")
    assert found(store, every, "albatross") == {(orphan, "s1")}
    assert found(store, every, "kestrel") == {(f"agent:ops:orphan:{O7}", "k1")}


@pytest.mark.parametrize(
    ("key", "message_id"),
    [
        ("agent:main:main", "c1"),  # absolute POSIX sessionFile, file named after a topic
        ("agent:main:telegram:direct:4242", "w1"),  # Windows sessionFile
        ("agent:main:subagent:heron", "r1"),  # header id, file renamed
        ("agent:main:cron:nightly", "l1"),  # file name, no header line
    ],
)
def test_each_entry_reads_its_own_transcript(
    store: TranscriptStore, state: Path, key: str, message_id: str
) -> None:
    store.import_dir(state)
    store.reconcile()
    history = store.history(self_caller(key), key)
    ids = [m["__openclaw"]["id"] for m in history["messages"]]
    assert ids[:1] == [message_id]


def test_a_reset_archive_is_an_older_searchable_incarnation(
    store: TranscriptStore, state: Path
) -> None:
    # Import the current transcript first: "older" must not depend on the import order.
    store.import_dir(state / MAIN_DIR)
    main = self_caller("agent:main:main")
    store.reconcile()
    assert found(store, main, "flamingo") == {("agent:main:main", "p1"), ("agent:main:main", "p2")}
    out = store.search(main, "flamingo", limit=SEARCH_LIMIT)
    assert {r["sessionId"] for r in out["results"]} == {M1}
    history = store.history(main, "agent:main:main")
    assert [m["__openclaw"]["id"] for m in history["messages"]] == ["c1", "c2"]
    # An archive no entry names keeps its agent under its own orphan key.
    orphan = f"agent:main:orphan:{Z}"
    assert found(store, self_caller(orphan), "osprey") == {(orphan, "z1")}


def test_the_current_incarnation_stays_newest_whatever_the_import_order(
    store: TranscriptStore, state: Path
) -> None:
    main_dir = state / MAIN_DIR
    current = main_dir / f"{M2}-topic-42.jsonl"
    store.import_jsonl(current, session_key="agent:main:main")  # created "now"
    store.import_dir(main_dir)  # the archive comes later, yet is older
    store.reconcile()
    history = store.history(self_caller("agent:main:main"), "agent:main:main")
    assert [m["__openclaw"]["id"] for m in history["messages"]] == ["c1", "c2"]


def test_reimporting_changes_nothing(store: TranscriptStore, state: Path) -> None:
    first = store.import_dir(state)
    again = store.import_dir(state)
    assert again["imported"] == 0
    assert again["skippedDuplicates"] == first["imported"]
    assert outcomes(again) == EXPECTED


def test_rekey_corrects_a_database_built_by_the_old_mapping(
    store: TranscriptStore, state: Path
) -> None:
    """Before this mapping, a folder's transcript without an entry was imported like a lone
    file: under agent:main:main. A plain re-import keeps stored keys; ``rekey=True`` moves
    the sessions to the keys and agents the folder gives them."""
    stray = state / OPS_DIR / "stray.jsonl"
    store.import_jsonl(stray)  # what the old folder import did with it
    store.reconcile()
    main = self_caller("agent:main:main")
    assert found(store, main, "albatross") == {("agent:main:main", "s1")}  # the leak
    store.import_dir(state / OPS_DIR)
    store.reconcile()
    assert found(store, main, "albatross") == {("agent:main:main", "s1")}  # kept as stored
    report = store.import_dir(state / OPS_DIR, rekey=True)
    assert report["imported"] == 0
    store.reconcile()
    assert found(store, main, "albatross") == set()
    orphan = f"agent:ops:orphan:{O9}"
    assert found(store, self_caller(orphan), "albatross") == {(orphan, "s1")}


def test_windows_and_relative_session_files_name_the_file() -> None:
    assert folders._file_name_of("C:\\Users\\dev\\x\\chat.jsonl") == "chat.jsonl"
    assert folders._file_name_of("/home/dev/.openclaw/agents/a/sessions/c.jsonl") == "c.jsonl"
    assert folders._file_name_of("sub/c.jsonl") == "c.jsonl"


def test_the_orphan_key_is_no_key_openclaw_builds() -> None:
    key = folders.orphan_key("ops", O9)
    assert key == f"agent:ops:orphan:{O9}"
    rest = key.split(":")[2:]
    assert len(rest) == 2  # channel keys have three or more segments after the agent
    assert rest[0] not in {"main", "subagent", "cron", "acp", "direct"}


def test_a_folder_without_transcripts_is_refused(store: TranscriptStore, tmp_path: Path) -> None:
    from openclaw_fts.errors import ImportFormatError

    (tmp_path / "agents" / "x" / "sessions").mkdir(parents=True)
    with pytest.raises(ImportFormatError):
        store.import_dir(tmp_path)


def test_cli_import_reports_each_file_and_rekeys(state: Path, tmp_path: Path) -> None:
    from test_cli import loads, ok, run

    db = ("--db", str(tmp_path / "cli.sqlite"))
    report = loads(run(tmp_path, *db, "import", str(state), "--json"))
    assert outcomes(report) == EXPECTED
    assert report["agents"] == ["main", "ops"]
    text = ok(run(tmp_path, *db, "import", str(state / OPS_DIR), "--rekey")).stdout
    assert f"stray.jsonl → agent:ops:orphan:{O9} (no sessions.json entry, agent ops)" in text


def test_a_home_relative_path_is_expanded(
    store: TranscriptStore, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(state.parent))
    report = store.import_dir("~/.openclaw")
    assert outcomes(report) == EXPECTED
