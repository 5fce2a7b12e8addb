"""The cheap paths give the same index as the full diff: continuation through a leaf marker,
and repairs that delete more rows than one DELETE statement takes."""

from __future__ import annotations

import pytest
from factories import chain

from openclaw_fts import Caller, TranscriptStore, indexer
from openclaw_fts.index.sqlite import IN_LIST_CHUNK

KEY = "agent:main:main"
CALLER = Caller(KEY, visibility="self")


def hits(store: TranscriptStore, query: str) -> set[str]:
    out = store.search(CALLER, query, limit=25)
    assert "indexing" not in out
    return {r["messageId"] for r in out["results"]}


def test_continuing_through_a_leaf_marker_extends_the_index_inline(
    store: TranscriptStore,
) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["alpha origin", "beta abandoned", "gamma abandoned"]))
    seq = store.rewind("s1", "m0")
    marker = store.branches("s1")  # the rewind moved the active branch to m0
    assert {"tipId": "m0", "tipSeq": 0, "active": True} in marker
    with store.engine.connect() as conn:
        leaf_id = conn.exec_driver_sql(
            "SELECT event_id FROM transcript_events WHERE session_id = 's1' AND seq = ?", (seq,)
        ).scalar_one()
    store.append(
        "s1",
        {
            "type": "message",
            "id": "d1",
            "parentId": leaf_id,  # OpenClaw names the marker, not its target
            "timestamp": 1_790_000_100_000,
            "message": {"role": "user", "content": "delta continued"},
        },
    )
    assert store.index_status()["pending"] == 0
    assert hits(store, "delta") == {"d1"}
    assert hits(store, "abandoned") == set()
    assert hits(store, "alpha") == {"m0"}
    assert {"tipId": "d1", "tipSeq": seq + 1, "active": True} in store.branches("s1")


def test_a_repair_deleting_more_rows_than_one_statement_takes(store: TranscriptStore) -> None:
    count = IN_LIST_CHUNK * 2 + 7
    store.create_session("s1", KEY)
    store.append_many("s1", chain([f"word{i} common" for i in range(count)]))
    assert len(hits(store, "common")) == 25
    store.rewind("s1", "m0")  # every row but m0's goes, inline (count < 4,000 events)
    assert store.index_status()["pending"] == 0
    assert hits(store, "common") == {"m0"}
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT count(*) FROM message_index").scalar_one()
        matches = conn.exec_driver_sql(
            "SELECT count(*) FROM message_fts WHERE message_fts MATCH 'common'"
        ).scalar_one()
        conn.exec_driver_sql(
            "INSERT INTO message_fts(message_fts, rank) VALUES ('integrity-check', 1)"
        )
    assert rows == 1 and matches == 1


def side(event_id: str, parent: str | None, text: str) -> dict[str, object]:
    return {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "appendMode": "side",
        "timestamp": 1_790_000_200_000,
        "message": {"role": "assistant", "content": text},
    }


def test_side_appends_keep_the_index_and_update_the_branch_records(
    store: TranscriptStore,
) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["alpha origin", "beta abandoned"]))
    store.rewind("s1", "m0")
    store.append_many("s1", chain(["gamma kept"], start=2, parent="m0"))
    # m1 is an inactive tip; a side append under it takes its place as a tip.
    store.append("s1", side("x1", "m1", "sidenote under the old branch"))
    # Under the active leaf (no parent named): the leaf stays the active tip.
    store.append("s1", side("x2", None, "sidenote under the leaf"))
    # Naming an unknown id: a side append keeps that parent (only entries that move the leaf
    # are repaired to it, docs/openclaw-tree.md), so it is a tip of its own.
    store.append("s1", side("x3", "nope", "sidenote unknown parent"))
    assert store.index_status()["pending"] == 0
    assert hits(store, "sidenote") == set()  # side appends never join the active branch
    assert hits(store, "gamma") == {"m2"}
    tips = {(b["tipId"], b["active"]) for b in store.branches("s1")}
    assert tips == {("m2", True), ("x1", False), ("x2", False), ("x3", False)}
    store.append_many("s1", chain(["delta next"], start=3, parent="m2"))
    tips = {(b["tipId"], b["active"]) for b in store.branches("s1")}
    assert tips == {("m3", True), ("x1", False), ("x2", False), ("x3", False)}
    assert hits(store, "delta") == {"m3"}


