"""Snippets: the window of a message that shows why it matched.

Invariant: :func:`make_snippet` returns text of the message it is given (already redacted
ORIGINAL text, never the CJK-spaced index body) and nothing else: a short text (at most
``max_chars`` UTF-16 code units, JavaScript's string length: most emoji count 2) whole and
unchanged; otherwise the original substring from the first to
the last token of a window of ``window_tokens`` tokens, whitespace runs collapsed to one space,
``"… "`` in front when something was cut before it and ``" …"`` behind when something was cut
after it, no highlight markers. The result is then cut to at most ``max_chars`` code units with
``"…"`` appended when cut (so at most ``max_chars + 1``), only between grapheme clusters (never
inside a surrogate pair, an emoji ZWJ sequence or a letter with combining marks), and it always
encodes as UTF-8 (:func:`~openclaw_fts.tokens.clean_text`).

The window is the one holding the most distinct query terms (a phrase needs its consecutive
tokens; a prefix term matches a token that starts with it; CJK terms are runs of single-character
tokens, so their window is the original text around the hit, without spaces), the earliest of
equals, with the remaining room split between context before and after but never so much before
that the hit falls past the character cut. Without a hit the window is the start of the text.
The window counts WORDS as OpenClaw's unicode61 tokenizer sees them: tokens with nothing between
them (a CJK run, ``用SQLite部署``) are one word, so a CJK message shows about as much text as
OpenClaw does (up to the character cut), not one character per token.
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Sequence

import regex  # type: ignore[import-untyped,unused-ignore]  # no stubs in the venv

from .query import Term
from .tokens import (
    Latin1Tokens,
    clean_text,
    compile_steps,
    indexes_of,
    is_token_char,
    latin1_tokens,
    scan_tokens,
    utf16_fit,
    utf16_len,
)

#: Tokens in a snippet window (OpenClaw: "about 48 tokens").
SNIPPET_WINDOW_TOKENS = 48

# The Latin-1 path's step patterns for every distance a window's edge can be from its hit
# (:func:`_latin1_window`: less than the window), compiled now rather than one per distance
# on the searches that first meet it (bench/NOTES.md, "the first recent-first search of a
# word"). A caller's wider window compiles its further ones when met.
compile_steps(SNIPPET_WINDOW_TOKENS)

#: UTF-16 code units a snippet keeps before it is cut (and ``ELLIPSIS`` appended).
SNIPPET_MAX_CHARS = 300

#: Marks text cut off a snippet (one character, U+2026).
ELLIPSIS = "…"

#: Characters of a long message that are tokenized to look for the best window. Tokenizing in
#: Python costs ~0.1 ms per KB (measured: 200 KB message ~21 ms, 12 MB message ~40 ms, on a
#: loaded 2-core machine), so this bounds one snippet whatever the message size. In a longer
#: message the region is centred on the first case-insensitive occurrence of a term's first
#: token (a diacritic variant is not found this way), else it is the start of the message.
SNIPPET_SCAN_MAX_CHARS = 262_144

#: Characters of a message tokenized first (up to the next whitespace): when its window is
#: provably the whole message's (every query term in it, and a full window of words after its
#: start), the rest is never tokenized; otherwise the whole message is.
SNIPPET_PREFIX_CHARS = 1024
#: Characters of the window's text kept before whitespace is collapsed and the text cut (a window
#: of 48 tokens can be megabytes long when its tokens are, e.g. base64).
SNIPPET_WINDOW_MAX_CHARS = 16 * SNIPPET_MAX_CHARS

#: Punctuation attached to the window's first or last token that is kept with it (``--verbose``,
#: ``deployment.``, ``(see``), at most this many characters on each side.
SNIPPET_EDGE_CHARS = 16

#: Characters looked at around a window edge to find the grapheme cluster it falls in (cluster
#: boundaries depend on little context; a longer cluster is only cut at a boundary inside it).
GRAPHEME_CONTEXT_CHARS = 256

_SPACE_RUN_RE = re.compile(r"\s+")
_NON_SPACE_RE = re.compile(r"\S")
_GRAPHEME_RE = regex.compile(r"\X")


def _matches_at(norms: Sequence[str], i: int, term: Term) -> bool:
    wanted = term.tokens
    if i + len(wanted) > len(norms):
        return False
    last = len(wanted) - 1
    for j in range(last):
        if norms[i + j] != wanted[j]:
            return False
    norm = norms[i + last]
    return norm.startswith(wanted[last]) if term.prefix else norm == wanted[last]


def _occurrences(norms: list[str], terms: Sequence[Term]) -> list[tuple[int, int, int]]:
    """``(first token, end token, term index)`` of every occurrence of every term, by position."""
    by_first: dict[str, list[int]] = {}  # first token (compared exactly) -> term indexes
    prefixes: dict[str, list[int]] = {}  # one-token prefix terms (compared with startswith)
    for index, term in enumerate(terms):
        if term.tokens and term.prefix and len(term.tokens) == 1:
            prefixes.setdefault(term.tokens[0], []).append(index)
        elif term.tokens:
            by_first.setdefault(term.tokens[0], []).append(index)
    found: list[tuple[int, int, int]] = []
    # Candidate positions are found by list.index (a C loop per first token), checked one by
    # one (few).
    hits = sorted(i for first in by_first for i in indexes_of(norms, first))
    for i in hits:
        for index in by_first[norms[i]]:
            if _matches_at(norms, i, terms[index]):
                found.append((i, i + len(terms[index].tokens), index))
    if prefixes:
        starts = tuple(prefixes)
        for i in [i for i, norm in enumerate(norms) if norm.startswith(starts)]:
            for prefix, indexes in prefixes.items():
                if norms[i].startswith(prefix):
                    found.extend((i, i + 1, index) for index in indexes)
        found.sort()
    return found


def _best_cluster(occurrences: list[tuple[int, int, int]], window: int) -> tuple[int, int]:
    """The token span ``[first, end)`` of the occurrences in the earliest window of ``window``
    tokens (starting at an occurrence) that holds the most distinct terms.

    With one term whose first occurrence fits a window, the window at that occurrence (the
    first that holds every term); otherwise :func:`_most_terms_first`.
    """
    everything = len({index for _, _, index in occurrences})
    if everything == 1 and occurrences[0][1] - occurrences[0][0] <= window:
        best_first = occurrences[0][0]
    else:
        best_first = _most_terms_first(occurrences, window, everything)
    end = max(
        (e for s, e, _ in occurrences if best_first <= s and e <= best_first + window),
        default=best_first + 1,
    )
    return best_first, end


def _most_terms_first(occurrences: list[tuple[int, int, int]], window: int, everything: int) -> int:
    """The first token of the earliest window (starting at an occurrence) that holds the most
    of the ``everything`` distinct terms.

    A sliding window over the occurrences (sorted by first token): an occurrence counts for the
    window starting at ``f`` while ``end - window <= f <= first``; O(k log k) for k occurrences.
    """
    n = len(occurrences)
    by_end = sorted(range(n), key=lambda k: occurrences[k][1])
    active = [False] * n
    counts: dict[int, int] = {}
    entered = left = 0
    best_count, best_first = 0, occurrences[0][0]
    for first, _, _ in occurrences:
        while entered < n and occurrences[by_end[entered]][1] - window <= first:
            k = by_end[entered]
            entered += 1
            if occurrences[k][0] >= first:
                active[k] = True
                index = occurrences[k][2]
                counts[index] = counts.get(index, 0) + 1
        while left < n and occurrences[left][0] < first:
            if active[left]:
                active[left] = False
                index = occurrences[left][2]
                counts[index] -= 1
                if not counts[index]:
                    del counts[index]
            left += 1
        if len(counts) > best_count:
            best_count, best_first = len(counts), first
            if best_count == everything:
                break
    return best_first


def _words(starts: Sequence[int], ends: Sequence[int]) -> list[int]:
    """The word each token belongs to: tokens with nothing between them (only CJK characters
    are tokens on their own: ``明天下午``, ``用SQLite部署``) are one word, as unicode61 reads
    them."""
    word: list[int] = []
    current = -1
    previous_end = -1
    for start, end in zip(starts, ends, strict=True):
        if start != previous_end:
            current += 1
        word.append(current)
        previous_end = end
    return word


def _window(
    starts: Sequence[int],
    ends: Sequence[int],
    norms: list[str],
    terms: Sequence[Term],
    window: int,
    max_chars: int,
    *,
    prefix: bool = False,
) -> tuple[int, int] | None:
    """The window ``[s, e)`` of token indexes to show: ``window`` WORDS (:func:`_words`).

    ``prefix``: the tokens are those of a prefix of the text that ends at whitespace (so its
    tokens and words are whole). None unless the window is provably the one the whole text
    gives: a window holding every term of the query (no later window can hold more, and the
    earliest wins ties) with ``window`` whole words after its start inside the prefix (so
    every earlier window, the count of words and the window's end are the same)."""
    first_token: list[int]  # of each word
    last_token: list[int]
    if not any(map(operator.eq, starts[1:], ends[:-1])):
        # No two tokens touch (no CJK run: the common case): each token is a word of its own.
        word = first_token = last_token = list(range(len(starts)))
    else:
        word = _words(starts, ends)
        first_token, last_token = [], []
        for i, w in enumerate(word):
            if w == len(first_token):
                first_token.append(i)
                last_token.append(i)
            else:
                last_token[w] = i
    count = len(first_token)
    occurrences = _occurrences(norms, terms)
    if not occurrences:
        return None if prefix else (0, last_token[min(count, window) - 1] + 1)
    in_words = sorted({(word[f], word[e - 1] + 1, index) for f, e, index in occurrences})
    first, end = _best_cluster(in_words, window)
    if prefix:
        found = {index for f, e, index in in_words if first <= f and e <= first + window}
        if first + window > count or len(found) < sum(1 for t in terms if t.tokens):
            return None
    slack = window - (end - first)
    start = min(max(0, first - slack // 2), max(0, count - window))
    start = min(start, first)
    stop = min(count, start + window)
    lo, hi = first_token[start], last_token[stop - 1] + 1
    hit = [(f, e) for f, e, _ in occurrences if first <= word[f] and word[e - 1] < end]
    hit_lo, hit_hi = min(f for f, _ in hit), max(e for _, e in hit)
    # Keep the hit inside the character cut: give up context before it when the words are long.
    budget = max_chars - len(ELLIPSIS + " ") - SNIPPET_EDGE_CHARS
    if hi - lo == stop - start:  # one token per word (no CJK run): drop whole tokens
        while lo < hit_lo and ends[hit_hi - 1] - starts[lo] > budget:
            lo += 1
    else:  # a CJK run is one long word: keep about as much context before the hit as after
        before = max(0, (budget - (ends[hit_hi - 1] - starts[hit_lo])) // 2)
        lo = bisect.bisect_left(starts, starts[hit_lo] - before, lo, hit_lo)
    return lo, hi


def _anchor(text: str, terms: Sequence[Term]) -> int | None:
    """Where a term's first token first occurs in ``text`` (case-insensitive), if anywhere."""
    firsts = sorted({term.tokens[0] for term in terms if term.tokens}, key=len, reverse=True)
    if not firsts:
        return None
    found = regex.search("|".join(regex.escape(f) for f in firsts), text, flags=regex.IGNORECASE)
    return None if found is None else int(found.start())


def _scan_region(text: str, terms: Sequence[Term]) -> tuple[int, int]:
    """The character range of ``text`` to tokenize (all of it unless it is very long)."""
    if len(text) <= SNIPPET_SCAN_MAX_CHARS:
        return 0, len(text)
    anchor = _anchor(text, terms)
    if anchor is None:
        return 0, SNIPPET_SCAN_MAX_CHARS
    lo = max(0, min(anchor - SNIPPET_SCAN_MAX_CHARS // 2, len(text) - SNIPPET_SCAN_MAX_CHARS))
    if lo > 0:  # start after whitespace, not inside a token
        space = _SPACE_RUN_RE.search(text, lo, anchor)
        lo = anchor if space is None else space.end()
    return lo, min(len(text), lo + SNIPPET_SCAN_MAX_CHARS)


def _with_edges(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` widened over punctuation that attaches the first and last token to the
    surrounding whitespace (not over punctuation between two tokens, as in ``node.js``), then
    to whole grapheme clusters."""
    wider = start
    limit = max(0, start - SNIPPET_EDGE_CHARS)
    while wider > limit and not text[wider - 1].isspace() and not is_token_char(text[wider - 1]):
        wider -= 1
    if wider == 0 or text[wider - 1].isspace():
        start = wider
    wider = end
    limit = min(len(text), end + SNIPPET_EDGE_CHARS)
    while wider < limit and not text[wider].isspace() and not is_token_char(text[wider]):
        wider += 1
    if wider == len(text) or text[wider].isspace():
        end = wider
    if start < len(text) and not _ascii_boundary(text, start):
        for cluster in _GRAPHEME_RE.finditer(
            text, max(0, start - GRAPHEME_CONTEXT_CHARS), start + 1
        ):
            if cluster.end() > start:
                start = int(cluster.start())
                break
    if end > 0 and not _ascii_boundary(text, end):
        for cluster in _GRAPHEME_RE.finditer(
            text,
            max(0, end - 1 - GRAPHEME_CONTEXT_CHARS),
            min(len(text), end + GRAPHEME_CONTEXT_CHARS),
        ):
            if cluster.end() >= end:
                end = int(cluster.end())
                break
    return start, end


def _ascii_boundary(text: str, pos: int) -> bool:
    """True when ``pos`` is certainly a grapheme boundary: ASCII on both sides, not inside
    CR LF (the only multi-character ASCII cluster). The fast path of the common case."""
    if pos <= 0 or pos >= len(text):
        return True
    before, after = text[pos - 1], text[pos]
    return before.isascii() and after.isascii() and not (before == "\r" and after == "\n")


def cut_graphemes(text: str, max_units: int) -> str:
    """The longest prefix of ``text`` of at most ``max_units`` UTF-16 code units that ends
    between grapheme clusters."""
    if len(text) <= max_units and utf16_len(text) <= max_units:
        return text
    max_chars = utf16_fit(text, max_units)  # the characters that fit
    if _ascii_boundary(text, max_chars):
        return text[:max_chars]
    end = 0
    # A boundary at position p depends on the characters before p and on text[p] only.
    for cluster in _GRAPHEME_RE.finditer(text[: max_chars + 1]):
        if cluster.end() > max_chars:
            break
        end = cluster.end()
    return text[:end]


def make_snippet(
    text: str,
    terms: Sequence[Term],
    window_tokens: int = SNIPPET_WINDOW_TOKENS,
    max_chars: int = SNIPPET_MAX_CHARS,
) -> str:
    """The snippet of ``text`` (a message, already redacted) for the query ``terms``."""
    text = clean_text(text)
    if len(text) <= max_chars and utf16_len(text) <= max_chars:
        return text
    lo, hi = _scan_region(text, terms)
    window = max(1, window_tokens)
    tokens = latin1_tokens(text, lo, hi)
    if tokens is not None:
        span = _latin1_span(tokens, terms, window, max_chars)
    else:
        span = _scanned_span(text, lo, hi, terms, window, max_chars)
    if span is not None:
        start, end = _with_edges(text, *span)
    else:  # nothing but punctuation and symbols: show the start of the region
        first = _NON_SPACE_RE.search(text, lo, hi)
        start = lo if first is None else first.start()
        start, end = _with_edges(text, start, min(hi, start + SNIPPET_WINDOW_MAX_CHARS))
    before = _NON_SPACE_RE.search(text, 0, start) is not None
    after = _NON_SPACE_RE.search(text, end) is not None
    raw = text[start:end]
    if len(raw) > SNIPPET_WINDOW_MAX_CHARS:
        raw, after = cut_graphemes(raw, SNIPPET_WINDOW_MAX_CHARS), True
    # Whitespace runs collapsed to one space, none at the ends: str.split's whitespace is
    # exactly re's \s (every code point checked), without a replacement per run.
    body = " ".join(raw.split())
    snippet = (ELLIPSIS + " " if before else "") + body + (" " + ELLIPSIS if after else "")
    if len(snippet) <= max_chars and utf16_len(snippet) <= max_chars:
        return snippet
    return cut_graphemes(snippet, max_chars).rstrip() + ELLIPSIS


def _scanned_span(
    text: str, lo: int, hi: int, terms: Sequence[Term], window: int, max_chars: int
) -> tuple[int, int] | None:
    """The characters ``[start, end)`` of the window's tokens, from the tokens of
    ``text[lo:hi]`` (:func:`_window`); None when there is no token."""
    found: tuple[int, int] | None = None
    # Most windows are settled by the text's first SNIPPET_PREFIX_CHARS: tokenize those first.
    space = _SPACE_RUN_RE.search(text, lo + SNIPPET_PREFIX_CHARS, hi)
    if space is not None:
        starts, ends, norms = scan_tokens(text, lo, space.start())
        if norms:
            found = _window(starts, ends, norms, terms, window, max_chars, prefix=True)
    if found is None:
        starts, ends, norms = scan_tokens(text, lo, hi)
        if norms:
            found = _window(starts, ends, norms, terms, window, max_chars)
    if found is None:
        return None
    s, e = found
    return starts[s], ends[e - 1]


def _latin1_span(
    tokens: Latin1Tokens, terms: Sequence[Term], window: int, max_chars: int
) -> tuple[int, int] | None:
    """:func:`_scanned_span` for a Latin-1 text, where every token is a word of its own: the
    same window (:func:`_window`'s steps, in token indexes), from the terms' occurrences
    found and counted in C, and only the characters of its first and last tokens looked up.
    The whole text decides (no prefix first: it costs no token list)."""
    if not tokens.count:
        return None
    live = [(index, term) for index, term in enumerate(terms) if term.tokens]
    if len(live) == 1 and len(live[0][1].tokens) <= window:
        # One term: the window starts at its first occurrence (_best_cluster) and ends with
        # the last occurrence that fits in it; those occurrences are the hit.
        term = live[0][1]
        found = tokens.find(term.tokens, term.prefix)
        if not found:
            return _latin1_start(tokens, window)
        size = len(term.tokens)
        firsts = tokens.indexes([s for s, _ in found])
        first = firsts[0]
        last = bisect.bisect_right(firsts, first + window - size) - 1
        hit_start, hit_end = found[0][0], found[last][1]
        return _latin1_window(
            tokens,
            first,
            firsts[last] + size,
            first,
            hit_start,
            hit_start,
            hit_end,
            window,
            max_chars,
        )
    spans: list[tuple[int, int, int, int]] = []  # start, end, tokens, term index
    for index, term in live:
        size = len(term.tokens)
        spans.extend((s, e, size, index) for s, e in tokens.find(term.tokens, term.prefix))
    if not spans:
        return _latin1_start(tokens, window)
    spans.sort()
    firsts = tokens.indexes([s for s, _, _, _ in spans])
    occurrences: list[tuple[int, int, int]] = []
    start_at: dict[int, int] = {}  # a token index -> its first character
    end_at: dict[int, int] = {}  # a token index -> the character after the token before it
    for f, (s, e, size, index) in zip(firsts, spans, strict=True):
        occurrences.append((f, f + size, index))
        start_at[f] = s
        end_at[f + size] = e
    first, end = _best_cluster(sorted(set(occurrences)), window)
    hit = [(f, e) for f, e, _ in occurrences if first <= f and e - 1 < end]
    hit_lo, hit_hi = min(hit)[0], max(e for _, e in hit)
    return _latin1_window(
        tokens,
        first,
        end,
        hit_lo,
        start_at[first],
        start_at[hit_lo],
        end_at[hit_hi],
        window,
        max_chars,
    )


def _latin1_start(tokens: Latin1Tokens, window: int) -> tuple[int, int]:
    """The characters of the text's first ``window`` tokens (no term occurs)."""
    first = tokens.next_start(tokens.pos)
    return first, tokens.end_of(first, min(tokens.count, window) - 1)


def _latin1_window(
    tokens: Latin1Tokens,
    first: int,
    end: int,
    hit_lo: int,
    first_start: int,
    hit_start: int,
    hit_end: int,
    window: int,
    max_chars: int,
) -> tuple[int, int]:
    """The characters of :func:`_window`'s window around the best cluster ``[first, end)``
    (tokens; ``first_start`` its first character) whose hit starts with token ``hit_lo`` at
    character ``hit_start`` and ends at character ``hit_end``."""
    slack = window - (end - first)
    start = min(max(0, first - slack // 2), max(0, tokens.count - window))
    start = min(start, first)
    stop = min(tokens.count, start + window)
    lo = tokens.start_of(first_start, start - first)
    hi = tokens.end_of(first_start, stop - 1 - first)
    # Keep the hit inside the character cut: give up context before it when the words are long
    # (_window drops whole tokens while the hit's end is more than the budget past their start).
    budget = max_chars - len(ELLIPSIS + " ") - SNIPPET_EDGE_CHARS
    least = hit_end - budget  # the first start that keeps the hit within the budget
    if start < hit_lo and lo < least:
        later = tokens.next_start(least)
        lo = hit_start if later < 0 or later >= hit_start else later
    return lo, hi
