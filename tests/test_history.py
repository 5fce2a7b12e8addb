"""``sessions_history`` end to end (docs/tools.md) on a real SQLite database.

The active branch oldest first, paging, anchor windows, incarnations, argument errors, tool
messages, per-message sanitising (dropped fields, signatures, images, redaction, the 4000
character cut), the 80 KiB budget and access control.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from factories import T0, chain, msg

from openclaw_fts import Caller, ToolInputError, TranscriptStore

pytestmark = pytest.mark.both_engines

ME = "agent:main:main"
CALLER = Caller(ME)
CUT = "\n…(truncated)…"
OMITTED = "[sessions_history omitted: message too large]"
BUDGET = 80 * 1024


def linear(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chain events through parentId in list order."""
    parent = None
    for event in events:
        event["parentId"] = parent
        parent = event["id"]
    return events


def ids(out: dict[str, Any]) -> list[str]:
    return [m["__openclaw"]["id"] for m in out["messages"]]


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


@pytest.fixture
def ten(store: TranscriptStore) -> TranscriptStore:
    """One session m0..m9, alternating user / assistant."""
    store.create_session("s1", ME)
    store.append_many("s1", chain([f"message {i}" for i in range(10)]))
    return store


# --------------------------------------------------------------------------- the active branch


def test_returns_the_active_branch_oldest_first(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain([f"text {i}" for i in range(6)]))
    store.rewind("s1", "m2")
    store.append("s1", msg("n3", "after rewind", parent="m2"))
    store.append("s1", msg("n4", "and more", role="assistant", parent="n3"))
    out = store.history(CALLER, ME)
    assert ids(out) == ["m0", "m1", "m2", "n3", "n4"]
    assert [m["content"] for m in out["messages"]] == [
        "text 0",
        "text 1",
        "text 2",
        "after rewind",
        "and more",
    ]
    assert [m["role"] for m in out["messages"]] == [
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
    ]
    assert out["sessionKey"] == ME
    assert out["totalMessages"] == 5


