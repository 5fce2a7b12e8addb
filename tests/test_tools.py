"""The tool adapters ``openclaw_fts.tools.sessions_search`` / ``sessions_history``.

They take the tool's JSON arguments (camelCase), always return a JSON-ready dict and never
raise for bad arguments; their JSON Schemas describe exactly the arguments they accept.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from conftest import check_history_output, check_search_output
from factories import chain

from openclaw_fts import Caller, TranscriptStore, tools

pytestmark = pytest.mark.both_engines

ME = "agent:main:main"
CALLER = Caller(ME)
T0 = 1_790_000_000_000
JSON_TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


def search(store: TranscriptStore, caller: Caller, args: Any) -> dict[str, Any]:
    """The search adapter, its result checked against OpenClaw's output schema."""
    return check_search_output(tools.sessions_search(store, caller, args))


def history(store: TranscriptStore, caller: Caller, args: Any) -> dict[str, Any]:
    """The history adapter, its result checked against OpenClaw's output schema."""
    return check_history_output(tools.sessions_history(store, caller, args))


@pytest.fixture
def filled(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", ME)
    store.append_many("s1", chain([f"zebra message {i}" for i in range(6)] + ["nothing to see"]))
    store.create_session("kid", "agent:main:kid", spawned_by=ME)
    store.append_many("kid", chain(["zebra in the kid"], prefix="k"))
    store.create_session("other", "agent:main:other")
    store.append_many("other", chain(["zebra elsewhere"], prefix="o"))
    return store


# --------------------------------------------------------------------------- sessions_search


def test_search_takes_camel_case_arguments_and_returns_the_store_result(
    filled: TranscriptStore,
) -> None:
    args = {
        "query": "zebra",
        "sessionKey": ME,
        "limit": 2,
        "role": "user",
        "since": T0,
        "until": T0 + 10_000,
        "order": "recent",
    }
    out = search(filled, CALLER, args)
    direct = filled.search(
        CALLER,
        "zebra",
        session_key=ME,
        limit=2,
        role="user",
        since=T0,
        until=T0 + 10_000,
        order="recent",
    )
    assert out == direct
    assert [r["messageId"] for r in out["results"]] == ["m4", "m2"]
    assert out["truncated"] is True
    assert json.loads(json.dumps(out)) == out


def test_search_with_only_a_query(filled: TranscriptStore) -> None:
    out = search(filled, CALLER, {"query": "zebra"})
    assert {r["sessionKey"] for r in out["results"]} == {ME, "agent:main:kid"}
    assert len(out["results"]) == 7


EMPTY = "query must not be empty; retry with non-empty keywords to match in past session text"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, EMPTY),
        ({"query": "   "}, EMPTY),
        ({}, EMPTY),
        ({"query": None}, EMPTY),
        ({"query": 42}, EMPTY),
        ({"query": ["zebra"]}, EMPTY),
        ({"query": "x" * 4097}, "query must not exceed 4096 characters"),
        ({"query": "zebra", "limit": 0}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": -1}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": 26}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": "26"}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": 2.5}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": "2.5"}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": "5 results"}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": "0x5"}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": True}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": [5]}, "limit must be a positive integer"),
    ],
)
def test_search_errors_are_results_with_openclaws_messages(
    filled: TranscriptStore, args: dict[str, Any], message: str
) -> None:
    assert search(filled, CALLER, args) == {"status": "error", "error": message}


@pytest.mark.parametrize(
    "args",
    [
        {"query": "zebra", "role": "system"},
        {"query": "zebra", "order": "oldest"},
        {"query": "zebra", "since": "not a time"},
    ],
)
def test_other_bad_search_arguments_never_raise(
    filled: TranscriptStore, args: dict[str, Any]
) -> None:
    out = search(filled, CALLER, args)
    assert set(out) == {"status", "error"}
    assert out["status"] == "error"
    assert isinstance(out["error"], str) and out["error"]


@pytest.mark.parametrize(
    ("limit", "count"), [("2", 2), (" 3 ", 3), (4.0, 4), ("5.0", 5), ("1e1", 7), (None, 7), ("", 7)]
)
def test_search_limit_may_be_a_numeric_string(
    filled: TranscriptStore, limit: Any, count: int
) -> None:
    # OpenClaw's readers take a number or a strict numeric string; null and "" are "not given".
    out = search(filled, CALLER, {"query": "zebra", "limit": limit})
    assert len(out["results"]) == count


