"""Visibility (docs/tools.md): who sees which sessions, in search and in history alike.

A small world of sessions, each holding one message with the word "zebra" and a word naming
the session, is searched by callers with every visibility setting; the visible set of session
keys is compared with the one the rule defines. History must agree with search. Hidden
sessions must not change a search at all, and crafted keys must never widen what is seen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import AgentToAgent, Caller, ToolInputError, TranscriptStore
from openclaw_fts.models import AgentSession, TranscriptEvent

T0 = 1_790_000_000_000
ME = "agent:main:main"

# key -> (session id, create_session keyword arguments)
WORLD: dict[str, tuple[str, dict[str, Any]]] = {
    ME: ("own", {}),
    "agent:main:owned": ("owned", {"owner_session_key": ME}),
    "agent:main:spawned": ("spawned", {"spawned_by": ME}),
    "agent:main:child": ("child", {"parent_session_key": ME}),
    "agent:main:grandchild": ("grandchild", {"spawned_by": "agent:main:spawned"}),
    "agent:main:sibling": ("sibling", {}),
    "agent:main:archived": ("archived", {"archived": True}),
    "agent:main:archivedkid": ("archivedkid", {"archived": True, "spawned_by": ME}),
    "agent:main:incognito": ("incognito", {"incognito": True}),
    "agent:main:incognitokid": ("incognitokid", {"incognito": True, "spawned_by": ME}),
    "global": ("global", {}),  # no agent in the key: agent "main"
    "cron:nightly": ("cron", {"agent_id": "ops"}),
    "agent:ops:main": ("opsmain", {}),
    "agent:ops:task": ("opstask", {"owner_session_key": ME}),  # owned by me, other agent
    "agent:ops:kid": ("opskid", {"spawned_by": ME}),  # spawned by me, other agent
    "agent:research:main": ("research", {}),
    "agent:Research:upper": ("researchupper", {}),
}

MAIN_AGENT = {
    ME,
    "agent:main:owned",
    "agent:main:spawned",
    "agent:main:child",
    "agent:main:grandchild",
    "agent:main:sibling",
    "agent:main:archived",
    "agent:main:archivedkid",
    "global",
}
TREE = {
    ME,
    "agent:main:owned",
    "agent:main:spawned",
    "agent:main:child",
    "agent:main:archivedkid",
    "agent:ops:task",
    "agent:ops:kid",
}
OPS = {"cron:nightly", "agent:ops:main", "agent:ops:task", "agent:ops:kid"}
RESEARCH = {"agent:research:main", "agent:Research:upper"}
INCOGNITO = {"agent:main:incognito", "agent:main:incognitokid"}


def _word(session_id: str) -> str:
    return f"tag{session_id}"


def build_world(store: TranscriptStore) -> None:
    for i, (key, (sid, kwargs)) in enumerate(WORLD.items()):
        store.create_session(sid, key, **kwargs)
        store.append(
            sid,
            {
                "type": "message",
                "id": f"m-{sid}",
                "parentId": None,
                "timestamp": T0 + i,
                "message": {"role": "user", "content": f"zebra {_word(sid)}"},
            },
        )


@pytest.fixture
def world(store: TranscriptStore) -> TranscriptStore:
    build_world(store)
    return store


def searched(store: TranscriptStore, caller: Caller) -> set[str]:
    out = store.search(caller, "zebra", limit=25)
    assert set(out) == {"results"}  # nothing truncated, nothing pending
    keys = [r["sessionKey"] for r in out["results"]]
    assert len(keys) == len(set(keys))
    return set(keys)


def history_visible(store: TranscriptStore, caller: Caller) -> set[str]:
    seen = set()
    for key in WORLD:
        out = store.history(caller, key)
        if "status" in out:
            assert out["status"] == "forbidden", out
            assert set(out) == {"status", "error"}
        else:
            assert [m["__openclaw"]["id"] for m in out["messages"]] == [f"m-{WORLD[key][0]}"]
            seen.add(key)
    return seen


A2A_ANY = AgentToAgent(enabled=True)

CASES: list[tuple[str, Caller, set[str]]] = [
    ("self", Caller(ME, visibility="self"), {ME}),
    ("tree", Caller(ME, visibility="tree"), TREE),
    ("tree-default", Caller(ME), TREE),
    # "agent": the caller's own agent only, not the sessions it owns in another agent
    ("agent", Caller(ME, visibility="agent"), MAIN_AGENT),
    ("all-without-a2a", Caller(ME, visibility="all"), TREE | MAIN_AGENT),
    (
        "all-a2a-disabled-with-allow",
        Caller(ME, visibility="all", agent_to_agent=AgentToAgent(enabled=False, allow=["*"])),
        TREE | MAIN_AGENT,
    ),
    (
        "all-a2a-any",
        Caller(ME, visibility="all", agent_to_agent=A2A_ANY),
        TREE | MAIN_AGENT | OPS | RESEARCH,
    ),
    (
        "all-a2a-star",
        Caller(ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["*"])),
        TREE | MAIN_AGENT | OPS | RESEARCH,
    ),
    (
        "all-a2a-both-listed",
        Caller(
            ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["main", "ops"])
        ),
        TREE | MAIN_AGENT | OPS,
    ),
    (
        # the caller's own agent is not allowed: no other agent is visible
        "all-a2a-caller-not-allowed",
        Caller(ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["ops"])),
        TREE | MAIN_AGENT,
    ),
    (
        "all-a2a-case-insensitive",
        Caller(
            ME,
            visibility="all",
            agent_to_agent=AgentToAgent(enabled=True, allow=["MAIN", "RESEARCH"]),
        ),
        TREE | MAIN_AGENT | RESEARCH,
    ),
    (
        "all-a2a-wildcard-prefix",
        Caller(
            ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["ma*", "Res*"])
        ),
        TREE | MAIN_AGENT | RESEARCH,
    ),
    (
        "all-a2a-wildcard-suffix",
        Caller(
            ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["*ain", "*ps"])
        ),
        TREE | MAIN_AGENT | OPS,
    ),
    (
        # other agents are not visible under "agent", even with agent-to-agent enabled
        "agent-ignores-a2a",
        Caller(ME, visibility="agent", agent_to_agent=A2A_ANY),
        MAIN_AGENT,
    ),
    (
        "sandboxed-spawned",
        Caller(ME, visibility="all", sandboxed=True, agent_to_agent=A2A_ANY),
        {ME, "agent:main:spawned", "agent:main:archivedkid", "agent:ops:kid"},
    ),
    (
        "sandboxed-default-visibility",
        Caller(ME, sandboxed=True),
        {ME, "agent:main:spawned", "agent:main:archivedkid", "agent:ops:kid"},
    ),
    (
        "sandboxed-visibility-all",
        Caller(ME, visibility="agent", sandboxed=True, sandbox_visibility="all"),
        MAIN_AGENT,
    ),
    (
        "sandboxed-visibility-all-self",
        Caller(ME, visibility="self", sandboxed=True, sandbox_visibility="all"),
        {ME},
    ),
    (
        "not-sandboxed-ignores-sandbox-visibility",
        Caller(ME, visibility="tree", sandbox_visibility="spawned"),
        TREE,
    ),
    (
        "other-agent-caller",
        Caller("agent:ops:main", visibility="agent"),
        OPS,
    ),
    (
        "explicit-agent-id",
        Caller("global", visibility="agent", agent_id="ops"),
        {"global"} | OPS,
    ),
    (
        "other-agent-caller-all-a2a-main-only",
        Caller(
            "agent:ops:main", visibility="all", agent_to_agent=AgentToAgent(True, ["ops", "main"])
        ),
        OPS | MAIN_AGENT,
    ),
]


@pytest.mark.parametrize(("name", "caller", "expected"), CASES, ids=[c[0] for c in CASES])
def test_search_visibility_rule(
    world: TranscriptStore, name: str, caller: Caller, expected: set[str]
) -> None:
    assert searched(world, caller) == expected
    assert not (searched(world, caller) & INCOGNITO)


@pytest.mark.parametrize(("name", "caller", "expected"), CASES, ids=[c[0] for c in CASES])
def test_history_follows_the_same_rule(
    world: TranscriptStore, name: str, caller: Caller, expected: set[str]
) -> None:
    assert history_visible(world, caller) - INCOGNITO == expected


@pytest.mark.parametrize(("name", "caller", "expected"), CASES, ids=[c[0] for c in CASES])
def test_explicit_session_key_follows_the_same_rule(
    world: TranscriptStore, name: str, caller: Caller, expected: set[str]
) -> None:
    for key, (sid, _) in WORLD.items():
        if key in INCOGNITO:
            continue
        out = world.search(caller, "zebra", session_key=key)
        if key in expected:
            assert [r["messageId"] for r in out["results"]] == [f"m-{sid}"], key
        else:
            assert out["status"] == "forbidden", key
            assert set(out) == {"status", "error"}


def test_incognito_is_never_found_even_by_its_own_key(world: TranscriptStore) -> None:
    for visibility in ("self", "tree", "agent", "all"):
        caller = Caller("agent:main:incognito", visibility=visibility, agent_to_agent=A2A_ANY)
        assert "agent:main:incognito" not in searched(world, caller)
        assert world.search(caller, _word("incognito"))["results"] == []
    everyone = Caller(ME, visibility="all", agent_to_agent=A2A_ANY)
    assert world.search(everyone, _word("incognitokid"))["results"] == []


def test_session_made_incognito_later_disappears_from_search(world: TranscriptStore) -> None:
    factory = sessionmaker(world.engine)
    openclaw_fts.install(factory)
    with factory.begin() as db:
        session = db.get(AgentSession, "spawned")
        assert session is not None
        session.incognito = True
    everyone = Caller(ME, visibility="all", agent_to_agent=A2A_ANY)
    assert "agent:main:spawned" not in searched(world, everyone)
    assert world.search(everyone, _word("spawned")) == {"results": []}
    assert searched(world, Caller(ME)) == TREE - {"agent:main:spawned"}


def test_archived_sessions_are_visible_like_any_other(world: TranscriptStore) -> None:
    out = world.search(Caller(ME, visibility="agent"), _word("archived"))
    assert [(r["sessionKey"], r["messageId"]) for r in out["results"]] == [
        ("agent:main:archived", "m-archived")
    ]
    out = world.search(Caller(ME), _word("archivedkid"))
    assert [r["sessionKey"] for r in out["results"]] == ["agent:main:archivedkid"]


def test_owned_sessions_stay_visible_across_agents_without_a2a(world: TranscriptStore) -> None:
    for visibility in ("tree", "all"):
        seen = searched(world, Caller(ME, visibility=visibility))
        assert {"agent:ops:task", "agent:ops:kid"} <= seen
        assert "agent:ops:main" not in seen


@pytest.mark.parametrize("visibility", ["self", "agent"])
def test_sessions_owned_in_another_agent_are_hidden_under_self_and_agent(
    world: TranscriptStore, visibility: str
) -> None:
    caller = Caller(ME, visibility=visibility)  # type: ignore[arg-type]
    assert not ({"agent:ops:task", "agent:ops:kid"} & searched(world, caller))
    for key in ("agent:ops:task", "agent:ops:kid"):
        assert world.history(caller, key)["status"] == "forbidden"
        assert world.search(caller, "zebra", session_key=key)["status"] == "forbidden"


def test_invalid_caller_settings_are_rejected() -> None:
    with pytest.raises(ToolInputError):
        Caller(ME, visibility="everything")  # type: ignore[arg-type]
    with pytest.raises(ToolInputError):
        Caller(ME, sandbox_visibility="tree")  # type: ignore[arg-type]
    with pytest.raises(ToolInputError):
        Caller("   ")


# --------------------------------------------------------------------------- crafted input


def test_keys_are_compared_exactly_never_as_patterns_or_prefixes(store: TranscriptStore) -> None:
    build_world(store)
    crafted = {
        "agent:main:main:child": {},  # caller key + suffix
        "agent:main:mai": {},  # a prefix of the caller key
        "AGENT:MAIN:MAIN": {},  # case differs
        "agent:main:main ": {},  # trailing blank
        "agent:main:other": {"spawned_by": "agent:main:main "},
        "agent:main:other2": {"owner_session_key": "AGENT:MAIN:MAIN"},
        "agent:main:other3": {"parent_session_key": "agent:main:%"},
        "agent:main:other4": {"spawned_by": "agent:main:ma_n"},
    }
    for i, (key, kwargs) in enumerate(crafted.items()):
        sid = f"crafted{i}"
        store.create_session(sid, key, **kwargs)
        store.append(
            sid,
            {"type": "message", "id": "x", "message": {"role": "user", "content": "zebra"}},
        )
    assert searched(store, Caller(ME, visibility="self")) == {ME}
    assert searched(store, Caller(ME)) == TREE
    # LIKE metacharacters in the caller's own key match nothing else
    linked = {"agent:main:%": {"agent:main:other3"}, "agent:main:ma_n": {"agent:main:other4"}}
    for key in ("agent:main:%", "agent:main:ma_n", "agent:main:*", "%", "_", "agent:main:ma"):
        assert searched(store, Caller(key, visibility="tree")) == linked.get(key, set()), key
        assert searched(store, Caller(key, visibility="self")) == set(), key


def test_an_agent_key_of_another_agent_does_not_grant_that_agents_sessions(
    world: TranscriptStore,
) -> None:
    # A caller whose key looks like "agent:other:..." is agent "other", and sees its own tree only.
    crafted = Caller("agent:other:agent:main:main", visibility="tree")
    assert searched(world, crafted) == set()
    assert world.history(crafted, ME)["status"] == "forbidden"
    spoof = Caller("agent:main:main:x", visibility="agent", agent_id="nobody")
    assert searched(world, spoof) == set()


@pytest.mark.parametrize("pattern", ["%", "_", "m%", "o_s", "\\", "[a-z]*", "?ps", "main%", "ops%"])
def test_agent_to_agent_patterns_are_not_sql_like_patterns(
    world: TranscriptStore, pattern: str
) -> None:
    caller = Caller(
        ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["main", pattern])
    )
    seen = searched(world, caller)
    assert not (seen & (OPS - TREE)), pattern
    assert not (seen & RESEARCH), pattern


@pytest.mark.parametrize("pattern", ["m?in", "[m]ain", "ma[!x]n", "m[a-z]in"])
def test_only_star_is_a_wildcard_in_allow_patterns(world: TranscriptStore, pattern: str) -> None:
    # The caller's agent "main" must match an allow pattern; "?" and "[...]" are literal text.
    caller = Caller(
        ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=[pattern, "ops"])
    )
    assert searched(world, caller) == TREE | MAIN_AGENT, pattern


SQL_BITS = [
    "' OR 1=1 --",
    '" OR ""="',
    "'; DROP TABLE openclaw_sessions; --",
    "x') OR ('1'='1",
    "%",
]


@pytest.mark.parametrize("bit", SQL_BITS)
def test_sql_metacharacters_never_widen_visibility(world: TranscriptStore, bit: str) -> None:
    caller = Caller(ME, visibility="self")
    # in the caller key
    assert searched(world, Caller(bit, visibility="tree")) == set()
    assert searched(world, Caller(ME + bit, visibility="agent")) == MAIN_AGENT
    assert searched(world, Caller(ME + bit, visibility="all", agent_id="main")) == MAIN_AGENT
    # in the query
    out = world.search(caller, f"zebra {bit}")
    assert {r["sessionKey"] for r in out["results"]} <= {ME}
    out = world.search(caller, bit)
    assert {r["sessionKey"] for r in out["results"]} <= {ME}
    # in the sessionKey filter
    out = world.search(caller, "zebra", session_key=f"{ME}{bit}")
    assert out["status"] == "forbidden"
    # in history's key, messageId and sessionId
    assert world.history(caller, f"{ME}{bit}")["status"] == "forbidden"
    unknown_id: Any = world.history(caller, ME, message_id=bit)
    assert unknown_id["status"] == "error" and "messages" not in unknown_id  # not found
    assert world.history(caller, ME, message_id="m-own", session_id=bit)["status"] == "error"
    assert world.history(caller, ME, message_id="m-own", session_id=f"own{bit}")["status"] == (
        "error"
    )
    # and nothing was damaged
    assert searched(world, Caller(ME, visibility="agent")) == MAIN_AGENT


def test_session_id_of_a_hidden_session_is_not_readable_through_history(
    world: TranscriptStore,
) -> None:
    caller = Caller(ME, visibility="self")
    # a session id given in place of a key, of a session the caller may not see
    assert world.history(caller, "sibling")["status"] == "forbidden"
    # a visible key with the session id of a hidden session
    out = world.history(caller, ME, message_id="m-sibling", session_id="sibling")
    assert out["status"] == "error"
    assert "zebra" not in str(out)


# --------------------------------------------------------------------------- hidden sessions


HIDDEN_SESSIONS = 10_000


def _visible_corpus(store: TranscriptStore) -> None:
    """The caller's own session and two children: 30 hits for "zebra" of equal length."""
    specs = [
        ("own", ME, {}),
        ("kid1", "agent:main:kid1", {"spawned_by": ME}),
        ("kid2", "agent:main:kid2", {"owner_session_key": ME}),
    ]
    for s, (sid, key, kwargs) in enumerate(specs):
        store.create_session(sid, key, **kwargs)
        events = []
        for i in range(10):
            n = (i * 7 + s) % 5 + 1  # 1..5 occurrences, always 6 tokens
            text = " ".join(["zebra"] * n + [f"w{s}x{i}x{j}" for j in range(6 - n)])
            events.append(
                {
                    "type": "message",
                    "id": f"{sid}-{i}",
                    "parentId": f"{sid}-{i - 1}" if i else None,
                    "timestamp": T0 + (i * 3 + s) * 1000,
                    "message": {"role": "user" if i % 2 == 0 else "assistant", "content": text},
                }
            )
        store.append_many(sid, events)


