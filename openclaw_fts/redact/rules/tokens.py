"""Rule family ``vendor tokens``: keys whose vendor prefix or whole shape is known.

Invariant: :func:`tokens` finds the matches the rule data of :mod:`..data` has in the text
(the vendor rules compiled here into one alternation by first character, plus the pattern
rules) and Telegram bot tokens, searching only where they can be: the vendor rules in the long
runs of token characters joined (:meth:`..scan.Scan.in_runs`) and, in the shorter runs, from
the heads of the few tokens short enough to fit there (:func:`vendor_matches`); a pattern rule
anchored on a literal at a fixed place only there (:meth:`..scan.Scan.matches_at`). A token
inside a public checksum or a base64 blob is skipped. Bounded by the scan's candidate budget.
"""

from __future__ import annotations

import bisect
import heapq
import re
import sys
from collections.abc import Iterator
from typing import Final

from .. import data as rules
from ..judges import (
    _LONG_RUN_CHARS,
    _PUBLIC_HASH_PREFIXES,
    MIN_VENDOR_RUN_CHARS,
    _by_first_character,
)
from ..scan import _PLAIN, MAX_RUNS_SEARCHED_ALONE, MIN_CHARS_SEARCHED_AT_WORDS, Scan

# Vendor-prefixed tokens and whole-pattern tokens: the data is redact.data (each rule with
# its sample). The prefix must start a word: it is not preceded by a letter, digit or ``_``
# (``prefix-ghp_…`` is a token, ``fixture_fw_…`` is not). All vendor families are ONE regex, so
# the text is scanned once for all.
_TOKEN_CHARS: Final = rules.TOKEN_CHARS


#: Digits of a Telegram bot id (real ids: 8 to 10).
TELEGRAM_BOT_ID_DIGITS: Final = (6, 12)


#: Characters after the colon of a Telegram bot token (real: 35).
MIN_TELEGRAM_SECRET_CHARS: Final = 30


#: A Telegram bot token is one run of token characters at least this long.
MIN_TELEGRAM_BOT_CHARS: Final = TELEGRAM_BOT_ID_DIGITS[0] + 1 + MIN_TELEGRAM_SECRET_CHARS


def _vendor_alternative(prefix: str, body: str, minimum: int) -> str:
    """``prefix`` (fixed width), not preceded by a word character, then its body.

    The lookbehind sits AFTER the prefix, so the regex engine first looks for the prefix's
    literal characters and tries the lookbehind only there; a prefix inside a word fails at
    once instead of scanning the body (keeps a run of ``sk-sk-sk-…`` linear).
    """
    low, high = re._parser.parse(prefix).getwidth()  # type: ignore[attr-defined]
    assert low == high, f"vendor prefix {prefix!r} is not of fixed width"
    if not (prefix[0].isalnum() or prefix[0] == "_"):
        return f"{prefix}{body}{{{minimum},}}"  # starts with ``//``: a boundary already
    # A symbol the body may contain cannot come before the prefix either: else ``sk-sk-sk-…``
    # would rescan the same run from every ``sk-`` (quadratic).
    symbols = ("\\-" if "\\-" in body else "") + "".join(c for c in "./+=" if c in body)
    return f"{prefix}(?<![A-Za-z0-9_{symbols}][\\s\\S]{{{low}}}){body}{{{minimum},}}"


def _starts_word(alternative: str) -> bool:
    return alternative[0].isalnum() or alternative[0] == "_"


def _vendor_regex(alternatives: list[str]) -> re.Pattern[str]:
    """The alternatives whose prefix starts with a word character behind ONE ASCII word
    boundary (their lookbehind already demands it), the others (``//hooks…``, ``\\.webhook…``)
    beside them. The boundary fails at once inside a word, so the engine no longer walks the
    first-character alternation at every character of a run (the vendor scan of a 10 MB
    message: ~0.18 s -> ~0.14 s). The two halves start with different characters, so at any
    position at most one can match: the matches are the same."""
    words = [a for a in alternatives if _starts_word(a)]
    others = [a for a in alternatives if not _starts_word(a)]
    return re.compile(rf"(?a:\b)(?:{_by_first_character(words)})|{_by_first_character(others)}")


_VENDOR_RE: Final = _vendor_regex(
    [_vendor_alternative(r.prefix, r.body, r.minimum) for r in rules.VENDOR_TOKENS]
)