def test_search_reads_snake_case_aliases(filled: TranscriptStore) -> None:
    camel = search(filled, CALLER, {"query": "zebra", "sessionKey": "agent:main:kid"})
    snake = search(filled, CALLER, {"query": "zebra", "session_key": "agent:main:kid"})
    assert snake == camel
    assert [r["messageId"] for r in snake["results"]] == ["k0"]
    # the camelCase name wins when both are given
    both = {"query": "zebra", "sessionKey": ME, "session_key": "agent:main:kid"}
    assert {r["sessionKey"] for r in search(filled, CALLER, both)["results"]} == {ME}


@pytest.mark.parametrize("name", ["maxResults", "Query", "visibility", "", "includeTools"])
def test_unknown_search_arguments_are_ignored(filled: TranscriptStore, name: str) -> None:
    out = search(filled, CALLER, {"query": "zebra", name: 1})
    assert out == filled.search(CALLER, "zebra")


@pytest.mark.parametrize("key", ["", "   ", 42, None, ["agent:main:other"], {"k": 1}])
def test_a_session_key_that_is_not_a_string_is_not_given(filled: TranscriptStore, key: Any) -> None:
    assert search(filled, CALLER, {"query": "zebra", "sessionKey": key}) == filled.search(
        CALLER, "zebra"
    )


@pytest.mark.parametrize("args", [None, "zebra", ["zebra"], 3])
def test_search_arguments_must_be_an_object(filled: TranscriptStore, args: Any) -> None:
    assert search(filled, CALLER, args) == {"status": "error", "error": EMPTY}


def test_search_forbidden_keys_are_results(filled: TranscriptStore) -> None:
    tree = (
        "Session search visibility is restricted to the current session tree "
        "(tools.sessions.visibility=tree)."
    )
    cross = (
        "Session search visibility is restricted. Set tools.sessions.visibility=all to allow "
        "cross-agent access; use tools.agentToAgent to restrict permitted agent pairs."
    )
    for key, text in [
        ("agent:main:other", tree),
        ("agent:main:nobody", tree),
        ("agent:x:y", cross),
    ]:
        out = search(filled, CALLER, {"query": "zebra", "sessionKey": key})
        assert out == {"status": "forbidden", "error": text}, key
    # a session id (or id-shaped value) that names no session is OpenClaw's "not found"
    missing = search(filled, CALLER, {"query": "zebra", "sessionKey": "nothing-here"})
    assert missing == {
        "status": "error",
        "error": "Session not found: nothing-here (use the full sessionKey from sessions_list)",
    }


# --------------------------------------------------------------------------- sessions_history


def test_history_takes_camel_case_arguments(filled: TranscriptStore) -> None:
    out = history(
        filled,
        CALLER,
        {"sessionKey": ME, "messageId": "m3", "sessionId": "s1", "limit": 3, "includeTools": True},
    )
    assert out == filled.history(
        CALLER, ME, message_id="m3", session_id="s1", limit=3, include_tools=True
    )
    assert [m["__openclaw"]["id"] for m in out["messages"]] == ["m2", "m3", "m4"]
    paged = history(filled, CALLER, {"sessionKey": ME, "limit": 2, "offset": 1})
    assert [m["__openclaw"]["id"] for m in paged["messages"]] == ["m4", "m5"]
    assert paged["nextOffset"] == 3
    assert json.loads(json.dumps(paged)) == paged


def test_history_reads_snake_case_aliases_and_numeric_strings(filled: TranscriptStore) -> None:
    camel = history(
        filled,
        CALLER,
        {"sessionKey": ME, "messageId": "m3", "sessionId": "s1", "limit": 3, "includeTools": 1},
    )
    snake = history(
        filled,
        CALLER,
        {
            "session_key": ME,
            "message_id": "m3",
            "session_id": "s1",
            "limit": "3",
            "include_tools": "x",
        },
    )
    assert snake == camel
    paged = history(filled, CALLER, {"sessionKey": ME, "limit": "2", "offset": "1"})
    assert [m["__openclaw"]["id"] for m in paged["messages"]] == ["m4", "m5"]


