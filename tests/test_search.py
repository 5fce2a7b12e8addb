"""``sessions_search`` end to end (docs/tools.md, docs/redaction.md) on a real SQLite database.

Every test writes its corpus through the public store API, searches through
``TranscriptStore.search`` and checks the JSON-ready result: validation messages, the query
language, ranking and ties, filters, the result shape, pending sessions, snippets, CJK, the byte
cap and the redaction of credentials inside snippets.
"""

from __future__ import annotations

import json
import math
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import regex
from conftest import PARTITIONED
from factories import T0, chain, events_file, msg
from sqlalchemy import Engine

from openclaw_fts import AgentToAgent, Caller, ToolInputError, TranscriptStore
from openclaw_fts.importer import SessionMeta
from openclaw_fts.index.sqlite.read import NARROW_B, NARROW_K1, NARROW_REFERENCE_CHARS

pytestmark = pytest.mark.both_engines

OWN = "agent:main:main"
CALLER = Caller(OWN)  # default visibility: tree
AGENT_CALLER = Caller(OWN, visibility="agent")
#: Sees every session that is not incognito (search ranks with FTS5 alone, then joins the top).
EVERYTHING = Caller(OWN, visibility="all", agent_to_agent=AgentToAgent(True))
WARNING = (
    "Transcript indexing is in progress; results may be incomplete. Retry sessions_search shortly."
)
RESULT_KEYS = {"sessionKey", "sessionId", "messageId", "role", "timestamp", "snippet", "score"}
CAP = 32 * 1024


def add_session(
    store: TranscriptStore,
    session_id: str,
    session_key: str,
    texts: list[str],
    *,
    prefix: str = "m",
    **kwargs: Any,
) -> None:
    store.create_session(session_id, session_key, **kwargs)
    if texts:
        store.append_many(session_id, chain(texts, prefix=prefix))


def ids(out: dict[str, Any]) -> list[str]:
    return [r["messageId"] for r in out["results"]]


def json_bytes(value: Any, *, compact: bool = False) -> int:
    separators = (",", ":") if compact else None
    return len(json.dumps(value, ensure_ascii=False, separators=separators).encode("utf-8"))


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def strip_ellipses(snippet: str) -> str:
    """The snippet body without the cut markers at either end."""
    body = snippet
    if body.startswith("… "):
        body = body[2:]
    if body.endswith(" …"):
        body = body[:-2]
    elif body.endswith("…"):
        body = body[:-1]
    return body


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("query", ["", "   ", "\t\n "])
def test_empty_query_is_rejected_with_openclaws_message(store: TranscriptStore, query: str) -> None:
    with pytest.raises(ToolInputError) as info:
        store.search(CALLER, query)
    assert str(info.value) == (
        "query must not be empty; retry with non-empty keywords to match in past session text"
    )
    assert isinstance(info.value, ValueError)


def test_query_longer_than_4096_characters_is_rejected(store: TranscriptStore) -> None:
    with pytest.raises(ToolInputError) as info:
        store.search(CALLER, "x" * 4097)
    assert str(info.value) == "query must not exceed 4096 characters"


def test_query_of_exactly_4096_characters_after_trimming_is_accepted(
    store: TranscriptStore,
) -> None:
    add_session(store, "s1", OWN, ["x" * 10])
    assert store.search(CALLER, "x" * 4096) == {"results": []}
    # the limit applies to the trimmed query
    assert store.search(CALLER, "   " + "x" * 4096 + "   ") == {"results": []}


def test_the_query_limit_counts_utf16_code_units_as_javascript_does(
    store: TranscriptStore,
) -> None:
    """OpenClaw compares JavaScript's ``query.length``: an emoji counts 2, so 2,049 emoji
    (4,098 code units, 2,049 characters) are too long and 2,048 are not."""
    add_session(store, "s1", OWN, ["x" * 10])
    with pytest.raises(ToolInputError) as info:
        store.search(CALLER, "😀" * 2049)
    assert str(info.value) == "query must not exceed 4096 characters"
    assert "indexing" not in store.search(CALLER, "😀" * 2048)
    with pytest.raises(ToolInputError):
        store.search(CALLER, "x" + "😀" * 2048)


def test_the_snippet_cut_counts_utf16_code_units(store: TranscriptStore) -> None:
    """U+20000 (CJK Extension B) is a letter of two UTF-16 code units; a CJK run is one word,
    so the snippet of a long run reaches the 300-unit cut."""
    ext_b = "\U00020000"
    whole = "needle " + ext_b * 146  # 299 code units (153 characters): shown whole
    cut = "needle " + ext_b * 200  # 407 code units: cut at 300
    add_session(store, "s1", OWN, [whole, cut])
    snippets = {r["messageId"]: r["snippet"] for r in store.search(CALLER, "needle")["results"]}
    assert snippets["m0"] == whole
    assert snippets["m1"] == "needle " + ext_b * 146 + "…"  # 7 + 292 units; a 147th is 301


@pytest.mark.parametrize("limit", [0, -1, 26, 2.5, "5", True, False, float("nan"), [3]])
def test_bad_limit_is_rejected_with_openclaws_message(store: TranscriptStore, limit: Any) -> None:
    add_session(store, "s1", OWN, ["hello"])
    with pytest.raises(ToolInputError) as info:
        store.search(CALLER, "hello", limit=limit)
    assert str(info.value) == "limit must be a positive integer"


def test_default_limit_is_10_and_maximum_is_25(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, [f"zebra number {i}" for i in range(30)])
    default = store.search(CALLER, "zebra")
    assert len(default["results"]) == 10
    assert default["truncated"] is True
    most = store.search(CALLER, "zebra", limit=25)
    assert len(most["results"]) == 25
    assert most["truncated"] is True
    one = store.search(CALLER, "zebra", limit=1)
    assert len(one["results"]) == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"role": "system"}, "role"),
        ({"role": "toolResult"}, "role"),
        ({"order": "newest"}, "order"),
        ({"since": "yesterday-ish"}, "since"),
        ({"until": "not a date"}, "until"),
    ],
)
def test_bad_filters_raise_tool_input_errors(
    store: TranscriptStore, kwargs: dict[str, Any], field: str
) -> None:
    add_session(store, "s1", OWN, ["hello"])
    with pytest.raises(ToolInputError) as info:
        store.search(CALLER, "hello", **kwargs)
    assert field in str(info.value)


# --------------------------------------------------------------------------- explicit sessionKey


def test_explicit_unknown_session_key_answers_as_a_hidden_one_would(
    store: TranscriptStore,
) -> None:
    # No existence oracle: an unknown key the caller could not see is forbidden, with the same
    # text as an existing hidden one; one it could see simply has no hits.
    add_session(store, "s1", OWN, ["hello world"])
    add_session(store, "s2", "agent:main:other", ["hello there"], prefix="o")
    missing = store.search(CALLER, "hello", session_key="agent:main:nope")
    assert missing == store.search(CALLER, "hello", session_key="agent:main:other")
    assert missing["status"] == "forbidden"
    wide = Caller(OWN, visibility="agent")
    assert store.search(wide, "hello", session_key="agent:main:nope") == {"results": []}


def test_explicit_session_key_not_visible_is_forbidden(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["hello world"])
    add_session(store, "s2", "agent:main:other", ["hello there"], prefix="o")
    out = store.search(CALLER, "hello", session_key="agent:main:other")
    assert set(out) == {"status", "error"}
    assert out["status"] == "forbidden"
    assert isinstance(out["error"], str)
    assert "hello there" not in out["error"]


def test_explicit_visible_session_key_filters_results(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["hello world"])
    add_session(store, "s2", "agent:main:child", ["hello child"], prefix="c", spawned_by=OWN)
    both = store.search(CALLER, "hello")
    assert sorted(r["sessionKey"] for r in both["results"]) == [
        "agent:main:child",
        OWN,
    ]
    only = store.search(CALLER, "hello", session_key="agent:main:child")
    assert [(r["sessionKey"], r["messageId"]) for r in only["results"]] == [
        ("agent:main:child", "c0")
    ]


# --------------------------------------------------------------------------- query language


