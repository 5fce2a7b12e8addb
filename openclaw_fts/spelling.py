"""Edit distance between words, and the words one edit away: what search suggestions use to
find near words in the index's vocabulary.

Invariant: pure functions of their arguments (no I/O); :func:`edit_distance` is the optimal
string alignment distance (insertions, deletions, substitutions and transpositions of adjacent
letters, each 1), exact up to its ``limit`` and ``limit + 1`` beyond it.
"""

from __future__ import annotations

import string

#: Letters tried by the substitutions and insertions of :func:`one_edit`, besides the word's own.
EDIT_ALPHABET = string.ascii_lowercase + string.digits


def edit_distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b``, or ``limit + 1`` as soon as
    it is known to exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, before[j - 2] + 1)
            current[j] = value
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return min(previous[-1], limit + 1)


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
