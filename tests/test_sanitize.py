"""Shaping of history messages (docs/tools.md): fields, signatures, images, cuts, budget."""

from __future__ import annotations

import base64
import copy
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_fts.history_shaping import (
    HISTORY_TRUNCATION_SUFFIX,
    MAX_CONTENT_DEPTH,
    MAX_HISTORY_BYTES,
    MAX_HISTORY_TEXT_CHARS,
    OMITTED_MESSAGE,
    TOO_DEEP_PLACEHOLDER,
    base64_decoded_size,
    cut_graphemes,
    fit_to_budget,
    is_tool_message,
    json_size,
    sanitize_message,
)
from openclaw_fts.redact import Redactor
from openclaw_fts.tokens import utf16_len

GHP = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
GHP_MASK = "ghp_ab…6789"
LIMIT = MAX_HISTORY_TEXT_CHARS
SUFFIX = HISTORY_TRUNCATION_SUFFIX


def _b64(size: int) -> str:
    return base64.b64encode(bytes(range(256)) * (size // 256) + bytes(size % 256)).decode()


# --------------------------------------------------------------------------- fields


def test_details_usage_and_cost_are_dropped() -> None:
    message = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "exec",
        "content": [{"type": "text", "text": "ok"}],
        "details": {"stdout": "x" * 10_000},
        "usage": {"input": 10, "output": 2},
        "cost": {"total": 0.01},
        "isError": False,
    }
    result = sanitize_message(message)
    assert result.message == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "exec",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
    }
    assert result.content_truncated  # something was left out (OpenClaw's flag)
    assert not result.content_redacted


def test_plain_message_is_untouched_and_flags_are_false() -> None:
    message = {"role": "user", "content": "hello there", "timestamp": 1}
    result = sanitize_message(message)
    assert result.message == message
    assert result.message is not message
    assert (result.content_truncated, result.content_redacted) == (False, False)


def test_unknown_fields_pass_through_as_copies_with_strings_redacted() -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "hi", "citations": [{"url": "u"}]}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude",
        "stopReason": "stop",
        "custom": {"nested": [1, 2, {"a": "TOKEN=abc123"}]},
    }
    result = sanitize_message(message)
    # unknown fields pass through, but a credential inside them is masked (docs/redaction.md)
    assert result.message == {**message, "custom": {"nested": [1, 2, {"a": "TOKEN=***"}]}}
    assert result.content_redacted is True
    result.message["custom"]["nested"].append(3)
    result.message["content"][0]["citations"][0]["url"] = "changed"
    assert message["custom"]["nested"] == [1, 2, {"a": "TOKEN=abc123"}]
    assert message["content"][0]["citations"][0]["url"] == "u"


def test_input_is_never_mutated() -> None:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": f"key {GHP}", "thinkingSignature": "s" * 100},
            {"type": "image", "data": _b64(300), "mimeType": "image/png"},
            {"type": "toolCall", "id": "t", "name": "x", "arguments": {"token": "abc"}},
            {"type": "text", "text": "x" * 5000},
        ],
        "usage": {"input": 1},
    }
    before = copy.deepcopy(message)
    sanitize_message(message)
    assert message == before


# --------------------------------------------------------------------------- signatures


def test_thinking_signatures_are_dropped() -> None:
    message = {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "let me think",
                "thinkingSignature": "EqQBCkgIARABGAIiQ",
            },
            {"type": "thinking", "thinking": "more", "signature": "ErUBCkYIBxgCIkB"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAABo"},
            {
                "type": "toolCall",
                "id": "c",
                "name": "f",
                "arguments": {},
                "thought_signature": "Cq",
            },
            {"type": "text", "text": "answer", "signature": "kept: not a thinking block"},
        ],
    }
    result = sanitize_message(message)
    assert result.message["content"] == [
        {"type": "thinking", "thinking": "let me think"},
        {"type": "thinking", "thinking": "more"},
        {"type": "redacted_thinking"},
        {"type": "reasoning", "summary": []},
        {"type": "toolCall", "id": "c", "name": "f", "arguments": {}},
        {"type": "text", "text": "answer", "signature": "kept: not a thinking block"},
    ]
    assert result.content_truncated


