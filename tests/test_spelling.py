"""The edit distance behind search suggestions: the optimal string alignment distance, exact up
to its limit and ``limit + 1`` beyond it, checked against the whole dynamic-programming table
on random word pairs (near pairs made by random edits, and unrelated ones), over many words at
once (:func:`nearest`) too; and which query tokens are words at all (:func:`is_word_like`)."""

from __future__ import annotations

import random

from openclaw_fts.spelling import (
    MIN_HEX_RUN_CHARS,
    edit_distance,
    examine_order,
    is_word_like,
    nearest,
    term_is_word_like,
)

#: Random pairs checked, and the limits each is checked at.
PAIRS = 4000
LIMITS = (0, 1, 2, 3)


def full_table(a: str, b: str) -> int:
    """Optimal string alignment distance, every cell of the table."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def edited(rng: random.Random, word: str) -> str:
    letters = list(word)
    for _ in range(rng.randint(0, 3)):
        op = rng.randrange(4)
        if op == 0 and letters:
            letters.pop(rng.randrange(len(letters)))
        elif op == 1:
            letters.insert(rng.randint(0, len(letters)), rng.choice("abcdef"))
        elif op == 2 and letters:
            letters[rng.randrange(len(letters))] = rng.choice("abcdef")
        elif op == 3 and len(letters) > 1:
            k = rng.randrange(len(letters) - 1)
            letters[k], letters[k + 1] = letters[k + 1], letters[k]
    return "".join(letters)


def test_edit_distance_is_the_full_tables_up_to_the_limit() -> None:
    rng = random.Random(24)
    for _ in range(PAIRS):
        a = "".join(rng.choice("abcde") for _ in range(rng.randint(0, 9)))
        b = (
            edited(rng, a)
            if rng.random() < 0.5
            else "".join(rng.choice("abcde") for _ in range(rng.randint(0, 9)))
        )
        want = full_table(a, b)
        for limit in LIMITS:
            assert edit_distance(a, b, limit) == min(want, limit + 1), (a, b, limit)


def test_known_distances() -> None:
    assert edit_distance("deploymnt", "deployment", 2) == 1
    assert edit_distance("walrsu", "walrus", 2) == 1  # a transposition is one edit
    assert edit_distance("borow", "borrow", 1) == 1
    assert edit_distance("ca", "abc", 3) == 3  # OSA: no edit of a transposed pair
    assert edit_distance("kitten", "sitting", 2) == 3  # beyond the limit: limit + 1
    assert edit_distance("same", "same", 0) == 0


def test_word_like_tokens() -> None:
    """Letters of any script are words; digits anywhere, or a long run of hex letters, make
    an identifier (issue #38: their near words are other identifiers)."""
    for word in ("deployment", "deplyoment", "café", "планировщик", "部署", "deadbee", "abc"):
        assert is_word_like(word), word
    hex_run = ("deadbeefcafe" * 4)[:MIN_HEX_RUN_CHARS]  # a hash fragment of letters only
    for token in ("w0g0n1q", "w0g0n99999q", "3fa9c2e", "1234", "step4", hex_run, "", "a_b"):
        assert not is_word_like(token), token
    assert is_word_like(hex_run[: MIN_HEX_RUN_CHARS - 1])  # shorter: a word may be all a-f


def test_identifier_shaped_terms() -> None:
    """A term with any token that is not word-like is an identifier as a whole: ``ABC-1234``
    (``abc`` alone is word-like), a UUID's groups, a phrase with a number."""
    assert term_is_word_like(("staging", "deployment"))
    assert not term_is_word_like(("abc", "1234"))
    assert not term_is_word_like(("550e8400", "e29b", "41d4", "a716", "446655440000"))
    assert not term_is_word_like(("step", "42", "failed"))
    assert not term_is_word_like(())


def test_nearest_is_edit_distance_over_many_words() -> None:
    rng = random.Random(38)
    words = list(
        dict.fromkeys(
            "".join(rng.choice("abcde") for _ in range(rng.randint(1, 8))) for _ in range(3000)
        )
    )
    for token in ("abcde", "badce", "eeee", "a"):
        for limit in (1, 2):
            want = [(w, edit_distance(token, w, limit)) for w in words if w != token]
            assert nearest(token, words, limit) == [(w, d) for w, d in want if d <= limit]


def test_examine_order() -> None:
    """Words of the token's first three letters, then of its first two and its fourth (a
    dropped or swapped third letter), then the rest in order."""
    words = ["dab", "depz", "dea", "deploy", "dfa", "dep", "delta", "del"]
    assert examine_order("deplyo", words, 2) == [
        "dep", "deploy", "depz", "del", "delta", "dab", "dea", "dfa",
    ]  # fmt: skip
    assert examine_order("deep", ["dep", "dea", "deep"], 2) == ["deep", "dep", "dea"]
    assert examine_order("deed", ["dea", "deed"], 2) == ["deed", "dea"]  # one near head
