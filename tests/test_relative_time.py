"""Relative ``since`` / ``until`` spans (``90m``, ``24h``, ``7d``, ``2w``) in Python, the tool and
the command line (docs/tools.md, "Relative time"), checked against an oracle: the messages whose
time is within the bound counted back from an injected clock, filtered BEFORE the limit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from factories import T0, msg

from openclaw_fts import AgentToAgent, Caller, ToolInputError, TranscriptStore, tools
from openclaw_fts.spans import DAY_MS, HOUR_MS, MAX_SPAN_MS, MINUTE_MS, WEEK_MS, span_ms

pytestmark = pytest.mark.both_engines

OWN = "agent:main:main"
EVERYONE = Caller(OWN, visibility="all", agent_to_agent=AgentToAgent(True))
NARROW = Caller(OWN)  # tree: its own session only here
#: The injected clock: 30 days after the first message.
NOW = T0 + 30 * DAY_MS
#: Message i is STEP_MS * i before NOW (i = 0..COUNT-1): every 7 hours over ~3 weeks.
STEP_MS = 7 * HOUR_MS
COUNT = 72
SPANS = ["90m", "24h", "7d", "2w", "0m", "1000w", " 36h "]
CLI = Path(sys.executable).with_name("openclaw-fts")


def stamp(i: int) -> int:
    return NOW - i * STEP_MS


@pytest.fixture
def timeline(store: TranscriptStore) -> TranscriptStore:
    """COUNT matching messages spread back from NOW, alternately in two agents' sessions."""
    for sid, key in (("own", OWN), ("ops", "agent:ops:main")):
        store.create_session(sid, key)
    parents: dict[str, str | None] = {"own": None, "ops": None}
    batches: dict[str, list[dict[str, Any]]] = {"own": [], "ops": []}
    for i in reversed(range(COUNT)):  # oldest first: each session's chain in time order
        sid = "own" if i % 2 == 0 else "ops"
        role = "user" if i % 3 else "assistant"
        event = msg(f"e{i}", f"lantern note {i}", parent=parents[sid], role=role, ts=stamp(i))
        parents[sid] = f"e{i}"
        batches[sid].append(event)
    for sid, events in batches.items():
        store.append_many(sid, events)
    return store


def oracle(
    since: int | None, until: int | None, limit: int, *, own_only: bool = False
) -> list[str]:
    """Newest first, filtered by the bounds, THEN cut to ``limit``."""
    kept = [
        i
        for i in range(COUNT)
        if (since is None or stamp(i) >= since)
        and (until is None or stamp(i) <= until)
        and (not own_only or i % 2 == 0)
    ]
    return [f"e{i}" for i in sorted(kept, key=stamp, reverse=True)][:limit]


def ids(out: Any) -> list[str]:
    assert "status" not in out, out
    return [r["messageId"] for r in out["results"]]


def test_span_lengths() -> None:
    assert span_ms("90m") == 90 * MINUTE_MS
    assert span_ms("24h") == DAY_MS
    assert span_ms("7d") == WEEK_MS
    assert span_ms("2w") == 2 * WEEK_MS
    assert span_ms(" 7d\n") == WEEK_MS
    for bad in ("", "d", "7", "7 d", "1.5h", "-2d", "+2d", "7D", "7y", "7dd", "٣d", "7d ago"):
        assert span_ms(bad) is None, bad
    assert span_ms(f"{MAX_SPAN_MS // WEEK_MS}w") == MAX_SPAN_MS
    assert span_ms(f"{MAX_SPAN_MS // WEEK_MS + 1}w") is None
    assert span_ms("9" * 13 + "m") is None


@pytest.mark.parametrize("span", SPANS)
@pytest.mark.parametrize("limit", [1, 5, 25])
def test_since_span_is_the_absolute_bound_counted_back_from_now(
    timeline: TranscriptStore, span: str, limit: int
) -> None:
    bound = NOW - (span_ms(span) or 0)
    out = timeline.search(EVERYONE, "lantern", since=span, order="recent", limit=limit, now_ms=NOW)
    assert ids(out) == oracle(bound, None, limit)
    assert out == timeline.search(
        EVERYONE, "lantern", since=bound, order="recent", limit=limit, now_ms=NOW
    )


