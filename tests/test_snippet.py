"""Snippets: the window around the hit, ellipses, the character cut, grapheme safety."""

from __future__ import annotations

import random
import time

import pytest
import regex  # type: ignore[import-untyped,unused-ignore]  # no stubs in the venv
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_fts import snippet
from openclaw_fts.query import Term, compile_query
from openclaw_fts.snippet import (
    ELLIPSIS,
    SNIPPET_MAX_CHARS,
    SNIPPET_SCAN_MAX_CHARS,
    SNIPPET_WINDOW_TOKENS,
    cut_graphemes,
    make_snippet,
)
from openclaw_fts.tokens import clean_text, utf16_len

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def filler(count: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(count))


def terms(query: str) -> tuple[Term, ...]:
    compiled = compile_query(query)
    assert compiled is not None
    return compiled.terms


def graphemes(text: str) -> list[str]:
    return [str(g) for g in regex.findall(r"\X", text)]


def core(snippet: str) -> str:
    """The snippet without its ellipses."""
    if snippet.startswith(ELLIPSIS + " "):
        snippet = snippet[2:]
    if snippet.endswith(" " + ELLIPSIS):
        snippet = snippet[:-2]
    elif snippet.endswith(ELLIPSIS):
        snippet = snippet[:-1]
    return snippet


def test_constants() -> None:
    assert SNIPPET_WINDOW_TOKENS == 48
    assert SNIPPET_MAX_CHARS == 300
    assert ELLIPSIS == "…"


@pytest.mark.parametrize(
    "text", ["", "short", "two\nlines  with   spaces", "明天下午三点开项目评审会议", "x" * 300]
)
def test_short_text_comes_back_whole(text: str) -> None:
    assert make_snippet(text, terms("nothing")) == text
    assert make_snippet(text, terms("明天")) == text


def test_window_around_the_hit_with_ellipses_at_both_ends() -> None:
    text = f"{filler(300, 1)} the staging deployment failed {filler(300, 2)}"
    snippet = make_snippet(text, terms("deployment"))
    assert "the staging deployment failed" in snippet
    assert snippet.startswith(ELLIPSIS + " ") and snippet.endswith(" " + ELLIPSIS)
    assert len(snippet) <= SNIPPET_MAX_CHARS + 1
    assert core(snippet) in text
    assert len(core(snippet).split()) <= SNIPPET_WINDOW_TOKENS
    # The hit has context on both sides.
    before, _, after = core(snippet).partition("deployment")
    assert len(before.split()) >= 10 and len(after.split()) >= 10


def test_hit_at_the_start_has_no_leading_ellipsis() -> None:
    text = f"Deployment failed: {filler(300, 3)}"
    snippet = make_snippet(text, terms("deployment"))
    assert snippet.startswith("Deployment failed: ")
    assert snippet.endswith(" " + ELLIPSIS)


def test_hit_at_the_end_has_no_trailing_ellipsis() -> None:
    text = f"{filler(300, 4)} and finally the deployment."
    snippet = make_snippet(text, terms("deployment"))
    assert snippet.startswith(ELLIPSIS + " ")
    assert snippet.endswith("the deployment.")  # attached punctuation kept
    assert len(core(snippet).split()) == SNIPPET_WINDOW_TOKENS


def test_no_hit_falls_back_to_the_start() -> None:
    text = filler(300, 5)
    snippet = make_snippet(text, terms("absent"))
    assert not snippet.startswith(ELLIPSIS)
    assert snippet.endswith(" " + ELLIPSIS)
    assert text.startswith(core(snippet))


def test_window_with_most_distinct_terms_wins() -> None:
    text = (
        f"{filler(100, 6)} staging alone here {filler(100, 7)} "
        f"staging and production together {filler(100, 8)} production alone {filler(100, 9)}"
    )
    snippet = make_snippet(text, terms("staging production"))
    assert "staging and production together" in snippet


def test_phrase_needs_consecutive_tokens() -> None:
    text = f"staging {filler(100, 10)} deployment {filler(100, 11)} the staging deployment "
    text += filler(100, 12)
    snippet = make_snippet(text, terms('"staging deployment"'))
    assert "the staging deployment" in snippet
    assert snippet.startswith(ELLIPSIS)