def test_diacritics_and_case_are_folded(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["Café résumé for the interview", "plain cafe words"])
    assert ids(store.search(CALLER, "cafe resume")) == ["m0"]
    assert ids(store.search(CALLER, "CAFÉ RÉSUMÉ")) == ["m0"]
    assert ids(store.search(CALLER, "Cafe\u0301 re\u0301sume\u0301")) == ["m0"]  # NFD
    assert set(ids(store.search(CALLER, "cafe"))) == {"m0", "m1"}


def test_words_are_anded_and_matched_as_whole_words(store: TranscriptStore) -> None:
    add_session(
        store,
        "s1",
        OWN,
        ["the staging deployment failed", "staging only", "redeployment pending"],
    )
    assert ids(store.search(CALLER, "staging deployment")) == ["m0"]
    assert ids(store.search(CALLER, "deployment")) == ["m0"]  # not "redeployment"


def test_quoted_phrase_matches_only_adjacent_words_in_order(store: TranscriptStore) -> None:
    add_session(
        store,
        "s1",
        OWN,
        [
            "the staging deployment failed",
            "deployment to staging",
            "staging then a deployment",
            "Staging-Deployment done",
        ],
    )
    assert set(ids(store.search(CALLER, "staging deployment"))) == {"m0", "m1", "m2", "m3"}
    assert set(ids(store.search(CALLER, '"staging deployment"'))) == {"m0", "m3"}


def test_prefix_star_matches_word_starts(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["deployment done", "we deployed it", "redeploy now", "deploy"])
    assert set(ids(store.search(CALLER, "deploy*"))) == {"m0", "m1", "m3"}
    assert ids(store.search(CALLER, "deploy")) == ["m3"]


def test_uppercase_or_means_either(store: TranscriptStore) -> None:
    add_session(
        store,
        "s1",
        OWN,
        ["staging is red", "production is green", "staging and production", "neither"],
    )
    assert set(ids(store.search(CALLER, "staging OR production"))) == {"m0", "m1", "m2"}
    assert ids(store.search(CALLER, "staging production")) == ["m2"]


def test_lowercase_or_is_a_word(store: TranscriptStore) -> None:
    add_session(
        store, "s1", OWN, ["staging is red", "production is green", "staging or production"]
    )
    assert ids(store.search(CALLER, "staging or production")) == ["m2"]


def test_or_alone_finds_the_word_or(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["this or that", "neither nor", "ORACLE database"])
    assert ids(store.search(CALLER, "OR")) == ["m0"]


PUNCTUATION_CASES = [
    # (query, text holding it literally, text with the same words that must NOT match)
    ("it's", "well it's done now", "it was his s"),
    ("gateway/run.py", "edit gateway/run.py please", "the gateway will run a py script"),
    ("user@host.com", "mail user@host.com today", "host a user com"),
    ("C:\\Users\\me", "path C:\\Users\\me\\file.txt", "me users c"),
    ("TODO: fix", "TODO: fix the flaky test", "nothing todo here"),
    ("a-b", "a-b testing", "b and a"),
    ('"unbalanced', 'an "unbalanced quote', "balanced text"),
    ("NEAR(a b)", "NEAR(a b) is an operator", "a b without the operator"),
    ("sess:s1", "the token sess:s1 literally", "nothing special here"),
    ("body:x", "body:x literally", "x marks the spot"),
]


@pytest.mark.parametrize(("query", "literal", "other"), PUNCTUATION_CASES)
def test_punctuation_is_literal_text_and_never_raises(
    store: TranscriptStore, query: str, literal: str, other: str
) -> None:
    add_session(store, "s1", OWN, [literal, other, "filler words only"])
    out = store.search(CALLER, query)
    assert ids(out) == ["m0"], out


@pytest.mark.parametrize(
    "query",
    [
        "(",
        ")",
        "AND",
        "NOT",
        "^start",
        "-verbose",
        "c++",
        "node.js",
        '""',
        "a OR",
        "OR OR",
        "NEAR(",
        "col:",
        "'",
        "' OR 1=1 --",
        "%",
        "\\",
        "\x00nul",
        "\ud800lone",
        "{sess body}: x",
        "*deploy",
        "a*b*",
    ],
)
def test_hostile_queries_never_raise(store: TranscriptStore, query: str) -> None:
    add_session(store, "s1", OWN, ["a b c start verbose node js and not or"])
    out = store.search(CALLER, query)
    assert isinstance(out["results"], list)
    assert set(out) <= {"results", "truncated"}


@pytest.mark.parametrize("query", ["...", "*", '"', "-", "()", "— – …", '"" ""', "***"])
def test_query_without_a_searchable_token_returns_no_results(
    store: TranscriptStore, query: str
) -> None:
    add_session(store, "s1", OWN, ["... * - () — – …", "anything at all"])
    assert store.search(CALLER, query) == {"results": []}


# --------------------------------------------------------------------------- ranking


@pytest.mark.sqlite_only("bm25 is FTS5's; PostgreSQL's score is ts_rank")
@pytest.mark.parametrize("caller", [AGENT_CALLER, EVERYTHING], ids=["agent", "everything"])
def test_score_is_minus_bm25_computed_over_the_index(
    store: TranscriptStore, caller: Caller
) -> None:
    # Ten 4-token messages; "alpha" occurs once in m0, three times in m1 and nowhere else.
    # FTS5 bm25: idf = ln((N - n + 0.5) / (n + 0.5)); every message has the average length,
    # so each hit scores idf * f * (k1 + 1) / (f + k1) with k1 = 1.2.
    texts = ["alpha beta gamma delta", "alpha alpha alpha beta"] + [
        f"zeta eta theta iota{i}" for i in range(8)
    ]
    add_session(store, "s1", OWN, texts)
    out = store.search(caller, "alpha")
    idf = math.log((10 - 2 + 0.5) / (2 + 0.5))
    assert ids(out) == ["m1", "m0"]
    assert out["results"][0]["score"] == pytest.approx(idf * 3 * 2.2 / (3 + 1.2), rel=1e-9)
    assert out["results"][1]["score"] == pytest.approx(idf * 1 * 2.2 / (1 + 1.2), rel=1e-9)


@pytest.mark.sqlite_only("the narrow score formula is SQLite's; PostgreSQL's is ts_rank")
def test_narrow_score_is_per_message_and_ignores_other_sessions(store: TranscriptStore) -> None:
    """``tree`` / ``self`` (docs/tools.md, "score"): BM25's term-frequency part with IDF 1 and
    a fixed reference length, from the message alone; other sessions' text changes nothing."""
    texts = ["alpha beta gamma delta", "alpha alpha alpha beta"]
    add_session(store, "s1", OWN, texts)

    def expected(instances: int, chars: int) -> float:
        norm = 1 - NARROW_B + NARROW_B * chars / NARROW_REFERENCE_CHARS
        return instances * (NARROW_K1 + 1) / (instances + NARROW_K1 * norm)

    narrow = (CALLER, Caller(OWN, visibility="self"))
    before = [store.search(caller, "alpha") for caller in narrow]
    for out in before:
        assert ids(out) == ["m1", "m0"]
        assert out["results"][0]["score"] == pytest.approx(expected(3, 22), rel=1e-12)
        assert out["results"][1]["score"] == pytest.approx(expected(1, 22), rel=1e-12)
    # a hidden session full of the word: a corpus-wide IDF would move; this score does not
    add_session(store, "s2", "agent:ops:hidden", ["alpha"] * 50)
    assert [store.search(caller, "alpha") for caller in narrow] == before


def test_repeated_term_outranks_single_mention(store: TranscriptStore) -> None:
    add_session(
        store,
        "s1",
        OWN,
        [
            "kubernetes kubernetes kubernetes cluster upgrade notes",
            "kubernetes cluster upgrade notes and more words",
            "unrelated text about lunch plans today",
        ],
    )
    out = store.search(CALLER, "kubernetes")
    assert ids(out) == ["m0", "m1"]
    assert out["results"][0]["score"] > out["results"][1]["score"] > 0


