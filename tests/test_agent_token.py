"""Agent-scoped searches (``agent``, and ``all`` without agent-to-agent) narrow the FTS5 query
with the agent's token in the ``sess`` column (``index.sqlite.agent_token``): the token is safe
for any agent id, no query text can reach it, a session whose agent changes is re-indexed
under its new agent, and the narrowed ranking returns what the full statement returns."""

from __future__ import annotations

from factories import chain
from sqlalchemy import text

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.index.sqlite import agent_token
from openclaw_fts.index.sqlite.read import SCOPED_RANK_ALL_MAX_MATCHES

#: Agent ids a host may use: any Unicode, blanks, quotes, FTS5 syntax, a colon.
ODD_AGENTS = ("main", "ops", 'say "hi" OR *', "エージェント", "a:b c", "NEAR(x y)", "s1")


def _agents_seen(store: TranscriptStore, caller: Caller, query: str) -> set[str]:
    keys = {r["sessionKey"] for r in store.search(caller, query, limit=25)["results"]}
    return {key.split("|", 1)[0] for key in keys}


def test_each_agent_sees_exactly_its_own_sessions_whatever_its_id(store: TranscriptStore) -> None:
    for n, agent in enumerate(ODD_AGENTS):
        store.create_session(f"s{n}", f"{agent}|key{n}", agent_id=agent)
        store.append_many(f"s{n}", chain([f"sharedword from agent {n}", "sharedword again"]))
    for agent in ODD_AGENTS:
        for visibility in ("agent", "all"):
            caller = Caller(f"{agent}|nobody", visibility=visibility, agent_id=agent)
            assert _agents_seen(store, caller, "sharedword") == {agent}, (agent, visibility)


def test_agent_tokens_are_one_plain_token_and_distinct() -> None:
    tokens = {agent_token(a) for a in ODD_AGENTS}
    assert len(tokens) == len(ODD_AGENTS)
    for token in tokens:
        assert token.isascii() and token.isalnum() and token.islower()
        assert not token[1:].isdigit()  # never a session token s<digits>


def test_no_query_text_matches_an_agent_token(store: TranscriptStore) -> None:
    store.create_session("s1", "agent:main:main", agent_id="main")
    store.append_many("s1", chain(["an ordinary message"]))
    caller = Caller("agent:main:main", visibility="agent")
    token = agent_token("main")
    for query in (token, f"{token}*", f'"{token}"', f"sess:{token}", f"sess : {token}"):
        assert store.search(caller, query)["results"] == [], query
    assert len(store.search(caller, "ordinary")["results"]) == 1


def test_a_session_whose_agent_changes_is_reindexed_under_the_new_agent(
    store: TranscriptStore,
) -> None:
    store.create_session("s1", "agent:ops:one", agent_id="ops")
    store.append_many("s1", chain(["movedword in a session of ops"]))
    main = Caller("agent:main:main", visibility="agent")
    assert store.search(main, "movedword")["results"] == []
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE openclaw_sessions SET agent_id = 'main' WHERE session_id = 's1'"))
    assert store.index_status()["pending"] == 1
    store.reconcile()
    assert store.index_status()["pending"] == 0
    assert [r["sessionId"] for r in store.search(main, "movedword")["results"]] == ["s1"]
    ops = Caller("agent:ops:one-other", visibility="agent")
    assert store.search(ops, "movedword")["results"] == []


def test_narrowed_ranking_returns_what_the_full_statement_returns(store: TranscriptStore) -> None:
    """More matches than the rank-everything shortcut takes, spread over two agents and the
    caller's own session in a third; ``since`` (always true here) forces the full statement."""
    per_session = SCOPED_RANK_ALL_MAX_MATCHES // 4
    sessions = [("main", "agent:main:a"), ("ops", "agent:ops:b"), ("main", "agent:main:c")]
    sessions += [("ops", "agent:ops:d"), ("main", "agent:main:e"), ("research", "agent:main:me")]
    for n, (agent, key) in enumerate(sessions):
        store.create_session(f"s{n}", key, agent_id=agent)
        texts = [
            f"bulkword {' '.join(['filler'] * ((i * 7 + n) % 40))} end" for i in range(per_session)
        ]
        store.append_many(f"s{n}", chain(texts))
    for visibility in ("agent", "all"):
        caller = Caller("agent:main:me", visibility=visibility, agent_id="main")
        fast = store.search(caller, "bulkword", limit=25)
        full = store.search(caller, "bulkword", limit=25, since=0)
        assert fast == full
        assert len(fast["results"]) == 25 and fast.get("truncated")
        seen = {r["sessionId"] for r in fast["results"]}
        assert seen <= {"s0", "s2", "s4", "s5"}, seen  # main's sessions and the caller's own


def test_the_callers_own_session_in_another_agent_stays_visible(store: TranscriptStore) -> None:
    """The narrowed query ANDs (agent token OR the caller's own / tree sessions' tokens)."""
    store.create_session("own", "agent:main:me", agent_id="research")
    store.create_session("child", "agent:ops:child", agent_id="ops", spawned_by="agent:main:me")
    store.create_session("other", "agent:ops:other", agent_id="ops")
    for sid in ("own", "child", "other"):
        store.append_many(sid, chain([f"ownword in {sid}"], prefix=sid))
    expected = {"agent": {"own"}, "all": {"own", "child"}}
    for visibility, sids in expected.items():
        caller = Caller("agent:main:me", visibility=visibility, agent_id="main")
        for extra in ({}, {"since": 0}):  # the ranked shortcut, and the full statement
            found = store.search(caller, "ownword", **extra)["results"]
            assert {r["sessionId"] for r in found} == sids, (visibility, extra)
