"""CJK spacing, text cleaning, folding, and the Python mirror of the unicode61 tokenizer."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_fts.tokens import (
    CJK_RANGES,
    DIACRITIC_MARKS,
    MIRROR_EXACT_RANGES,
    SEPARATOR_RANGES,
    Token,
    ascii_holds_token,
    clean_text,
    exact_words_starting,
    fold,
    has_token,
    index_body,
    is_cjk,
    is_token_char,
    iter_tokens,
    latin1_tokens,
    mirror_is_exact,
    scan_tokens,
    tokenize,
    words_starting,
)

DDL = "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')"


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    con.execute(DDL)
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    yield con
    con.close()


def fts5_tokens(con: sqlite3.Connection, text: str) -> list[str]:
    """The tokens FTS5 indexes for ``text`` (as the application stores it: index_body)."""
    con.execute("DELETE FROM t")
    con.execute("INSERT INTO t(rowid, body) VALUES (1, ?)", (index_body(text),))
    return [row[0] for row in con.execute("SELECT term FROM v ORDER BY offset")]


# --- CJK_RANGES, is_cjk -------------------------------------------------------------------------


def test_cjk_ranges_are_sorted_and_disjoint() -> None:
    for (lo, hi), (next_lo, _) in itertools.pairwise(CJK_RANGES):
        assert lo <= hi < next_lo
    assert CJK_RANGES[0][0] <= CJK_RANGES[-1][1] <= 0x10FFFF


@pytest.mark.parametrize(
    "ch",
    [
        "明",  # Han
        "㐀",  # Extension A
        "\U00020000",  # Extension B
        "\U00030000",  # Extension G
        "豈",  # compatibility ideograph U+F900
        "々",  # iteration mark
        "〇",
        "あ",  # Hiragana
        "ア",  # Katakana
        "ー",  # prolonged sound mark
        "ｱ",  # halfwidth Katakana
        "ｰ",  # halfwidth prolonged sound mark
        "ﾞ",  # halfwidth voiced sound mark
        "가",  # Hangul syllable
        "힣",
        "ᄀ",  # Hangul Jamo
        "ㄱ",  # compatibility Jamo
        "ﾡ",  # halfwidth Hangul
        "ㄅ",  # Bopomofo
    ],
)
def test_is_cjk(ch: str) -> None:
    assert is_cjk(ch)


@pytest.mark.parametrize("ch", ["a", "é", "1", "。", "、", " ", "\u3000", "Ａ", "😀", "", "明天"])
def test_is_not_cjk(ch: str) -> None:
    assert not is_cjk(ch)


# --- clean_text ---------------------------------------------------------------------------------


def test_clean_text() -> None:
    assert clean_text("a\x00b") == "a b"
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\udfff") == "\ufffd"
    assert clean_text("x\ud83d") == "x\ufffd"
    assert clean_text("\ud83d\ude00 ok") == "😀 ok"  # a well-formed pair is joined
    assert clean_text("é\x00\ud800") == "é \ufffd"
    for text in ["plain", "Café résumé", "明天", "😀", ""]:
        assert clean_text(text) is text


_DIRTY = st.sampled_from(["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"])


@given(st.text(alphabet=st.one_of(st.characters(), _DIRTY)))
def test_clean_text_always_encodes(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")
    assert "\x00" not in cleaned


# --- index_body ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain ASCII text, with punctuation: it's fine.",
        "Café résumé naïve",
        "Привет, мир",
        "Ελληνικά",
        "emoji 😀 and 👩‍👩‍👧‍👦",
        "fullwidth ＡＢＣ １２３ and 。、",
        "tabs\tand\nnewlines",
    ],
)
def test_index_body_is_identity_without_cjk(text: str) -> None:
    assert index_body(text) is text


def test_index_body_spaces_every_cjk_character() -> None:
    assert index_body("用SQLite部署") == " 用 SQLite 部 署 "
    assert index_body("明天下午") == " 明 天 下 午 "
    assert index_body("회의록은") == " 회 의 록 은 "
    assert index_body("サーバー") == " サ ー バ ー "
    assert index_body("人々") == " 人 々 "
    assert index_body("a\x00明\ud800") == "a  明 \ufffd"


def best_seconds(text: str) -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        assert index_body(text) is text
        best = min(best, time.perf_counter() - started)
    return best


def test_index_body_is_cheap_without_cjk() -> None:
    ascii_text = "The quick brown fox jumps over the lazy dog. " * 25_000  # ~1.1 MB
    latin1_text = "Café résumé naïve über straße " * 35_000
    assert best_seconds(ascii_text) < 0.005
    assert best_seconds(latin1_text) < 0.005
    # Other text needs one character-class scan (~40 ns per character).
    assert best_seconds("The quick — “brown” fox… 😀 " * 40_000) < 0.5


@given(st.text(alphabet=st.one_of(st.characters(), _DIRTY, st.sampled_from("明天회의ーｱ々"))))
def test_index_body_changes_only_spacing(text: str) -> None:
    body = index_body(text)
    assert body.replace(" ", "") == clean_text(text).replace(" ", "")
    body.encode("utf-8")


# --- fold ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "folded"),
    [
        ("Deploy", "deploy"),
        ("Café", "cafe"),
        ("RÉSUMÉ", "resume"),
        ("re\u0301sume\u0301", "resume"),
        ("naïve", "naive"),
        ("Ångström", "angstrom"),
        ("Việt", "viet"),
        ("İstanbul", "istanbul"),
        ("Straße", "straße"),
        ("ΣΟΦΊΑ", "σοφία"),  # Greek keeps its accents in remove_diacritics 2
        ("Ёж", "ёж"),
        ("ＡＢＣ", "ａｂｃ"),
        ("明", "明"),
        ("회", "회"),
    ],
)
def test_fold(token: str, folded: str) -> None:
    assert fold(token) == folded


# --- tokenize -----------------------------------------------------------------------------------


def test_tokenize_offsets_point_into_the_original_text() -> None:
    text = "Hello, Wörld! 明天ok x_y 3.14 re\u0301sume\u0301"
    tokens = tokenize(text)
    assert [text[t.start : t.end] for t in tokens] == [
        "Hello",
        "Wörld",
        "明",
        "天",
        "ok",
        "x",
        "y",
        "3",
        "14",
        "re\u0301sume\u0301",
    ]
    assert [t.norm for t in tokens] == [
        "hello",
        "world",
        "明",
        "天",
        "ok",
        "x",
        "y",
        "3",
        "14",
        "resume",
    ]
    assert tokens[0] == Token(0, 5, "hello")


def test_tokenize_separators() -> None:
    assert tokenize("... --- *** ::: \u0301 😀 。") == []
    assert not has_token("... 😀 \u0301")
    assert has_token("... x")
    assert has_token("、明")
    assert is_token_char("a") and is_token_char("明") and is_token_char("\ue000")
    assert not is_token_char("*") and not is_token_char("\u0301") and not is_token_char("ab")


def test_tokenize_cjk_characters_one_by_one() -> None:
    assert [t.norm for t in tokenize("我们的数据库")] == ["我", "们", "的", "数", "据", "库"]
    assert [t.norm for t in tokenize("サーバー")] == ["サ", "ー", "バ", "ー"]


_MIRROR_ALPHABET = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x24F),  # ASCII, Latin-1, Latin Ext-A/B
    st.characters(min_codepoint=0x300, max_codepoint=0x36F),  # combining diacritics
    st.characters(min_codepoint=0x391, max_codepoint=0x3C9),  # Greek
    st.characters(min_codepoint=0x400, max_codepoint=0x45F),  # Cyrillic
    st.characters(min_codepoint=0x1E00, max_codepoint=0x1EFF),  # Latin Extended Additional
    st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),  # CJK punctuation, kana
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4E80),  # Han
    st.characters(min_codepoint=0xAC00, max_codepoint=0xAC80),  # Hangul
    st.characters(min_codepoint=0xFF00, max_codepoint=0xFFDC),  # fullwidth / halfwidth forms
    st.sampled_from(["\t", "\n", " ", "_", "'", "😀"]),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=_MIRROR_ALPHABET, max_size=60))
def test_tokenize_mirrors_fts5(fts: sqlite3.Connection, text: str) -> None:
    assert [t.norm for t in tokenize(text)] == fts5_tokens(fts, text)


def test_tokenize_mirrors_fts5_on_examples(fts: sqlite3.Connection) -> None:
    for text in [
        "Café résumé naïve Ǖber İstanbul Ⅻ",
        "re\u0301sume\u0301 \u0301x",
        "我们的数据库很好 明天下午三点开项目评审会议",
        "明日の会議はキャンセルされました サーバー ｻｰﾊﾞｰ 人々",
        "회의록은 내일 공유합니다",
        "it's gateway/run.py user@host.com 50% C:\\Users\\me c++ node.js --verbose",
    ]:
        assert [t.norm for t in tokenize(text)] == fts5_tokens(fts, text)


@settings(max_examples=1000, deadline=None)
@given(
    text=st.text(
        alphabet=st.one_of(
            st.characters(),
            st.characters(max_codepoint=0x7F),
            st.sampled_from(["\u0301", "\u0305", "明", "회", "\ufffe", "\uffff", "\x00", "é"]),
        ),
        max_size=80,
    )
)
def test_fast_paths_give_the_exact_tokens(text: str) -> None:
    exact = list(iter_tokens(text))
    assert tokenize(text) == exact
    for pos in (0, 1, len(text) // 2):
        for end in (None, max(0, len(text) - 1), len(text) // 2 + 3):
            starts, ends, norms = scan_tokens(text, pos, end)
            assert list(zip(starts, ends, norms, strict=True)) == [
                tuple(token) for token in iter_tokens(text, pos, end)
            ]


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(
        alphabet=st.one_of(
            st.characters(max_codepoint=0x24F),  # the Latin fast path's whole range
            st.sampled_from([" ", "_", "é", "ß", "ǅ", "²", "ª", "\u0250", "\u0301"]),
        ),
        max_size=80,
    )
)
def test_the_latin_fast_path_gives_the_exact_tokens(text: str) -> None:
    for pos in (0, 1, len(text) // 2):
        for end in (None, max(0, len(text) - 1), len(text) // 2 + 3):
            starts, ends, norms = scan_tokens(text, pos, end)
            assert list(zip(starts, ends, norms, strict=True)) == [
                tuple(token) for token in iter_tokens(text, pos, end)
            ]


_LATIN1_ALPHABET = st.one_of(
    st.characters(max_codepoint=0xFF),
    st.sampled_from([" ", " ", "alpha", "Beta", "ALPHA", "café", "ß", "²", "ª", "µ", "--", "Ǆ"]),
)


@settings(max_examples=500, deadline=None)
@given(text=st.lists(_LATIN1_ALPHABET, max_size=60).map("".join), pos=st.integers(0, 6))
def test_latin1_tokens_are_the_scanned_tokens(text: str, pos: int) -> None:
    """The byte-string form of a Latin-1 text's tokens counts, finds and steps through
    exactly the tokens (and folded forms) scan_tokens gives."""
    end = max(pos, len(text) - 1)
    tokens = latin1_tokens(text, pos, end)
    part = text[pos:end]
    if any(
        ord(ch) > 0xFF or fold(ch) != fold(ch).encode("latin-1", "replace").decode("latin-1")
        for ch in part
    ):
        assert tokens is None
        return
    assert tokens is not None
    starts, ends, norms = scan_tokens(text, pos, end)
    assert tokens.count == len(norms)
    assert tokens.indexes(starts) == list(range(len(starts)))
    for at in range(pos, end + 2):
        assert tokens.next_start(at) == next((s for s in starts if s >= at), -1)
    for i in range(len(starts)):
        assert tokens.start_of(starts[0], i) == starts[i]
        assert tokens.start_of(starts[-1], i - len(starts) + 1) == starts[i]
        assert tokens.end_of(starts[i], 0) == ends[i]
        assert tokens.end_of(starts[0], i) == ends[i]
    for i in range(len(norms)):
        for size, prefix in ((1, False), (2, False), (3, False), (1, True), (2, True)):
            wanted = tuple(norms[i : i + size])
            if prefix:
                wanted = (*wanted[:-1], wanted[-1][:2])
            expected = [
                (starts[j], ends[j + len(wanted) - 1])
                for j in range(len(norms) - len(wanted) + 1)
                if tuple(norms[j : j + len(wanted) - 1]) == wanted[:-1]
                and (
                    norms[j + len(wanted) - 1].startswith(wanted[-1])
                    if prefix
                    else norms[j + len(wanted) - 1] == wanted[-1]
                )
            ]
            assert tokens.find(wanted, prefix) == expected
    assert tokens.find(("alpha beta",), False) == []
    assert tokens.find(("",), False) == []
    assert tokens.find(("",), True) == list(zip(starts, ends, strict=True))
    assert tokens.find(("\u03bc",), True) == []


def test_every_latin_character_tokenizes_as_fts5_does(fts: sqlite3.Connection) -> None:
    # Each code point below U+0250 between two letters and alone: the fast path's tokens are
    # the exact pattern's, and their folded forms are FTS5's own.
    for cp in range(0x20, 0x250):
        text = f"a{chr(cp)}b {chr(cp)}"
        starts, ends, norms = scan_tokens(text)
        assert list(zip(starts, ends, norms, strict=True)) == [
            tuple(token) for token in iter_tokens(text)
        ], hex(cp)
        assert norms == fts5_tokens(fts, text), hex(cp)


_HEADS = ["pl", "st", "ae", "ss", "ka", "k", "0p", "pla", "жж", "ά", "pĺ", "ｐｌ", "数", "数据"]


@settings(max_examples=2000, deadline=None)
@given(
    text=st.text(
        alphabet=st.one_of(
            _MIRROR_ALPHABET,
            st.sampled_from([*"plPLstSTk", "\u212a", "\u212b", "ſ", "ĺ", "ṕ", "，", "…"]),
        ),
        max_size=60,
    ),
    head=st.sampled_from(_HEADS),
    spaced=st.booleans(),
)
def test_words_starting_is_the_mirrors_tokens_that_start_with_the_head(
    text: str, head: str, spaced: bool
) -> None:
    # Its fast paths (ASCII, Latin and CJK text searched for the head's spellings) give the
    # mirror's tokens, in the raw text and in its indexed (CJK-spaced) form.
    text = index_body(text) if spaced else text
    assert words_starting(text, head) == [w for w in scan_tokens(text)[2] if w.startswith(head)]


def test_words_starting_on_examples() -> None:
    text = "Plan the PLANNING: pl, 2pl, plé ṕlanner p\u0301lanner 计划plan。planned，apple"
    assert words_starting(text, "pl") == [
        "plan", "planning", "pl", "ple", "planner", "planner", "plan", "planned",
    ]  # fmt: skip
    assert words_starting(index_body(text), "pl") == words_starting(text, "pl")
    assert words_starting("\u212aelvin and kelvin", "ke") == ["kelvin", "kelvin"]
    assert words_starting("ASCII only", "жж") == []


@settings(max_examples=500, deadline=None)
@given(
    texts=st.lists(
        st.text(
            alphabet=st.one_of(
                _MIRROR_ALPHABET,
                st.sampled_from([*"plPLstSTk \n", "\u212a", "ſ", "ĺ", "é", "，", "数", "\u0301"]),
            ),
            max_size=40,
        ),
        max_size=8,
    ),
    head=st.sampled_from(_HEADS),
)
def test_exact_words_starting_is_each_texts_words_starting(texts: list[str], head: str) -> None:
    # The texts searched as one (joined by a separator) give each text its own words, or
    # None as soon as one of them holds a character the mirror does not vouch for.
    found = exact_words_starting(texts, head)
    if all(map(mirror_is_exact, texts)):
        assert found == [words_starting(text, head) for text in texts]
    else:
        assert found is None


def test_exact_words_starting_on_examples() -> None:
    texts = ["Plan a plé", "ASCII planned", "", "数据plan，Ṕlan", "Планировщик plan"]
    assert exact_words_starting(texts, "pl") == [
        ["plan", "ple"], ["planned"], [], ["plan", "plan"], ["plan"],
    ]  # fmt: skip
    assert exact_words_starting(["plan", "we deploy\U0001f972ed it"], "pl") is None
    assert exact_words_starting(["plan", "nul\x00"], "pl") is None


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from([*"abAB01 -_.\n", "é"]), max_size=30),
    word=st.text(alphabet=st.sampled_from([*"ab01", "é", "B"]), max_size=3),
)
def test_ascii_holds_token_is_the_mirrors_tokens(text: str, word: str) -> None:
    # A lower-cased ASCII text holds a word as a token exactly when the mirror says so; a
    # word beyond ASCII letters and digits (or not folded) is held by none.
    if not text.isascii():
        text = text.encode("ascii", "replace").decode()
    lowered = text.lower()
    expected = word.isascii() and word.isalnum() and word in scan_tokens(lowered)[2]
    assert ascii_holds_token(lowered, word) == expected


def test_the_separator_ranges_separate_tokens(fts: sqlite3.Connection) -> None:
    # words_starting treats these as separators: so do the mirror and FTS5 itself.
    for lo, hi in SEPARATOR_RANGES:
        for cp in range(lo, hi + 1):
            ch = chr(cp)
            assert not is_token_char(ch) and ch not in DIACRITIC_MARKS and not is_cjk(ch), hex(cp)
            assert fts5_tokens(fts, f"ab{ch}cd") == ["ab", "cd"], hex(cp)


#: Every how many CJK code points one is checked (they are ~190,000, each a token by itself).
CJK_SAMPLE_STEP = 97


def test_the_mirror_is_exact_where_it_says_so(fts: sqlite3.Connection) -> None:
    # Every code point of MIRROR_EXACT_RANGES (a sample of the CJK ones), alone, between two
    # letters and after two: the mirror's tokens and folded forms are FTS5's own.
    cjk = {(lo, hi) for lo, hi in CJK_RANGES}
    for lo, hi in MIRROR_EXACT_RANGES:
        for cp in range(lo, hi + 1, CJK_SAMPLE_STEP if (lo, hi) in cjk else 1):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            ch = chr(cp)
            assert mirror_is_exact(ch), hex(cp)
            for text in (ch, f"q{ch}q", f"ab{ch}"):
                assert scan_tokens(text)[2] == fts5_tokens(fts, text), hex(cp)


def test_the_mirror_is_not_trusted_with_newer_characters(fts: sqlite3.Connection) -> None:
    # Characters newer than SQLite's Unicode tables, where the two differ: outside the ranges.
    for text in ["deploy\U0001f972ed", "st\u2066aging", "\u1c90\u1c91", "ste\u1ab0p", "a\x00b"]:
        assert not mirror_is_exact(text)
    assert scan_tokens("deploy\U0001f972ed")[2] != fts5_tokens(fts, "deploy\U0001f972ed")
    assert mirror_is_exact("Café 数据库 — naïve, ΑΒΓ, Жж, ｆｕｌｌ")