@pytest.mark.parametrize("limit", [None, 1, 2, 3, 4])
@pytest.mark.parametrize("caller", [AGENT_CALLER, EVERYTHING], ids=["agent", "everything"])
def test_equal_scores_tie_by_timestamp_desc_then_session_key_then_message_id(
    store: TranscriptStore, caller: Caller, limit: int | None
) -> None:
    text = "identical text about zebras"
    # Created in an order that differs from the expected one, to catch insertion order.
    store.create_session("sz", "agent:main:zeta")
    store.create_session("sa", "agent:main:alpha")
    store.append_many(
        "sz",
        [
            msg("m2", text, ts=T0),
            msg("m10", text, ts=T0, parent="m2"),
            msg("late", text, ts=T0 - 5),
        ],
    )
    store.append_many("sa", [msg("m2", text, ts=T0), msg("early", text, ts=T0 + 7)])
    out = store.search(caller, "zebras", limit=limit)
    got = [(r["sessionKey"], r["messageId"]) for r in out["results"]]
    expected = [
        ("agent:main:alpha", "early"),  # newest
        ("agent:main:alpha", "m2"),  # T0: alpha before zeta
        ("agent:main:zeta", "m10"),  # T0, zeta: "m10" < "m2" as strings
        ("agent:main:zeta", "m2"),
        ("agent:main:zeta", "late"),  # oldest
    ]
    assert got == expected[:limit]
    assert out.get("truncated", False) is (limit is not None and limit < len(expected))
    assert len({r["score"] for r in out["results"]}) == 1


@pytest.mark.parametrize("limit", [1, 10, 25])
def test_a_long_tie_orders_like_the_full_statement(store: TranscriptStore, limit: int) -> None:
    # More equal scores than the score-only ranking fetches (limit + 1 + 64): the order must
    # still be timestamp, session key, message id, as for a caller whose search joins.
    for n in range(3):
        store.create_session(f"s{n}", f"agent:main:k{n}")
        store.append_many(
            f"s{n}", [msg(f"m{i}", "identical yak words", ts=T0 + i % 7) for i in range(40)]
        )
    everything = store.search(EVERYTHING, "yak", limit=limit)
    agent = store.search(AGENT_CALLER, "yak", limit=limit)
    assert everything == agent
    got = [(r["timestamp"], r["sessionKey"], r["messageId"]) for r in everything["results"]]
    assert got == sorted(got, key=lambda g: (-g[0], g[1], g[2])) and len(got) == limit
    assert everything["truncated"] is True


@pytest.mark.parametrize("limit", [1, 5, 20])
def test_a_tie_longer_than_the_first_probe_orders_like_the_full_statement(
    store: TranscriptStore, limit: int
) -> None:
    # 30 equal best scores (longer than the first score-only probe, shorter than the second)
    # and 60 lower ones behind them: the second probe decides, in the joined statement's order.
    for n in range(3):
        store.create_session(f"s{n}", f"agent:main:k{n}")
        store.append_many(
            f"s{n}",
            [msg(f"m{i}", "identical gnu words", ts=T0 + i % 4) for i in range(10)]
            + [
                msg(f"w{i}", "a gnu among many other words " + "filler " * 12, ts=T0 + i)
                for i in range(20)
            ],
        )
    everything = store.search(EVERYTHING, "gnu", limit=limit)
    agent = store.search(AGENT_CALLER, "gnu", limit=limit)
    assert everything == agent
    got = [(r["timestamp"], r["sessionKey"], r["messageId"]) for r in everything["results"]]
    assert got == sorted(got, key=lambda g: (-g[0], g[1], g[2])) and len(got) == limit
    assert all(r["messageId"].startswith("m") for r in everything["results"])