def test_a_rewind_keeping_more_text_than_the_inline_bound_is_left_to_the_reconciler(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inline bound counts the whole branch's text, kept rows included, not only what the
    # repair reads.
    store.create_session("s1", KEY)
    store.append_many("s1", chain([f"bulky{i} " + "x" * 200 for i in range(10)]))
    monkeypatch.setattr(indexer, "INLINE_REPAIR_MAX_TEXT_BYTES", 1000)
    store.rewind("s1", "m8")
    assert store.index_status()["pending"] == 1
    store.reconcile()
    assert store.index_status()["pending"] == 0
    assert hits(store, "bulky9") == set() and hits(store, "bulky8") == {"m8"}


def test_rows_that_never_move_the_leaf_and_cursor_children_stay_on_the_fast_path(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With inline repair off, any append the fast path cannot place leaves the session
    pending; these must not: a plugin's metadata row, a side entry, a message naming the
    append cursor they set (it continues from the leaf), one with no parentId, and a
    continuation through a rewind marker."""
    monkeypatch.setattr(indexer, "INLINE_REPAIR_MAX_EVENTS", 0)
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["alpha origin", "beta second"]))
    store.append("s1", {"type": "metadata", "id": "meta1", "parentId": "m1", "plugin": "x"})
    store.append("s1", {**msg_event("c1", "gamma cursor child"), "parentId": "meta1"})
    store.append("s1", side("x1", "c1", "sidenote aside"))
    store.append("s1", {**msg_event("c2", "delta after side"), "parentId": "x1"})
    store.append("s1", msg_event("c3", "epsilon no parent key"))
    assert store.index_status()["pending"] == 0
    assert hits(store, "sidenote") == set()
    assert hits(store, "gamma OR delta OR epsilon OR alpha OR beta") == {
        "m0",
        "m1",
        "c1",
        "c2",
        "c3",
    }
    seq = store.rewind("s1", "m1")  # a leaf control always takes the diff: pending here
    assert store.index_status()["pending"] == 1
    store.reconcile()
    with store.engine.connect() as conn:
        marker = conn.exec_driver_sql(
            "SELECT event_id FROM transcript_events WHERE session_id = 's1' AND seq = ?", (seq,)
        ).scalar_one()
    store.append("s1", {**msg_event("d1", "zeta after rewind"), "parentId": marker})
    assert store.index_status()["pending"] == 0
    assert hits(store, "zeta OR gamma OR beta") == {"m1", "d1"}


def msg_event(event_id: str, text: str) -> dict[str, object]:
    """A user message without a parentId key (it continues the current leaf)."""
    return {
        "type": "message",
        "id": event_id,
        "timestamp": 1_790_000_300_000,
        "message": {"role": "user", "content": text},
    }


def test_a_leaf_control_naming_another_control_is_not_extended_by_the_fast_path(
    store: TranscriptStore,
) -> None:
    """A host's leaf control whose target is an earlier leaf control (a rewind's marker) makes
    that marker the leaf; a message naming the marker hangs on the marker's target, so that
    target stops being a tip. The fast path must not take the marker for a plain leaf (it once
    did, and kept the target as a tip forever: found by tests/test_model_based.py)."""
    store.create_session("s1", KEY)

    def message(event_id: str, parent: str | None, text: str) -> dict[str, object]:
        return {
            "type": "message",
            "id": event_id,
            "parentId": parent,
            "message": {"role": "user", "content": text},
        }

    # m0 with two children, m1 and m2: m1 is a tip until something hangs on it
    store.append_many(
        "s1", [message("m0", None, "alpha root"), message("m1", "m0", "beta one"),
               message("m2", "m0", "gamma two")]
    )  # fmt: skip
    seq = store.rewind("s1", "m1")
    with store.engine.connect() as conn:
        marker = conn.exec_driver_sql(
            "SELECT event_id FROM transcript_events WHERE session_id = 's1' AND seq = ?", (seq,)
        ).scalar_one()
    store.rewind("s1", "m0")
    store.append("s1", message("c1", "m0", "charlie on the root"))
    store.append("s1", {"type": "leaf", "id": "host-leaf", "parentId": "m0", "targetId": marker})
    store.append("s1", message("d1", marker, "delta after the marker"))
    tips = {(b["tipId"], b["active"]) for b in store.branches("s1")}
    assert tips == {("m2", False), ("c1", False), ("d1", True)}  # m1 has a child now: d1
    assert hits(store, "delta OR beta OR alpha OR charlie") == {"m0", "m1", "d1"}
    before = store.branches("s1")
    store.rebuild()
    assert store.branches("s1") == before  # what a full resolve gives