@pytest.mark.parametrize(("since", "until"), [(None, "24h"), ("2w", "7d"), ("7d", "90m")])
@pytest.mark.parametrize("caller", [EVERYONE, NARROW], ids=["all", "tree"])
def test_until_spans_filter_before_the_limit(
    timeline: TranscriptStore, since: str | None, until: str, caller: Caller
) -> None:
    """The newest messages are outside ``until``: a limit applied before the filter would
    return fewer (or none)."""
    lo = None if since is None else NOW - (span_ms(since) or 0)
    hi = NOW - (span_ms(until) or 0)
    for order in ("recent", "relevance"):
        out = timeline.search(
            caller, "lantern", since=since, until=until, order=order, limit=5, now_ms=NOW
        )
        expected = oracle(lo, hi, 5, own_only=caller is NARROW)
        if order == "recent":
            assert ids(out) == expected
        else:  # relevance: the same number of hits, each within the bounds
            assert len(ids(out)) == len(expected)
            assert all(lo is None or r["timestamp"] >= lo for r in out["results"])
            assert all(r["timestamp"] <= hi for r in out["results"])


def test_per_session_and_batch_take_spans(timeline: TranscriptStore) -> None:
    grouped = timeline.search_by_session(EVERYONE, "lantern", since="24h", now_ms=NOW)
    assert {r["messageId"] for r in grouped["results"]} == set(oracle(NOW - DAY_MS, None, 2))
    batch = timeline.search(
        EVERYONE, None, queries=["lantern", "note"], since="24h", order="recent", now_ms=NOW
    )
    assert [r["messageId"] for r in batch["results"] if r["queryIndex"] == 1] == oracle(
        NOW - DAY_MS, None, 10
    )


def test_the_clock_moves_the_window(timeline: TranscriptStore) -> None:
    later = NOW + 2 * DAY_MS  # two days later, the last day holds nothing
    assert ids(timeline.search(EVERYONE, "lantern", since="24h", now_ms=later)) == []
    assert len(ids(timeline.search(EVERYONE, "lantern", since="3d", now_ms=later))) > 0


def test_without_now_the_spans_count_back_from_the_wall_clock(store: TranscriptStore) -> None:
    now = int(time.time() * 1000)
    store.create_session("s", OWN)
    store.append_many(
        "s",
        [
            msg("old", "kettle old", ts=now - 10 * DAY_MS),
            msg("new", "kettle new", ts=now - HOUR_MS),
        ],
    )
    assert ids(store.search(EVERYONE, "kettle", since="2d")) == ["new"]
    assert ids(store.search(EVERYONE, "kettle", until="2d")) == ["old"]


@pytest.mark.parametrize("bad", ["7x", "7 d", "-2d", "1.5h", "7D", f"{MAX_SPAN_MS // DAY_MS + 1}d"])
@pytest.mark.parametrize("name", ["since", "until"])
def test_a_malformed_span_is_an_error_naming_the_argument(
    timeline: TranscriptStore, bad: str, name: str
) -> None:
    with pytest.raises(ToolInputError, match=name):
        timeline.search(EVERYONE, "lantern", **{name: bad}, now_ms=NOW)
    out = tools.sessions_search(timeline, EVERYONE, {"query": "lantern", name: bad}, now_ms=NOW)
    assert out["status"] == "error"
    assert out["error"].startswith(f"{name} must be ")
    assert "7d" in out["error"]


def test_the_tool_reads_spans_and_absent_bounds_are_unchanged(timeline: TranscriptStore) -> None:
    args = {"query": "lantern", "since": "2w", "until": "24h", "order": "recent", "limit": 25}
    out = tools.sessions_search(timeline, EVERYONE, args, now_ms=NOW)
    assert ids(out) == oracle(NOW - 2 * WEEK_MS, NOW - DAY_MS, 25)
    plain = tools.sessions_search(timeline, EVERYONE, {"query": "lantern"}, now_ms=NOW)
    assert plain == timeline.search(EVERYONE, "lantern")
    for name in ("since", "until"):
        assert "7d" in tools.SESSIONS_SEARCH_SCHEMA["properties"][name]["description"]


def test_the_command_line_takes_spans(db_url: str, tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    with TranscriptStore(db_url, background=False) as s:
        s.create_session("s", OWN)
        s.append_many(
            "s",
            [
                msg("old", "kettle old", ts=now - 10 * DAY_MS),
                msg("new", "kettle new", ts=now - HOUR_MS),
            ],
        )
        s.reconcile()
    run = [str(CLI), "--db", db_url, "search", "kettle", "--json"]

    def cli(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*run, *extra], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path
        )

    recent = cli("--since", "7d")
    assert recent.returncode == 0, recent.stderr
    assert ids(json.loads(recent.stdout)) == ["new"]
    older = cli("--until", "1w")
    assert ids(json.loads(older.stdout)) == ["old"]
    bad = cli("--since", "7 days")
    assert bad.returncode == 2
    assert "since must be" in bad.stderr and "Traceback" not in bad.stderr