def test_order_recent_sorts_by_timestamp_then_the_same_tiebreaks(store: TranscriptStore) -> None:
    store.create_session("sz", "agent:main:zeta")
    store.create_session("sa", "agent:main:alpha")
    store.append_many(
        "sz",
        [
            msg("best", "zebra zebra zebra zebra", ts=T0),
            msg("b", "zebra once among many other words here", ts=T0 + 2000, parent="best"),
        ],
    )
    store.append_many(
        "sa",
        [msg("a", "zebra once among many other words too", ts=T0 + 2000), msg("c", "zebra", ts=1)],
    )
    relevance = store.search(AGENT_CALLER, "zebra")
    assert relevance["results"][0]["messageId"] in {"best", "c"}
    recent = store.search(AGENT_CALLER, "zebra", order="recent")
    assert [(r["sessionKey"], r["messageId"]) for r in recent["results"]] == [
        ("agent:main:alpha", "a"),
        ("agent:main:zeta", "b"),
        ("agent:main:zeta", "best"),
        ("agent:main:alpha", "c"),
    ]
    explicit = store.search(AGENT_CALLER, "zebra", order="relevance")
    assert ids(explicit) == ids(relevance)
    scores = [r["score"] for r in relevance["results"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("caller", [AGENT_CALLER, EVERYTHING], ids=["agent", "everything"])
@pytest.mark.parametrize("query", ["otter", '"river otter"', "otter dam", "riv*", "otter OR dam"])
@pytest.mark.parametrize("limit", [2, 25])
def test_order_recent_gives_each_hit_the_score_relevance_gives_it(
    store: TranscriptStore, caller: Caller, query: str, limit: int
) -> None:
    # The recent order's rows are scored after they are chosen (SQLite: bm25 of the rows
    # returned only); a hit's score must not depend on the order it was found in.
    texts = [
        "the river otter builds no dam",
        "otter otter otter",
        "a dam on the river",
        "river otter near the dam, river otter again",
        "nothing to see here",
        "otter",
        "the river is wide and the otter swims past the old dam today",
    ]
    store.create_session("s1", OWN)
    events = chain(texts)
    for i, event in enumerate(events):  # time out of append order, with ties
        event["timestamp"] = T0 + (i * 7 % 5) * 1000
    store.append_many("s1", events)
    add_session(store, "s2", "agent:main:other", ["otter by the dam", "river otter"], prefix="o")
    relevance = store.search(caller, query, limit=25)
    by_relevance = {(r["sessionKey"], r["messageId"]): r["score"] for r in relevance["results"]}
    recent = store.search(caller, query, order="recent", limit=limit)
    assert recent["results"], query
    newest = sorted(
        relevance["results"], key=lambda r: (-r["timestamp"], r["sessionKey"], r["messageId"])
    )[:limit]
    assert [(r["sessionKey"], r["messageId"]) for r in recent["results"]] == [
        (r["sessionKey"], r["messageId"]) for r in newest
    ]
    for r in recent["results"]:
        assert r["score"] == by_relevance[(r["sessionKey"], r["messageId"])]


# --------------------------------------------------------------------------- filters


def _timeline(store: TranscriptStore) -> None:
    # m0..m5 at T0 + i*1000, alternating user / assistant
    add_session(store, "s1", OWN, [f"zebra step {i}" for i in range(6)])


def test_role_filter(store: TranscriptStore) -> None:
    _timeline(store)
    assert set(ids(store.search(CALLER, "zebra", role="user"))) == {"m0", "m2", "m4"}
    assert set(ids(store.search(CALLER, "zebra", role="assistant"))) == {"m1", "m3", "m5"}


def test_since_and_until_epoch_ms_are_inclusive(store: TranscriptStore) -> None:
    _timeline(store)
    out = store.search(CALLER, "zebra", since=T0 + 1000, until=T0 + 3000)
    assert set(ids(out)) == {"m1", "m2", "m3"}
    assert set(ids(store.search(CALLER, "zebra", since=T0 + 1001))) == {"m2", "m3", "m4", "m5"}
    assert set(ids(store.search(CALLER, "zebra", until=T0 + 999))) == {"m0"}
    assert ids(store.search(CALLER, "zebra", since=T0 + 5001)) == []


def _iso(ms: int, *, z: bool = False) -> str:
    text = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z") if z else text


def test_since_and_until_iso_are_inclusive(store: TranscriptStore) -> None:
    _timeline(store)
    out = store.search(CALLER, "zebra", since=_iso(T0 + 1000), until=_iso(T0 + 3000, z=True))
    assert set(ids(out)) == {"m1", "m2", "m3"}
    # the same instant in another offset
    local = datetime.fromtimestamp((T0 + 4000) / 1000, tz=timezone.utc).astimezone(
        timezone(timedelta(hours=2))
    )
    assert set(ids(store.search(CALLER, "zebra", since=local.isoformat()))) == {"m4", "m5"}


def test_iso_dates_cover_their_whole_day(store: TranscriptStore) -> None:
    _timeline(store)
    day = datetime.fromtimestamp(T0 / 1000, tz=timezone.utc).date()
    assert (
        len(ids(store.search(CALLER, "zebra", since=day.isoformat(), until=day.isoformat()))) == 6
    )
    nxt = day.fromordinal(day.toordinal() + 1).isoformat()
    assert ids(store.search(CALLER, "zebra", since=nxt)) == []


def test_filters_combine_with_session_key(store: TranscriptStore) -> None:
    _timeline(store)
    add_session(store, "s2", "agent:main:kid", ["zebra kid"] * 4, prefix="k", spawned_by=OWN)
    out = store.search(
        CALLER, "zebra", session_key="agent:main:kid", role="assistant", since=T0 + 1000
    )
    assert [(r["sessionKey"], r["messageId"]) for r in out["results"]] == [
        ("agent:main:kid", "k3"),
        ("agent:main:kid", "k1"),
    ]


# --------------------------------------------------------------------------- result shape


def test_result_shape_is_exact(store: TranscriptStore) -> None:
    store.create_session("s1", OWN)
    store.append_many(
        "s1",
        [
            msg("u1", "where is the zebra", role="user", ts="2026-09-21T12:00:00.500Z"),
            msg(
                "a1",
                [{"type": "text", "text": "the zebra is here"}],
                role="assistant",
                ts=T0,
                parent="u1",
            ),
        ],
    )
    out = store.search(CALLER, "zebra")
    assert set(out) == {"results"}  # nothing truncated, nothing pending
    assert len(out["results"]) == 2
    for r in out["results"]:
        assert set(r) == RESULT_KEYS
        assert isinstance(r["sessionKey"], str)
        assert isinstance(r["sessionId"], str)
        assert isinstance(r["messageId"], str)
        assert r["role"] in ("user", "assistant")
        assert type(r["timestamp"]) is int
        assert isinstance(r["snippet"], str)
        assert type(r["score"]) is float
    by_id = {r["messageId"]: r for r in out["results"]}
    expected_u1 = int(
        datetime(2026, 9, 21, 12, 0, 0, 500000, tzinfo=timezone.utc).timestamp() * 1000
    )
    assert by_id["u1"] == {
        "sessionKey": OWN,
        "sessionId": "s1",
        "messageId": "u1",
        "role": "user",
        "timestamp": expected_u1,
        "snippet": "where is the zebra",
        "score": by_id["u1"]["score"],
    }
    assert by_id["a1"]["role"] == "assistant"
    assert by_id["a1"]["timestamp"] == T0
    assert by_id["a1"]["snippet"] == "the zebra is here"
    assert json.loads(json.dumps(out)) == out


def test_message_without_timestamp_gets_the_write_time(store: TranscriptStore) -> None:
    store.create_session("s1", OWN)
    before = int(time.time() * 1000)
    store.append(
        "s1", {"type": "message", "id": "m0", "message": {"role": "user", "content": "zebra"}}
    )
    after = int(time.time() * 1000)
    (hit,) = store.search(CALLER, "zebra")["results"]
    assert before - 1000 <= hit["timestamp"] <= after + 1000


def test_truncated_only_when_there_are_more_hits_than_the_limit(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, [f"zebra {i}" for i in range(5)])
    assert "truncated" not in store.search(CALLER, "zebra", limit=5)
    assert "truncated" not in store.search(CALLER, "zebra", limit=6)
    cut = store.search(CALLER, "zebra", limit=4)
    assert cut["truncated"] is True
    assert len(cut["results"]) == 4


def test_only_user_and_assistant_text_is_searchable(store: TranscriptStore) -> None:
    store.create_session("s1", OWN)
    store.append_many(
        "s1",
        [
            msg("u", "visible zebra", role="user"),
            msg("t", "tool zebra", role="toolResult", parent="u"),
            msg("y", "system zebra", role="system", parent="t"),
            msg(
                "a",
                [
                    {"type": "thinking", "thinking": "secret zebra thoughts"},
                    {"type": "toolCall", "name": "zebra", "arguments": {"q": "zebra"}},
                    {"type": "text", "text": "answer"},
                ],
                role="assistant",
                parent="y",
            ),
        ],
    )
    assert ids(store.search(CALLER, "zebra")) == ["u"]
    assert ids(store.search(CALLER, "thoughts")) == []
    assert ids(store.search(CALLER, "answer")) == ["a"]


def test_rewound_away_messages_are_not_found(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["keep zebra", "drop zebra", "drop again zebra"])
    store.rewind("s1", "m0")
    store.append("s1", msg("n1", "new zebra", parent="m0", ts=T0 + 9000))
    assert set(ids(store.search(CALLER, "zebra"))) == {"m0", "n1"}
    assert ids(store.search(CALLER, "drop")) == []


# --------------------------------------------------------------------------- pending sessions


def test_visible_pending_session_sets_indexing_and_warning(
    store: TranscriptStore, tmp_path: Path
) -> None:
    add_session(store, "s1", OWN, ["zebra live"])
    events_file(tmp_path / "imp.jsonl", "imp", [msg("i0", "zebra imported")])
    store.import_jsonl(tmp_path / "imp.jsonl", session_key=OWN)
    out = store.search(CALLER, "zebra")
    assert set(out) == {"results", "indexing", "warning"}
    assert out["indexing"] is True
    assert out["warning"] == WARNING
    assert [(r["sessionId"], r["messageId"]) for r in out["results"]] == [("s1", "m0")]
    store.reconcile()
    done = store.search(CALLER, "zebra")
    assert set(done) == {"results"}
    assert {(r["sessionId"], r["messageId"]) for r in done["results"]} == {
        ("s1", "m0"),
        ("imp", "i0"),
    }


def test_pending_session_the_caller_cannot_see_does_not_set_indexing(
    store: TranscriptStore, tmp_path: Path
) -> None:
    add_session(store, "s1", OWN, ["zebra live"])
    events_file(tmp_path / "imp.jsonl", "imp", [msg("i0", "zebra imported")])
    store.import_jsonl(tmp_path / "imp.jsonl", session_key="agent:ops:main")
    out = store.search(CALLER, "zebra")
    assert set(out) == {"results"}
    assert ids(out) == ["m0"]
    # ... but a caller who can see it is told
    assert store.search(Caller("agent:ops:main"), "zebra")["indexing"] is True


@pytest.mark.parametrize("caller", [CALLER, EVERYTHING], ids=["tree", "everything"])
def test_pending_session_hides_its_stale_rows_until_reconciled(
    store: TranscriptStore, tmp_path: Path, caller: Caller
) -> None:
    first = [msg("m0", "zebra keep"), msg("m1", "zebra oldword", parent="m0")]
    events_file(tmp_path / "a.jsonl", "imp", first)
    store.import_jsonl(tmp_path / "a.jsonl", session_key=OWN)
    store.reconcile()
    assert set(ids(store.search(caller, "zebra"))) == {"m0", "m1"}
    # Re-import with a rewind to m0 and a new message: the old rows are stale until reconciled.
    more = [
        *first,
        {"type": "leaf", "id": "l1", "parentId": "m1", "targetId": "m0"},
        msg("m2", "zebra newword", parent="l1", ts=T0 + 5000),
    ]
    events_file(tmp_path / "b.jsonl", "imp", more)
    store.import_jsonl(tmp_path / "b.jsonl", session_key=OWN)
    pending = store.search(caller, "oldword")
    assert pending["results"] == []
    assert pending["indexing"] is True
    assert store.search(caller, "zebra")["results"] == []
    store.reconcile()
    assert store.search(caller, "oldword") == {"results": []}
    assert set(ids(store.search(caller, "zebra"))) == {"m0", "m2"}


def test_a_session_another_connection_makes_pending_is_hidden_at_once(
    store: TranscriptStore, engine: Engine
) -> None:
    # The "is anything pending?" answer is remembered per connection until the database
    # changes; a change committed through another connection pool must be seen immediately.
    add_session(store, "s1", OWN, ["zebra one"])
    add_session(store, "s2", "agent:ops:main", ["zebra two"])
    for _ in range(2):
        assert {r["sessionId"] for r in store.search(EVERYTHING, "zebra")["results"]} == {
            "s1",
            "s2",
        }
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE openclaw_index_state SET needs_rebuild = TRUE WHERE session_id = 's2'"
        )
    out = store.search(EVERYTHING, "zebra")
    assert [r["sessionId"] for r in out["results"]] == ["s1"] and out["indexing"] is True
    store.reconcile()
    assert len(store.search(EVERYTHING, "zebra")["results"]) == 2
    # Rows of a session made incognito behind the plugin's back are not shown either.
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE openclaw_sessions SET incognito = TRUE WHERE session_id = 's1'"
        )
    out = store.search(EVERYTHING, "zebra")
    assert [r["sessionId"] for r in out["results"]] == ["s2"] and "indexing" not in out