# --------------------------------------------------------------------------- images


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 1000, 1001, 1002, 65_537])
def test_base64_decoded_size_matches_the_decoder(size: int) -> None:
    data = _b64(size)
    assert base64_decoded_size(data) == len(base64.b64decode(data)) == size
    unpadded = data.rstrip("=")
    assert base64_decoded_size(unpadded) == size
    wrapped = "\n".join(data[i : i + 76] for i in range(0, len(data), 76)) + "\n"
    assert base64_decoded_size(wrapped) == size
    assert base64_decoded_size("data:image/png;base64," + data) == size


def test_base64_size_of_ten_megabytes_is_computed_without_decoding() -> None:
    data = "QUJD" * 2_500_000  # 10 MB of base64
    started = time.process_time()
    assert base64_decoded_size(data) == 7_500_000
    assert time.process_time() - started < 0.5


def test_image_block_loses_its_data_and_gets_omitted_and_bytes() -> None:
    data = _b64(1001)
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": data, "mimeType": "image/png"},
        ],
    }
    result = sanitize_message(message)
    assert result.message["content"][1] == {
        "type": "image",
        "mimeType": "image/png",
        "omitted": True,
        "bytes": 1001,
    }
    assert result.content_truncated


def test_image_source_form_keeps_media_type() -> None:
    block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/jpeg", "data": _b64(10)},
    }
    result = sanitize_message({"role": "user", "content": [block]})
    assert result.message["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/jpeg"},
            "omitted": True,
            "bytes": 10,
        }
    ]


def test_image_data_url_forms() -> None:
    url = "data:image/png;base64," + _b64(77)
    openai = {"type": "image_url", "image_url": {"url": url, "detail": "low"}}
    responses = {"type": "input_image", "image_url": url}
    result = sanitize_message({"role": "user", "content": [openai, responses]})
    assert result.message["content"] == [
        {"type": "image_url", "image_url": {"detail": "low"}, "omitted": True, "bytes": 77},
        {"type": "input_image", "omitted": True, "bytes": 77},
    ]


def test_image_by_url_is_kept_but_its_url_redacted() -> None:
    url = "https://bucket.s3.test/a.png?X-Amz-Signature=abcdefghijklmnopqrstuvwxyz"
    block = {"type": "image", "source": {"type": "url", "url": url}}
    result = sanitize_message({"role": "user", "content": [block]})
    assert result.message["content"] == [
        {
            "type": "image",
            "source": {
                "type": "url",
                "url": "https://bucket.s3.test/a.png?X-Amz-Signature=abcdef…wxyz",
            },
        }
    ]
    assert result.content_redacted


def test_image_nested_in_a_tool_result() -> None:
    message = {
        "role": "toolResult",
        "content": [
            {"type": "text", "text": "screenshot"},
            {"type": "image", "data": _b64(5000), "mimeType": "image/png"},
        ],
    }
    result = sanitize_message(message)
    assert result.message["content"][1] == {
        "type": "image",
        "mimeType": "image/png",
        "omitted": True,
        "bytes": 5000,
    }


# --------------------------------------------------------------------------- redaction


def test_every_text_is_redacted() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"token {GHP}"},
            {"type": "thinking", "thinking": f"the user's key is {GHP}"},
            {
                "type": "toolCall",
                "id": "c1",
                "name": "exec",
                "arguments": {
                    "command": f"export GITHUB_TOKEN={GHP}",
                    "env": {"password": "hunter2", "sessionKey": "agent:main:main"},
                    "list": [f"x {GHP}"],
                    "count": 3,
                },
            },
            {"type": "tool_use", "id": "c2", "name": "f", "input": f'{{"key": "{GHP}"}}'},
            {"type": "toolCall", "id": "c3", "name": "g", "partialJson": f'{{"a": "{GHP}"'},
        ],
        "errorMessage": f"401 for key {GHP}",
        "text": f"summary {GHP}",
    }
    result = sanitize_message(message)
    dumped = json.dumps(result.message, ensure_ascii=False)
    assert GHP not in dumped and "ghijklmnop" not in dumped
    assert dumped.count(GHP_MASK) == 8
    args = result.message["content"][2]["arguments"]
    assert args["env"] == {"password": "***", "sessionKey": "agent:main:main"}
    assert args["count"] == 3
    assert result.content_redacted
    assert not result.content_truncated


