"""One hit per session (``store.search_by_session``, ``sessions_search`` with ``group:
"session"``, ``openclaw-fts search --per-session``) on both engines: each session key's best
hit with the number of its matching messages the caller may see, the limit counting sessions,
hidden sessions neither listed nor counted, and the tool's result in OpenClaw's shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check_search_output
from factories import msg
from test_cli import loads, ok, run

from openclaw_fts import AgentToAgent, Caller, TranscriptStore, tools

pytestmark = pytest.mark.both_engines

EVERYONE = Caller("agent:main:main", visibility="all", agent_to_agent=AgentToAgent(enabled=True))
MAIN_ONLY = Caller("agent:main:main", visibility="agent")
TREE = Caller("agent:main:main", visibility="tree")
#: key -> (session id, messages mentioning "kiwi", spawned by)
SESSIONS = {
    "agent:main:main": ("s-long", 12, None),
    "agent:main:subagent:taste": ("s-sub", 3, "agent:main:main"),
    "agent:main:other": ("s-other", 1, None),
    "agent:ops:main": ("s-ops", 5, None),
}


@pytest.fixture
def populated(store: TranscriptStore) -> TranscriptStore:
    for key, (sid, kiwis, spawned_by) in SESSIONS.items():
        store.create_session(sid, key, spawned_by=spawned_by)
        parent = None
        events = []
        for n in range(kiwis):
            text = "kiwi kiwi kiwi" if (sid, n) == ("s-long", 7) else f"kiwi number {n} here"
            events.append(msg(f"{sid}-{n}", text, parent=parent, ts=1_790_000_000_000 + n))
            parent = f"{sid}-{n}"
        events.append(msg(f"{sid}-x", "no fruit at all", parent=parent))
        store.append_many(sid, events)
    return store


def _rows(result: dict[str, object]) -> list[tuple[str, int]]:
    hits = result["results"]
    assert isinstance(hits, list)
    return [(h["sessionKey"], h["sessionHits"]) for h in hits]


@pytest.mark.parametrize("caller", [EVERYONE, TREE], ids=["wide", "narrow"])
def test_each_session_once_with_its_count(populated: TranscriptStore, caller: Caller) -> None:
    out = populated.search_by_session(caller, "kiwi", limit=10)
    visible = {k: v[1] for k, v in SESSIONS.items()}
    if caller is TREE:
        visible = {
            k: n for k, n in visible.items() if k.startswith("agent:main:main") or "sub" in k
        }
    assert dict(_rows(out)) == visible
    assert len(_rows(out)) == len({k for k, _ in _rows(out)})
    best = next(h for h in out["results"] if h["sessionKey"] == "agent:main:main")
    assert best["messageId"] == "s-long-7"  # the session's best hit: three kiwis
    # Its order is the order of the same hits in an ungrouped search.
    flat = populated.search(caller, "kiwi", limit=25)
    first_seen = list(dict.fromkeys(h["sessionKey"] for h in flat["results"]))
    assert [k for k, _ in _rows(out)] == first_seen[: len(_rows(out))]


def test_the_limit_counts_visible_sessions(populated: TranscriptStore) -> None:
    out = populated.search_by_session(MAIN_ONLY, "kiwi", limit=2)
    assert len(out["results"]) == 2 and out["truncated"] is True
    assert all(k.startswith("agent:main:") for k, _ in _rows(out))
    whole = populated.search_by_session(MAIN_ONLY, "kiwi", limit=3)
    assert "truncated" not in whole  # ops's session never counted, never listed
    assert {k for k, _ in _rows(whole)} == {k for k in SESSIONS if k.startswith("agent:main:")}
    recent = populated.search_by_session(MAIN_ONLY, "kiwi", limit=3, order="recent")
    assert [h["timestamp"] for h in recent["results"]] == sorted(
        (h["timestamp"] for h in recent["results"]), reverse=True
    )


def test_the_tool_answers_in_openclaws_shape(populated: TranscriptStore) -> None:
    out = check_search_output(
        tools.sessions_search(populated, EVERYONE, {"query": "kiwi", "group": "session"})
    )
    grouped = populated.search_by_session(EVERYONE, "kiwi")
    counts = ", ".join(str(n) for _, n in _rows(grouped))
    assert [h["sessionKey"] for h in out["results"]] == [k for k, _ in _rows(grouped)]
    assert out["warning"].endswith(f"in result order: {counts}.")
    assert tools.sessions_search(populated, EVERYONE, {"query": "kiwi", "group": "key"}) == {
        "status": "error",
        "error": 'group must be "session"',
    }
    batch = tools.sessions_search(populated, EVERYONE, {"queries": ["kiwi"], "group": "session"})
    assert batch == {"status": "error", "error": tools.GROUP_BATCH_ERROR}


def test_the_cli_flag(populated: TranscriptStore, db_url: str, tmp_path: Path) -> None:
    populated.close()
    db = ("--db", db_url)
    as_json = loads(run(tmp_path, *db, "search", "kiwi", "--per-session", "--json"))
    assert dict(_rows(as_json)) == {k: v[1] for k, v in SESSIONS.items()}
    table = ok(run(tmp_path, *db, "search", "kiwi", "--per-session")).stdout.splitlines()
    header = next(line for line in table if "Session key" in line).split()
    assert "Hits" in header
    column = header.index("Hits") - 2  # "Session key" and "Time (UTC)" are two words each
    rows = [line.split() for line in table if line.strip()[:1].isdigit()]
    assert [int(r[column]) for r in rows] == [n for _, n in _rows(as_json)]
