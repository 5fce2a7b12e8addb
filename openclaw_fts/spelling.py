"""Edit distance between words, the words one edit away, and which query tokens are words at
all: what search suggestions use to find near words in the index's vocabulary.

Invariant: pure functions of their arguments (no I/O but the DEBUG record of
:func:`note_examined`); :func:`edit_distance` is the optimal
string alignment distance (insertions, deletions, substitutions and transpositions of adjacent
letters, each 1), exact up to its ``limit`` and ``limit + 1`` beyond it, and :func:`nearest`
the same distance over many words at once.

Why the work stays bounded (issue #38, "searches that find nothing"). Agents search for
identifiers all the time -- commit hashes, UUIDs, ticket numbers (``ABC-1234``), worker ids
(``w0g0n1q``) -- and most such searches find nothing. Their "near words" are other
identifiers (``w0g0n10q`` for ``w0g0n1q``, ``124`` for ``1234``): a different ticket is not
what the agent misspelt, and a vocabulary full of them put thousands of candidates next to
every such token (measured: 5,900 vocabulary terms and 76 ms for one search of an absent
``w0g0n99999q`` on a 59k-message SQLite store, against 0.6 ms for a hit). So:

* :func:`is_word_like` decides, from the token alone, whether it can be a misspelt word:
  letters only (any script), and not a run of :data:`MIN_HEX_RUN_CHARS` or more hexadecimal
  letters (``deadbeef``). A query term holding any token that is not (:func:`term_is_word_like`:
  ``ABC-1234``, a UUID, ``node18``) is an identifier as a whole: none of its tokens is
  corrected, and no statement runs for it.
* A word-like token examines at most :data:`MAX_NEAR_CANDIDATES` candidates on SQLite (the
  vocabulary terms read: fts5vocab reads every term of a range, whatever the SQL filters
  after it, at ~1 µs a term) and a bounded number of one-edit words on PostgreSQL: the cap
  binds only in a vocabulary range crowded by identifiers or at a very large scale, and the
  candidates examined first are those most likely to be the misspelt word
  (:func:`examine_order`: slips late in a word, then a dropped or swapped third letter).
* The distance is computed by `RapidFuzz <https://github.com/rapidfuzz/RapidFuzz>`_'s
  optimal string alignment (C++, with the same cut-off semantics): 80x faster than the
  banded Python table this module had, measured over the 5,900 terms above (1.5 ms against
  126 ms), which is what lets the cap be large enough to keep words' suggestions.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Iterable, Sequence

from rapidfuzz import process
from rapidfuzz.distance import OSA

log = logging.getLogger(__name__)

#: Letters tried by the substitutions and insertions of :func:`one_edit`, besides the word's own.
EDIT_ALPHABET = string.ascii_lowercase + string.digits
#: A token of this many letters or more, all of them hexadecimal digits (``a``-``f``), is a
#: hash fragment, not a word (practically no word of 8 letters uses only ``a``-``f``).
MIN_HEX_RUN_CHARS = 8
_HEX_LETTERS = frozenset("abcdefABCDEF")
#: Most vocabulary words (SQLite), one-edit words (PostgreSQL) or a narrow caller's own words
#: examined for one misspelt token.
MAX_NEAR_CANDIDATES = 512


def is_word_like(token: str) -> bool:
    """Whether ``token`` (one folded token of a query) may be a misspelt word: made of
    letters only (any script: ``café``, ``планировщик``, CJK), and not a run of at least
    :data:`MIN_HEX_RUN_CHARS` hexadecimal letters. Digits anywhere (``w0g0n1q``, ``3fa9c2e``,
    ``1234``), or any other character, make it an identifier."""
    if not token or not token.isalpha():
        return False
    return not (len(token) >= MIN_HEX_RUN_CHARS and all(c in _HEX_LETTERS for c in token))


def term_is_word_like(tokens: Sequence[str]) -> bool:
    """Whether every token of one query term is word-like (:func:`is_word_like`). A term with
    one that is not is an identifier written with separators (``ABC-1234``: ``abc`` and
    ``1234``; a UUID's five hex groups), whose letter parts are not misspelt words either. A
    quoted phrase holding a number (``"step 42 failed"``) is such a term too: its words are
    not corrected (the price of the rule, which needs no knowledge of how the term was
    written)."""
    return bool(tokens) and all(is_word_like(t) for t in tokens)


def edit_distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b``, or ``limit + 1`` when it
    exceeds ``limit`` (RapidFuzz's ``OSA.distance`` with ``score_cutoff=limit``, which
    returns exactly that)."""
    return int(OSA.distance(a, b, score_cutoff=limit))


def nearest(token: str, words: Sequence[str], limit: int) -> list[tuple[str, int]]:
    """Each of ``words`` (other than ``token``) within ``limit`` edits of ``token`` with its
    distance, in the order of ``words``: :func:`edit_distance` of each, computed in one call
    of RapidFuzz's C++ loop (no Python per word). Only word-like words (:func:`is_word_like`)
    are near words of a word: an identifier one edit from it (``aac3`` for ``aaca``) is no
    word anyone meant."""
    # The distances first (C++, every word), then the word-like test of the few within
    # ``limit`` only: testing each of a vocabulary range's 500 words in Python first cost more
    # than the distances (0.2-0.5 ms of a search that finds nothing at 100k events, against
    # 0.01-0.04 ms: bench/NOTES.md).
    words_only = is_word_like(token)
    found = process.extract(token, words, scorer=OSA.distance, score_cutoff=limit, limit=None)
    near = sorted(
        (int(n), str(w), int(d))
        for w, d, n in found
        if w != token and (not words_only or is_word_like(str(w)))
    )
    return [(w, d) for _, w, d in near]


def near_heads(token: str, shared: int) -> list[str]:
    """The heads (``shared + 1`` letters) whose words are examined first as near words of
    ``token``, which all candidates share ``shared`` first letters with: its own first
    ``shared + 1`` letters (a slip later in the word), then its first ``shared`` letters and
    the letter after next (the next letter dropped, or swapped with the one after it)."""
    heads = [token[: shared + 1]]
    if len(token) > shared + 1 and token[shared + 1] != token[shared]:
        heads.append(token[:shared] + token[shared + 1])
    return heads


def examine_order(token: str, words: Iterable[str], shared: int) -> list[str]:
    """``words`` in the order their candidates are examined: those starting with each of
    :func:`near_heads` in turn, then the rest, each part in code-point order (the order of
    the term B-tree ranges SQLite's vocabulary is read in)."""
    heads = near_heads(token, shared)

    def rank(word: str) -> tuple[int, str]:
        for n, head in enumerate(heads):
            if word.startswith(head):
                return (n, word)
        return (len(heads), word)

    return sorted(words, key=rank)


def note_examined(backend: str, token: str, candidates: int) -> None:
    """A DEBUG record of how many candidates the near words of ``token`` examined (at most
    :data:`MAX_NEAR_CANDIDATES`): what tests and a profiling host read, on this module's
    logger."""
    log.debug("near words of %r (%s): %d candidates examined", token, backend, candidates)


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