def test_huge_value_under_a_sensitive_key_is_masked_from_its_real_ends() -> None:
    value = "s3cr3t" + "x" * 200_000 + "tail"
    block = {"type": "toolCall", "arguments": {"apiKey": value, "password": value, "n": "fine"}}
    result = sanitize_message({"role": "assistant", "content": [block]})
    assert result.message["content"][0]["arguments"] == {
        "apiKey": "s3cr3t…tail",
        "password": "***",  # a password is masked whole
        "n": "fine",
    }
    assert result.content_redacted and not result.content_truncated


def test_string_content_and_tool_call_arguments_string() -> None:
    result = sanitize_message({"role": "user", "content": f"my key: {GHP}"})
    assert result.message["content"] == f"my key: {GHP_MASK}"
    block = {"type": "function_call", "name": "f", "arguments": f'{{"api_key": "{GHP}"}}'}
    result = sanitize_message({"role": "assistant", "content": [block]})
    assert result.message["content"][0]["arguments"] == f'{{"api_key": "{GHP_MASK}"}}'


def test_tool_result_text_and_nested_anthropic_tool_result_blocks() -> None:
    message = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {"type": "text", "text": f"found {GHP}"},
                    {"type": "tool_result", "content": f"deeper {GHP}"},
                ],
            }
        ],
    }
    result = sanitize_message(message)
    inner = result.message["content"][0]["content"]
    assert inner[0]["text"] == f"found {GHP_MASK}"
    assert inner[1]["content"] == f"deeper {GHP_MASK}"
    assert result.message["content"][0]["tool_use_id"] == "t1"


def test_openai_tool_calls_arguments_are_redacted() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "login", "arguments": f'{{"token": "{GHP}"}}'},
            }
        ],
    }
    result = sanitize_message(message)
    assert result.message["tool_calls"][0]["function"]["arguments"] == f'{{"token": "{GHP_MASK}"}}'
    assert result.message["tool_calls"][0]["id"] == "call_1"
    assert result.message["content"] is None


def test_custom_redactor_is_used() -> None:
    redactor = Redactor(extra_patterns=[r"EMP-\d{6}"])
    result = sanitize_message({"role": "user", "content": "id EMP-123456"}, redactor)
    assert result.message["content"] == "id ***"
    assert result.content_redacted


def test_nesting_deeper_than_the_limit_is_replaced() -> None:
    content: Any = f"bottom {GHP}"
    for _ in range(MAX_CONTENT_DEPTH + 5):
        content = [{"type": "tool_result", "content": content}]
    result = sanitize_message({"role": "user", "content": content})
    dumped = json.dumps(result.message)
    assert GHP not in dumped
    assert TOO_DEEP_PLACEHOLDER in dumped
    assert result.content_truncated
    args: Any = f"x {GHP}"
    for _ in range(MAX_CONTENT_DEPTH + 5):
        args = {"a": [args]}
    block = {"type": "toolCall", "arguments": args}
    dumped = json.dumps(sanitize_message({"role": "assistant", "content": [block]}).message)
    assert GHP not in dumped and TOO_DEEP_PLACEHOLDER in dumped


