"""The edit distance behind search suggestions: the optimal string alignment distance, exact up
to its limit and ``limit + 1`` beyond it, checked against the whole dynamic-programming table
on random word pairs (near pairs made by random edits, and unrelated ones)."""

from __future__ import annotations

import random

from openclaw_fts.spelling import edit_distance

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