def test_prefix_and_folded_terms() -> None:
    text = f"{filler(200, 13)} Redeploy? No: DÉPLOYMENT of the Café {filler(200, 14)}"
    assert "DÉPLOYMENT" in make_snippet(text, terms("deploy*"))
    assert "Café" in make_snippet(text, terms("cafe"))


def test_cut_to_max_chars_with_an_ellipsis() -> None:
    long_words = " ".join(f"{w}{w}{w}{w}" for w in WORDS * 10)
    text = f"needle {long_words}"
    snippet = make_snippet(text, terms("needle"))
    assert snippet.startswith("needle ")
    assert len(snippet) == len(snippet.rstrip()) <= SNIPPET_MAX_CHARS + 1
    assert snippet.endswith(ELLIPSIS) and not snippet.endswith(" " + ELLIPSIS)
    for size in (10, 50, 299):
        assert len(make_snippet(text, terms("needle"), max_chars=size)) <= size + 1


def test_long_tokens_before_the_hit_do_not_push_it_out() -> None:
    hashes = " ".join(f"{i:040x}" for i in range(60))
    text = f"{hashes} needle here {hashes}"
    snippet = make_snippet(text, terms("needle"))
    assert "needle here" in snippet
    assert len(snippet) <= SNIPPET_MAX_CHARS + 1


def test_whitespace_runs_collapse_in_a_window() -> None:
    text = f"{filler(100, 15)}\n\n\t  needle\r\n   here  {filler(100, 16)}"
    snippet = make_snippet(text, terms("needle"))
    assert "needle here" in snippet
    assert "\n" not in snippet and "  " not in snippet


def test_cjk_snippet_is_the_original_text_around_the_hit() -> None:
    text = (
        "会议纪要："
        + "今天我们讨论了很多事情。" * 30
        + "明天下午三点开项目评审会议"
        + "请大家准时参加。" * 30
    )
    snippet = make_snippet(text, terms("评审"))
    assert "明天下午三点开项目评审会议" in snippet
    assert core(snippet) in text  # no spaces inserted between CJK characters
    assert snippet.startswith(ELLIPSIS + " ") and snippet.endswith(ELLIPSIS)
    korean = "안녕하세요 " * 80 + "회의록은 내일 공유합니다 " + "감사합니다 " * 80
    snippet = make_snippet(korean, terms("회의"))
    assert "회의록은 내일 공유합니다" in snippet and core(snippet) in korean
    japanese = "これはテストです。" * 40 + "明日の会議はキャンセルされました" + "よろしく。" * 40
    snippet = make_snippet(japanese, terms("キャンセル"))
    assert "明日の会議はキャンセルされました" in snippet and core(snippet) in japanese


def test_a_cjk_run_is_one_word_so_the_snippet_shows_as_much_as_openclaw() -> None:
    # OpenClaw's unicode61 tokenizer reads a run of CJK characters as one token, so its window
    # of words reaches the 300-character cut; one word per CJK character would show ~48.
    text = "今天我们讨论了很多事情" * 30 + "明天下午三点开项目评审会议" + "请大家准时参加" * 40
    snippet = make_snippet(text, terms("评审"))
    assert "明天下午三点开项目评审会议" in snippet
    assert len(snippet) >= SNIPPET_MAX_CHARS - 2 * len(ELLIPSIS + " ")
    assert len(snippet) <= SNIPPET_MAX_CHARS + len(ELLIPSIS)
    assert core(snippet) in text
    # about as much context before the hit as after it
    hit = snippet.index("评审")
    assert abs(hit - (len(snippet) - hit)) <= len(snippet) // 3
    # CJK glued to Latin letters is one word too, as unicode61 reads "用SQLite部署"
    mixed = "我们用SQLite部署" * 60 + " deploy " + "完成了SQLite迁移" * 60
    assert len(make_snippet(mixed, terms("deploy"))) >= SNIPPET_MAX_CHARS - 2 * len(ELLIPSIS + " ")


FAMILY = "👩\u200d👩\u200d👧\u200d👦"
FLAG = "🇯🇵"
ZALGO = "e" + "\u0301\u0302\u0303" * 5