@pytest.mark.parametrize(
    ("value", "included"),
    [
        (True, True),
        ("true", True),
        ("false", True),  # JavaScript truthiness: a non-empty string is true
        ([], True),
        ({}, True),
        (1, True),
        (False, False),
        (0, False),
        ("", False),
        (None, False),
        (float("nan"), False),
    ],
)
def test_include_tools_is_javascript_truthiness(
    store: TranscriptStore, value: Any, included: bool
) -> None:
    store.create_session("s1", ME)
    store.append_many(
        "s1",
        [
            {
                "type": "message",
                "id": "a",
                "parentId": None,
                "message": {"role": "user", "content": "run it"},
            },
            {
                "type": "message",
                "id": "t",
                "parentId": "a",
                "message": {"role": "toolResult", "toolName": "exec", "content": "done"},
            },
        ],
    )
    out = history(store, CALLER, {"sessionKey": ME, "includeTools": value})
    assert [m["__openclaw"]["id"] for m in out["messages"]] == (["a", "t"] if included else ["a"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"sessionKey": ME, "offset": -1}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": 1.5}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": "one"}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": None}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": ""}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": True}, "offset must be a non-negative integer"),
        (
            {"sessionKey": ME, "offset": 1, "messageId": "m1"},
            "offset and messageId cannot be used together",
        ),
        ({"sessionKey": ME, "sessionId": "s1"}, "sessionId requires messageId"),
        ({"sessionKey": ME, "limit": 0}, "limit must be a positive integer"),
        ({"sessionKey": ME, "limit": "many"}, "limit must be a positive integer"),
        ({}, "sessionKey required"),
        ({"sessionKey": ""}, "sessionKey required"),
        ({"sessionKey": "   "}, "sessionKey required"),
        ({"sessionKey": None}, "sessionKey required"),
        ({"sessionKey": 7}, "sessionKey required"),
        (
            {"sessionKey": ME, "messageId": "o0", "sessionId": "other"},
            "sessionId does not belong to sessionKey",
        ),
    ],
)
def test_history_errors_are_results_with_openclaws_messages(
    filled: TranscriptStore, args: dict[str, Any], message: str
) -> None:
    assert history(filled, CALLER, args) == {"status": "error", "error": message}


@pytest.mark.parametrize(
    "args",
    [
        {"sessionKey": ME, "messageId": 5},  # not a string: not given
        {"sessionKey": ME, "sessionId": 5},
        {"sessionKey": ME, "query": "zebra"},  # unknown: ignored
        {"sessionKey": ME, "visibility": "all"},
    ],
)
def test_history_ignores_what_openclaw_ignores(
    filled: TranscriptStore, args: dict[str, Any]
) -> None:
    assert history(filled, CALLER, args) == filled.history(CALLER, ME)


@pytest.mark.parametrize("args", [None, ME, [ME], 1])
def test_history_arguments_must_be_an_object(filled: TranscriptStore, args: Any) -> None:
    assert history(filled, CALLER, args) == {"status": "error", "error": "sessionKey required"}


def test_history_forbidden_keys_are_results(filled: TranscriptStore) -> None:
    for key in ("agent:main:other", "agent:main:nobody", "agent:x:y"):
        assert history(filled, CALLER, {"sessionKey": key})["status"] == "forbidden", key


# --------------------------------------------------------------------------- schemas

SCHEMAS = {
    "sessions_search": (tools.SESSIONS_SEARCH_SCHEMA, []),  # query, or queries
    "sessions_history": (tools.SESSIONS_HISTORY_SCHEMA, ["sessionKey"]),
}
OUTPUT_SCHEMAS = {
    "sessions_search": tools.SESSIONS_SEARCH_OUTPUT_SCHEMA,
    "sessions_history": tools.SESSIONS_HISTORY_OUTPUT_SCHEMA,
}


def _check_property(name: str, prop: dict[str, Any]) -> None:
    assert isinstance(prop, dict), name
    assert isinstance(prop.get("description"), str) and prop["description"].strip(), name
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    assert types and set(types) <= JSON_TYPES, name
    if "enum" in prop:
        assert prop["enum"] and len(set(prop["enum"])) == len(prop["enum"]), name
        assert all(isinstance(v, str) for v in prop["enum"]) == ("string" in types), name
        if "default" in prop:
            assert prop["default"] in prop["enum"], name
    if "minimum" in prop and "maximum" in prop:
        assert prop["minimum"] <= prop["maximum"], name
    if "default" in prop and "integer" in types and "enum" not in prop:
        assert isinstance(prop["default"], int), name
        assert prop.get("minimum", prop["default"]) <= prop["default"], name
        assert prop["default"] <= prop.get("maximum", prop["default"]), name
    if "default" in prop and types == ["boolean"]:
        assert isinstance(prop["default"], bool), name


@pytest.mark.parametrize("tool", list(SCHEMAS))
def test_schema_structure(tool: str) -> None:
    schema, required = SCHEMAS[tool]
    assert json.loads(json.dumps(schema)) == schema  # plain JSON
    assert schema["type"] == "object"
    assert isinstance(schema.get("description"), str) and schema["description"].strip()
    assert schema.get("required", []) == required
    assert set(required) <= set(schema["properties"])
    # like OpenClaw's TypeBox objects, other arguments are allowed (and ignored)
    assert "additionalProperties" not in schema
    for name, prop in schema["properties"].items():
        _check_property(name, prop)


