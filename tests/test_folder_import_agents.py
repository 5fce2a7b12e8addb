"""Folder imports never cross agents, and a value an engine cannot store refuses one file only.

Real OpenClaw state folders (``agents/<id>/sessions/`` with ``sessions.json`` and transcripts in
OpenClaw's JSONL shape) are written to a temporary folder and imported through
``store.import_dir``; what each agent then sees is read back through the public search and
history API, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from factories import chain, events_file

from openclaw_fts import Caller, TranscriptStore

pytestmark = pytest.mark.both_engines

#: The session id both agents' transcripts carry in their header.
SHARED_ID = "5d1e0c7a-1111-4c2b-9e3f-000000000001"
HEADER_TS = "2026-09-22T01:00:00.000Z"
SEARCH_LIMIT = 25


def write_transcript(
    folder: Path, name: str, session_id: str, events: list[dict[str, Any]]
) -> Path:
    """``folder/name``: a transcript whose header names ``session_id`` (a version-3 header)."""
    folder.mkdir(parents=True, exist_ok=True)
    return events_file(folder / name, session_id, events, version=3, timestamp=HEADER_TS, cwd="/")


def write_index(folder: Path, entries: dict[str, dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sessions.json").write_text(json.dumps(entries), encoding="utf-8")


def sessions_dir(state: Path, agent: str) -> Path:
    return state / "agents" / agent / "sessions"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """Agent main's ``agent:main:main`` (three messages) and agent ops's ``agent:ops:main``,
    whose transcript's header id is main's session id (copied, or written by hand)."""
    root = tmp_path / ".openclaw"
    main, ops = sessions_dir(root, "main"), sessions_dir(root, "ops")
    write_transcript(
        main,
        f"{SHARED_ID}.jsonl",
        SHARED_ID,
        chain(["main asks about the heron", "heron answer", "thanks for the heron"]),
    )
    write_index(main, {"agent:main:main": {"sessionId": SHARED_ID}})
    ops_events = chain(["ops writes about the walrus", "walrus reply"], prefix="o")
    write_transcript(ops, f"{SHARED_ID}.jsonl", SHARED_ID, ops_events)
    write_index(ops, {"agent:ops:main": {"sessionId": SHARED_ID}})
    return root


def hits(store: TranscriptStore, caller: Caller, word: str) -> set[tuple[str, str]]:
    out = store.search(caller, word, limit=SEARCH_LIMIT)
    assert "indexing" not in out
    return {(r["sessionKey"], r["messageId"]) for r in out["results"]}


def history_ids(store: TranscriptStore, key: str) -> list[str]:
    out = store.history(Caller(key, visibility="self"), key)
    assert "error" not in out, out
    return [m["__openclaw"]["id"] for m in out["messages"]]


MAIN = Caller("agent:main:main", visibility="all")
OPS = Caller("agent:ops:main", visibility="all")


def assert_main_untouched(store: TranscriptStore) -> None:
    store.reconcile()
    assert history_ids(store, "agent:main:main") == ["m0", "m1", "m2"]
    assert hits(store, MAIN, "walrus") == set()
    assert hits(store, MAIN, "heron") == {("agent:main:main", f"m{i}") for i in range(3)}
    assert hits(store, OPS, "heron") == set()


@pytest.mark.parametrize("rekey", [False, True], ids=["plain", "rekey"])
def test_a_transcript_never_joins_another_agents_session(
    store: TranscriptStore, state: Path, rekey: bool
) -> None:
    report = store.import_dir(state, rekey=rekey)
    assert len(report["failedFiles"]) == 1
    message = report["failedFiles"][0]
    assert message.startswith(str(sessions_dir(state, "ops") / f"{SHARED_ID}.jsonl"))
    for named in (SHARED_ID, "'main'", "'agent:main:main'", "'ops'", "'agent:ops:main'"):
        assert named in message
    assert "not imported" in message
    assert report["imported"] == 4  # main's header and three messages, none of ops's
    assert_main_untouched(store)
    # Importing the folders again, with or without rekey, changes nothing either.
    for again in (False, True):
        second = store.import_dir(state, rekey=again)
        assert second["imported"] == 0
        assert len(second["failedFiles"]) == 1
        assert_main_untouched(store)


def test_the_refusal_holds_whichever_agent_was_imported_first(
    store: TranscriptStore, state: Path
) -> None:
    first = store.import_dir(sessions_dir(state, "ops"))
    assert first["failedFiles"] == [] and first["imported"] == 3
    report = store.import_dir(state, rekey=True)
    assert len(report["failedFiles"]) == 1
    assert report["failedFiles"][0].startswith(str(sessions_dir(state, "main")))
    store.reconcile()
    assert history_ids(store, "agent:ops:main") == ["o0", "o1"]
    assert hits(store, OPS, "heron") == set()
    assert hits(store, MAIN, "walrus") == set()


def test_an_exact_copy_in_another_agents_folder_moves_nothing(
    store: TranscriptStore, state: Path
) -> None:
    """ops's folder holds a byte-for-byte copy of main's transcript: even with rekey (the
    stored session then holds nothing but the copy's entries) main keeps its session."""
    main_file = sessions_dir(state, "main") / f"{SHARED_ID}.jsonl"
    ops_file = sessions_dir(state, "ops") / f"{SHARED_ID}.jsonl"
    ops_file.write_bytes(main_file.read_bytes())
    for rekey in (False, True, True):
        report = store.import_dir(state, rekey=rekey)
        assert [f.split(": ", 1)[0] for f in report["failedFiles"]] == [str(ops_file)]
        assert_main_untouched(store)


def test_rekey_still_moves_a_transcript_an_earlier_import_filed_under_another_agent(
    store: TranscriptStore, state: Path
) -> None:
    """Earlier versions imported a transcript no entry named under ``agent:main:main``: that
    stored session holds nothing but the file's own entries, and ``rekey`` moves it."""
    ops = sessions_dir(state, "ops")
    stray = write_transcript(ops, "stray.jsonl", "stray-1", chain(["narwhal notes"], prefix="s"))
    store.import_jsonl(stray)  # under agent:main:main, as the old mapping did
    plain = store.import_dir(ops)
    assert any(f.startswith(str(stray)) for f in plain["failedFiles"])
    report = store.import_dir(ops, rekey=True)
    assert not any(f.startswith(str(stray)) for f in report["failedFiles"])
    store.reconcile()
    assert hits(store, MAIN, "narwhal") == set()
    assert hits(store, OPS, "narwhal") == {("agent:ops:orphan:stray-1", "s0")}


def nul_state(root: Path) -> dict[str, str]:
    """A folder with a NUL in a ``sessions.json`` key, in a ``spawnedBy`` and in a header id,
    and two clean transcripts; returns the field each bad file's error names."""
    main = sessions_dir(root, "main")
    write_transcript(main, "key.jsonl", "nul-key", chain(["kiwi one"], prefix="k"))
    write_transcript(main, "spawn.jsonl", "nul-spawn", chain(["kiwi two"], prefix="p"))
    write_transcript(main, "head.jsonl", "nul\x00head", chain(["kiwi three"], prefix="h"))
    write_transcript(main, "good.jsonl", "good-1", chain(["kiwi fine"], prefix="g"))
    write_transcript(main, "plain.jsonl", "plain-1", chain(["kiwi plain"], prefix="q"))
    write_index(
        main,
        {
            "agent:main:a\x00b": {"sessionId": "nul-key"},
            "agent:main:child": {"sessionId": "nul-spawn", "spawnedBy": "agent:main:\x00main"},
            "agent:main:good": {"sessionId": "good-1"},
        },
    )
    return {"key.jsonl": "session key", "spawn.jsonl": "spawnedBy", "head.jsonl": "session id"}


def test_a_nul_in_a_key_a_link_or_a_header_id_refuses_that_file_only(
    store: TranscriptStore, tmp_path: Path
) -> None:
    root = tmp_path / ".openclaw"
    bad = nul_state(root)
    report = store.import_dir(root)
    failed = {Path(f.split(": ", 1)[0]).name: f for f in report["failedFiles"]}
    assert set(failed) == set(bad)
    for name, field in bad.items():
        assert f": {field} " in failed[name] and "NUL character" in failed[name]
    assert report["errorCount"] == len(bad)
    assert sorted(report["sessions"]) == ["good-1", "plain-1"]
    assert report["imported"] == 4  # two headers, two messages
    store.reconcile()
    anyone = Caller("agent:main:good", visibility="all")
    assert hits(store, anyone, "kiwi") == {
        ("agent:main:good", "g0"),
        ("agent:main:orphan:plain-1", "q0"),
    }