@pytest.mark.parametrize("unit", [FAMILY, FLAG, "e\u0301", ZALGO, "👍🏽", "각", "ᄀ\u1161\u11a8"])
def test_cut_never_splits_a_grapheme(unit: str) -> None:
    for pad in range(8):
        text = "x" * pad + unit * 200
        for size in (1, 7, 50, 299, 300):
            cut = cut_graphemes(text, size)
            assert len(cut) <= size
            assert text.startswith(cut)
            assert graphemes(text)[: len(graphemes(cut))] == graphemes(cut)
        snippet = make_snippet(f"needle {text}", terms("needle"))
        assert len(snippet) <= SNIPPET_MAX_CHARS + 1
        body = core(snippet)
        assert set(graphemes(body[7:])) <= {unit, " "} | ({"x"} if pad else set())


def test_lone_surrogates_and_nul_are_cleaned() -> None:
    text = "needle \ud800 and \x00 " + filler(200, 17)
    snippet = make_snippet(text, terms("needle"))
    snippet.encode("utf-8")
    assert "\ufffd" in snippet
    assert make_snippet("a\ud83d\ude00b", []) == "a😀b"


def test_text_without_tokens() -> None:
    snippet = make_snippet("-" * 1000, terms("x"))
    assert snippet == "-" * SNIPPET_MAX_CHARS + ELLIPSIS


def test_huge_message_is_bounded_and_still_finds_the_hit() -> None:
    text = filler(20_000, 18) * 100 + " the needle is here " + filler(1000, 19)  # ~12 MB
    assert len(text) > 4 * SNIPPET_SCAN_MAX_CHARS
    started = time.perf_counter()
    snippet = make_snippet(text, terms("needle"))
    elapsed = time.perf_counter() - started
    assert "the needle is here" in snippet
    assert elapsed < 2.0
    started = time.perf_counter()
    snippet = make_snippet(text, terms("absent"))
    assert time.perf_counter() - started < 2.0
    assert text.startswith(core(snippet))


def test_huge_token_window_is_cut() -> None:
    text = "needle " + "A" * 5_000_000
    snippet = make_snippet(text, terms("needle"))
    assert snippet.startswith("needle ") and snippet.endswith(ELLIPSIS)
    assert len(snippet) <= SNIPPET_MAX_CHARS + 1


_ALPHABET = st.one_of(
    st.sampled_from([*WORDS, " ", "\n", "needle", "Café", "明天", "회의", FAMILY, FLAG, ZALGO]),
    st.sampled_from(["e\u0301", "👍🏽", "\u200d", "\ufe0f", "\u0301", ".", "\x00", "\ud800"]),
    st.characters(),
)


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(_ALPHABET, max_size=600).map("".join),
    query=st.sampled_from(["needle", "cafe", "明天", "회의", "alpha beta", '"beta gamma"', "e*"]),
    max_chars=st.sampled_from([5, 40, 300]),
)
def test_snippet_properties(text: str, query: str, max_chars: int) -> None:
    snippet = make_snippet(text, terms(query), max_chars=max_chars)
    snippet.encode("utf-8")
    assert utf16_len(snippet) <= max_chars + 1  # JavaScript's length: an emoji counts 2
    cleaned = clean_text(text)
    if utf16_len(cleaned) <= max_chars:
        assert snippet == cleaned
        return
    # Every grapheme of the snippet is one of the text's (cut only between clusters); clusters
    # holding whitespace are left out (whitespace runs collapse, and a space can carry marks).
    known = {ELLIPSIS} | {g for c in graphemes(cleaned) for g in (c, c.lstrip())}
    assert {g for g in graphemes(snippet) if not any(c.isspace() for c in g)} <= known