def test_search_schema_matches_openclaws_bounds() -> None:
    props = tools.SESSIONS_SEARCH_SCHEMA["properties"]
    assert props["query"]["type"] == "string"
    assert props["query"].get("maxLength") == 4096
    assert props["query"]["pattern"] == "\\S"  # blank queries fail at the schema, as in OpenClaw
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["minimum"] == 1
    assert props["limit"]["maximum"] == 25
    assert props["limit"].get("default", 10) == 10
    assert props["queries"]["minItems"] == 1
    assert props["queries"]["maxItems"] == 8
    assert set(props["role"]["enum"]) == {"user", "assistant"}
    assert set(props["order"]["enum"]) == {"relevance", "recent"}
    assert set(props) == {
        "query",
        "queries",
        "sessionKey",
        "limit",
        "role",
        "since",
        "until",
        "order",
        "group",  # the plugin's one-hit-per-session extension (docs/tools.md)
    }
    check = jsonschema.Draft202012Validator(tools.SESSIONS_SEARCH_SCHEMA)
    assert not check.is_valid({"query": ""})
    assert not check.is_valid({"query": "   "})
    assert check.is_valid({"query": "  loan  "})


def test_history_schema_properties() -> None:
    props = tools.SESSIONS_HISTORY_SCHEMA["properties"]
    assert set(props) == {"sessionKey", "limit", "offset", "messageId", "sessionId", "includeTools"}
    assert props["offset"]["type"] == "integer"
    assert props["offset"]["minimum"] == 0
    assert props["limit"]["default"] == 200
    assert "maximum" not in props["limit"]  # a larger limit is clamped, never refused
    assert props["includeTools"]["type"] == "boolean"
    assert props["includeTools"].get("default", False) is False


@pytest.mark.parametrize("tool", list(SCHEMAS))
def test_schemas_are_valid_json_schema(tool: str) -> None:
    schema, _ = SCHEMAS[tool]
    jsonschema.validators.validator_for(schema).check_schema(schema)
    output = OUTPUT_SCHEMAS[tool]
    jsonschema.validators.validator_for(output).check_schema(output)


@pytest.mark.parametrize(
    "extra",
    [
        {"sessionId": "s1"},  # OpenClaw's history schema has no sessionId: it would break hosts
        {"droppedMessages": 3},
        {"unknown": True},
    ],
)
def test_history_output_schema_refuses_fields_openclaw_does_not_have(
    filled: TranscriptStore, extra: dict[str, Any]
) -> None:
    out = history(filled, CALLER, {"sessionKey": ME})
    check = jsonschema.Draft202012Validator(tools.SESSIONS_HISTORY_OUTPUT_SCHEMA)
    assert check.is_valid(out)
    assert not check.is_valid({**out, **extra})


def test_search_output_schema_refuses_fields_openclaw_does_not_have(
    filled: TranscriptStore,
) -> None:
    out = search(filled, CALLER, {"query": "zebra"})
    check = jsonschema.Draft202012Validator(tools.SESSIONS_SEARCH_OUTPUT_SCHEMA)
    assert check.is_valid(out)
    assert not check.is_valid({**out, "indexing": False})
    assert not check.is_valid({**out, "results": [{**out["results"][0], "queryIndex": 0}]})
    assert not check.is_valid({"status": "denied", "error": "x"})


def _valid_value(prop: dict[str, Any]) -> Any:
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "x", "integer": prop.get("minimum", 1), "boolean": False, "array": ["x"]}[
        types[0]
    ]


def test_every_search_schema_property_is_accepted_by_the_adapter(
    filled: TranscriptStore,
) -> None:
    schema = tools.SESSIONS_SEARCH_SCHEMA
    for name, prop in schema["properties"].items():
        args = {"query": "zebra", name: _valid_value(prop)}
        if name == "sessionKey":
            args[name] = ME
        if name in ("since", "until"):
            args[name] = T0 if name == "since" else T0 + 10_000_000
        out = search(filled, CALLER, args)
        assert "status" not in out, (name, out)


def test_every_history_schema_property_is_accepted_by_the_adapter(
    filled: TranscriptStore,
) -> None:
    values = {"limit": 2, "offset": 1, "includeTools": True}
    for name in tools.SESSIONS_HISTORY_SCHEMA["properties"]:
        args: dict[str, Any] = {"sessionKey": ME}
        if name == "messageId":
            args["messageId"] = "m2"
        elif name == "sessionId":
            args.update(messageId="m2", sessionId="s1")
        elif name != "sessionKey":
            args[name] = values[name]
        out = history(filled, CALLER, args)
        assert "status" not in out, (name, out)
        assert out["messages"], name
