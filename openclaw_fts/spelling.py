"""Edit distance between words, and the words one edit away: what search suggestions use to
find near words in the index's vocabulary.

Invariant: pure functions of their arguments (no I/O); :func:`edit_distance` is the optimal
string alignment distance (insertions, deletions, substitutions and transpositions of adjacent
letters, each 1), exact up to its ``limit`` and ``limit + 1`` beyond it.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

#: Letters tried by the substitutions and insertions of :func:`one_edit`, besides the word's own.
EDIT_ALPHABET = string.ascii_lowercase + string.digits


def edit_distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b``, or ``limit + 1`` as soon as
    it is known to exceed ``limit``.

    Two bounds spare most of the table when the words are far apart (the common case: a
    search's candidates share only the first letters): an edit adds or removes at most one
    distinct letter on each side (a transposition none), so the distance is at least half the
    letters only one of the words holds; and only the cells within ``limit`` of the diagonal
    can stay within ``limit``, so only that band of each row is computed."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    if a == b:
        return 0
    if len(set(a).symmetric_difference(b)) > 2 * limit:
        return limit + 1
    over = limit + 1
    n = len(b)
    before: list[int] = []
    previous = list(range(n + 1))
    for i in range(1, len(a) + 1):
        ca = a[i - 1]
        lo = max(1, i - limit)
        hi = min(n, i + limit)
        current = [over] * (n + 1)
        if lo == 1:
            current[0] = i
        best = current[lo - 1]
        for j in range(lo, hi + 1):
            cb = b[j - 1]
            value = previous[j - 1] + (ca != cb)
            up = previous[j] + 1
            if up < value:
                value = up
            left = current[j - 1] + 1
            if left < value:
                value = left
            if before and j > 1 and ca == b[j - 2] and a[i - 2] == cb and before[j - 2] + 1 < value:
                value = before[j - 2] + 1
            current[j] = value
            if value < best:
                best = value
        if best > limit:
            return over
        before, previous = previous, current
    return min(previous[-1], over)


def one_edit(word: str) -> list[str]:
    """Every word one deletion, transposition, substitution or insertion away from ``word``,
    over :data:`EDIT_ALPHABET` and the word's own letters; deletions and transpositions first
    (the commonest slips)."""
    letters = "".join(dict.fromkeys(EDIT_ALPHABET + word))
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = [a + b[1:] for a, b in splits if b]
    transposes = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    replaces = [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]]
    inserts = [a + c + b for a, b in splits for c in letters]
    return [w for w in dict.fromkeys(deletes + transposes + replaces + inserts) if w != word]


def messages_holding(messages: Iterable[frozenset[str]], word: str, *, prefix: bool) -> int:
    """How many of ``messages`` (each one's words, or lexemes) hold ``word``, or with
    ``prefix`` a word starting with it: what a full-text match of ``word`` (``word*``) counts
    among them. How a narrow caller's near words are counted from its own messages."""
    if prefix:
        return sum(1 for words in messages if any(w.startswith(word) for w in words))
    return sum(1 for words in messages if word in words)