def _add_hidden(store: TranscriptStore, count: int) -> None:
    """``count`` sessions the caller cannot see, each with a message that would rank first."""
    factory = sessionmaker(store.engine)
    openclaw_fts.install(factory)
    batch = 2_500
    for start in range(0, count, batch):
        with factory.begin() as db:
            for i in range(start, min(count, start + batch)):
                agent = "zed" if i % 2 else "ops"
                session = AgentSession(session_id=f"h{i}", session_key=f"agent:{agent}:h{i}")
                db.add(session)
                db.add(
                    TranscriptEvent(
                        session=session,
                        event={
                            "type": "message",
                            "id": "hidden",
                            "parentId": None,
                            "timestamp": T0 + 10_000_000 + i,  # newer than everything visible
                            "message": {"role": "user", "content": "zebra " * 6},
                        },
                    )
                )


def _strip_scores(out: dict[str, Any]) -> dict[str, Any]:
    return {
        **out,
        "results": [{k: v for k, v in r.items() if k != "score"} for r in out["results"]],
    }


@pytest.mark.slow
def test_ten_thousand_hidden_sessions_change_nothing(tmp_path: Path) -> None:
    plain = TranscriptStore(f"sqlite:///{tmp_path / 'plain.sqlite'}", background=False)
    crowded = TranscriptStore(f"sqlite:///{tmp_path / 'crowded.sqlite'}", background=False)
    try:
        _visible_corpus(plain)
        _visible_corpus(crowded)
        _add_hidden(crowded, HIDDEN_SESSIONS)
        assert crowded.index_status() == {
            "pending": 0,
            "indexed": HIDDEN_SESSIONS + 3,
            "total": HIDDEN_SESSIONS + 3,
        }
        callers = [
            Caller(ME),  # tree
            Caller(ME, visibility="self"),
            Caller(ME, visibility="tree", sandboxed=True),
            Caller("agent:main:kid1", visibility="agent", agent_id="nobody"),
            Caller(ME, visibility="agent"),
            Caller(ME, visibility="all", agent_to_agent=AgentToAgent(True, ["main", "ghost"])),
        ]
        queries: list[dict[str, Any]] = [
            {"limit": 10},
            {"limit": 25},
            {"limit": 25, "order": "recent"},
            {"limit": 3, "role": "assistant"},
            {"limit": 5, "since": T0 + 9000},
        ]
        compared = 0
        for caller in callers:
            for kwargs in queries:
                a = plain.search(caller, "zebra", **kwargs)
                b = crowded.search(caller, "zebra", **kwargs)
                assert _strip_scores(a) == _strip_scores(b), (caller, kwargs)
                assert not any(r["messageId"] == "hidden" for r in b["results"])
                compared += len(a["results"])
        assert compared > 50
        # the crowd really is there for callers who may see it
        everyone = crowded.search(
            Caller(ME, visibility="all", agent_to_agent=AgentToAgent(True)), "zebra", limit=5
        )
        assert {r["messageId"] for r in everyone["results"]} == {"hidden"}
        assert everyone["truncated"] is True
        # a tree caller's full result: 30 hits, more than the limit, in the same order
        tree = crowded.search(Caller(ME), "zebra", limit=25)
        assert tree["truncated"] is True
        assert len(tree["results"]) == 25
    finally:
        plain.close()
        crowded.close()


def test_every_allow_pattern_is_honoured_even_in_a_long_list(world: TranscriptStore) -> None:
    allow = ["main", *(f"team{i}-*" for i in range(80)), "ops"]
    caller = Caller(ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=allow))
    assert searched(world, caller) == TREE | MAIN_AGENT | OPS
    assert world.history(caller, "agent:ops:main")["messages"]
