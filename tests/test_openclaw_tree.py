"""The active-branch rules of docs/openclaw-tree.md, one case per rule, each checked through
every way a transcript reaches the database against ONE expected branch:

* ``import``: the JSONL file imported (``store.import_jsonl``), then ``store.reconcile()``;
* ``live-batch``: the events appended in one ``store.append_many`` transaction;
* ``live-each``: appended one by one (``store.append``: the per-append fast paths);
* ``live-dirty``: appended one by one with inline repair off, then ``store.reconcile()``.

The expectation is read back through the public API only: the ids ``sessions_history`` returns
for the session, and the ids a search for a word every message carries finds. The cases are
written from what OpenClaw's own ``transcript-tree.ts`` tests assert (plus one case per rule
the scan implements), in this project's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from factories import events_file

from openclaw_fts import Caller, TranscriptStore, indexer

KEY = "agent:main:main"
SID = "tree-session"
CALLER = Caller(KEY, visibility="self")
#: Every message of every case carries this word (and its own id as a second word).
WORD = "treeprobe"
#: Comfortably above the largest case, so search results are never cut.
SEARCH_LIMIT = 25
T0 = 1_790_000_000_000
#: ``message(parent=NO_KEY)``: no ``parentId`` key at all (older writers).
NO_KEY: Any = object()


def message(event_id: str, parent: Any, **extra: Any) -> dict[str, Any]:
    """A user message whose text is ``treeprobe <id>``."""
    event: dict[str, Any] = {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "timestamp": T0,
        "message": {"role": "user", "content": f"{WORD} {event_id}"},
        **extra,
    }
    if parent is NO_KEY:
        del event["parentId"]
    return event


def side(event_id: str, parent: Any) -> dict[str, Any]:
    return message(event_id, parent, appendMode="side")


def entry(etype: str, event_id: str, parent: Any, **extra: Any) -> dict[str, Any]:
    """A non-message row (``metadata`` is a plugin's type OpenClaw does not know)."""
    event: dict[str, Any] = {"type": etype, "id": event_id, "parentId": parent, **extra}
    if parent is NO_KEY:
        del event["parentId"]
    return event


def leaf(event_id: str, target: Any, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    """A leaf control; ``target=NO_KEY`` leaves ``targetId`` out."""
    event: dict[str, Any] = {"type": "leaf", "id": event_id, "parentId": parent, **extra}
    if target is not NO_KEY:
        event["targetId"] = target
    return event


@dataclass(frozen=True)
class Case:
    name: str
    events: list[dict[str, Any]]
    branch: list[str]  # the message ids on the active branch, oldest first


CASES = [
    Case(
        "linear conversation: every message",
        [message("a", None), message("b", "a"), message("c", "b")],
        ["a", "b", "c"],
    ),
    Case(
        "canonical non-message rows move the leaf like messages do",
        [
            message("a", None),
            entry("model_change", "mc", "a", provider="p", modelId="m"),
            entry("label", "lb", "mc", label="x"),
            message("b", NO_KEY),  # chains to the leaf: lb
        ],
        ["a", "b"],
    ),
    Case(
        "a non-canonical row (plugin metadata) never moves the leaf",
        [
            message("a", None),
            message("b", "a"),
            leaf("l1", "a", parent="b"),  # back to a
            entry("metadata", "meta", "b"),  # hangs under b, the leaf stays a
            message("c", NO_KEY),
        ],
        ["a", "c"],
    ),
    Case(
        "a side entry does not move the leaf",
        [message("a", None), message("b", "a"), side("s", "a"), message("c", NO_KEY)],
        ["a", "b", "c"],
    ),
    Case(
        "a child of the side entry just appended continues from the leaf",
        [message("a", None), side("s", "a"), message("b", "s")],
        ["a", "b"],
    ),
    Case(
        "a child of a metadata row (the raw append cursor) continues from the leaf",
        [
            message("a", None),
            message("x", "a"),
            leaf("l1", "a", parent="x"),
            entry("metadata", "meta", "x"),
            message("b", "meta"),
        ],
        ["a", "b"],
    ),
    Case(
        "leaf control appendParentId is the cursor; a child of it continues from the leaf",
        [
            message("visible", None),
            message("inactive", None),
            entry("metadata", "append-root", "inactive"),
            leaf("l1", "visible", parent="inactive", appendParentId="append-root"),
            message("continued", "append-root"),
        ],
        ["visible", "continued"],
    ),
    Case(
        "a leaf control's target becomes the leaf (rewind)",
        [message("a", None), message("b", "a"), message("c", "b"), leaf("l1", "a", "c")],
        ["a"],
    ),
    Case(
        "a leaf control may switch to another branch",
        [
            message("a", None),
            message("b", "a"),
            leaf("l1", "a", "b"),
            message("c", "a"),
            leaf("l2", "b", "c"),
        ],
        ["a", "b"],
    ),
    Case(
        "targetId null: nothing is on the branch",
        [message("a", None), message("b", "a"), leaf("l1", None, "b")],
        [],
    ),
    Case(
        "a leaf control without targetId is transparent",
        [message("a", None), message("b", "a"), leaf("l1", NO_KEY, "b")],
        ["a", "b"],
    ),
    Case(
        "a leaf control with an unknown appendMode is transparent",
        [message("a", None), message("b", "a"), leaf("l1", "a", "b", appendMode="front")],
        ["a", "b"],
    ),
    Case(
        "a leaf control naming an unknown node is transparent; its child uses its parent",
        [
            message("a", None),
            message("b", "a"),
            leaf("l1", "nowhere", "b"),
            message("c", "l1"),
        ],
        ["a", "b", "c"],
    ),
    Case(
        "a leaf control with an unknown appendParentId is transparent",
        [message("a", None), message("b", "a"), leaf("l1", "a", "b", appendParentId="nope")],
        ["a", "b"],
    ),
    Case(
        "a target that only appears later is unknown at the time of the control",
        [message("a", None), leaf("l1", "b", "a"), message("b", "a"), message("c", NO_KEY)],
        ["a", "b", "c"],
    ),
    Case(
        "parent chains skip leaf controls: a child of the marker continues from its target",
        [
            message("a", None),
            message("b", "a"),
            leaf("l1", "a", "b"),
            message("c", "l1"),
        ],
        ["a", "c"],
    ),
    Case(
        "a parentId crossing the latest reset is the current leaf",
        [
            message("a", None),
            message("b", "a"),
            entry("reset", "r", "b"),
            message("c", "a"),  # would fork above the reset
        ],
        ["a", "b", "c"],
    ),
    Case(
        "a leaf control behind the latest reset is re-pointed to the current leaf",
        [
            message("a", None),
            entry("reset", "r", "a"),
            message("b", "r"),
            leaf("l1", "a", "b"),
        ],
        ["a", "b"],
    ),
    Case(
        "a stale parentId is the current leaf",
        [message("a", None), message("b", "a"), message("c", "ghost")],
        ["a", "b", "c"],
    ),
    Case(
        "no parentId key chains to the current leaf",
        [message("a", None), message("b", NO_KEY), message("c", NO_KEY)],
        ["a", "b", "c"],
    ),
    Case(
        "parentId null is a new root: the old branch is left",
        [message("a", None), message("b", "a"), message("c", None)],
        ["c"],
    ),
    Case(
        "a missing ancestor keeps the reachable part of the branch",
        [message("a", "missing"), message("b", "a")],
        ["a", "b"],
    ),
    Case(
        "a parentId that is neither null nor an id: not a node of the tree",
        [message("a", None), message("bad", 42), message("b", NO_KEY)],
        ["a", "b"],
    ),
    Case(
        "a blank parentId is malformed too",
        [message("a", None), message("blank", "  "), message("b", NO_KEY)],
        ["a", "b"],
    ),
    Case(
        "a cycle on the leaf's path gives no path; with leaf controls, nothing",
        [
            message("a", None),
            entry("metadata", "p", "q"),  # names q before q exists
            entry("metadata", "z", "a"),  # moves the cursor off p
            message("q", "p"),  # q -> p -> q
            leaf("l1", "q", "q"),
        ],
        [],
    ),
    Case(
        "a cycle and no leaf controls: every entry (like a file with no leaf)",
        [
            message("a", None),
            entry("metadata", "p", "q"),
            entry("metadata", "z", "a"),
            message("q", "p"),
        ],
        ["a", "q"],
    ),
    Case(
        "no leaf at all and no leaf controls: every entry",
        [side("s1", None), side("s2", "s1")],
        ["s1", "s2"],
    ),
    Case(
        "a leaf control to a side entry puts it on the branch",
        [message("a", None), message("b", "a"), side("s", "a"), leaf("l1", "s", "b")],
        ["a", "s"],
    ),
]

WAYS = ["import", "live-batch", "live-each", "live-dirty"]


def store_case(
    store: TranscriptStore, tmp_path: Path, events: list[dict[str, Any]], way: str
) -> None:
    if way == "import":
        path = events_file(tmp_path / f"{SID}.jsonl", SID, events)
        report = store.import_jsonl(path, session_key=KEY)
        assert report["errorCount"] == 0
        store.reconcile()
        return
    store.create_session(SID, KEY)
    if way == "live-batch":
        store.append_many(SID, events)
    else:
        for event in events:
            store.append(SID, event)
    if way == "live-dirty":
        store.reconcile()


def branch_of(store: TranscriptStore) -> tuple[list[str], set[str]]:
    history = store.history(CALLER, KEY, limit=SEARCH_LIMIT)
    found = store.search(CALLER, WORD, limit=SEARCH_LIMIT)
    assert "indexing" not in found
    return (
        [m["__openclaw"]["id"] for m in history["messages"]],
        {r["messageId"] for r in found["results"]},
    )


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_active_branch(
    case: Case,
    way: str,
    store: TranscriptStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if way == "live-dirty":
        monkeypatch.setattr(indexer, "INLINE_REPAIR_MAX_EVENTS", 0)
    store_case(store, tmp_path, case.events, way)
    assert store.index_status()["pending"] == 0
    history_ids, search_ids = branch_of(store)
    assert history_ids == case.branch
    assert search_ids == set(case.branch)