def test_each_message_carries_its_seq_and_id(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    seqs = store.append_many(
        "s1",
        [
            msg("a", "first"),
            {"type": "model_change", "id": "mc", "parentId": "a", "modelId": "x"},
            msg("b", "second", role="assistant", parent="mc"),
        ],
    )
    out = store.history(CALLER, ME)
    # __openclaw.seq is the 1-based transcript position (the store numbers events from 0)
    assert [(m["__openclaw"]["seq"], m["__openclaw"]["id"]) for m in out["messages"]] == [
        (seqs[0] + 1, "a"),
        (seqs[2] + 1, "b"),
    ]
    assert seqs == [0, 1, 2]


def test_only_message_events_are_returned(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many(
        "s1",
        linear(
            [
                msg("u", "hello"),
                {"type": "thinking_level_change", "id": "t", "thinkingLevel": "high"},
                {"type": "custom", "id": "c", "customType": "note", "data": {"x": 1}},
                msg("a", "hi", role="assistant"),
            ]
        ),
    )
    assert ids(store.history(CALLER, ME)) == ["u", "a"]


def test_reads_the_newest_incarnation_of_a_key(store: TranscriptStore) -> None:
    # created in an order opposite to the ids' sort order
    store.create_session("inc-z", ME)
    store.append_many("inc-z", chain(["old life"], prefix="z"))
    store.create_session("inc-a", ME)
    store.append_many("inc-a", chain(["new life"], prefix="a"))
    out = store.history(CALLER, ME)
    assert ids(out) == ["a0"]
    assert out["messages"][0]["content"] == "new life"


def test_a_session_id_may_be_given_in_place_of_the_key(ten: TranscriptStore) -> None:
    assert ids(ten.history(CALLER, "s1", limit=2)) == ["m8", "m9"]


# --------------------------------------------------------------------------- paging


def test_limit_and_offset_page_backwards_from_the_newest(ten: TranscriptStore) -> None:
    first = ten.history(CALLER, ME, limit=3)
    assert ids(first) == ["m7", "m8", "m9"]
    assert first["offset"] == 0
    assert first["nextOffset"] == 3
    assert first["hasMore"] is True
    assert first["totalMessages"] == 10
    second = ten.history(CALLER, ME, limit=3, offset=first["nextOffset"])
    assert ids(second) == ["m4", "m5", "m6"]
    assert second["offset"] == 3
    assert second["nextOffset"] == 6
    assert second["hasMore"] is True
    third = ten.history(CALLER, ME, limit=3, offset=6)
    assert ids(third) == ["m1", "m2", "m3"]
    assert third["nextOffset"] == 9
    last = ten.history(CALLER, ME, limit=3, offset=9)
    assert ids(last) == ["m0"]
    assert last["hasMore"] is False
    assert last.get("nextOffset") is None
    assert last["totalMessages"] == 10


def test_offset_past_the_end_returns_nothing(ten: TranscriptStore) -> None:
    for offset in (10, 11, 500):
        out = ten.history(CALLER, ME, limit=3, offset=offset)
        assert out["messages"] == []
        assert out["hasMore"] is False
        assert out["totalMessages"] == 10


def test_without_limit_everything_fits(ten: TranscriptStore) -> None:
    out = ten.history(CALLER, ME)
    assert ids(out) == [f"m{i}" for i in range(10)]
    assert out["hasMore"] is False
    assert out["truncated"] is False
    assert out["droppedMessages"] is False
    assert out["contentTruncated"] is False
    assert out["contentRedacted"] is False
    assert out["bytes"] == json_size(out["messages"])


# --------------------------------------------------------------------------- anchors


@pytest.mark.parametrize(
    ("anchor", "limit", "expected"),
    [
        ("m5", 1, ["m5"]),
        ("m5", 2, ["m4", "m5"]),  # one older first
        ("m5", 3, ["m4", "m5", "m6"]),  # then one newer
        ("m5", 4, ["m3", "m4", "m5", "m6"]),
        ("m5", 5, ["m3", "m4", "m5", "m6", "m7"]),
        ("m0", 3, ["m0", "m1", "m2"]),  # nothing older: grows newer only
        ("m9", 3, ["m7", "m8", "m9"]),  # nothing newer: grows older only
        ("m1", 4, ["m0", "m1", "m2", "m3"]),
        ("m8", 5, ["m5", "m6", "m7", "m8", "m9"]),
        ("m4", 50, [f"m{i}" for i in range(10)]),
    ],
)
def test_anchor_window_grows_alternately_older_and_newer(
    ten: TranscriptStore, anchor: str, limit: int, expected: list[str]
) -> None:
    out = ten.history(CALLER, ME, message_id=anchor, limit=limit)
    assert ids(out) == expected


def test_anchor_off_the_active_branch_gives_no_messages(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain([f"text {i}" for i in range(5)]))
    store.rewind("s1", "m1")
    store.append("s1", msg("n2", "new", parent="m1"))
    assert store.history(CALLER, ME, message_id="m3")["messages"] == []
    # An id no event of the session holds is an error, in OpenClaw's error shape.
    assert store.history(CALLER, ME, message_id="nope") == {
        "status": "error",
        "error": f"Message not found in session {ME}: nope",
    }
    assert ids(store.history(CALLER, ME, message_id="n2", limit=2)) == ["m1", "n2"]


def test_session_id_of_the_same_key_reads_that_incarnation(store: TranscriptStore) -> None:
    store.create_session("old", ME)
    store.append_many("old", chain(["a", "b", "c", "d"], prefix="o"))
    store.create_session("new", ME)
    store.append_many("new", chain(["x", "y"], prefix="n"))
    out = store.history(CALLER, ME, message_id="o2", session_id="old", limit=3)
    assert ids(out) == ["o1", "o2", "o3"]
    assert [m["content"] for m in out["messages"]] == ["b", "c", "d"]
    # with a sessionId the anchor is looked up in that incarnation only
    assert store.history(CALLER, ME, message_id="n1", session_id="old")["messages"] == []


def test_session_id_of_another_key_is_an_error(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain(["a"]))
    store.create_session("kid", "agent:main:kid", spawned_by=ME)
    store.append_many("kid", chain(["secret kid text"], prefix="k"))
    out = store.history(CALLER, ME, message_id="k0", session_id="kid")
    assert set(out) == {"status", "error"}
    assert out["status"] == "error"
    assert "secret kid text" not in out["error"]
    unknown = store.history(CALLER, ME, message_id="m0", session_id="missing")
    assert unknown["status"] == "error"


# --------------------------------------------------------------------------- argument errors


def test_session_id_requires_message_id(ten: TranscriptStore) -> None:
    with pytest.raises(ToolInputError) as info:
        ten.history(CALLER, ME, session_id="s1")
    assert str(info.value) == "sessionId requires messageId"


@pytest.mark.parametrize("offset", [0, 3])
def test_offset_and_message_id_cannot_be_combined(ten: TranscriptStore, offset: int) -> None:
    with pytest.raises(ToolInputError) as info:
        ten.history(CALLER, ME, offset=offset, message_id="m3")
    assert str(info.value) == "offset and messageId cannot be used together"


@pytest.mark.parametrize("offset", [-1, 1.5, "2", True, [1], float("nan")])
def test_offset_must_be_a_non_negative_integer(ten: TranscriptStore, offset: Any) -> None:
    with pytest.raises(ToolInputError) as info:
        ten.history(CALLER, ME, offset=offset)
    assert str(info.value) == "offset must be a non-negative integer"


@pytest.mark.parametrize("limit", [0, -3, 2.5, "4", True])
def test_history_limit_must_be_a_positive_integer(ten: TranscriptStore, limit: Any) -> None:
    with pytest.raises(ToolInputError) as info:
        ten.history(CALLER, ME, limit=limit)
    assert str(info.value) == "limit must be a positive integer"


# --------------------------------------------------------------------------- tools


def _tool_conversation(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many(
        "s1",
        linear(
            [
                msg("u1", "list the files"),
                msg(
                    "a1",
                    [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": "ls"}}],
                    role="assistant",
                ),
                msg(
                    "t1",
                    [{"type": "text", "text": "a.txt b.txt"}],
                    role="toolResult",
                    toolCallId="c1",
                    toolName="bash",
                ),
                msg(
                    "a2",
                    [
                        {"type": "thinking", "thinking": "need more"},
                        {"type": "toolCall", "id": "c2", "name": "cat", "arguments": {}},
                    ],
                    role="assistant",
                ),
                msg("t2", "contents", role="tool"),
                msg(
                    "a3",
                    [
                        {"type": "text", "text": "Let me also check"},
                        {"type": "toolCall", "id": "c3", "name": "ls", "arguments": {}},
                    ],
                    role="assistant",
                ),
                msg("a4", [{"type": "text", "text": "There are two files."}], role="assistant"),
            ]
        ),
    )


def test_without_include_tools_only_tool_results_are_dropped(store: TranscriptStore) -> None:
    """OpenClaw's stripToolMessages removes the ``toolResult``/``tool`` messages; assistant
    turns made only of tool calls (a1, and a2 with thinking) stay."""
    _tool_conversation(store)
    out = store.history(CALLER, ME)
    assert ids(out) == ["u1", "a1", "a2", "a3", "a4"]
    assert out["totalMessages"] == 5
    assert ids(store.history(CALLER, ME, include_tools=False)) == ids(out)
    a1 = out["messages"][1]
    assert a1["content"][0]["type"] == "toolCall" and a1["content"][0]["arguments"] == {"cmd": "ls"}


HIDDEN_ROWS = [
    msg("h1", "NO_REPLY", role="assistant"),
    msg("h2", "  ANNOUNCE_SKIP\n", role="assistant"),
    msg("h3", [{"type": "text", "text": "REPLY_SKIP"}], role="assistant"),
    msg("h4", [{"type": "output_text", "text": "Visible reply sent."}], role="assistant"),
    msg("h5", "visible REPLY sent", role="assistant"),
    msg("h6", ""),
    msg("h7", " \n\t"),
    msg("h8", []),
    msg("h9", [{"type": "text", "text": "  "}, {"type": "text", "text": ""}]),
]
SHOWN_ROWS = [
    msg("s1", "NO_REPLY, the build is green", role="assistant"),
    msg("s2", "no_reply", role="assistant"),  # the tokens match case-sensitively
    msg(
        "s3",
        [{"type": "text", "text": "NO_REPLY"}, {"type": "image", "data": "AA=="}],
        role="assistant",
    ),
    msg("s4", "", role="assistant"),  # an empty assistant row stays (OpenClaw)
    msg("s5", "", MediaPaths=["/tmp/photo.jpg"]),
    msg("s6", [{"type": "image", "data": "AA=="}]),
    msg("s7", "NO_REPLY"),  # a user may type it
]


def test_silent_control_replies_and_blank_user_rows_are_hidden(store: TranscriptStore) -> None:
    """OpenClaw's history reads through its chat display projection
    (chat-display-projection.ts, control-reply-text.ts), which leaves these rows out."""
    store.create_session("s1", ME)
    events = HIDDEN_ROWS[:4] + SHOWN_ROWS[:3] + HIDDEN_ROWS[4:] + SHOWN_ROWS[3:]
    store.append_many("s1", linear([dict(e) for e in events]))
    shown = [e["id"] for e in SHOWN_ROWS]
    for include_tools in (False, True):
        out = store.history(CALLER, ME, include_tools=include_tools)
        assert ids(out) == shown
        assert out["totalMessages"] == len(shown)
    page = store.history(CALLER, ME, limit=2, offset=2)
    assert ids(page) == shown[-4:-2] and page["nextOffset"] == 4
    assert store.history(CALLER, ME, message_id="h1")["messages"] == []


@pytest.mark.parametrize("role", ["tool_result", "function", "system", "toolCall"])
def test_without_include_tools_other_roles_stay(store: TranscriptStore, role: str) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", linear([msg("u1", "hi"), msg("r1", "output", role=role)]))
    assert ids(store.history(CALLER, ME)) == ["u1", "r1"]


def test_with_include_tools_everything_is_returned(store: TranscriptStore) -> None:
    _tool_conversation(store)
    out = store.history(CALLER, ME, include_tools=True)
    assert ids(out) == ["u1", "a1", "t1", "a2", "t2", "a3", "a4"]
    by_id = {m["__openclaw"]["id"]: m for m in out["messages"]}
    assert by_id["t1"]["toolCallId"] == "c1"
    assert by_id["t1"]["content"] == [{"type": "text", "text": "a.txt b.txt"}]
    assert by_id["a1"]["content"][0]["arguments"] == {"cmd": "ls"}


def test_paging_counts_only_the_messages_returned(store: TranscriptStore) -> None:
    _tool_conversation(store)
    out = store.history(CALLER, ME, limit=2)
    assert ids(out) == ["a3", "a4"]
    assert out["nextOffset"] == 2
    assert ids(store.history(CALLER, ME, limit=2, offset=2)) == ["a1", "a2"]
    assert ids(store.history(CALLER, ME, limit=2, offset=4)) == ["u1"]


# --------------------------------------------------------------------------- sanitising


def _only(store: TranscriptStore, message: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    store.create_session("s1", ME)
    store.append(
        "s1", {"type": "message", "id": "x", "parentId": None, "timestamp": T0, "message": message}
    )
    out = store.history(CALLER, ME, include_tools=True, **kwargs)
    assert len(out["messages"]) == 1
    return out


def test_details_usage_and_cost_are_dropped(store: TranscriptStore) -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "usage": {"input": 10, "output": 5},
        "cost": {"total": 0.01},
        "details": {"raw": "x" * 100},
        "model": "m-1",
        "stopReason": "stop",
    }
    out = _only(store, message)
    got = dict(out["messages"][0])
    assert got.pop("__openclaw")["id"] == "x"
    assert got == {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "model": "m-1",
        "stopReason": "stop",
    }
    assert out["contentTruncated"] is True  # something was left out


def test_tool_result_details_are_dropped(store: TranscriptStore) -> None:
    message = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "bash",
        "content": [{"type": "text", "text": "ok"}],
        "details": {"exitCode": 0, "stdout": "ok"},
        "isError": False,
    }
    got = _only(store, message)["messages"][0]
    assert "details" not in got
    assert got["toolCallId"] == "c1"
    assert got["isError"] is False


def test_thinking_signatures_are_dropped(store: TranscriptStore) -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "let me think", "thinkingSignature": "c2lnbmF0dXJl"},
            {"type": "thinking", "thinking": "more", "signature": "RXFVa0NrWUlC"},
            {"type": "text", "text": "answer", "textSignature": "keep"},
        ],
    }
    got = _only(store, message)["messages"][0]
    assert got["content"] == [
        {"type": "thinking", "thinking": "let me think"},
        {"type": "thinking", "thinking": "more"},
        {"type": "text", "text": "answer", "textSignature": "keep"},
    ]


