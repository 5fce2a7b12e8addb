"""Callers who see a share of the sessions (``agent``, ``all``) take FTS5's ranking of the whole
match set when a query matches many rows (``SqliteSearch``: top rows joined and judged by the
visibility afterwards), and the one joined statement otherwise. Both must return what the
joined statement returns; ``since`` (always true here) forces the joined statement."""

from __future__ import annotations

from factories import chain

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.index.sqlite.read import SCOPED_RANK_ALL_MIN_MATCHES

#: (agent, key) of each session; the caller is agent:main:me, of agent main.
SESSIONS = (
    ("main", "agent:main:a"),
    ("ops", "agent:ops:b"),
    ("main", "agent:main:c"),
    ("ops", "agent:ops:d"),
    ("ops", "agent:ops:e"),
    ("main", "agent:main:me"),
)
#: Distinct message lengths (filler words), so scores differ.
FILLER_SPREAD = 40


def test_ranked_by_fts5_alone_returns_what_the_joined_statement_returns(
    store: TranscriptStore,
) -> None:
    per_session = SCOPED_RANK_ALL_MIN_MATCHES // 4  # 1.5x the bound in all: FTS5 ranks alone
    for n, (agent, key) in enumerate(SESSIONS):
        store.create_session(f"s{n}", key, agent_id=agent)
        texts = [
            f"bulkword {' '.join(['filler'] * ((i * 7 + n) % FILLER_SPREAD))} rareword{n % 2}"
            for i in range(per_session)
        ]
        store.append_many(f"s{n}", chain(texts))
    for visibility in ("agent", "all"):
        caller = Caller("agent:main:me", visibility=visibility)
        for query in ("bulkword", "rareword1", "bulkword rareword0"):
            fast = store.search(caller, query, limit=25)
            full = store.search(caller, query, limit=25, since=0)
            assert fast == full, (visibility, query)
            assert len(fast["results"]) == 25 and fast.get("truncated")
            assert {r["sessionKey"].split(":")[1] for r in fast["results"]} == {"main"}
            for role in ("user", "assistant"):  # the role judged with the visibility
                fast = store.search(caller, query, limit=25, role=role)
                full = store.search(caller, query, limit=25, role=role, since=0)
                assert fast == full, (visibility, query, role)
                assert len(fast["results"]) == 25
                assert {r["role"] for r in fast["results"]} == {role}


def test_too_few_visible_rows_at_the_top_fall_back_to_the_joined_statement(
    store: TranscriptStore,
) -> None:
    """The caller's agent holds one short session whose messages rank below everything else."""
    per_session = SCOPED_RANK_ALL_MIN_MATCHES // 2
    for n in range(3):
        store.create_session(f"o{n}", f"agent:ops:o{n}", agent_id="ops")
        store.append_many(f"o{n}", chain(["bulkword bulkword"] * per_session, prefix=f"o{n}m"))
    store.create_session("mine", "agent:main:me", agent_id="main")
    long_text = "bulkword " + " ".join(["filler"] * FILLER_SPREAD)
    store.append_many("mine", chain([long_text] * 3))
    caller = Caller("agent:main:me", visibility="agent")
    out = store.search(caller, "bulkword")
    assert [r["sessionId"] for r in out["results"]] == ["mine"] * 3
    assert out == store.search(caller, "bulkword", since=0)