def _nested_lists(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def _at_stack_depth(frames: int, fn: Any) -> Any:
    return fn() if frames == 0 else _at_stack_depth(frames - 1, fn)


@pytest.mark.parametrize("where", ["content", "unknown", "arguments"])
def test_stored_deep_event_never_overflows_the_stack(where: str) -> None:
    deep = _nested_lists(950, f"deepword {GHP}")  # what json stores from a fresh process
    message: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    if where == "content":
        message["content"].append(deep)
    elif where == "unknown":
        message["extra"] = {"a": deep}
    else:
        message["content"].append({"type": "toolCall", "arguments": {"x": deep}})
    result = _at_stack_depth(300, lambda: sanitize_message(message))
    dumped = _at_stack_depth(300, lambda: json.dumps(result.message))
    assert TOO_DEEP_PLACEHOLDER in dumped and GHP not in dumped
    assert result.content_truncated
    assert _at_stack_depth(300, lambda: fit_to_budget([result.message]))[1] == 0


def test_nesting_within_the_limit_is_kept() -> None:
    shallow = _nested_lists(MAX_CONTENT_DEPTH - 5, "leaf")
    message = {"role": "user", "content": "x", "extra": shallow}
    result = sanitize_message(message)
    assert result.message == message and not result.content_truncated


# --------------------------------------------------------------------------- cutting


def test_text_of_exactly_the_limit_is_not_cut() -> None:
    text = "a" * LIMIT
    result = sanitize_message({"role": "user", "content": text})
    assert result.message["content"] == text
    assert not result.content_truncated


def test_text_one_over_the_limit_is_cut_with_the_suffix() -> None:
    result = sanitize_message({"role": "user", "content": "a" * (LIMIT + 1)})
    assert result.message["content"] == "a" * LIMIT + SUFFIX
    assert result.content_truncated


def test_every_kind_of_text_is_cut() -> None:
    long = "b" * (LIMIT + 10)
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": long},
            {"type": "thinking", "thinking": long},
            {"type": "toolCall", "arguments": {"command": long}},
        ],
        "errorMessage": long,
    }
    result = sanitize_message(message)
    cut = "b" * LIMIT + SUFFIX
    assert result.message["content"][0]["text"] == cut
    assert result.message["content"][1]["thinking"] == cut
    assert result.message["content"][2]["arguments"]["command"] == cut
    assert result.message["errorMessage"] == cut


def test_redaction_happens_before_the_cut() -> None:
    # the token straddles the cut: neither half of its hidden middle may show
    text = "x" * (LIMIT - 20) + " " + GHP + " tail" * 100
    result = sanitize_message({"role": "user", "content": text})
    out = result.message["content"]
    assert out.endswith(SUFFIX)
    hidden = GHP[6:-4]
    assert not any(hidden[i : i + 8] in out for i in range(len(hidden) - 7))
    assert result.content_redacted and result.content_truncated


def test_redaction_shortens_text_below_the_limit_then_no_cut() -> None:
    pem = (
        "-----BEGIN PRIVATE KEY-----\n"
        + "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 1] * 100)
        + "\n-----END PRIVATE KEY-----"
    )
    assert len(pem) > LIMIT
    result = sanitize_message({"role": "user", "content": pem})
    assert result.message["content"] == (
        "-----BEGIN PRIVATE KEY-----\n…redacted…\n-----END PRIVATE KEY-----"
    )
    assert not result.content_truncated and result.content_redacted


@pytest.mark.parametrize(
    "cluster",
    [
        "👩\u200d👩\u200d👧\u200d👦",  # emoji ZWJ sequence
        "e\u0301\u0302",  # letter + combining marks
        "🇫🇷",  # flag: two regional indicators
        "\r\n",  # CR LF is one cluster
        "각",  # Hangul syllable as jamo
        "1\ufe0f\u20e3",  # keycap
    ],
)
def test_cut_never_splits_a_grapheme_cluster(cluster: str) -> None:
    units = utf16_len(cluster)  # the limit counts UTF-16 code units, as JavaScript does
    for offset in range(1, units):
        text = "a" * (LIMIT - offset) + cluster + "tail"
        out = sanitize_message({"role": "user", "content": text}).message["content"]
        assert out == "a" * (LIMIT - offset) + SUFFIX, offset
    fits = "a" * (LIMIT - units) + cluster + "tail"
    out = sanitize_message({"role": "user", "content": fits}).message["content"]
    assert out == "a" * (LIMIT - units) + cluster + SUFFIX