# --------------------------------------------------------------------------- snippets


MARKERS = ("<b>", "</b>", "[", "]", "**", "<mark>", "\x02", "\x03", ">>>", "<<<")


def test_short_message_snippet_is_the_whole_text(store: TranscriptStore) -> None:
    text = "A short message about the zebra, with [brackets] and **stars**."
    add_session(store, "s1", OWN, [text])
    (hit,) = store.search(CALLER, "zebra")["results"]
    assert hit["snippet"] == text


def _words(n: int, tag: str = "w") -> list[str]:
    return [f"{tag}{i}" for i in range(n)]


def test_snippet_is_the_window_around_a_match_deep_inside_a_long_message(
    store: TranscriptStore,
) -> None:
    words = _words(1000)
    words[500] = "needle"
    text = " ".join(words)
    add_session(store, "s1", OWN, [text])
    (hit,) = store.search(CALLER, "needle")["results"]
    snippet = hit["snippet"]
    assert snippet.startswith("… ")
    assert snippet.endswith(" …")
    assert len(snippet) <= 301
    for marker in MARKERS:
        assert marker not in snippet
    body = strip_ellipses(snippet)
    assert body in text  # an exact piece of the original
    shown = body.split(" ")
    assert "needle" in shown
    at = shown.index("needle")
    assert 24 <= len(shown) <= 48
    assert at >= 10
    assert len(shown) - at - 1 >= 10


def test_snippet_at_the_start_and_at_the_end_of_a_long_message(store: TranscriptStore) -> None:
    words = _words(400)
    add_session(store, "s1", OWN, [" ".join(["needle", *words]), " ".join([*words, "haystack"])])
    start = store.search(CALLER, "needle")["results"][0]["snippet"]
    assert start.startswith("needle w0 w1")
    assert start.endswith(" …")
    assert not start.startswith("…")
    end = store.search(CALLER, "haystack")["results"][0]["snippet"]
    assert end.endswith("w398 w399 haystack")
    assert end.startswith("… ")


def test_snippet_of_long_tokens_is_cut_to_300_characters_keeping_the_match(
    store: TranscriptStore,
) -> None:
    words = [f"{'x' * 20}{i:03d}" for i in range(200)]
    words[100] = "needle"
    add_session(store, "s1", OWN, [" ".join(words)])
    snippet = store.search(CALLER, "needle")["results"][0]["snippet"]
    assert len(snippet) <= 301
    assert snippet.endswith("…")
    assert "needle" in snippet
    body = strip_ellipses(snippet).rstrip("…").rstrip()
    assert body in " ".join(words)


def test_snippet_collapses_whitespace_of_a_long_message(store: TranscriptStore) -> None:
    words = _words(300)
    words[150] = "needle"
    text = "\n\n".join("\t".join(words[i : i + 5]) for i in range(0, 300, 5))
    add_session(store, "s1", OWN, [text])
    snippet = store.search(CALLER, "needle")["results"][0]["snippet"]
    body = strip_ellipses(snippet)
    assert "\n" not in snippet and "\t" not in snippet and "  " not in snippet
    assert body in squash(text)
    assert "needle" in body.split(" ")


def test_snippet_never_splits_a_grapheme(store: TranscriptStore) -> None:
    # one 800-character token of e + COMBINING ACUTE: a cut must fall between clusters
    word = "e\u0301" * 400
    add_session(store, "s1", OWN, ["needle " + word + " tail words here"])
    snippet = store.search(CALLER, "needle")["results"][0]["snippet"]
    assert len(snippet) <= 301
    assert snippet.endswith("…")
    body = snippet[:-1].rstrip()
    assert body.startswith("needle ")
    clusters = regex.findall(r"\X", body[len("needle ") :])
    assert clusters
    assert set(clusters) == {"e\u0301"}
    snippet.encode("utf-8")


def test_snippet_keeps_emoji_sequences_whole(store: TranscriptStore) -> None:
    family = "👨\u200d👩\u200d👧\u200d👦"
    text = "needle " + " ".join(f"a{i}{family}" for i in range(200))
    add_session(store, "s1", OWN, [text])
    snippet = store.search(CALLER, "needle")["results"][0]["snippet"]
    snippet.encode("utf-8")
    body = snippet.rstrip("…").rstrip()
    assert body in text
    # the body ends at a cluster boundary of the original text
    assert regex.match(r"\X", text[len(body) :]) is None or not text[len(body)].startswith("\u200d")
    assert not body.endswith("\u200d")


# --------------------------------------------------------------------------- CJK

MEETING = "明天下午三点开项目评审会议"


@pytest.mark.parametrize("query", ["会", "明天", "三点开", "项目评审会议", MEETING])
def test_chinese_substrings_of_any_length_are_found(store: TranscriptStore, query: str) -> None:
    add_session(store, "s1", OWN, [MEETING, "我们的数据库很好", "deployment notes"])
    out = store.search(CALLER, query)
    assert ids(out) == ["m0"]
    assert out["results"][0]["snippet"] == MEETING


@pytest.mark.parametrize("query", ["天明", "会议项目", "明后"])
def test_chinese_characters_out_of_order_do_not_match(store: TranscriptStore, query: str) -> None:
    add_session(store, "s1", OWN, [MEETING])
    assert ids(store.search(CALLER, query)) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("にちは", "m0"),  # hiragana inside a word
        ("世界", "m0"),  # kanji
        ("ベース", "m1"),  # katakana
        ("東京", "m2"),
        ("都庁", "m2"),
        ("회의", "m3"),  # Korean inside 회의록은
        ("공유", "m3"),
    ],
)
def test_japanese_and_korean_substrings(store: TranscriptStore, query: str, expected: str) -> None:
    add_session(
        store,
        "s1",
        OWN,
        ["こんにちは世界", "データベースの移行", "東京都庁へ行く", "회의록은 내일 공유합니다"],
    )
    assert ids(store.search(CALLER, query)) == [expected]


def test_mixed_cjk_and_latin_query(store: TranscriptStore) -> None:
    add_session(
        store,
        "s1",
        OWN,
        ["我们明天部署新的deploy脚本", "部署完成", "deploy finished"],
    )
    assert ids(store.search(CALLER, "部署 deploy")) == ["m0"]
    assert set(ids(store.search(CALLER, "部署"))) == {"m0", "m1"}
    assert ids(store.search(CALLER, "deploy脚本")) == ["m0"]


def test_cjk_phrase(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, [MEETING, "项目的评审"])
    assert ids(store.search(CALLER, '"项目评审"')) == ["m0"]
    assert set(ids(store.search(CALLER, "项目 评审"))) == {"m0", "m1"}
    assert ids(store.search(CALLER, '"评审项目"')) == []


