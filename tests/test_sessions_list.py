"""``sessions_list`` through the store and the tool adapter, on both engines: which sessions a
caller sees (visibility decided in the statement: hidden sessions never take a place under the
limit), OpenClaw's filters and argument reading, one row per key with its current incarnation,
and results valid against the tool's output schema."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from factories import events_file, msg
from jsonschema import Draft202012Validator

from openclaw_fts import AgentToAgent, Caller, TranscriptStore, tools
from openclaw_fts.aio import AsyncTranscriptStore
from openclaw_fts.listing import MAX_LIST_MESSAGES

pytestmark = pytest.mark.both_engines

LIST_OUTPUT = Draft202012Validator(tools.SESSIONS_LIST_OUTPUT_SCHEMA)
LIST_ARGS = Draft202012Validator(tools.SESSIONS_LIST_SCHEMA)
NOW_MS = int(datetime(2026, 3, 14, 12, 0, tzinfo=timezone.utc).timestamp() * 1000)
MINUTE_MS = 60_000

#: key -> (session id, agent, spawned by, minutes before NOW_MS of its last message)
SESSIONS: dict[str, tuple[str, str, str | None, int]] = {
    "agent:main:main": ("s-main", "main", None, 5),
    "agent:main:subagent:fix": ("s-sub", "main", "agent:main:main", 30),
    "agent:main:discord:channel:release": ("s-release", "main", None, 90),
    "agent:main:cron:nightly": ("s-cron", "main", None, 600),
    "agent:ops:main": ("s-ops", "ops", None, 1),
    "agent:ops:telegram:group:oncall": ("s-oncall", "ops", None, 2),
}


def listed(store: TranscriptStore, caller: Caller, args: Any) -> dict[str, Any]:
    out = tools.sessions_list(store, caller, args)
    LIST_OUTPUT.validate(out)
    assert out["count"] == len(out["sessions"])
    return dict(out)


def keys(out: dict[str, Any]) -> list[str]:
    return [row["key"] for row in out["sessions"]]


@pytest.fixture
def populated(store: TranscriptStore) -> TranscriptStore:
    for key, (sid, agent, spawned_by, minutes) in SESSIONS.items():
        store.create_session(sid, key, agent_id=agent, spawned_by=spawned_by)
        ts = NOW_MS - minutes * MINUTE_MS
        store.append_many(
            sid,
            [
                msg(f"{sid}-1", f"question in {key}", parent=None, ts=ts - 1000),
                msg(f"{sid}-2", "an answer", parent=f"{sid}-1", role="assistant", ts=ts),
            ],
        )
    return store


def test_visibility_decides_which_sessions_are_listed(populated: TranscriptStore) -> None:
    store = populated
    everyone = Caller(
        "agent:main:main", visibility="all", agent_to_agent=AgentToAgent(enabled=True)
    )
    assert keys(listed(store, everyone, {})) == [
        "agent:ops:main",
        "agent:ops:telegram:group:oncall",
        "agent:main:main",
        "agent:main:subagent:fix",
        "agent:main:discord:channel:release",
        "agent:main:cron:nightly",
    ]  # newest activity first
    own_agent = Caller("agent:main:main", visibility="agent")
    assert set(keys(listed(store, own_agent, {}))) == {
        k for k, v in SESSIONS.items() if v[1] == "main"
    }
    tree = Caller("agent:main:main", visibility="tree")
    assert keys(listed(store, tree, {})) == ["agent:main:main", "agent:main:subagent:fix"]
    alone = Caller("agent:main:subagent:fix", visibility="self")
    assert keys(listed(store, alone, {})) == ["agent:main:subagent:fix"]
    # Hidden sessions never take a place under the limit: the two newest sessions overall are
    # ops's, yet a main-only caller's limit of 2 lists two of main's.
    assert keys(listed(store, own_agent, {"limit": 2})) == [
        "agent:main:main",
        "agent:main:subagent:fix",
    ]
    assert listed(store, own_agent, {"limit": 2})["truncated"] is True
    assert "truncated" not in listed(store, own_agent, {"limit": 4})


def test_filters_read_as_openclaw_reads_them(populated: TranscriptStore) -> None:
    store = populated
    caller = Caller("agent:main:main", visibility="all", agent_to_agent=AgentToAgent(enabled=True))
    assert keys(listed(store, caller, {"kinds": ["group"]})) == [
        "agent:ops:telegram:group:oncall",
        "agent:main:discord:channel:release",
    ]
    # Kinds are lower-cased; unknown kinds dropped; none left means no kind filter.
    assert keys(listed(store, caller, {"kinds": ["MAIN", "bogus"]})) == [
        "agent:ops:main",
        "agent:main:main",
    ]
    assert listed(store, caller, {"kinds": ["bogus"]})["count"] == len(SESSIONS)
    assert keys(listed(store, caller, {"kinds": "cron"})) == ["agent:main:cron:nightly"]
    assert {r["agentId"] for r in listed(store, caller, {"agentId": "ops"})["sessions"]} == {"ops"}
    assert keys(listed(store, caller, {"search": "DISCORD"})) == [
        "agent:main:discord:channel:release"
    ]
    assert keys(listed(store, caller, {"search": "s-cron"})) == ["agent:main:cron:nightly"]
    assert listed(store, caller, {"label": "anything"})["count"] == 0  # no labels stored
    # limit and activeMinutes: numbers are floored, anything else is ignored (OpenClaw).
    assert listed(store, caller, {"limit": 1.9})["count"] == 1
    assert listed(store, caller, {"limit": 0})["count"] == 1  # Math.max(1, …)
    assert listed(store, caller, {"limit": "2"})["count"] == len(SESSIONS)
    recent = store.list_sessions(caller, active_minutes=10, now_ms=NOW_MS)
    assert [r["key"] for r in recent["sessions"]] == [
        "agent:ops:main",
        "agent:ops:telegram:group:oncall",
        "agent:main:main",
    ]
    row = next(r for r in listed(store, caller, {})["sessions"] if r["key"] == "agent:ops:main")
    assert row == {
        "key": "agent:ops:main",
        "agentId": "ops",
        "kind": "main",
        "channel": "unknown",
        "sessionId": "s-ops",
        "updatedAt": NOW_MS - MINUTE_MS,
    }
    oncall = listed(store, caller, {"search": "oncall"})["sessions"][0]
    assert (oncall["kind"], oncall["channel"]) == ("group", "telegram")
    sub = listed(store, caller, {"search": "subagent"})["sessions"][0]
    assert sub["spawnedBy"] == "agent:main:main"


def test_message_limit_attaches_the_last_messages(populated: TranscriptStore) -> None:
    caller = Caller("agent:main:main")
    out = listed(populated, caller, {"messageLimit": 1, "search": "agent:main:main"})
    (row,) = out["sessions"]
    assert [m["__openclaw"]["id"] for m in row["messages"]] == ["s-main-2"]
    many = listed(populated, caller, {"messageLimit": 10_000, "search": "agent:main:main"})
    assert 0 < len(many["sessions"][0]["messages"]) <= MAX_LIST_MESSAGES


def test_one_row_per_key_with_its_current_incarnation(
    store: TranscriptStore, tmp_path: Path
) -> None:
    store.create_session("old", "agent:main:main")
    store.append("old", msg("o1", "old text", parent=None, ts=NOW_MS - 10 * MINUTE_MS))
    store.create_session("new", "agent:main:main")
    store.append("new", msg("n1", "new text", parent=None, ts=NOW_MS - 20 * MINUTE_MS))
    store.create_session("secret", "agent:main:dashboard:incognito-x")
    store.create_session("flagged", "agent:main:private", incognito=True)
    transcript = events_file(
        tmp_path / "imported.jsonl",
        "imported",
        [msg("i1", "imported text", parent=None, ts=NOW_MS - 30 * MINUTE_MS)],
        timestamp="2026-03-14T09:00:00Z",
    )
    store.import_jsonl(transcript, session_key="agent:main:imported")  # left pending
    caller = Caller("agent:main:main", visibility="all")
    out = listed(store, caller, {})
    assert [(r["key"], r["sessionId"]) for r in out["sessions"]] == [
        ("agent:main:main", "new"),
        ("agent:main:imported", "imported"),
        ("agent:main:private", "flagged"),
    ]  # an incognito-shaped key is never listed
    detailed = store.list_sessions(caller, details=True)
    LIST_OUTPUT.validate(detailed)
    states = {r["key"]: (r["indexing"], r["messageCount"]) for r in detailed["sessions"]}
    assert states == {
        "agent:main:main": ("indexed", 1),
        "agent:main:imported": ("pending", 1),
        "agent:main:private": ("never", 0),
    }
    store.reconcile()
    after = store.list_sessions(caller, details=True)["sessions"]
    assert {r["key"]: r["indexing"] for r in after}["agent:main:imported"] == "indexed"


def test_the_argument_schema_describes_what_the_adapter_reads() -> None:
    LIST_ARGS.check_schema(tools.SESSIONS_LIST_SCHEMA)
    assert LIST_ARGS.is_valid({"kinds": ["main"], "limit": 5, "activeMinutes": 60})
    assert not LIST_ARGS.is_valid({"limit": 0})
    assert not LIST_ARGS.is_valid({"agentId": "x" * 65})


def test_the_async_store_lists_groups_and_suggests(populated: TranscriptStore, db_url: str) -> None:
    async def run() -> tuple[Any, Any, Any]:
        async with await AsyncTranscriptStore.open(db_url, background=False) as aio:
            caller = Caller("agent:main:main", visibility="agent")
            return (
                await aio.list_sessions(caller, kinds=["group"]),
                await aio.search_by_session(caller, "question"),
                await aio.suggest(caller, "questoin"),
            )

    listed_, grouped, near = asyncio.run(run())
    assert [r["key"] for r in listed_["sessions"]] == ["agent:main:discord:channel:release"]
    assert {h["sessionKey"] for h in grouped["results"]} == {
        k for k, v in SESSIONS.items() if v[1] == "main"
    }
    assert all(h["sessionHits"] == 1 for h in grouped["results"])
    assert near == ["question"]