def test_cut_never_splits_a_surrogate_pair() -> None:
    pair = "\ud83d\ude00"  # 😀 as two code points (e.g. decoded with surrogatepass)
    text = "a" * (LIMIT - 2) + pair + "b"
    out = sanitize_message({"role": "user", "content": text}).message["content"]
    # the pair is joined into the one character it encodes (tokens.clean_text), never split
    assert out == "a" * (LIMIT - 2) + "\U0001f600" + SUFFIX
    straddling = "a" * (LIMIT - 1) + pair + "b"  # the cut falls between its two code units
    out = sanitize_message({"role": "user", "content": straddling}).message["content"]
    assert out == "a" * (LIMIT - 1) + SUFFIX
    lone = "a" * (LIMIT - 1) + "\ud83d" + "b" * 10
    out = sanitize_message({"role": "user", "content": lone}).message["content"]
    assert out == "a" * (LIMIT - 1) + "\ufffd" + SUFFIX
    out.encode("utf-8")


def test_cut_graphemes_resyncs_far_from_ascii_and_handles_edges() -> None:
    cjk = "明天下午三点开项目评审会议" * 1000
    out = cut_graphemes(cjk, LIMIT)
    assert out == cjk[:LIMIT]
    assert cut_graphemes("abc", 0) == ""
    assert cut_graphemes("abc", 5) == "abc"
    zalgo = "Z" + "\u0301" * 10_000
    assert cut_graphemes(zalgo + "ok", LIMIT) == ""  # one huge cluster straddles the limit


def test_ten_megabyte_text_is_redacted_and_cut_quickly() -> None:
    text = f"secret {GHP} " + ("lorem ipsum dolor " * 600_000)  # ~10.8 MB
    started = time.process_time()
    result = sanitize_message({"role": "user", "content": text})
    elapsed = time.process_time() - started
    out = result.message["content"]
    assert out.startswith(f"secret {GHP_MASK} lorem")
    assert out.endswith(SUFFIX)
    assert len(out) <= LIMIT + len(SUFFIX)
    assert result.content_truncated and result.content_redacted
    assert elapsed < 2.0


def test_ten_megabyte_pem_collapses_and_is_flagged_cut() -> None:
    body = "\n".join(["QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw"] * 230_000)
    text = "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----"
    result = sanitize_message({"role": "user", "content": text})
    out = result.message["content"]
    assert out.startswith("-----BEGIN PRIVATE KEY-----\n…redacted…")
    assert "QUJDREVG" not in out
    assert out.endswith(SUFFIX) and result.content_truncated


# --------------------------------------------------------------------------- tool messages


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"role": "toolResult", "content": [{"type": "text", "text": "ok"}]}, True),
        ({"role": "tool", "content": "ok", "tool_call_id": "1"}, True),
        ({"role": "assistant", "content": [{"type": "toolCall", "name": "a"}]}, False),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "name": "a"}, {"type": "function_call"}],
            },
            False,
        ),
        (
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "  "},
                    {"type": "toolCall", "name": "a"},
                ],
            },
            False,
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Running it"}, {"type": "toolCall"}],
            },
            False,
        ),
        ({"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}, False),
        ({"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]}, False),
        ({"role": "assistant", "content": "Sure", "tool_calls": [{"id": "1"}]}, False),
        ({"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}, False),
        ({"role": "assistant", "content": []}, False),
        ({"role": "assistant", "content": "hello"}, False),
        (
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "1", "content": "x"}],
            },
            False,
        ),
        ({"role": "user", "content": [{"type": "text", "text": "hi"}]}, False),
        (
            {
                "role": "assistant",
                "content": [{"type": "toolCall"}, {"type": "image", "data": "AAAA"}],
            },
            False,
        ),
        ({"role": "user", "content": "run the tool"}, False),
        ({"role": "system", "content": "be brief"}, False),
    ],
)
def test_only_tool_result_roles_are_tool_messages(message: dict[str, Any], expected: bool) -> None:
    """OpenClaw's stripToolMessages: role ``toolResult`` or ``tool``, nothing else (an assistant
    turn of tool calls only, or a user message of tool-result blocks, stays in history)."""
    assert is_tool_message(message) is expected


# --------------------------------------------------------------------------- budget


def _items(count: int, size: int = 100) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "x" * size, "__openclaw": {"seq": i, "id": f"m{i}"}}
        for i in range(count)
    ]