def test_cjk_inside_a_tree_visibility_search(store: TranscriptStore) -> None:
    add_session(store, "s1", OWN, ["hello"])
    add_session(store, "s2", "agent:main:kid", [MEETING], prefix="k", spawned_by=OWN)
    add_session(store, "s3", "agent:main:stranger", [MEETING], prefix="x")
    out = store.search(CALLER, "评审")
    assert [(r["sessionKey"], r["messageId"], r["snippet"]) for r in out["results"]] == [
        ("agent:main:kid", "k0", MEETING)
    ]


def test_cjk_snippet_is_the_original_text_without_inserted_spaces(
    store: TranscriptStore,
) -> None:
    filler = "这是一个很长的中文句子用于测试摘要窗口的行为" * 30
    text = filler + MEETING + filler
    add_session(store, "s1", OWN, [text])
    snippet = store.search(CALLER, "评审")["results"][0]["snippet"]
    body = strip_ellipses(snippet)
    assert " " not in body
    assert "评审" in body
    assert body in text
    assert len(snippet) <= 301


def test_each_cjk_hit_shows_its_own_message(store: TranscriptStore) -> None:
    """CJK hits are re-read from their events together: each snippet is its own message's
    text, whatever the order the hits come back in (and a Latin hit among them keeps its own)."""
    texts = {f"c{i}": f"第{i}号会议评审了部署计划{'很' * i}好" for i in range(6)}
    texts["latin"] = "评审 review of the plan"
    for sid, text in texts.items():
        add_session(store, sid, f"agent:main:{sid}", [text])
    out = store.search(AGENT_CALLER, "评审", limit=25)
    got = {r["sessionId"]: r["snippet"] for r in out["results"]}
    assert got == texts


# --------------------------------------------------------------------------- byte cap


def _cjk_sessions(store: TranscriptStore, n: int, text: str, key_pad: str = "") -> None:
    for i in range(n):
        sid = f"sid{i:02d}"
        store.create_session(sid, f"agent:main:k{key_pad}{i:02d}")
        store.append(sid, msg(f"m{i:02d}", text, ts=T0 + i * 1000))


def test_25_hits_of_300_character_cjk_snippets_fit_the_cap(store: TranscriptStore) -> None:
    text = (MEETING * 30)[:300]  # 3 UTF-8 bytes per character
    _cjk_sessions(store, 30, text)
    out = store.search(AGENT_CALLER, "评审", limit=25)
    assert len(out["results"]) == 25
    assert out["truncated"] is True  # 30 hits, limit 25
    assert all(r["snippet"] == text for r in out["results"])
    assert json_bytes(out["results"]) <= CAP


def test_results_over_the_byte_cap_are_cut_and_flagged(store: TranscriptStore) -> None:
    # 300 three-byte characters (CJK, one UTF-16 unit each) per snippet, the longest a snippet
    # holds in bytes, and 300-character key padding: 25 hits exceed 32 KiB.
    text = "".join(chr(CJK_BMP + j) for j in range(300))
    _cjk_sessions(store, 25, text, key_pad="p" * 300)
    out = store.search(AGENT_CALLER, chr(CJK_BMP + 7), limit=25)
    results = out["results"]
    assert out["truncated"] is True  # 25 hits, limit 25: only the byte cap cut them
    assert 0 < len(results) < 25
    assert json_bytes(results) <= CAP
    assert json_bytes(results, compact=True) <= CAP
    # Equal scores: newest first. The kept hits are the best ones, in order ...
    expected = [f"m{i:02d}" for i in range(24, -1, -1)]
    assert ids(out) == expected[: len(results)]
    # ... and the next hit (same item as the single result of its own session) would not fit.
    nxt = f"sid{24 - len(results):02d}"
    (following,) = store.search(
        AGENT_CALLER, chr(CJK_BMP + 7), session_key=store_key(nxt, "p" * 300)
    )["results"]
    assert json_bytes([*results, following]) > CAP


#: The first CJK ideograph of the Basic Multilingual Plane (U+4E00): one UTF-16 unit, three
#: UTF-8 bytes.
CJK_BMP = 0x4E00


def store_key(session_id: str, key_pad: str) -> str:
    return f"agent:main:k{key_pad}{session_id[3:]}"


def test_byte_cap_holds_for_pythons_default_json_at_the_edge(tmp_path: Path) -> None:
    """Size the items so the kept ones end a few bytes under the cap when counted with one byte
    per separator: ``json.dumps(results)`` (", " separators) must still be <= 32 KiB."""
    text = "".join(chr(CJK_BMP + j) for j in range(300))
    query = chr(CJK_BMP + 7)

    def build(name: str, pad: int) -> tuple[TranscriptStore, int]:
        s = TranscriptStore(f"sqlite:///{tmp_path / name}", background=False)
        _cjk_sessions(s, 30, text, key_pad="p" * pad)
        first = s.search(AGENT_CALLER, query, limit=1)["results"][0]
        return s, json_bytes(first)

    probe, size0 = build("probe.sqlite", 0)
    probe.close()
    # n items fit when counted as 2 + n*size + (n - 1) <= CAP; with n = 24 that is size 1364,
    # whose real default-separator JSON is 2 + 24*1364 + 2*23 = 32784 bytes.
    target = 1364
    assert size0 <= target
    store, size = build("edge.sqlite", target - size0)
    try:
        assert size == target
        out = store.search(AGENT_CALLER, query, limit=25)
        assert out["truncated"] is True
        sizes = {json_bytes(r) for r in out["results"]}
        assert sizes == {target}
        assert json_bytes(out["results"], compact=True) <= CAP
        assert json_bytes(out["results"]) <= CAP, (
            f"{len(out['results'])} items of {target} bytes: "
            f"json.dumps(results) is {json_bytes(out['results'])} bytes"
        )
    finally:
        store.close()


# --------------------------------------------------------------------------- redaction

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = (
    "MIIEowIBAAKCAQEA7bq98ZkQ3mKq1Lr0W8xXbYd2P5vNcT4hJ6sGqUoI1\n"
    "tV9yKe3pRzLw0mN2bC4dF6gH8jK1lM3nP5qR7sT9uV1wX3yZ5aB7cD9e\n"
    "F1gH3iJ5kL7mN9oP1qR3sT5uV7wX9yZ1aB3cD5eF7gH9iJ1kL3mN5oP7"
)
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def _mask_parts(value: str) -> tuple[str, str]:
    """OpenClaw's rule: (the part that must disappear, the mask that is shown instead)."""
    if len(value) < 18:
        return value, "***"
    return value[6:-4], f"{value[:6]}…{value[-4:]}"


#: Cases whose credential is a password: masked whole (``***``), never first 6 + last 4.
PASSWORD_CASES = frozenset({"env-password", "short-password", "postgres", "postgres-short"})