@pytest.mark.parametrize("size", [1000, 1001, 1002, 3, 0])
def test_image_data_is_replaced_by_its_decoded_size(store: TranscriptStore, size: int) -> None:
    data = base64.b64encode((bytes(range(256)) * 8)[:size])
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": data.decode("ascii"), "mimeType": "image/png"},
        ],
    }
    out = _only(store, message)
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "mimeType": "image/png", "omitted": True, "bytes": size},
    ]
    if size:
        assert data.decode("ascii") not in json.dumps(out)
    assert out["contentTruncated"] is True


def test_secrets_are_redacted_in_history_text(store: TranscriptStore) -> None:
    key = "sk-proj-Q7xR2mT9vK4pL8nW3zY6bC1dF5gH0jA"
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": f"my key is {key} ok"},
            {"type": "text", "text": "DB_PASSWORD=hunter2hunter2"},
        ],
    }
    out = _only(store, message)
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": f"my key is {key[:6]}…{key[-4:]} ok"},
        {"type": "text", "text": "DB_PASSWORD=***"},
    ]
    assert out["contentRedacted"] is True
    assert key not in json.dumps(out, ensure_ascii=False)


def test_secret_straddling_the_4000_character_cut_is_masked(store: TranscriptStore) -> None:
    key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "x " * 1990 + key + " tail" * 100  # the key starts at 3980
    got = _only(store, {"role": "user", "content": text})["messages"][0]["content"]
    assert got.endswith(CUT)
    body = got[: -len(CUT)]
    assert len(body) <= 4000
    masked = key[6:-4]
    assert not any(masked[i : i + 8] in body for i in range(len(masked) - 7))