def _seqs(items: list[dict[str, Any]]) -> list[int]:
    return [item["__openclaw"]["seq"] for item in items]


def test_json_size_counts_utf8_bytes() -> None:
    assert json_size("é") == 4  # "é" in quotes, two bytes for é
    assert json_size([{"a": 1}, {"b": 2}]) == len('[{"a": 1}, {"b": 2}]')
    assert json_size("\ud800") == 5  # a lone surrogate does not make it fail


def test_empty_and_everything_fits() -> None:
    assert fit_to_budget([]) == ([], 0)
    items = _items(5)
    kept, dropped = fit_to_budget(items)
    assert kept == items and dropped == 0
    assert kept[0] is items[0]  # returned as given


def test_keeps_the_newest_that_fit_exactly() -> None:
    items = _items(10)
    three = json_size(items[7:])
    kept, dropped = fit_to_budget(items, three)
    assert _seqs(kept) == [7, 8, 9] and dropped == 7
    kept, dropped = fit_to_budget(items, three - 1)
    assert _seqs(kept) == [8, 9] and dropped == 8
    assert json_size(kept) <= three - 1


def test_default_budget_is_80_kib() -> None:
    items = _items(200, 1000)
    kept, dropped = fit_to_budget(items)
    assert json_size(kept) <= MAX_HISTORY_BYTES < json_size(items[-len(kept) - 1 :])
    assert dropped == 200 - len(kept) and _seqs(kept)[-1] == 199


def test_newest_too_large_becomes_the_placeholder() -> None:
    items = _items(3)
    items[-1]["content"] = "y" * 500
    kept, dropped = fit_to_budget(items, 300)
    assert kept == [{**OMITTED_MESSAGE, "__openclaw": {"seq": 2, "id": "m2"}}]
    assert dropped == 3
    kept[0]["content"] = "mutated"
    assert OMITTED_MESSAGE["content"] == "[sessions_history omitted: message too large]"


def test_placeholder_without_metadata_is_exactly_openclaws() -> None:
    kept, dropped = fit_to_budget([{"role": "user", "content": "z" * 1000}], 100)
    assert kept == [OMITTED_MESSAGE] and kept[0] is not OMITTED_MESSAGE
    assert dropped == 1


def test_anchor_window_grows_older_first_then_alternates() -> None:
    items = _items(9)
    one = json_size(items[:1]) - 2  # one item without the brackets
    for count, expected in [
        (1, [4]),
        (2, [3, 4]),
        (3, [3, 4, 5]),
        (4, [2, 3, 4, 5]),
        (5, [2, 3, 4, 5, 6]),
    ]:
        budget = 2 + count * one + 2 * (count - 1)
        kept, dropped = fit_to_budget(items, budget, anchor_index=4)
        assert _seqs(kept) == expected, count
        assert dropped == 9 - count


def test_anchor_near_an_end_grows_the_other_way() -> None:
    items = _items(6)
    one = json_size(items[:1]) - 2
    budget = 2 + 4 * one + 2 * 3
    assert _seqs(fit_to_budget(items, budget, anchor_index=0)[0]) == [0, 1, 2, 3]
    assert _seqs(fit_to_budget(items, budget, anchor_index=5)[0]) == [2, 3, 4, 5]