_FILLER = "the deploy of the staging service went fine after a short review " * 40


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("needle " + _FILLER, "needle"),  # settled by the first characters
        (_FILLER + " needle", "needle"),  # the term only after the prefix
        ("alpha " + _FILLER + " alpha beta", "alpha beta"),  # the best window is late
        ("alpha beta " + _FILLER + " alpha beta", "alpha beta"),  # every term early
        ("alpha " + _FILLER + " beta", "alpha OR beta"),
        ("x " * 500 + "明天下午开会讨论部署" * 40 + " 明天", "明天"),  # a CJK run over the cut
        ("x " * 509 + "beta gamma " + _FILLER, '"beta gamma"'),  # a phrase at the cut
        ("dep " + _FILLER, "dep*"),
        (_FILLER + " needle " + "word " * 30, "needle"),  # near the end: the window shifts back
    ],
)
@pytest.mark.parametrize("window", [5, 48, 200])
def test_a_long_message_gets_the_snippet_of_its_whole_text(
    monkeypatch: pytest.MonkeyPatch, text: str, query: str, window: int
) -> None:
    """A long message is tokenized from its first ``SNIPPET_PREFIX_CHARS`` first; whatever
    that prefix settles, the snippet is the one the whole text gives."""
    quick = make_snippet(text, terms(query), window_tokens=window)
    monkeypatch.setattr(snippet, "SNIPPET_PREFIX_CHARS", len(text) + 1)
    assert quick == make_snippet(text, terms(query), window_tokens=window)


_LATIN1_WORDS = st.sampled_from(
    [
        *WORDS,
        "Alpha",
        "BETA",
        "café",
        "naïve",
        "ÉCOLE",
        "straße",
        "x2",
        "²",
        "Øre",
        "--verbose",
        "(see",
        "deploy.",
        "node.js",
        "«",
        "¿",
        "\xa0",
        "\n",
        "  ",
        "a" * 40,
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_LATIN1_WORDS, min_size=40, max_size=400),
    query=st.sampled_from(
        [
            "alpha",
            "beta",
            "cafe",
            "naive",
            "ecole",
            "strasse",
            "x2",
            "alpha beta",
            '"beta gamma"',
            "alp*",
            "alpha OR zeta",
            '"alpha alpha"',
            "kappa*",
            "明天",
            "µs",
            "nothing",
        ]
    ),
    window=st.sampled_from([1, 2, 5, 48]),
    max_chars=st.sampled_from([40, 300]),
)
def test_a_latin1_snippet_is_the_one_the_token_scan_gives(
    words: list[str], query: str, window: int, max_chars: int
) -> None:
    """Latin-1 text takes the byte-string path (snippet.latin1_tokens); the snippet is the
    one the scan of every token gives (and a phrase longer than the window fails alike)."""
    text = " ".join(words)
    assert snippet.latin1_tokens(text) is not None

    def outcome() -> str:
        try:
            return make_snippet(text, terms(query), window_tokens=window, max_chars=max_chars)
        except ValueError as error:
            return f"ValueError: {error}"

    fast = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snippet, "latin1_tokens", lambda *_: None)
        assert outcome() == fast


def test_a_words_snippet_of_latin1_text_compiles_no_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-word query's snippets of long Latin-1 messages compile no regular expression,
    whatever the word and wherever the window falls around the hit: the word is found without a
    pattern of its own, and the window's step patterns were compiled when the snippet module
    was imported (``tokens.compile_steps``); compiled on a search's first snippet that met
    them, they made a word's first search ordered ``recent`` 2-3x its next ones."""
    import re

    compiled: list[object] = []
    compile_pattern = re.compile

    def counted(pattern: object, flags: int = 0) -> object:
        compiled.append(pattern)
        return compile_pattern(pattern, flags)  # type: ignore[call-overload]

    words = ("qzxv", "ptaxn", "zz9")
    texts = {
        (word, before): " ".join([*(["lorem", "ipsúm"] * before), word.upper(), *["dolor"] * 90])
        for word in words
        for before in range(0, 60, 3)
    }
    queries = {word: terms(word) for word in words}
    monkeypatch.setattr(re, "compile", counted)
    shown = {key: make_snippet(text, queries[key[0]]) for key, text in texts.items()}
    monkeypatch.setattr(re, "compile", compile_pattern)
    assert compiled == []
    assert all(word.upper() in shown[word, before] for word, before in texts)
    assert shown["qzxv", 57].startswith(ELLIPSIS) and shown["qzxv", 0].startswith("QZXV")
