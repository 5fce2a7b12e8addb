"""The tool contract as real OpenClaw has it (docs/tools.md), through the public API.

Incognito session keys, the forbidden texts (the same whether or not the key exists), the
``current`` / ``main`` / ``global`` / session-id aliases, ``sessions_history``'s default limit,
clamp, 1-based ``seq`` and older-incarnation fallback, and batch search. Every result is also
checked against the output schemas by the conftest fixture.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import check_search_output
from factories import chain, events_file, msg

from openclaw_fts import AgentToAgent, Caller, ToolInputError, TranscriptStore, tools
from openclaw_fts.history import CHAT_HISTORY_MAX_ENTRIES, DEFAULT_HISTORY_LIMIT
from openclaw_fts.search import MAX_BATCH_QUERIES
from openclaw_fts.visibility import is_incognito_session_key

pytestmark = pytest.mark.both_engines

ME = "agent:main:main"
ALL = Caller(ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True))

# --------------------------------------------------------------------------- incognito keys

INCOGNITO_KEYS = [
    "agent:main:dashboard:incognito-abc",
    "agent:main:subagent:incognito-7",
    "agent:ops:internal-session-effects:incognito-x",
    "  AGENT:Main:Dashboard:Incognito-Loud  ",
    "\t\vagent:main:subagent:INCOGNITO-tabs\r\n\f",  # every trimmed character
]
ORDINARY_KEYS = [
    "agent:main:incognito",  # a flag-less name: not the key shape
    "agent:main:dashboard:incognito-",  # no name
    "agent::dashboard:incognito-x",  # no agent
    "agent:main:dashboard:incognito-x:more",  # one part too many
    "agent:main:other:incognito-x",  # not one of the kinds
    "agent:main:dashboard:incognitox",
    "dashboard:incognito-x",  # not an agent key
    "agent:main:dashboard:incognito_x",  # LIKE's "_" is not a wildcard here
]


@pytest.mark.parametrize("key", INCOGNITO_KEYS)
def test_incognito_key_shapes(key: str) -> None:
    assert is_incognito_session_key(key)


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_ordinary_key_shapes(key: str) -> None:
    assert not is_incognito_session_key(key)


def test_sql_and_python_agree_on_incognito_keys(store: TranscriptStore) -> None:
    # Visibility is decided in SQL; the explicit-key check in Python: they must agree.
    for i, key in enumerate(INCOGNITO_KEYS + ORDINARY_KEYS):
        store.create_session(f"k{i}", key)
        store.append(f"k{i}", msg(f"m{i}", f"zebra word{i}"))
    found = {r["sessionKey"] for r in store.search(ALL, "zebra", limit=25)["results"]}
    assert found == set(ORDINARY_KEYS)


def test_an_incognito_key_is_never_searched_or_read(store: TranscriptStore) -> None:
    key = "agent:main:dashboard:incognito-private"
    store.create_session("inc", key)  # no incognito flag: the key shape alone decides
    store.append_many("inc", chain(["zebra private plans", "more private"]))
    store.create_session("own", ME)
    store.append_many("own", chain(["zebra public"], prefix="o"))
    denied = {"status": "forbidden", "error": f"Session not visible from session tools: {key}"}
    for caller in (
        ALL,
        Caller(ME, visibility="agent"),
        Caller(key),
        Caller(key, visibility="self"),
    ):
        assert "private" not in json.dumps(store.search(caller, "zebra"))
        assert store.search(caller, "zebra", session_key=key) == denied
        assert store.history(caller, key) == denied
        assert store.history(caller, key, message_id="m0") == denied
    # by its session id as well (the text names what was asked for)
    assert store.history(ALL, "inc") == {
        "status": "forbidden",
        "error": "Session not visible from session tools: inc",
    }
    # and by its own caller through "current"
    assert store.history(Caller(key), "current")["status"] == "forbidden"


def test_an_incognito_caller_sees_its_other_sessions(store: TranscriptStore) -> None:
    key = "agent:main:subagent:incognito-run"
    store.create_session("kid", "agent:main:kid", spawned_by=key)
    store.append_many("kid", chain(["zebra from the kid"]))
    out = store.search(Caller(key), "zebra")
    assert [r["sessionKey"] for r in out["results"]] == ["agent:main:kid"]


# --------------------------------------------------------------------------- forbidden texts

SELF = (
    "Session {a} visibility is restricted to the current session (tools.sessions.visibility=self)."
)
TREE = (
    "Session {a} visibility is restricted to the current session tree "
    "(tools.sessions.visibility=tree)."
)
CROSS = (
    "Session {a} visibility is restricted. Set tools.sessions.visibility=all to allow "
    "cross-agent access; use tools.agentToAgent to restrict permitted agent pairs."
)
A2A_OFF = (
    "Agent-to-agent {a} is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent "
    "access."
)
A2A_DENIED = "Agent-to-agent {a} denied by tools.agentToAgent.allow."

DENIALS: list[tuple[str, Caller, str, str]] = [
    ("self", Caller(ME, visibility="self"), "agent:main:other", SELF),
    ("tree", Caller(ME), "agent:main:other", TREE),
    ("agent-cross", Caller(ME, visibility="agent"), "agent:ops:other", CROSS),
    ("tree-cross", Caller(ME), "agent:ops:other", CROSS),
    ("all-a2a-off", Caller(ME, visibility="all"), "agent:ops:other", A2A_OFF),
    (
        "all-a2a-not-allowed",
        Caller(ME, visibility="all", agent_to_agent=AgentToAgent(True, ["main", "research"])),
        "agent:ops:other",
        A2A_DENIED,
    ),
    (
        "sandboxed",
        Caller(ME, visibility="all", sandboxed=True, agent_to_agent=AgentToAgent(True)),
        "agent:main:other",
        TREE,
    ),
]


@pytest.mark.parametrize(("name", "caller", "key", "text"), DENIALS, ids=[d[0] for d in DENIALS])
@pytest.mark.parametrize("exists", [True, False])
def test_forbidden_answers_the_same_whether_the_key_exists(
    store: TranscriptStore, name: str, caller: Caller, key: str, text: str, exists: bool
) -> None:
    store.create_session("own", ME)
    if exists:
        store.create_session("target", key)
        store.append_many("target", chain(["zebra hidden words"]))
    assert store.search(caller, "zebra", session_key=key) == {
        "status": "forbidden",
        "error": text.format(a="search"),
    }
    assert store.history(caller, key) == {"status": "forbidden", "error": text.format(a="history")}
    assert store.history(caller, key, message_id="m0")["status"] == "forbidden"


# --------------------------------------------------------------------------- aliases


@pytest.fixture
def aliased(store: TranscriptStore) -> TranscriptStore:
    store.create_session("11111111-2222-4333-8444-555555555555", ME)
    store.append_many("11111111-2222-4333-8444-555555555555", chain(["zebra main talk"]))
    store.create_session("kid", "agent:main:kid", spawned_by=ME)
    store.append_many("kid", chain(["zebra kid talk"], prefix="k"))
    store.create_session("g", "global")
    store.append_many("g", chain(["zebra global talk"], prefix="g"))
    return store


def _keys(out: dict[str, Any]) -> set[str]:
    return {r["sessionKey"] for r in out["results"]}


def test_current_is_the_callers_own_key(aliased: TranscriptStore) -> None:
    kid = Caller("agent:main:kid", visibility="self")
    assert _keys(aliased.search(kid, "zebra", session_key="current")) == {"agent:main:kid"}
    out = aliased.history(kid, "current")
    assert out["sessionKey"] == "agent:main:kid"
    assert [m["content"] for m in out["messages"]] == ["zebra kid talk"]


def test_main_is_the_callers_agents_main_session(aliased: TranscriptStore) -> None:
    kid = Caller("agent:main:kid", visibility="agent")
    assert _keys(aliased.search(kid, "zebra", session_key="main")) == {ME}
    assert aliased.history(kid, "main")["sessionKey"] == ME
    # a caller that may not see it is told so, as for the key itself
    denied = aliased.history(Caller("agent:main:kid", visibility="self"), "main")
    assert denied == {"status": "forbidden", "error": SELF.format(a="history")}


def test_global_is_a_key(aliased: TranscriptStore) -> None:
    wide = Caller(ME, visibility="agent")
    assert _keys(aliased.search(wide, "zebra", session_key="global")) == {"global"}
    assert aliased.history(wide, "global")["sessionKey"] == "global"


@pytest.mark.parametrize("session_id", ["11111111-2222-4333-8444-555555555555", "kid"])
def test_a_session_id_resolves_to_its_key(aliased: TranscriptStore, session_id: str) -> None:
    key = ME if session_id.startswith("1111") else "agent:main:kid"
    out = tools.sessions_search(aliased, Caller(ME), {"query": "zebra", "sessionKey": session_id})
    assert _keys(check_search_output(out)) == {key}
    assert aliased.history(Caller(ME), session_id)["sessionKey"] == key


def test_a_session_id_reads_its_keys_current_incarnation(store: TranscriptStore) -> None:
    store.create_session("old", ME)
    store.append_many("old", chain(["old life"], prefix="o"))
    store.create_session("new", ME)
    store.append_many("new", chain(["new life"], prefix="n"))
    out = store.history(Caller(ME), "old")
    assert out["sessionKey"] == ME
    assert [m["content"] for m in out["messages"]] == ["new life"]


@pytest.mark.parametrize("raw", ["99999999-2222-4333-8444-555555555555", "no-such-thing"])
def test_a_session_id_that_names_nothing_is_not_found(aliased: TranscriptStore, raw: str) -> None:
    expected = {
        "status": "error",
        "error": f"Session not found: {raw} (use the full sessionKey from sessions_list)",
    }
    assert aliased.search(ALL, "zebra", session_key=raw) == expected
    assert aliased.history(ALL, raw) == expected
    # a sandboxed caller is told it may not see it instead
    boxed = Caller(ME, sandboxed=True)
    assert aliased.history(boxed, raw) == {
        "status": "forbidden",
        "error": f"Session not visible from this sandboxed agent session: {raw}",
    }


def test_a_sandboxed_caller_cannot_resolve_ids_it_did_not_spawn(aliased: TranscriptStore) -> None:
    boxed = Caller("agent:main:kid", sandboxed=True)
    assert aliased.history(boxed, "g")["status"] == "forbidden"
    assert aliased.history(boxed, "current")["sessionKey"] == "agent:main:kid"


# --------------------------------------------------------------------------- sessions_history


@pytest.fixture
def long_session(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", ME)
    store.append_many(
        "s1", [msg(f"m{i}", "x", parent=f"m{i - 1}" if i else None) for i in range(1005)]
    )
    return store


def test_history_default_limit_is_200(long_session: TranscriptStore) -> None:
    out = long_session.history(Caller(ME), ME)
    assert len(out["messages"]) == DEFAULT_HISTORY_LIMIT == 200
    assert out["hasMore"] is True and out["nextOffset"] == 200
    assert out["totalMessages"] == 1005


@pytest.mark.parametrize("limit", [CHAT_HISTORY_MAX_ENTRIES + 1, 5000, 10**12])
def test_a_larger_limit_is_clamped_to_1000_not_refused(
    long_session: TranscriptStore, limit: int
) -> None:
    out = long_session.history(Caller(ME), ME, limit=limit)
    assert "status" not in out
    clamped = long_session.history(Caller(ME), ME, limit=CHAT_HISTORY_MAX_ENTRIES)
    assert out == clamped
    assert out["hasMore"] is True  # 1005 messages: 5 older ones are left for the next page
    assert CHAT_HISTORY_MAX_ENTRIES == 1000
    via_tool = tools.sessions_history(long_session, Caller(ME), {"sessionKey": ME, "limit": limit})
    assert via_tool == clamped


def test_seq_is_the_1_based_transcript_position(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many(
        "s1",
        [
            msg("a", "first"),
            {"type": "custom", "id": "c", "parentId": "a", "customType": "note"},
            msg("b", "second", role="assistant", parent="c"),
        ],
    )
    out = store.history(Caller(ME), ME)
    assert [(m["__openclaw"]["seq"], m["__openclaw"]["id"]) for m in out["messages"]] == [
        (1, "a"),
        (3, "b"),
    ]


def test_history_has_exactly_openclaws_fields(store: TranscriptStore) -> None:
    store.create_session("s1", ME)
    store.append_many("s1", chain(["a", "b", "c"]))
    paged = store.history(Caller(ME), ME, limit=2)
    assert set(paged) == {
        "sessionKey",
        "messages",
        "truncated",
        "droppedMessages",
        "contentTruncated",
        "contentRedacted",
        "bytes",
        "offset",
        "nextOffset",
        "hasMore",
        "totalMessages",
    }
    anchored = store.history(Caller(ME), ME, message_id="m1")
    assert "sessionId" not in anchored and "offset" not in anchored


def test_a_message_of_an_older_incarnation_is_found_there(store: TranscriptStore) -> None:
    # e.g. an imported <id>.jsonl.reset.<ts> archive: the same key, an older session row
    store.create_session("archived", ME)
    store.append_many("archived", chain(["zebra before the reset", "b", "c", "d"], prefix="o"))
    store.create_session("current", ME)
    store.append_many("current", chain(["after the reset"], prefix="n"))
    hit = store.search(Caller(ME), "zebra")["results"][0]
    assert (hit["sessionId"], hit["messageId"]) == ("archived", "o0")
    out = store.history(Caller(ME), ME, message_id="o2", limit=3)
    assert [m["__openclaw"]["id"] for m in out["messages"]] == ["o1", "o2", "o3"]
    assert out["sessionKey"] == ME and out["totalMessages"] == 4
    # the newest incarnation holding the message wins; without a messageId the newest is read
    assert [m["__openclaw"]["id"] for m in store.history(Caller(ME), ME)["messages"]] == ["n0"]
    via_tool = tools.sessions_history(store, Caller(ME), {"sessionKey": ME, "messageId": "o0"})
    assert [m["__openclaw"]["id"] for m in via_tool["messages"]] == ["o0", "o1", "o2", "o3"]


def test_the_fallback_never_reads_an_incarnation_the_caller_may_not_see(
    store: TranscriptStore,
) -> None:
    # an older incarnation owned by someone else is not visible to this (tree) caller
    store.create_session("theirs", "agent:main:shared", owner_session_key="agent:main:boss")
    store.append_many("theirs", chain(["zebra theirs"], prefix="t"))
    store.create_session("mine", "agent:main:shared", owner_session_key=ME)
    store.append_many("mine", chain(["zebra mine"], prefix="n"))
    out: Any = store.history(Caller(ME), "agent:main:shared", message_id="t0")
    # for this caller the message does not exist: the same error as an unknown id, no window
    unknown: Any = store.history(Caller(ME), "agent:main:shared", message_id="no-such-id")
    assert "messages" not in out and out["status"] == unknown["status"] == "error"
    assert out["error"].replace("t0", "<id>") == unknown["error"].replace("no-such-id", "<id>")


# --------------------------------------------------------------------------- batch search


@pytest.fixture
def zoo(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", ME)
    store.append_many(
        "s1", chain(["zebra crossing", "lion king", "zebra and lion", "tiger", "zebra stripes"])
    )
    return store


def test_batch_runs_each_query_and_names_it(zoo: TranscriptStore) -> None:
    out = zoo.search(Caller(ME), "zebra", queries=["lion", "tiger"])
    assert out["batch"] is True
    assert out["queries"] == ["zebra", "lion", "tiger"]
    by_query = [
        sorted(r["messageId"] for r in out["results"] if r["queryIndex"] == i) for i in range(3)
    ]
    assert by_query == [["m0", "m2", "m4"], ["m1", "m2"], ["m3"]]
    # each query's hits are those of the same query alone, in the same order
    for i, text in enumerate(out["queries"]):
        alone = zoo.search(Caller(ME), text)["results"]
        mine = [{k: v for k, v in r.items() if k != "queryIndex"} for r in out["results"]]
        assert [r for r, q in zip(mine, out["results"], strict=True) if q["queryIndex"] == i] == (
            alone
        )


def test_batch_without_query_and_repeats(zoo: TranscriptStore) -> None:
    out = zoo.search(Caller(ME), None, queries=["lion", " lion ", "tiger"])
    assert out["queries"] == ["lion", "tiger"]
    out = tools.sessions_search(zoo, Caller(ME), {"queries": "tiger"})
    assert check_search_output(out)["queries"] == ["tiger"]


def test_batch_limit_is_per_query_and_truncation_is_named(zoo: TranscriptStore) -> None:
    out = zoo.search(Caller(ME), "zebra", queries=["tiger", "lion"], limit=1)
    assert [r["queryIndex"] for r in out["results"]] == [0, 1, 2]
    assert out["truncated"] is True
    assert out["truncatedQueries"] == [0, 2]
    untouched = zoo.search(Caller(ME), "tiger", queries=["nothing"], limit=1)
    assert "truncated" not in untouched and "truncatedQueries" not in untouched


def test_batch_while_indexing_names_every_query(tmp_path: Path, store: TranscriptStore) -> None:
    transcript = events_file(tmp_path / "t.jsonl", "imp", chain(["zebra imported"]))
    store.import_jsonl(transcript, session_key=ME)  # stored, not indexed yet
    out = store.search(Caller(ME), "zebra", queries=["lion"])
    assert out["indexing"] is True and out["indexingQueries"] == [0, 1]
    assert "warning" in out


@pytest.mark.parametrize(
    ("query", "queries"),
    [
        ("zebra", []),
        (None, []),
        ("zebra", ["lion", ""]),
        ("zebra", ["lion", 5]),
        ("zebra", "lion"),
        (None, [f"q{i}" for i in range(MAX_BATCH_QUERIES + 1)]),
        ("zebra", [f"q{i}" for i in range(MAX_BATCH_QUERIES)]),
    ],
)
def test_bad_batches_are_refused(zoo: TranscriptStore, query: Any, queries: Any) -> None:
    with pytest.raises(ToolInputError) as info:
        zoo.search(Caller(ME), query, queries=queries)
    assert str(info.value) == f"queries must hold 1-{MAX_BATCH_QUERIES} non-empty strings"


def test_batch_through_the_adapter(zoo: TranscriptStore) -> None:
    args = {"query": "zebra", "queries": ["lion", 7, "  "], "limit": "2"}
    out = check_search_output(tools.sessions_search(zoo, Caller(ME), args))
    assert out["queries"] == ["zebra", "lion"]  # non-strings and blanks are dropped
    too_many = {"queries": [f"q{i}" for i in range(MAX_BATCH_QUERIES + 1)]}
    refused = check_search_output(tools.sessions_search(zoo, Caller(ME), too_many))
    assert refused["status"] == "error"
    # a batch with an explicit key the caller may not see is forbidden as a whole
    hidden = {"queries": ["zebra"], "sessionKey": "agent:main:other"}
    assert tools.sessions_search(zoo, Caller(ME), hidden)["status"] == "forbidden"


# --------------------------------------------------------------------------- command line


def test_cli_batch_search_and_aliases(tmp_path: Path) -> None:
    from test_cli import copy_examples, loads, ok, run, run_all

    db = ("--db", "store.sqlite")
    ok(run(tmp_path, *db, "import", str(copy_examples(tmp_path))))
    ok(run(tmp_path, *db, "reconcile"))
    batch, current, clamped, text = run_all(
        tmp_path,
        (*db, "search", "deployment", "-q", "postmortem", "--json"),
        (*db, "history", "current", "--as", "agent:main:main", "--json"),
        (*db, "history", "agent:main:main", "--limit", "5000", "--json"),
        (*db, "search", "deployment", "--query", "postmortem"),
    )
    out = check_search_output(loads(batch))
    assert out["batch"] is True and out["queries"] == ["deployment", "postmortem"]
    assert {r["queryIndex"] for r in out["results"]} <= {0, 1}
    mine = loads(current)
    assert mine["sessionKey"] == "agent:main:main" and mine["messages"]
    assert "sessionId" not in mine
    assert loads(clamped) == mine  # 5000 is clamped to 1000, which holds everything here
    printed = ok(text).stdout
    assert "Query 1: deployment" in printed and "Query 2: postmortem" in printed


def test_messages_quote_a_bounded_piece_of_a_huge_key(store: TranscriptStore) -> None:
    huge = "x" * 100_000  # shaped like a session id: looked up, not found
    out = store.history(ALL, huge)
    assert out["status"] == "error" and "(100,000 characters)" in out["error"]
    assert len(out["error"]) < 300
    incognito = "agent:main:dashboard:incognito-" + "y" * 100_000
    denied = store.search(ALL, "zebra", session_key=incognito)
    assert denied["status"] == "forbidden" and len(denied["error"]) < 300
