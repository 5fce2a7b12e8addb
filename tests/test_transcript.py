"""Unit tests of THE predicate (``openclaw_fts.transcript``): text extraction, roles, ids,
timestamps, and the active branch of a session's event tree (docs/openclaw-tree.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from openclaw_fts import transcript
from openclaw_fts.transcript import IndexRow

FIXTURES = Path(__file__).parent / "fixtures"
TS = 1_790_000_000_000


# -- helpers ---------------------------------------------------------------------------------


#: ``msg(parent=UNLINKED)``: an event with no ``parentId`` key at all (older writers), which
#: chains to the current leaf; ``parent=None`` is an explicit null: a new root.
UNLINKED: Any = object()


def msg(
    event_id: str | None,
    content: Any = None,
    *,
    parent: Any = None,
    role: str = "user",
    ts: Any = TS,
    side: bool = False,
    **message_fields: Any,
) -> dict[str, Any]:
    """An OpenClaw message event; ``content`` defaults to ``"text of <id>"``."""
    message: dict[str, Any] = {"role": role}
    if content is not None or not message_fields:
        message["content"] = content if content is not None else f"text of {event_id}"
    message.update(message_fields)
    event: dict[str, Any] = {
        "type": "message",
        "parentId": parent,
        "timestamp": ts,
        "message": message,
    }
    if parent is UNLINKED:
        del event["parentId"]
    if event_id is not None:
        event["id"] = event_id
    if side:
        event["appendMode"] = "side"
    return event


def leaf(event_id: str | None, target: str | None, parent: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "leaf", "parentId": parent, "targetId": target}
    if event_id is not None:
        event["id"] = event_id
    return event


def seqd(events: Sequence[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    return list(enumerate(events))


def active_ids(events: Sequence[Mapping[str, Any]]) -> list[str | None]:
    return [ev.get("id") for _, ev in transcript.active_branch(seqd(events))]


def indexed_ids(events: Sequence[Mapping[str, Any]], **kwargs: Any) -> list[str]:
    return [row.event_id for row in transcript.index_rows(seqd(events), **kwargs)]


def text_of(message: Mapping[str, Any]) -> str:
    return transcript.message_text(message)


def single_row(event: Mapping[str, Any]) -> IndexRow | None:
    return transcript.index_row(0, event)


# -- text extraction -------------------------------------------------------------------------


def test_string_content_is_trimmed() -> None:
    assert text_of({"role": "user", "content": "  deploy the app \n"}) == "deploy the app"


def test_string_content_wins_over_message_text() -> None:
    assert text_of({"role": "user", "content": "from content", "text": "from text"}) == (
        "from content"
    )


def test_blank_string_content_is_not_indexed() -> None:
    assert text_of({"role": "user", "content": "   \n\t "}) == ""
    assert single_row(msg("m1", "   ")) is None


def test_message_text_used_when_content_is_not_a_string() -> None:
    assert text_of({"role": "assistant", "text": "  plain text field  "}) == "plain text field"
    blocks = [{"type": "text", "text": "block text"}]
    assert text_of({"role": "assistant", "text": "text field", "content": blocks}) == ("text field")


def test_text_blocks_joined_with_newline() -> None:
    blocks = [
        {"type": "text", "text": "first"},
        {"type": "input_text", "text": "second"},
        {"type": "output_text", "text": "third"},
    ]
    assert text_of({"role": "user", "content": blocks}) == "first\nsecond\nthird"


def test_blank_and_non_string_block_texts_skipped() -> None:
    blocks = [
        {"type": "text", "text": "   "},
        {"type": "text", "text": "kept"},
        {"type": "text", "text": None},
        {"type": "text"},
        {"type": "text", "text": 42},
        {"type": "text", "text": ""},
        {"type": "output_text", "text": "also kept"},
    ]
    assert text_of({"role": "assistant", "content": blocks}) == "kept\nalso kept"


def test_non_text_blocks_excluded() -> None:
    blocks = [
        {"type": "thinking", "thinking": "secret reasoning", "thinkingSignature": "sig"},
        {"type": "reasoning", "text": "reasoning text"},
        {"type": "toolCall", "id": "call1", "name": "bash", "arguments": {"cmd": "ls"}},
        {"type": "tool_use", "id": "call2", "name": "read", "input": {"path": "/x"}},
        {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
        {"type": "redacted_thinking", "data": "xyz"},
        "a bare string block",
        None,
        {"text": "block without a type"},
        {"type": "text", "text": "the visible answer"},
    ]
    assert text_of({"role": "assistant", "content": blocks}) == "the visible answer"


def test_only_non_text_blocks_gives_no_row() -> None:
    event = msg(
        "m1",
        [
            {"type": "thinking", "thinking": "pondering"},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {}},
        ],
        role="assistant",
    )
    assert single_row(event) is None


def test_empty_array_and_missing_content() -> None:
    assert text_of({"role": "user", "content": []}) == ""
    assert text_of({"role": "user"}) == ""
    assert text_of({"role": "user", "content": None}) == ""
    assert text_of({"role": "user", "content": {"type": "text", "text": "a dict"}}) == ""
    assert text_of({"role": "user", "content": 17}) == ""


def test_diacritics_cjk_and_emoji_kept_verbatim() -> None:
    content = "  Café résumé — 明天下午三点开项目评审会议 👩‍💻  "
    assert text_of({"role": "user", "content": content}) == content.strip()


# -- which events make a row -----------------------------------------------------------------


def test_user_and_assistant_messages_make_rows() -> None:
    user = single_row(msg("u1", "hello there", role="user", ts=TS))
    assistant = single_row(msg("a1", "general kenobi", role="assistant", ts=TS + 5))
    assert user == IndexRow(0, "u1", "user", TS, "hello there")
    assert assistant == IndexRow(0, "a1", "assistant", TS + 5, "general kenobi")


@pytest.mark.parametrize(
    "role", ["toolResult", "tool", "system", "developer", "User", "ASSISTANT", "", None, 3]
)
def test_other_roles_excluded(role: Any) -> None:
    event = {"type": "message", "id": "m1", "message": {"role": role, "content": "visible?"}}
    assert single_row(event) is None


def test_tool_result_excluded_even_with_text_blocks() -> None:
    event = {
        "type": "message",
        "id": "t1",
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [{"type": "text", "text": "drwxr-xr-x root"}],
        },
    }
    assert single_row(event) is None


@pytest.mark.parametrize(
    "etype",
    [
        "model_change",
        "thinking_level_change",
        "compaction",
        "reset",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "leaf",
        "session",
        "something_new",
        None,
    ],
)
def test_non_message_events_excluded(etype: str | None) -> None:
    event: dict[str, Any] = {
        "id": "e1",
        "summary": "a summary with words",
        "content": "custom content",
        "message": {"role": "user", "content": "looks like a message"},
    }
    if etype is not None:
        event["type"] = etype
    assert single_row(event) is None


@pytest.mark.parametrize("event_id", [None, "", "   ", "\t\n", 5, ["m1"], {"id": "m1"}])
def test_blank_or_missing_or_non_string_ids_excluded(event_id: Any) -> None:
    event = msg(None, "some words")
    if event_id is not None:
        event["id"] = event_id
    assert single_row(event) is None
    assert transcript.index_rows([(0, event)]) == []


def test_message_not_an_object_excluded() -> None:
    for message in (None, "string message", ["list"], 12):
        assert single_row({"type": "message", "id": "m1", "message": message}) is None
    assert single_row({"type": "message", "id": "m1"}) is None


def test_incognito_yields_no_rows() -> None:
    events = [msg("m1", "hello"), msg("m2", "world", parent="m1", role="assistant")]
    assert indexed_ids(events) == ["m1", "m2"]
    assert transcript.index_rows(seqd(events), incognito=True) == []


# -- timestamps ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (TS, TS),
        (TS + 0.9, TS),
        (0, 0),
        ("2026-09-01T12:00:00.000Z", 1_788_264_000_000),
        ("2026-09-01T12:00:00Z", 1_788_264_000_000),
        ("2026-09-01T12:00:00.123z", 1_788_264_000_123),
        ("2026-09-01T14:00:00+02:00", 1_788_264_000_000),
        ("2026-09-01T12:00:00", 1_788_264_000_000),  # naive: UTC
        ("  2026-09-01T12:00:00Z  ", 1_788_264_000_000),
        ("2026-09-01", 1_788_220_800_000),
    ],
)
def test_timestamps_parsed_to_epoch_ms(value: Any, expected: int) -> None:
    assert transcript.parse_timestamp(value) == expected
    row = single_row(msg("m1", "hi", ts=value))
    assert row is not None and row.timestamp == expected


def test_iso_parse_agrees_with_datetime() -> None:
    dt = datetime(2031, 2, 3, 4, 5, 6, 789000, tzinfo=timezone.utc)
    iso = dt.isoformat().replace("+00:00", "Z")
    assert transcript.parse_timestamp(iso) == int(dt.timestamp() * 1000)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "yesterday",
        "1790000000000",
        True,
        False,
        float("nan"),
        float("inf"),
        10**20,
        -(10**20),
        [TS],
        {"ms": TS},
    ],
)
def test_unusable_timestamps_become_none(value: Any) -> None:
    assert transcript.parse_timestamp(value) is None
    row = single_row(msg("m1", "hi", ts=value))
    assert row is not None and row.timestamp is None  # "the time the row was written"


def test_missing_timestamp_still_indexed() -> None:
    event = msg("m1", "no clock")
    del event["timestamp"]
    row = single_row(event)
    assert row is not None and row.timestamp is None and row.text == "no clock"


# -- the active branch -----------------------------------------------------------------------


def linear(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    events = []
    parent = None
    for i in range(1, n + 1):
        eid = f"{prefix}{i}"
        events.append(msg(eid, parent=parent, role="user" if i % 2 else "assistant"))
        parent = eid
    return events


def test_linear_conversation_fully_active() -> None:
    events = linear(5)
    assert active_ids(events) == ["m1", "m2", "m3", "m4", "m5"]
    rows = transcript.index_rows(seqd(events))
    assert [(r.seq, r.event_id, r.role, r.text) for r in rows] == [
        (0, "m1", "user", "text of m1"),
        (1, "m2", "assistant", "text of m2"),
        (2, "m3", "user", "text of m3"),
        (3, "m4", "assistant", "text of m4"),
        (4, "m5", "user", "text of m5"),
    ]


def test_empty_session() -> None:
    tree = transcript.resolve_tree(())
    assert tree.active_leaf is None and tree.active_seqs == () and tree.tips == ()
    assert transcript.index_rows([]) == []


def test_header_line_is_not_part_of_the_tree() -> None:
    header = {
        "type": "session",
        "version": 4,
        "id": "sess-1",
        "timestamp": "2026-09-01T12:00:00Z",
        "cwd": "/tmp",
    }
    events = [header, msg("m1", parent=None), msg("m2", parent="m1")]
    assert active_ids(events) == ["m1", "m2"]
    tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in seqd(events))
    assert "sess-1" not in tree.tips
    # a leaf control naming the header id is an unknown target: ignored
    events.append(leaf("l1", "sess-1", parent="m2"))
    assert active_ids(events) == ["m1", "m2"]


def test_rewind_to_earlier_message() -> None:
    events = [*linear(4), leaf("l1", "m2", parent="m4")]
    assert active_ids(events) == ["m1", "m2"]
    assert indexed_ids(events) == ["m1", "m2"]


def test_rewind_then_continue_forks_a_branch() -> None:
    events = [
        msg("a1", "alpha origin"),
        msg("b1", "beta abandoned", parent="a1", role="assistant"),
        leaf("l1", "a1", parent="b1"),
        msg("c1", "gamma new", parent="a1", role="assistant"),
    ]
    assert active_ids(events) == ["a1", "c1"]
    tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in seqd(events))
    assert tree.active_leaf == "c1"
    assert set(tree.tips) == {"b1", "c1"}


def test_branch_switch_back_to_other_tip() -> None:
    events = [
        msg("m1"),
        msg("m2", parent="m1"),
        msg("m3", parent="m1"),  # fork: m3 is a sibling of m2
        msg("m4", parent="m3"),
    ]
    assert active_ids(events) == ["m1", "m3", "m4"]
    events.append(leaf("l1", "m2", parent="m4"))
    assert active_ids(events) == ["m1", "m2"]
    events.append(leaf("l2", "m4", parent="m2"))
    assert active_ids(events) == ["m1", "m3", "m4"]


def test_leaf_target_null_is_empty_branch() -> None:
    events = [*linear(3), leaf("l1", None, parent="m3")]
    assert active_ids(events) == []
    assert indexed_ids(events) == []
    tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in seqd(events))
    assert tree.active_leaf is None


def test_after_empty_branch_a_new_root_starts() -> None:
    events = [*linear(2), leaf("l1", None, parent="m2"), msg("n1", "fresh start")]
    assert active_ids(events) == ["n1"]
    events.append(msg("n2", "continues", parent="l1"))  # through the marker: a new root too
    assert active_ids(events) == ["n2"]


def test_leaf_with_unknown_target_ignored() -> None:
    events = [*linear(3), leaf("l1", "nope", parent="m3")]
    assert active_ids(events) == ["m1", "m2", "m3"]
    events.append(msg("m4", parent=UNLINKED))
    assert active_ids(events) == ["m1", "m2", "m3", "m4"]


def test_leaf_target_must_already_exist() -> None:
    # a target that only appears later is unknown at the time of the control
    events = [msg("m1"), leaf("l1", "m2", parent="m1"), msg("m2", parent="m1")]
    assert active_ids(events) == ["m1", "m2"]
    events = [
        msg("m1"),
        msg("x", parent="m1"),
        leaf("l1", "m9", parent="x"),
        msg("m9", parent="m1"),
        msg("m10", parent="x"),
    ]
    assert active_ids(events) == ["m1", "x", "m10"]


def test_events_chain_through_a_leaf_marker() -> None:
    events = [*linear(4), leaf("l1", "m2", parent="m4"), msg("m5", parent="l1")]
    assert active_ids(events) == ["m1", "m2", "m5"]
    # a later event naming the old marker still continues from its target
    events.append(msg("m6", parent="l1"))
    assert active_ids(events) == ["m1", "m2", "m6"]


def test_chained_leaf_markers() -> None:
    events = [
        *linear(4),
        leaf("l1", "m3", parent="m4"),
        leaf("l2", "m1", parent="l1"),
        msg("m5", parent="l2"),
    ]
    assert active_ids(events) == ["m1", "m5"]


def test_leaf_control_without_id_is_not_a_leaf_control() -> None:
    # OpenClaw parses a leaf control only with a non-blank id: an id-less one moves nothing.
    events = [*linear(3), leaf(None, "m1"), msg("m4", parent=UNLINKED)]
    assert active_ids(events) == ["m1", "m2", "m3", "m4"]


def test_side_append_does_not_move_the_leaf() -> None:
    events = [
        msg("m1"),
        msg("m2", parent="m1"),
        msg("s1", "side note", parent="m1", side=True),
        msg("m3", parent=UNLINKED),  # no parentId: chains to the current leaf m2, not s1
    ]
    assert active_ids(events) == ["m1", "m2", "m3"]
    assert "s1" not in indexed_ids(events)
    tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in seqd(events))
    assert "s1" in tree.tips


def test_parentless_side_append_hangs_off_the_leaf_and_can_be_selected() -> None:
    events = [msg("m1"), msg("m2", parent="m1"), msg("s1", "side", side=True, parent=UNLINKED)]
    assert active_ids(events) == ["m1", "m2"]
    events.append(leaf("l1", "s1", parent="m2"))
    assert active_ids(events) == ["m1", "m2", "s1"]


def test_side_append_non_message() -> None:
    events = [
        msg("m1"),
        {"type": "label", "id": "lab", "parentId": "m1", "label": "x", "appendMode": "side"},
        msg("m2", parent=UNLINKED),
    ]
    assert active_ids(events) == ["m1", "m2"]


def test_parentless_entries_chain_to_the_current_leaf() -> None:
    events = [msg("m1"), msg("m2", parent=UNLINKED), msg("m3", parent=UNLINKED)]
    assert active_ids(events) == ["m1", "m2", "m3"]
    events = [
        msg("m1"),
        msg("m2", parent="m1"),
        leaf("l1", "m1", parent="m2"),
        msg("m3", parent=UNLINKED),
    ]
    assert active_ids(events) == ["m1", "m3"]


def test_non_message_entries_are_on_the_branch_but_not_indexed() -> None:
    events = [
        msg("m1", "question"),
        {"type": "model_change", "id": "mc", "parentId": "m1", "provider": "x", "modelId": "y"},
        {"type": "thinking_level_change", "id": "tl", "parentId": "mc", "thinkingLevel": "high"},
        msg("m2", "answer", parent="tl", role="assistant"),
    ]
    assert active_ids(events) == ["m1", "mc", "tl", "m2"]
    assert indexed_ids(events) == ["m1", "m2"]


def test_unknown_parent_chains_to_the_current_leaf() -> None:
    events = [msg("m1"), msg("m2", parent="m1"), msg("m3", parent="ghost")]
    assert active_ids(events) == ["m1", "m2", "m3"]


def test_events_without_id_are_not_in_the_tree() -> None:
    events = [msg("m1"), msg(None, "anonymous", parent="m1"), msg("m2", parent=UNLINKED)]
    assert active_ids(events) == ["m1", "m2"]
    assert indexed_ids(events) == ["m1", "m2"]


def test_duplicate_ids_first_occurrence_wins() -> None:
    events = [
        msg("m1", "first"),
        msg("m2", "second", parent="m1"),
        msg("m1", "duplicate", parent="m2"),
    ]
    rows = transcript.index_rows(seqd(events))
    assert [(r.event_id, r.text) for r in rows] == [("m1", "first"), ("m2", "second")]


def test_message_reusing_a_leaf_marker_id_is_ignored() -> None:
    events = [*linear(2), leaf("l1", "m1", parent="m2"), msg("l1", "clash", parent="m1")]
    assert active_ids(events) == ["m1"]


def test_events_sorted_by_seq_not_by_list_order() -> None:
    events = linear(3)
    shuffled = [(2, events[2]), (0, events[0]), (1, events[1])]
    assert [r.event_id for r in transcript.index_rows(shuffled)] == ["m1", "m2", "m3"]


def test_rows_carry_the_event_seq() -> None:
    events = [
        (10, msg("m1")),
        (20, {"type": "custom", "id": "c"}),
        (35, msg("m2", parent=UNLINKED)),
    ]
    rows = transcript.index_rows(events)
    assert [(r.seq, r.event_id) for r in rows] == [(10, "m1"), (35, "m2")]


def test_tips_in_seq_order_with_active_leaf() -> None:
    events = [
        msg("r"),
        msg("a", parent="r"),
        msg("b", parent="r"),
        msg("c", parent="a"),
        leaf("l1", "r", parent="b"),
    ]
    tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in seqd(events))
    assert tree.active_leaf == "r"
    assert tree.tips == ("r", "b", "c")
    assert tree.active_seqs == (0,)


def test_tree_node_and_derived_columns() -> None:
    node = transcript.tree_node(7, leaf("l1", "m1", parent="m3"))
    assert node == transcript.TreeNode(7, "l1", "m3", "leaf", "m1", False, append_parent="m1")
    side = transcript.tree_node(3, msg("s1", parent="m1", side=True))
    assert side.side is True and side.target_id is None
    # targetId only counts on leaf controls
    assert (
        transcript.tree_node(1, {"type": "message", "id": "x", "targetId": "m1"}).target_id is None
    )
    cols = transcript.derived_columns(
        4, msg("m1", "hi", parent="m0", role="assistant", ts="2026-09-01T12:00:00Z")
    )
    assert cols == {
        "seq": 4,
        "event_id": "m1",
        "parent_id": "m0",
        "type": "message",
        "role": "assistant",
        "target_id": None,
        "side": False,
        "timestamp_ms": 1_788_264_000_000,
    }


# -- fixture transcripts ---------------------------------------------------------------------


def load_fixture(name: str) -> list[tuple[int, dict[str, Any]]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return list(enumerate(json.loads(line) for line in lines if line.strip()))


def test_fixture_branchy_transcript() -> None:
    events = load_fixture("branchy.jsonl")
    rows = transcript.index_rows(events)
    assert [(r.event_id, r.role) for r in rows] == [
        ("u1", "user"),
        ("a1", "assistant"),
        ("u3", "user"),
        ("a3", "assistant"),
    ]
    by_id = {r.event_id: r for r in rows}
    assert by_id["u1"].text == "Où est le café? Let's plan the déploiement"
    assert by_id["a1"].text == "Sure.\nFirst, check the logs"
    assert by_id["u3"].text == "明天下午三点开项目评审会议"
    assert by_id["a3"].timestamp == 1_788_264_060_000
    # rewound-away, thinking, tool call, tool result, image and side note never appear
    all_text = "\n".join(r.text for r in rows)
    for absent in (
        "beta abandoned",
        "secret reasoning",
        "ls -la",
        "total 0",
        "side note",
        "iVBORw0KGgo",
        "You are a helpful",
    ):
        assert absent not in all_text