def _shortest(rule: rules.VendorToken) -> int:
    """Characters of the shortest token of ``rule`` (its prefix and its minimum body)."""
    return int(re._parser.parse(rule.prefix).getwidth()[0]) + rule.minimum  # type: ignore[attr-defined]


#: The vendor rules whose tokens may be shorter than a long run (:data:`_LONG_RUN_CHARS`):
#: the only ones that can match in a shorter run (a match lies in one run).
_SHORT_VENDOR_TOKENS: Final = tuple(
    r for r in rules.VENDOR_TOKENS if _shortest(r) < _LONG_RUN_CHARS
)


# Those rules alone, in the same order: in a run shorter than a long run, the matches of
# :data:`_VENDOR_RE` (no other alternative fits there). Each prefix starts a word.
_SHORT_VENDOR_ALTERNATIVES: Final = [
    _vendor_alternative(r.prefix, r.body, r.minimum) for r in _SHORT_VENDOR_TOKENS
]
assert all(_starts_word(a) for a in _SHORT_VENDOR_ALTERNATIVES)
_SHORT_VENDOR_RE: Final = re.compile(
    rf"(?a:\b)(?:{_by_first_character(_SHORT_VENDOR_ALTERNATIVES)})"
)


def _literal_head(prefix: str) -> str:
    """The literal characters a vendor prefix starts with (up to its first class or escape)."""
    head = re.match(r"[A-Za-z0-9_\-]*", prefix)
    assert head is not None
    return head.group()


#: Where a token of those rules starts: each starts with one of these.
_SHORT_VENDOR_HEADS: Final = tuple(sorted({_literal_head(r.prefix) for r in _SHORT_VENDOR_TOKENS}))
assert all(len(head) >= 2 for head in _SHORT_VENDOR_HEADS), _SHORT_VENDOR_HEADS


# Any of them: one pass over the text, searched again from the next character after each, so
# every place one starts is found (a 10 MB message: ~0.03 s for one ``str.find`` pass per
# head -> ~0.02 s).
_SHORT_VENDOR_HEAD_RE: Final = re.compile("|".join(map(re.escape, _SHORT_VENDOR_HEADS)))


def vendor_matches(scan: Scan) -> Iterator[tuple[int, re.Match[str]]]:
    """The matches of :data:`_VENDOR_RE` in the runs (:meth:`..scan.Scan.in_runs`), as
    ``(offset, match)``, in text order. With more than a few long runs
    (:data:`_LONG_RUN_CHARS`): those in the long runs over the long runs joined, those in the
    shorter runs from the heads of the only rules that fit there (:data:`_SHORT_VENDOR_HEADS`):
    the runs of 13 to 19 characters are never listed, joined or scanned (a 10 MB message:
    listing its 205,000 runs ~0.09 s, joining them ~0.05 s and scanning them ~0.08 s ->
    listing the 46,000 long ones ~0.05 s, scanning them ~0.03 s and finding the heads ~0.03 s).
    """
    long_runs = scan.runs(_LONG_RUN_CHARS)
    if len(long_runs) <= MAX_RUNS_SEARCHED_ALONE:
        yield from scan.in_runs(_VENDOR_RE)  # (all the runs: few long ones, maybe few at all)
        return
    long = scan.in_runs(_VENDOR_RE, _LONG_RUN_CHARS)
    yield from heapq.merge(long, _short_run_matches(scan, long_runs), key=_text_start)


def _text_start(found: tuple[int, re.Match[str]]) -> int:
    return found[0] + found[1].start()


def _short_run_matches(
    scan: Scan, long_runs: list[tuple[int, int]]
) -> Iterator[tuple[int, re.Match[str]]]:
    """The matches of :data:`_SHORT_VENDOR_RE` outside the long runs, in order: tried where a
    head starts (and not inside the last match), as ``finditer`` over the shorter runs would.
    A match is made of token characters, 13 or more (:data:`MIN_VENDOR_RUN_CHARS`): outside
    the long runs, it fills part of a run of 13 to 19."""
    text = scan.text
    match = _SHORT_VENDOR_RE.match
    search = _SHORT_VENDOR_HEAD_RE.search
    taken = 0
    pos = 0
    while (head := search(text, pos)) is not None:
        start = head.start()
        pos = start + 1
        if start < taken or (m := match(text, start)) is None:
            continue
        i = bisect.bisect_right(long_runs, (start, sys.maxsize)) - 1
        if i >= 0 and start < long_runs[i][1]:
            continue  # in a long run (its matches are found there)
        taken = m.end()
        yield 0, m