@pytest.mark.parametrize("shape", ["string", "blocks"])
def test_long_text_is_cut_at_4000_characters(store: TranscriptStore, shape: str) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    content: Any = text if shape == "string" else [{"type": "text", "text": text}]
    out = _only(store, {"role": "user", "content": content})
    got = out["messages"][0]["content"]
    cut = got if shape == "string" else got[0]["text"]
    assert cut == text[:4000] + CUT
    assert out["contentTruncated"] is True
    assert out["truncated"] is True


def test_the_4000_cut_counts_utf16_code_units_as_javascript_does(store: TranscriptStore) -> None:
    """3,000 emoji are 6,000 code units in JavaScript: OpenClaw keeps 2,000 of them."""
    out = _only(store, {"role": "user", "content": "😀" * 3000})
    assert out["messages"][0]["content"] == "😀" * 2000 + CUT
    assert out["contentTruncated"] is True
    store.append("s1", msg("y", "😀" * 2000))  # exactly 4,000 code units: not cut
    again = store.history(CALLER, ME)
    assert again["messages"][-1]["content"] == "😀" * 2000
    odd = "a" + "😀" * 2000  # the cut at 4,000 units falls inside the last emoji
    store.append("s1", msg("z", odd))
    assert store.history(CALLER, ME)["messages"][-1]["content"] == "a" + "😀" * 1999 + CUT