# (name, text placed in the message, the credential value that gets masked)
SECRETS: list[tuple[str, str, str]] = [
    (
        "openai",
        "sk-proj-Q7xR2mT9vK4pL8nW3zY6bC1dF5gH0jA",
        "sk-proj-Q7xR2mT9vK4pL8nW3zY6bC1dF5gH0jA",
    ),
    (
        "github",
        "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    ),
    ("aws", "AKIAZ7Q3XR5T2M9VK4PL", "AKIAZ7Q3XR5T2M9VK4PL"),
    ("jwt", JWT, JWT),
    ("pem", PEM, PEM_BODY),
    ("env-password", "DB_PASSWORD=Tr0ub4dor-3xyzzy-Plugh-77", "Tr0ub4dor-3xyzzy-Plugh-77"),
    ("short-password", "password=hunter2Zq9x", "hunter2Zq9x"),
    (
        "bearer",
        "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0ZZYYXX",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0ZZYYXX",
    ),
    (
        "postgres",
        "postgres://admin:Xk2Vq9Lr7Tz4Wm8Ns3Pb@db.internal:5432/app",
        "Xk2Vq9Lr7Tz4Wm8Ns3Pb",
    ),
    ("postgres-short", "postgres://admin:S3cr3tPw0rd@db.internal/app", "S3cr3tPw0rd"),
]


def _pieces(masked: str) -> set[str]:
    flat = squash(masked)
    return {flat[i : i + 8] for i in range(len(flat) - 7)} | {
        masked[i : i + 8] for i in range(len(masked) - 7)
    }


@pytest.mark.parametrize(("name", "secret", "value"), SECRETS, ids=[s[0] for s in SECRETS])
def test_no_secret_leaks_into_any_snippet_window(
    store: TranscriptStore, name: str, secret: str, value: str
) -> None:
    if name == "pem":
        masked, shown = PEM_BODY, "-----BEGIN RSA PRIVATE KEY----- …redacted… -----END"
    elif name in PASSWORD_CASES:
        masked, shown = value, "***"  # a password is masked whole
    else:
        masked, shown = _mask_parts(value)
    assert len(masked) >= 8
    pieces = _pieces(masked)
    positions = (15, 60, 110)
    store.create_session("s1", OWN)
    for p, pos in enumerate(positions):
        tag = f"q{chr(ord('a') + p)}"
        words = [f"{tag}{i}" for i in range(130)]
        words.insert(pos, secret)
        store.append("s1", msg(f"m{p}", " ".join(words), ts=T0 + p))
    snippets: list[str] = []
    for p, pos in enumerate(positions):
        tag = f"q{chr(ord('a') + p)}"
        for offset in range(-34, 35, 2):
            i = pos + offset if offset < 0 else pos + offset - 1
            if 0 <= i < 130:
                out = store.search(CALLER, f"{tag}{i}")
                assert ids(out) == [f"m{p}"]
                snippets.append(out["results"][0]["snippet"])
    # queries for the secret itself and for pieces of it also find the message
    for query in {secret.split()[-1][:40], *re.findall(r"[A-Za-z0-9]{6,}", masked)[:3]}:
        out = store.search(CALLER, query)
        snippets.extend(r["snippet"] for r in out["results"])
    assert len(snippets) > 60
    for snippet in snippets:
        assert secret not in snippet
        leaked = [piece for piece in pieces if piece in snippet]
        assert not leaked, (name, leaked, snippet)
    # the windows did cover the credential: its mask is shown whole in many snippets
    assert sum(shown in snippet for snippet in snippets) >= 10


def test_redacted_snippet_keeps_the_openclaw_mask_shape(store: TranscriptStore) -> None:
    key = "sk-proj-Q7xR2mT9vK4pL8nW3zY6bC1dF5gH0jA"
    add_session(store, "s1", OWN, [f"use the key {key} for zebra", "DB_PASSWORD=short1 zebra"])
    by_id = {r["messageId"]: r["snippet"] for r in store.search(CALLER, "zebra")["results"]}
    assert by_id["m0"] == f"use the key {key[:6]}…{key[-4:]} for zebra"
    assert by_id["m1"] == "DB_PASSWORD=*** zebra"


# Millisecond instants whose float seconds (datetime.timestamp()) times 1000 fall just below the
# integer: a parser that truncates the float product is one millisecond early on them.
EXACT_MS = [
    ("2004-03-15T07:55:47.472Z", 1_079_337_347_472),
    ("1987-02-24T12:51:47.341Z", 541_169_507_341),
    ("2038-08-15T15:00:50.430Z", 2_165_497_250_430),
    ("2039-03-08T19:46:13.411Z", 2_183_226_373_411),
]


@pytest.mark.parametrize(("iso", "epoch_ms"), EXACT_MS)
def test_iso_timestamps_are_exact_to_the_millisecond(
    store: TranscriptStore, iso: str, epoch_ms: int
) -> None:
    assert datetime.fromisoformat(iso.replace("Z", "+00:00")) == datetime(
        1970, 1, 1, tzinfo=timezone.utc
    ) + timedelta(milliseconds=epoch_ms)
    store.create_session("s1", OWN)
    store.append_many(
        "s1",
        [msg("iso", "zebra iso", ts=iso), msg("num", "zebra num", ts=epoch_ms, parent="iso")],
    )
    got = {r["messageId"]: r["timestamp"] for r in store.search(CALLER, "zebra")["results"]}
    assert got == {"iso": epoch_ms, "num": epoch_ms}
    # inclusive bounds given as ISO hold for a timestamp given in epoch ms, and vice versa
    assert set(ids(store.search(CALLER, "zebra", since=iso, until=iso))) == {"iso", "num"}
    assert set(ids(store.search(CALLER, "zebra", since=epoch_ms, until=epoch_ms))) == {
        "iso",
        "num",
    }


# ------------------------------------------ narrow callers on PostgreSQL: two plans, one answer

#: A ``self`` caller, a ``tree`` caller and a sandboxed one (its own key and what it spawned).
NARROW_CALLERS = [
    Caller(OWN, visibility="self"),
    Caller(OWN, visibility="tree"),
    Caller(OWN, visibility="agent", sandboxed=True),
]
#: Searches (query, keyword arguments) covering ranking, ties, the query language and filters.
NARROW_SEARCHES: list[tuple[str, dict[str, Any]]] = [
    ("lantern", {}),
    ("lantern", {"limit": 3}),
    ("lantern", {"role": "assistant"}),
    ("lantern", {"order": "recent", "limit": 4}),
    ("lantern", {"since": T0 + 3000, "until": T0 + 9000}),
    ("lantern", {"session_key": "agent:main:subagent:kid"}),
    ('"lantern report"', {}),
    ("lant*", {}),
    ("lantern OR beacon", {}),
    ("beacon lantern", {}),
    ("nowhere", {}),
    ("lantren", {}),  # near words: "lantern"
    ("beacn", {}),
    ("lanter", {}),  # a prefix form: "lanter*"
]


def _narrow_corpus(store: TranscriptStore, tmp_path: Path) -> None:
    """The caller's key in two incarnations, a spawned child, a pending child, and sessions it
    may not see that hold the same words many more times (the word's frequency over the whole
    index is theirs)."""
    texts = [
        "lantern report one",
        "lantern lantern beacon",
        "a long message that mentions the lantern once among many other words of no interest",
        "lantern report one",  # ties with the first: same text, same rank
        "beacon only",
        "lantern",
    ]
    add_session(store, "own-1", OWN, texts)
    add_session(store, "own-2", OWN, texts[:3])  # the key's second incarnation: same event ids
    add_session(store, "kid", "agent:main:subagent:kid", texts[1:], spawned_by=OWN)
    add_session(store, "else", "agent:main:other", ["lantern report"] * 40)
    add_session(store, "ops", "agent:ops:main", ["lantern beacon"] * 40)
    add_session(store, "shy", "agent:main:subagent:shy", ["lantern"] * 5, incognito=True)
    events_file(tmp_path / "p.jsonl", "pend", [msg("p0", "lantern pending")])
    meta = SessionMeta(session_key="agent:main:subagent:pend", spawned_by=OWN)
    store.import_jsonl(tmp_path / "p.jsonl", meta=meta)


def _narrow_answers(store: TranscriptStore, caller: Caller) -> list[Any]:
    answers: list[Any] = [store.search(caller, q, **kw) for q, kw in NARROW_SEARCHES]
    answers.append(store.search_by_session(caller, "lantern"))
    answers.append(store.search(caller, None, queries=["lantern", "beacon", "report"]))
    return answers


@pytest.mark.parametrize("caller", NARROW_CALLERS, ids=["self", "tree", "sandboxed"])
def test_narrow_callers_get_the_same_answers_from_their_rows_and_from_the_gin_index(
    store: TranscriptStore, db_engine: str, tmp_path: Path, caller: Caller, monkeypatch: Any
) -> None:
    if db_engine == "sqlite":
        pytest.skip("PostgreSQL chooses between two plans for a narrow caller")
    from openclaw_fts.index.postgresql import read

    _narrow_corpus(store, tmp_path)
    # Each search asks whether the caller's rows are few; the engine's answers are forgotten
    # when the bound changes, so no search carries the branch the other bound chose.
    monkeypatch.setattr(read, "FEW_ROWS_HINT_USES", 0)
    for pending in (True, False):  # with a pending session in the tree, then reconciled
        read._FEW_ROWS_HINTS.pop(store.engine, None)
        row_by_row = _narrow_answers(store, caller)
        monkeypatch.setattr(read, "NARROW_SCAN_EVENTS", -1)  # no caller is narrow enough
        read._FEW_ROWS_HINTS.pop(store.engine, None)
        from_gin = _narrow_answers(store, caller)
        monkeypatch.setattr(read, "NARROW_SCAN_EVENTS", read.NARROW_SCAN_EVENTS)
        monkeypatch.undo()
        monkeypatch.setattr(read, "FEW_ROWS_HINT_USES", 0)
        assert row_by_row == from_gin
        assert ids(row_by_row[0]) and ids(row_by_row[1])  # the searches find something
        misspelt = row_by_row[NARROW_SEARCHES.index(("lantren", {}))]
        assert "lantern" in misspelt["warning"]  # a near word the caller's rows hold
        assert ("indexing" in row_by_row[0]) is (pending and caller.visibility != "self")
        store.reconcile()


def _plans_run(engine: Engine, statements: list[tuple[str, Any]]) -> list[str]:
    """Per ranked statement run, which plan answered it: ``rows`` when the narrow caller's rows
    were read one by one, ``gin`` when the match set joined to the visible sessions was. A
    statement with both branches: the one its one-time filter ran (EXPLAIN ANALYZE with its
    parameters); a statement with one: that one (a wider caller's is ``gin``)."""
    ran = []
    with engine.connect() as conn:
        conn.exec_driver_sql("SET plan_cache_mode = force_custom_plan")
        for statement, params in statements:
            plan = conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params
            ).scalar_one()
            nodes, branches = [plan[0]["Plan"]], []
            while nodes:
                node = nodes.pop()
                nodes.extend(node.get("Plans", []))
                gate = node.get("One-Time Filter")
                if gate is not None and any(
                    child["Parent Relationship"] == "Outer" and child["Actual Loops"] > 0
                    for child in node["Plans"]
                ):
                    branches.append("gin" if gate.startswith("(NOT ") else "rows")
            assert len(branches) <= 1
            if branches:
                ran.append(branches[0])
            else:
                ran.append("rows" if "CROSS JOIN LATERAL" in statement else "gin")
    return ran


