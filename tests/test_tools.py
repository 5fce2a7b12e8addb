"""The tool adapters ``openclaw_fts.tools.sessions_search`` / ``sessions_history``.

They take the tool's JSON arguments (camelCase), always return a JSON-ready dict and never
raise for bad arguments; their JSON Schemas describe exactly the arguments they accept.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from factories import chain

from openclaw_fts import Caller, TranscriptStore, tools

ME = "agent:main:main"
CALLER = Caller(ME)
T0 = 1_790_000_000_000
JSON_TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


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
    out = tools.sessions_search(filled, CALLER, args)
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
    out = tools.sessions_search(filled, CALLER, {"query": "zebra"})
    assert {r["sessionKey"] for r in out["results"]} == {ME, "agent:main:kid"}
    assert len(out["results"]) == 7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, "query must not be empty"),
        ({"query": "   "}, "query must not be empty"),
        ({}, "query must not be empty"),
        ({"query": None}, "query must not be empty"),
        ({"query": "x" * 4097}, "query must not exceed 4096 characters"),
        ({"query": "zebra", "limit": 0}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": -1}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": 26}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": 2.5}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": "5"}, "limit must be a positive integer"),
        ({"query": "zebra", "limit": True}, "limit must be a positive integer"),
    ],
)
def test_search_errors_are_results_with_openclaws_messages(
    filled: TranscriptStore, args: dict[str, Any], message: str
) -> None:
    assert tools.sessions_search(filled, CALLER, args) == {"status": "error", "error": message}


@pytest.mark.parametrize(
    "args",
    [
        {"query": "zebra", "role": "system"},
        {"query": "zebra", "order": "oldest"},
        {"query": "zebra", "since": "not a time"},
        {"query": "zebra", "sessionKey": ""},
        {"query": "zebra", "sessionKey": 42},
        {"query": 42},
        {"query": ["zebra"]},
    ],
)
def test_other_bad_search_arguments_never_raise(
    filled: TranscriptStore, args: dict[str, Any]
) -> None:
    out = tools.sessions_search(filled, CALLER, args)
    assert set(out) == {"status", "error"}
    assert out["status"] == "error"
    assert isinstance(out["error"], str) and out["error"]


@pytest.mark.parametrize("name", ["session_key", "maxResults", "Query", "visibility", ""])
def test_unknown_search_argument_is_an_error(filled: TranscriptStore, name: str) -> None:
    out = tools.sessions_search(filled, CALLER, {"query": "zebra", name: 1})
    assert out["status"] == "error"
    assert name in out["error"] or "unknown" in out["error"]
    assert set(out) == {"status", "error"}


@pytest.mark.parametrize("args", [None, "zebra", ["zebra"], 3])
def test_search_arguments_must_be_an_object(filled: TranscriptStore, args: Any) -> None:
    out = tools.sessions_search(filled, CALLER, args)
    assert set(out) == {"status", "error"}
    assert out["status"] == "error"


def test_search_forbidden_and_unknown_keys_are_results(filled: TranscriptStore) -> None:
    forbidden = tools.sessions_search(
        filled, CALLER, {"query": "zebra", "sessionKey": "agent:main:other"}
    )
    assert forbidden["status"] == "forbidden"
    unknown = tools.sessions_search(filled, CALLER, {"query": "zebra", "sessionKey": "agent:x:y"})
    assert unknown["status"] == "error"


# --------------------------------------------------------------------------- sessions_history


def test_history_takes_camel_case_arguments(filled: TranscriptStore) -> None:
    out = tools.sessions_history(
        filled,
        CALLER,
        {"sessionKey": ME, "messageId": "m3", "sessionId": "s1", "limit": 3, "includeTools": True},
    )
    assert out == filled.history(
        CALLER, ME, message_id="m3", session_id="s1", limit=3, include_tools=True
    )
    assert [m["__openclaw"]["id"] for m in out["messages"]] == ["m2", "m3", "m4"]
    paged = tools.sessions_history(filled, CALLER, {"sessionKey": ME, "limit": 2, "offset": 1})
    assert [m["__openclaw"]["id"] for m in paged["messages"]] == ["m4", "m5"]
    assert paged["nextOffset"] == 3
    assert json.loads(json.dumps(paged)) == paged


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"sessionKey": ME, "offset": -1}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": 1.5}, "offset must be a non-negative integer"),
        ({"sessionKey": ME, "offset": "1"}, "offset must be a non-negative integer"),
        (
            {"sessionKey": ME, "offset": 1, "messageId": "m1"},
            "offset and messageId cannot be used together",
        ),
        ({"sessionKey": ME, "sessionId": "s1"}, "sessionId requires messageId"),
        ({"sessionKey": ME, "limit": 0}, "limit must be a positive integer"),
    ],
)
def test_history_errors_are_results_with_openclaws_messages(
    filled: TranscriptStore, args: dict[str, Any], message: str
) -> None:
    assert tools.sessions_history(filled, CALLER, args) == {"status": "error", "error": message}


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"sessionKey": ""},
        {"sessionKey": None},
        {"sessionKey": 7},
        {"sessionKey": ME, "includeTools": "yes"},
        {"sessionKey": ME, "messageId": 5},
        {"sessionKey": ME, "messageId": "m1", "sessionId": 5},
        {"sessionKey": ME, "session_key": ME},
        {"sessionKey": ME, "include_tools": True},
        {"sessionKey": ME, "query": "zebra"},
    ],
)
def test_bad_history_arguments_never_raise(filled: TranscriptStore, args: dict[str, Any]) -> None:
    out = tools.sessions_history(filled, CALLER, args)
    assert set(out) == {"status", "error"}
    assert out["status"] == "error"
    assert isinstance(out["error"], str) and out["error"]


@pytest.mark.parametrize("args", [None, ME, [ME], 1])
def test_history_arguments_must_be_an_object(filled: TranscriptStore, args: Any) -> None:
    out = tools.sessions_history(filled, CALLER, args)
    assert set(out) == {"status", "error"}
    assert out["status"] == "error"


def test_history_forbidden_and_unknown_are_results(filled: TranscriptStore) -> None:
    assert (
        tools.sessions_history(filled, CALLER, {"sessionKey": "agent:main:other"})["status"]
        == "forbidden"
    )
    assert tools.sessions_history(filled, CALLER, {"sessionKey": "agent:x:y"})["status"] == "error"
    other = tools.sessions_history(
        filled, CALLER, {"sessionKey": ME, "messageId": "o0", "sessionId": "other"}
    )
    assert other["status"] == "error"


# --------------------------------------------------------------------------- schemas

SCHEMAS = {
    "sessions_search": (tools.SESSIONS_SEARCH_SCHEMA, ["query"]),
    "sessions_history": (tools.SESSIONS_HISTORY_SCHEMA, ["sessionKey"]),
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
    assert schema["required"] == required
    assert set(schema["required"]) <= set(schema["properties"])
    assert schema.get("additionalProperties") is False
    for name, prop in schema["properties"].items():
        _check_property(name, prop)


def test_search_schema_matches_openclaws_bounds() -> None:
    props = tools.SESSIONS_SEARCH_SCHEMA["properties"]
    assert props["query"]["type"] == "string"
    assert props["query"].get("maxLength") == 4096
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["minimum"] == 1
    assert props["limit"]["maximum"] == 25
    assert props["limit"].get("default", 10) == 10
    assert set(props["role"]["enum"]) == {"user", "assistant"}
    assert set(props["order"]["enum"]) == {"relevance", "recent"}
    assert set(props) == {"query", "sessionKey", "limit", "role", "since", "until", "order"}


def test_history_schema_properties() -> None:
    props = tools.SESSIONS_HISTORY_SCHEMA["properties"]
    assert set(props) == {"sessionKey", "limit", "offset", "messageId", "sessionId", "includeTools"}
    assert props["offset"]["type"] == "integer"
    assert props["offset"]["minimum"] == 0
    assert props["includeTools"]["type"] == "boolean"
    assert props["includeTools"].get("default", False) is False


@pytest.mark.parametrize("tool", list(SCHEMAS))
def test_schema_is_valid_json_schema(tool: str) -> None:
    if importlib.util.find_spec("jsonschema") is None:
        pytest.skip("jsonschema is not installed (the structure is checked above)")
    import jsonschema

    schema, _ = SCHEMAS[tool]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)


def _valid_value(prop: dict[str, Any]) -> Any:
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "x", "integer": prop.get("minimum", 1), "boolean": False}[types[0]]


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
        out = tools.sessions_search(filled, CALLER, args)
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
        out = tools.sessions_history(filled, CALLER, args)
        assert "status" not in out, (name, out)
        assert out["messages"], name