def test_anchor_side_that_does_not_fit_closes_and_the_other_goes_on() -> None:
    items = _items(7)
    items[2]["content"] = "w" * 5000  # the older neighbour of the anchor's neighbour is huge
    one = json_size(items[:1]) - 2
    budget = 2 + 5 * one + 2 * 4
    kept, dropped = fit_to_budget(items, budget, anchor_index=3)
    assert _seqs(kept) == [3, 4, 5, 6]
    assert dropped == 3


def test_anchor_too_large_becomes_the_placeholder() -> None:
    items = _items(5)
    items[2]["content"] = "v" * 5000
    kept, dropped = fit_to_budget(items, 1000, anchor_index=2)
    assert kept == [{**OMITTED_MESSAGE, "__openclaw": {"seq": 2, "id": "m2"}}]
    assert dropped == 5


def test_anchor_out_of_range() -> None:
    with pytest.raises(ValueError, match="anchor_index"):
        fit_to_budget(_items(2), anchor_index=2)
    with pytest.raises(ValueError, match="anchor_index"):
        fit_to_budget(_items(2), anchor_index=-1)


def test_item_that_is_not_json_counts_as_too_large() -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "ok"}, {"bad": {1, 2}}]
    kept, dropped = fit_to_budget(items)
    assert kept == [OMITTED_MESSAGE] and dropped == 2


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=30),
    budget=st.integers(10, 4000),
    data=st.data(),
)
def test_budget_properties(sizes: list[int], budget: int, data: st.DataObject) -> None:
    items = [{"content": "x" * n, "__openclaw": {"seq": i}} for i, n in enumerate(sizes)]
    anchor = data.draw(st.none() | st.integers(0, len(items) - 1), label="anchor")
    kept, dropped = fit_to_budget(items, budget, anchor)
    target = len(items) - 1 if anchor is None else anchor
    if kept[0].get("content") == OMITTED_MESSAGE["content"]:
        assert len(kept) == 1 and dropped == len(items)
        assert json_size([items[target]]) > budget
        return
    assert json_size(kept) <= budget
    seqs = _seqs(kept)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # contiguous, in order
    assert target in seqs
    assert dropped == len(items) - len(kept)
    if anchor is None:
        assert seqs[-1] == len(items) - 1
        if seqs[0] > 0:  # the next older one would not have fitted
            assert json_size(items[seqs[0] - 1 :]) > budget


# --------------------------------------------------------------------------- any message

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_BLOCK = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["text", "thinking", "image", "toolCall", "tool_result", "redacted_thinking", "x"]
        )
    },
    optional={
        "text": st.text(max_size=50) | st.just(f"k {GHP}"),
        "thinking": st.text(max_size=50),
        "thinkingSignature": st.text(max_size=5),
        "signature": st.text(max_size=5),
        "data": st.text(alphabet="ABCD=", max_size=40),
        "arguments": _JSON,
        "content": st.text(max_size=20) | st.just(f"k {GHP}"),
        "extra": _JSON,
    },
)


@settings(max_examples=200, deadline=None)
@given(
    role=st.sampled_from(["user", "assistant", "toolResult", "tool", "system"]),
    content=st.text(max_size=60) | st.lists(_BLOCK, max_size=5) | _JSON,
    extra=st.dictionaries(st.sampled_from(["usage", "cost", "details", "x", "text"]), _JSON),
)
def test_any_message_is_sanitized_safely(role: str, content: Any, extra: dict[str, Any]) -> None:
    message = {"role": role, "content": content, **extra}
    before = copy.deepcopy(message)
    result = sanitize_message(message)
    assert message == before
    dumped = json.dumps(result.message, ensure_ascii=False)
    assert not {"usage", "cost", "details"} & result.message.keys()
    assert "thinkingSignature" not in dumped
    if isinstance(content, (str, list)):
        assert GHP not in dumped
    is_tool_message(message)  # never raises