def test_a_narrow_caller_is_searched_from_its_rows_while_they_are_few(
    store: TranscriptStore, db_engine: str, engine: Engine, tmp_path: Path, monkeypatch: Any
) -> None:
    if db_engine == "sqlite":
        pytest.skip("PostgreSQL chooses between two plans for a narrow caller")
    from sqlalchemy import event

    from openclaw_fts.index.postgresql import read

    _narrow_corpus(store, tmp_path)
    store.reconcile()
    ran: list[tuple[str, Any]] = []

    def seen(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        if "ts_rank" in statement:
            ran.append((statement, params))

    caller = Caller(OWN, visibility="self")
    own_events = 6 + 3  # own-1 and own-2: the caller's visible events
    # The answer (few or not) a search learns serves the engine's next 3 searches of this
    # caller, which carry one branch only; then a search asks again, carrying that answer's
    # branch (not both: planning the other cost ~0.6 ms) and the question.
    monkeypatch.setattr(read, "FEW_ROWS_HINT_USES", 3)
    event.listen(store.engine, "before_cursor_execute", seen)
    answers = []
    for cap in (own_events, own_events - 1):  # at the cap: its rows; one past: the GIN index
        monkeypatch.setattr(read, "NARROW_SCAN_EVENTS", cap)
        answers += [store.search(caller, "lantern") for _ in range(3)]
    assert store.search(Caller(OWN, visibility="agent"), "lantern")["results"]
    event.remove(store.engine, "before_cursor_execute", seen)
    assert ids(answers[0]) and all(a == answers[0] for a in answers)
    if db_engine == PARTITIONED:
        # Its searches pick their partitions first (a statement of their own) and ask in
        # every ranked statement, as the hint is only kept by the one-statement search.
        assert all(" UNION ALL " in statement for statement, _ in ran[:6])
        assert _plans_run(engine, ran) == ["rows"] * 3 + ["gin"] * 4
        return
    # The last, an agent caller's, carries its two plans (test below).
    assert [" UNION ALL " in statement for statement, _ in ran] == [
        True, False, False, False, False, False, True,
    ]  # fmt: skip
    # The first and the fifth ask (the first with both branches, knowing nothing yet).
    assert ["narrow_events" in params for _, params in ran[:6]] == [
        True, False, False, False, True, False,
    ]  # fmt: skip
    # The fourth and fifth searches still read the rows one by one (a stale answer picks the
    # plan, not the rows); the fifth learns the new answer, and the sixth is answered from
    # the GIN index; the agent caller's word is not tracked: from the GIN index too.
    assert _plans_run(engine, ran) == ["rows", "rows", "rows", "rows", "rows", "gin", "gin"]


#: The words of :func:`_narrow_corpus` an agent caller's test tracks.
AGENT_TRACKED = ["beacon", "lantern", "report"]


def test_an_agent_caller_gets_the_planners_rows_from_its_rows_and_from_the_match_set(
    store: TranscriptStore, db_engine: str, engine: Engine, tmp_path: Path, monkeypatch: Any
) -> None:
    """On the flat layout an ``agent`` caller's exact statement reads its sessions' rows one by
    one when every word its matches must hold is tracked and its sessions hold few events,
    the GIN match set once when a word is not tracked, else the planner's join of the index to
    the visible sessions (``read._agent_plans``); each answers what that join alone answers
    (the statement before: ``ROW_SCAN_VISIBILITIES`` without ``agent``), with a pending session
    among them and without, with ranking, ties, filters, the query language and misses. On
    the partitioned layout the planner's join stays."""
    if db_engine == "sqlite":
        pytest.skip("PostgreSQL chooses between plans for an agent caller")
    from sqlalchemy import event, text

    from openclaw_fts.index.postgresql import read
    from openclaw_fts.index.postgresql.backend import PostgresqlBackend
    from openclaw_fts.index.postgresql.impact import promote

    _narrow_corpus(store, tmp_path)
    caller = Caller(OWN, visibility="agent")
    # The exact statement every time (a tracked word's impact list would answer first).
    monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", False)
    ran: list[tuple[str, Any]] = []

    def seen(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        if "ts_rank" in statement:
            ran.append((statement, params))

    def answers() -> list[Any]:
        ran.clear()
        event.listen(store.engine, "before_cursor_execute", seen)
        try:
            return _narrow_answers(store, caller)
        finally:
            event.remove(store.engine, "before_cursor_execute", seen)

    def planners() -> list[Any]:
        monkeypatch.setattr(read, "ROW_SCAN_VISIBILITIES", ("self", "tree"))
        try:
            return answers()
        finally:
            monkeypatch.setattr(read, "ROW_SCAN_VISIBILITIES", ("self", "tree", "agent"))

    def plans() -> set[str]:
        if db_engine == PARTITIONED:
            assert not any(" UNION ALL " in statement for statement, _ in ran)
            return {"rows", "gin"}
        return set(_plans_run(engine, ran))

    untracked = answers()
    assert "gin" in plans()  # "lantern" and the rest: not tracked, the match set once
    assert untracked == planners()
    assert ids(untracked[0]) and "indexing" in untracked[0]  # the pending child
    with store.engine.begin() as conn:  # a word of 3 messages is frequent here
        conn.execute(text("ANALYZE"))
        promote(conn, 3)
        tracked = {str(w) for (w,) in conn.execute(text("SELECT term FROM message_impact_terms"))}
    assert set(AGENT_TRACKED) <= tracked
    for pending in (True, False):
        found = answers()
        assert "rows" in plans()  # every required word tracked: its rows one by one
        monkeypatch.setattr(read, "NARROW_SCAN_EVENTS", -1)  # too many: the planner's join
        many = answers()
        monkeypatch.setattr(read, "NARROW_SCAN_EVENTS", read.NARROW_SCAN_EVENTS)
        monkeypatch.undo()
        monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", False)
        assert found == many == planners() == (untracked if pending else found)
        assert ("indexing" in found[0]) is pending
        store.reconcile()