#: Characters looked back over to see whether a vendor prefix sits inside a checksum.
MAX_CHECKSUM_LOOKBACK: Final = 128


_B64_CHAR_SET: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/_-"
)


_TOKEN_RULES: Final[tuple[tuple[str, re.Pattern[str], int, int], ...]] = tuple(
    (rule.anchor, re.compile(rule.pattern), rule.in_runs, rule.anchor_at)
    for rule in rules.PATTERN_TOKENS
)


def _check_anchors() -> None:
    for rule in rules.PATTERN_TOKENS:
        if rule.anchor_at >= 0:
            m = re.search(rule.pattern, rule.sample)
            assert m is not None and rule.sample.startswith(
                rule.anchor, m.start() + rule.anchor_at
            ), rule.family


_check_anchors()


# Telegram bot token ``123456789:AA…``, alone or as ``/bot<token>/`` in an API URL. Where it
# starts is checked in Python (a lookbehind in front would be tried at every position).
_TELEGRAM_RE: Final = re.compile(
    rf"[0-9]{{{TELEGRAM_BOT_ID_DIGITS[0]},{TELEGRAM_BOT_ID_DIGITS[1]}}}:"
    rf"{_TOKEN_CHARS}{{{MIN_TELEGRAM_SECRET_CHARS},}}"
)


_TOKEN_CHAR_SET: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
)


def tokens(scan: Scan) -> None:
    text = scan.text
    spans = scan.spans
    budget = scan.budget
    longest = scan.longest_run()
    short = len(text) < MIN_CHARS_SEARCHED_AT_WORDS
    # (a line with no run that long: no generator is built; a short text: all its runs)
    vendor = (
        ()
        if longest < MIN_VENDOR_RUN_CHARS
        else scan.in_runs(_VENDOR_RE)
        if short
        else vendor_matches(scan)
    )
    for offset, m in vendor:
        budget -= 1
        start = m.start() + offset
        if budget < 0:
            scan.over_budget(start)
            break
        run = start
        while run and start - run < MAX_CHECKSUM_LOOKBACK and text[run - 1] in _B64_CHAR_SET:
            run -= 1
        if text.endswith(_PUBLIC_HASH_PREFIXES, 0, run):
            continue  # inside a checksum (``sha256=qaN-fw_…`` of a pip RECORD line)
        if (
            start
            and text.startswith("gAAAA", start)
            and (text[start - 1] in "+=-" or text.endswith(";base64,", 0, start))
        ):
            continue  # a Fernet shape inside a base64 blob or a data URL
        spans.append((start, m.end() + offset, _PLAIN))
    budget = scan.budget
    for anchor, pattern, in_runs, anchor_at in _TOKEN_RULES:
        if in_runs > longest:
            continue  # (a short text has no run long enough: no generator is built)
        if anchor and (short or in_runs < _LONG_RUN_CHARS) and anchor not in text:
            continue  # (a long text: its long runs are searched for the anchor, not the text)
        if in_runs >= _LONG_RUN_CHARS:
            # (an anchor is looked for in the long runs only, where the pattern is tried: a
            # 10 MB message, the anchored patterns ~0.1 s -> ~0.03 s)
            found = scan.in_runs(pattern, in_runs, anchor, anchor_at)
        elif anchor_at >= 0:  # (the shorter runs are never joined: see vendor_matches)
            found = ((0, m) for m in scan.matches_at(pattern, (anchor,), anchor_at))
        else:
            found = ((0, m) for m in pattern.finditer(text))
        for offset, m in found:
            budget -= 1
            if budget < 0:
                scan.over_budget(m.start() + offset)
                break
            spans.append((m.start("value") + offset, m.end("value") + offset, _PLAIN))
    budget = scan.budget
    telegram = (
        scan.in_runs(_TELEGRAM_RE, MIN_TELEGRAM_BOT_CHARS)
        if longest >= MIN_TELEGRAM_BOT_CHARS
        else ()
    )
    for offset, m in telegram:
        budget -= 1
        start = m.start() + offset
        if budget < 0:
            scan.over_budget(start)
            return
        if start and text[start - 1] == ":":
            continue
        before = start - 3 if start >= 3 and text.startswith("bot", start - 3) else start
        if before and (text[before - 1] in _TOKEN_CHAR_SET or text[before - 1] == ":"):
            continue
        spans.append((start, m.end() + offset, _PLAIN))