def test_text_of_exactly_4000_characters_is_not_cut(store: TranscriptStore) -> None:
    text = "y" * 4000
    out = _only(store, {"role": "user", "content": text})
    assert out["messages"][0]["content"] == text
    assert out["contentTruncated"] is False
    assert out["truncated"] is False


def test_history_does_not_change_the_stored_transcript(store: TranscriptStore) -> None:
    text = "start " + "a" * 5000 + " endword"
    message = {"role": "user", "content": text, "usage": {"x": 1}}
    first = _only(store, message)
    again = store.history(CALLER, ME)
    assert first["messages"] == again["messages"]
    assert again["messages"][0]["content"] == text[:4000] + CUT
    assert "usage" not in again["messages"][0]
    # the stored event still holds the full text
    assert [r["messageId"] for r in store.search(CALLER, "endword")["results"]] == ["x"]


# --------------------------------------------------------------------------- the 80 KiB budget


def test_newest_messages_that_fit_80_kib_are_kept(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    texts = [f"{i:04d}" + "z" * 3896 for i in range(40)]  # 3,900 characters each
    store.append_many("s1", chain(texts))
    out = store.history(CALLER, ME, limit=40)
    kept = ids(out)
    assert 0 < len(kept) < 40
    assert kept == [f"m{i}" for i in range(40 - len(kept), 40)]  # the newest, in order
    assert out["droppedMessages"] is True and len(kept) < 40
    assert out["truncated"] is True
    assert out["bytes"] == json_size(out["messages"])
    assert out["bytes"] <= BUDGET
    # maximal: the next older message would not have fitted
    older = store.history(CALLER, ME, message_id=f"m{39 - len(kept)}", limit=1)["messages"]
    assert json_size(older + out["messages"]) > BUDGET
    assert all(m["content"] == texts[int(m["__openclaw"]["id"][1:])] for m in out["messages"])


def follow_pages(store: TranscriptStore, limit: int) -> list[dict[str, Any]]:
    """Every page from offset 0, following ``nextOffset`` while ``hasMore``."""
    pages = [store.history(CALLER, ME, limit=limit)]
    while pages[-1]["hasMore"]:
        assert len(pages) <= PAGE_GUARD
        pages.append(store.history(CALLER, ME, limit=limit, offset=pages[-1]["nextOffset"]))
    assert "nextOffset" not in pages[-1]
    return pages


#: More pages than any test here needs (a paging loop that never ends fails instead).
PAGE_GUARD = 100


@pytest.mark.parametrize("limit", [40, 60, 200])
def test_following_next_offset_after_the_cap_reaches_every_message(
    store: TranscriptStore, limit: int
) -> None:
    """The 80 KiB cap keeps ~20 of these messages per page: the next page starts before the
    oldest message returned, so the dropped ones come next, and ``hasMore`` stays true until
    the oldest message was returned (also when the limit covers the whole session)."""
    count = 60
    store.create_session("s1", ME)
    store.append_many("s1", chain([f"{i:04d}" + "z" * 3896 for i in range(count)]))
    pages = follow_pages(store, limit)
    seen = [i for page in reversed(pages) for i in ids(page)]
    assert seen == [f"m{i}" for i in range(count)]  # every message once, in order
    assert len(pages) > 2
    first = pages[0]
    assert first["droppedMessages"] is True and first["hasMore"] is True
    assert first["nextOffset"] == len(first["messages"])
    for page in pages:
        assert page["totalMessages"] == count and page["bytes"] <= BUDGET


def test_paging_goes_past_a_message_too_large_for_the_cap(store: TranscriptStore) -> None:
    big = [{"type": "text", "text": "w" * 3999} for _ in range(30)]  # ~120 KB, no cut
    events = [msg(f"m{i}", f"short {i}") for i in range(5)]
    events.insert(3, msg("big", big, role="assistant"))
    store.create_session("s1", ME)
    store.append_many("s1", linear(events))
    pages = follow_pages(store, 10)
    seen = [i for page in reversed(pages) for i in ids(page)]
    assert seen == ["m0", "m1", "m2", "big", "m3", "m4"]
    placeholder = next(m for p in pages for m in p["messages"] if m["__openclaw"]["id"] == "big")
    assert placeholder["content"] == OMITTED


def test_budget_keeps_the_window_around_an_anchor(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain(["q" * 3900] * 60))
    out = store.history(CALLER, ME, message_id="m30", limit=60)
    kept = ids(out)
    assert "m30" in kept
    numbers = [int(k[1:]) for k in kept]
    assert numbers == list(range(numbers[0], numbers[-1] + 1))
    assert abs((30 - numbers[0]) - (numbers[-1] - 30)) <= 1  # centred on the anchor
    assert out["bytes"] <= BUDGET
    assert out["droppedMessages"] is True and len(kept) < 60


def test_a_single_message_too_large_is_replaced(store: TranscriptStore) -> None:
    blocks = [{"type": "text", "text": "w" * 3999} for _ in range(30)]  # ~120 KB, no cut
    store.create_session("s1", ME)
    store.append_many("s1", linear([msg("small", "hello"), msg("big", blocks, role="assistant")]))
    out = store.history(CALLER, ME)
    assert len(out["messages"]) == 1
    only = out["messages"][0]
    assert only["role"] == "assistant"
    assert only["content"] == OMITTED
    assert out["truncated"] is True
    assert out["droppedMessages"] is True
    assert out["bytes"] <= BUDGET
    assert out["bytes"] == json_size(out["messages"])


# --------------------------------------------------------------------------- access


def test_history_of_an_invisible_session_is_forbidden(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.create_session("other", "agent:main:other")
    store.append_many("other", chain(["private words"]))
    out = store.history(CALLER, "agent:main:other")
    assert set(out) == {"status", "error"}
    assert out["status"] == "forbidden"
    assert "private words" not in out["error"]
    assert store.history(CALLER, "other")["status"] == "forbidden"  # by session id too
    assert store.history(CALLER, "agent:main:other", message_id="m0")["status"] == "forbidden"


def test_history_of_an_unknown_key_is_forbidden_like_a_hidden_one(store: TranscriptStore) -> None:
    # No existence oracle: a key the caller may not see answers the same whether it exists.
    store.create_session("s1", ME)
    store.create_session("other", "agent:main:other")
    missing = store.history(CALLER, "agent:main:nobody")
    hidden = store.history(CALLER, "agent:main:other")
    assert missing == {
        "status": "forbidden",
        "error": "Session history visibility is restricted to the current session tree "
        "(tools.sessions.visibility=tree).",
    }
    assert hidden == missing


def test_history_of_an_unknown_key_the_caller_could_see_is_an_error(
    store: TranscriptStore,
) -> None:
    out = store.history(Caller(ME, visibility="agent"), "agent:main:nobody")
    assert out == {
        "status": "error",
        "error": (
            "Session not found: agent:main:nobody (use the full sessionKey from sessions_list)"
        ),
    }


def test_history_of_a_visible_child_session(store: TranscriptStore) -> None:
    store.create_session("kid", "agent:main:kid", spawned_by=ME)
    store.append_many("kid", chain(["child says hi"]))
    out = store.history(CALLER, "agent:main:kid")
    assert out["sessionKey"] == "agent:main:kid"
    assert [m["content"] for m in out["messages"]] == ["child says hi"]


# --------------------------------------------------------------------------- branch moves


def _search_ids(store: TranscriptStore, query: str) -> set[str]:
    return {r["messageId"] for r in store.search(CALLER, query, limit=25)["results"]}


def test_switching_back_to_an_older_branch_restores_it(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain([f"zebra text {i}" for i in range(6)]))
    store.rewind("s1", "m2")
    store.append("s1", msg("n3", "zebra other branch", parent="m2"))
    assert ids(store.history(CALLER, ME)) == ["m0", "m1", "m2", "n3"]
    assert _search_ids(store, "zebra") == {"m0", "m1", "m2", "n3"}
    store.rewind("s1", "m5")
    assert ids(store.history(CALLER, ME)) == [f"m{i}" for i in range(6)]
    assert _search_ids(store, "zebra") == {f"m{i}" for i in range(6)}
    assert _search_ids(store, "other") == set()


def test_rewind_to_nothing_empties_the_branch(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain(["zebra one", "zebra two"]))
    store.rewind("s1", None)
    assert store.history(CALLER, ME)["messages"] == []
    assert _search_ids(store, "zebra") == set()
    store.append(
        "s1", {"type": "message", "id": "r0", "message": {"role": "user", "content": "zebra again"}}
    )
    assert ids(store.history(CALLER, ME)) == ["r0"]
    assert _search_ids(store, "zebra") == {"r0"}


def test_side_entries_are_not_on_the_active_branch(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain(["zebra one", "zebra two"]))
    side = msg("side", "zebra aside", parent="m0")
    side["appendMode"] = "side"
    store.append("s1", side)
    store.append("s1", msg("m2", "zebra three", parent="m1"))
    assert ids(store.history(CALLER, ME)) == ["m0", "m1", "m2"]
    assert _search_ids(store, "zebra") == {"m0", "m1", "m2"}
    assert store.history(CALLER, ME, message_id="side")["messages"] == []
