"""The per-text scan context every rule's finder is given (docs/redaction.md).

Invariant: one :class:`Scan` per text. It holds the ORIGINAL text and what the finders found
in it (spans, PEM lines, the cutoff of the candidate budget), and caches what several rules
read (the lower-cased text, the runs of token characters, the runs joined): each is computed
at most once per text, in linear time, and no other copy of the whole text is made (a name is
read backwards over its own characters: :func:`.judges.start_of_name`). Its searches
(``in_runs``, ``matches_at``) give the matches of the pattern's ``finditer`` over the whole
text, in order, searching only where a match can be. It judges no credential itself: its
helpers take a value at a position (``value_at``, ``continuation``, ``block_scalar``) and add
a span unless the value is a reference (``value``, ``values``). A finder examines at most
:data:`MAX_CANDIDATES_PER_RULE` + ``len(text) // CHARS_PER_EXTRA_CANDIDATE`` candidates
(``budget``); past it, it calls ``over_budget`` and the text is masked from there.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from .families import lowered as lowered_text
from .judges import (
    _BLANKS,
    _LONG_RUN_CHARS,
    _LONG_RUNS_RE,
    _RUNS_RE,
    MAX_NAME_CHARS,
    MIN_VENDOR_RUN_CHARS,
    _is_reference,
)

# ``:`` too: ``f(x, trio_token=None):`` ends a Python signature.
_TRAILING_PUNCTUATION: Final = ".,;:)]}\"'`"


def _trim_value(text: str, start: int, end: int) -> int:
    """End of the value ``text[start:end]`` without trailing sentence/bracket punctuation."""
    while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
        end -= 1
    return end


# Short password flags of well-known commands (``mysql -pSECRET``, ``sshpass -p 'x'``,
# ``redis-cli -a x``, ``sqlcmd -P x``, ``ldapsearch -w x``): the command word, then its flags.
# The table is data (data.CLI_PASSWORD_COMMANDS); the regex finds the command words.


# The value after a separator: one alternative per quoting style (a string prefix such as
# C#'s ``@``, Python's ``r``/``b``/``f`` allowed), an unterminated quote (the word after it),
# else a bare value that runs to the next blank (a ``<``, ``>`` or quote inside it does not end
# it: ``password=ab>cd`` is one value), to an escaped line break, or to ``&name=`` (the next
# field of a form body). ``…`` ends every value: it marks an already masked value (keeps
# redaction idempotent) -- except for passwords, masked whole (:data:`_FULL_VALUE_RE`).
def _value_regex(stop: str) -> re.Pattern[str]:
    return re.compile(
        _BLANKS + r"(?:"
        rf'\\+"(?P<escaped>(?:[^"\\\r\n{stop}]|\\\\)*)'
        rf'|(?:[rRbBuUfF]{{1,2}}|@|\$)?"(?P<double>(?:[^"\\\r\n{stop}]|\\[^\r\n{stop}])*)"'
        rf"|(?:[rRbBuUfF]{{1,2}})?'(?P<single>(?:[^'\\\r\n{stop}]|\\[^\r\n{stop}])*)'"
        rf"|`(?P<backtick>[^`\r\n{stop}]*)`"
        rf"|(?:[rRbBuUfF]{{1,2}}|@|\$)?[\"'`](?P<open>[^\s\"'`\\{stop}]+)"
        # (possessive: nothing follows the bare value in the pattern, so giving characters
        # back could never make it match; a run of plain characters is read in one step)
        rf"|(?P<bare>(?:[^\s\\&{stop}]++|\\(?![nrt\"'\\])|&(?![A-Za-z0-9_%.\-]{{1,64}}=))++)"
        r")"
    )


_VALUE_RE: Final = _value_regex("…")


_FULL_VALUE_RE: Final = _value_regex("")


#: A text this long lists its long runs by their own regex (:meth:`Scan.runs`): a 10 MB
#: message holds 205,000 runs of 13+ characters (listed in ~0.09 s) and 46,000 long ones
#: (~0.05 s); a short text lists all its runs in one call.
MIN_CHARS_LISTING_LONG_RUNS_APART: Final = 65_536


#: Up to this many runs, each run is searched alone (joining them costs more than it saves).
MAX_RUNS_SEARCHED_ALONE: Final = 8


# A public PEM block (certificate, public key): its base64 body is not a secret.
_PEM_PUBLIC_BEGIN_RE: Final = re.compile(r"-----BEGIN (?![A-Z ]{0,40}PRIVATE)[A-Z0-9 ]{1,40}-----")


# --------------------------------------------------------------------------- spans

# A span is ``(start, end, kind)``: ``text[start:end]`` is a secret; ``kind`` is :data:`_PLAIN`,
# :data:`_OVERFLOW` (the rest of a text with too many candidates), or the index of the
# ``(BEGIN line, END line or None)`` of a PEM block in the scan's ``pems`` list.
_Span = tuple[int, int, int]


_PLAIN: Final = -1


_OVERFLOW: Final = -2


_FULL: Final = -3  # a password: masked whole (``***``) whatever its length


_LINE_REST_RE: Final = re.compile(r"[ \t]*(?:\r?\n|$)")


# One token alone on an indented line (see :meth:`_Scan.continuation`).
_CONTINUATION_RE: Final = re.compile(
    r"[ \t]{1,64}(?P<value>(?![A-Za-z_][\w.\-]{0,64}=[^=])[^\s#\-\[{!|>&*][^\s]{0,4095})"
    r"(?<!:)[ \t]*(?:\r?\n|$)"
)


_BLOCK_LINE_RE: Final = re.compile(r"[ \t]{1,64}(?P<value>[^\s][^\r\n]*?)[ \t]*(?:\r?\n|$)")


#: Candidates one rule examines in Python per text (a ``name=``, a ``?param=``, a token …).
#: A real message holds a handful of credentials; tens of thousands only occur in generated or
#: hostile text, where examining each costs a few microseconds. Past this budget the rule
#: stops and the text from its first unexamined candidate to the end is replaced by
#: :data:`OVERFLOW_MASK`: nothing leaks, and a 1 MB hostile text costs a bounded time per rule
#: (0.3 s for the costliest, ``name=`` assignments, on 20,000 candidates; see tests/test_redact.py).
MAX_CANDIDATES_PER_RULE: Final = 10_000


#: ... plus one for every this many characters of the text: a log of a million lines with a
#: ``key=`` on each is examined whole (a few microseconds per candidate, linear), while a
#: megabyte of ``token: token: …`` or ``?key=v`` lines (a candidate every few characters:
#: generated or hostile text) still stops at the budget.
CHARS_PER_EXTRA_CANDIDATE: Final = 64


#: A text shorter than this is searched whole by :func:`matches_at` (one regex call costs less
#: than finding the words first, on the short texts most messages are).
MIN_CHARS_SEARCHED_AT_WORDS: Final = 4096


def matches_at(
    pattern: re.Pattern[str], text: str, words: tuple[str, ...], offset: int, where: str = ""
) -> Iterator[re.Match[str]]:
    """The matches of ``pattern.finditer(text)``, in order, for a pattern each match of which
    holds one of ``words`` ``offset`` characters after its start (in ``where``, a string of
    the same length whose positions are the text's, such as its lower case; by default the
    text itself): in a long text, the pattern is tried only there, at the places ``str.find``
    finds (one C-level pass per word), not at every position. A place inside the last match
    is skipped, as ``finditer`` skips it; a match is never empty (it holds a word)."""
    if len(text) < MIN_CHARS_SEARCHED_AT_WORDS:
        return pattern.finditer(text)
    find = (where or text).find
    places: Iterator[int] = (
        _places(find, words[0], offset)
        if len(words) == 1
        else heapq.merge(*(_places(find, word, offset) for word in words))
    )
    return _matches_at_places(pattern, text, places)


def _matches_at_places(
    pattern: re.Pattern[str], text: str, places: Iterator[int]
) -> Iterator[re.Match[str]]:
    match = pattern.match
    taken = 0
    for start in places:
        if start >= taken and (m := match(text, start)) is not None:
            taken = m.end()
            yield m


def _listed_runs(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The runs a runs regex (:data:`.judges._RUNS_RE`) lists in ``text`` (group 1)."""
    spans = [m.span(1) for m in pattern.finditer(text)]
    while spans and spans[-1][0] < 0:
        spans.pop()  # (the text's tail, after its last run)
    return spans


def _places(find: Callable[[str, int], int], word: str, offset: int) -> Iterator[int]:
    """Every place ``offset`` characters before an occurrence of ``word`` (overlapping
    occurrences too), in order, never before the text."""
    at = find(word, offset)
    while at >= 0:
        yield at - offset
        at = find(word, at + 1)


class Scan:
    """The credential spans of one text, rule by rule."""

    __slots__ = (
        "_joined",
        "_longest",
        "_lowered",
        "_runs",
        "budget",
        "cutoff",
        "pems",
        "public",
        "spans",
        "text",
    )

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[_Span] = []
        self.pems: list[tuple[str, str | None]] = []
        # ``(start, end)`` of values that are ids or pagination tokens (``"NextToken": "…"``):
        # the rules for tokens with no name (opaque, code literals) leave them alone
        self.public: list[tuple[int, int]] | None = None  # found on first use
        self.cutoff = len(text)  # from here on, everything is masked (candidate budget)
        self._runs: dict[int, list[tuple[int, int]]] = {}  # each list found on first use
        self._longest: dict[int, int] = {}  # the longest run of each list
        self._lowered: str | None = None  # found on first use
        self._joined: dict[int, tuple[str, list[int], list[int]]] | None = None  # on first use
        # candidates one rule may examine: a budget for the text and a share of its length, so
        # a long log with a ``key=`` on every line is examined whole, a hostile text is not
        self.budget = MAX_CANDIDATES_PER_RULE + len(text) // CHARS_PER_EXTRA_CANDIDATE

    def over_budget(self, position: int) -> None:
        if position < self.cutoff:
            self.cutoff = position

    def within_budget(self, matches: Iterable[re.Match[str]]) -> Iterator[re.Match[str]]:
        """``matches`` up to this text's candidate budget (one rule's budget: each call counts
        afresh); at the first match past it the text is masked from that match on
        (:meth:`over_budget`) and the iteration ends."""
        budget = self.budget
        for m in matches:
            budget -= 1
            if budget < 0:
                self.over_budget(m.start())
                return
            yield m

    def add(self, start: int, end: int, whole: bool = False) -> None:
        """``text[start:end]`` is a secret; ``whole``: mask it as ``***`` whatever its length."""
        self.spans.append((start, end, _FULL if whole else _PLAIN))

    def value(
        self,
        start: int,
        end: int,
        name: str | None = None,
        whole: bool = False,
        literal: bool = False,
    ) -> None:
        """Add ``text[start:end]`` (trailing punctuation trimmed) unless it is a reference
        (``literal``: see :func:`_is_reference`)."""
        text = self.text
        while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
            end -= 1
        if end > start and not _is_reference(text[start:end], name, literal):
            self.add(start, end, whole)

    def value_at(self, pos: int, whole: bool = False) -> tuple[int, int, bool] | None:
        """``(start, end, quoted)`` of the value starting at ``pos`` (after a separator).

        ``whole``: a password's value, which may contain ``…`` (it is masked whole).
        """
        m = (_FULL_VALUE_RE if whole else _VALUE_RE).match(self.text, pos)
        if m is None:
            return None
        group = m.lastgroup
        assert group is not None
        if group in ("bare", "open"):
            return m.start(group), _trim_value(self.text, m.start(group), m.end(group)), False
        return m.start(group), m.end(group), True

    def statement(self, name_start: int, value_end: int) -> bool:
        """Whether ``name "value"`` is a whole line: only blanks before the name and after the
        closing quote (``password "…"`` in a Gradle ``credentials {}`` block)."""
        text = self.text
        line_start = text.rfind("\n", max(0, name_start - MAX_NAME_CHARS), name_start) + 1
        if text[line_start:name_start].strip(" \t") or (
            line_start == 0 and name_start > MAX_NAME_CHARS
        ):
            return False
        rest = _LINE_REST_RE.match(text, value_end)
        return rest is not None

    def continuation(self, pos: int, whole: bool) -> tuple[int, int, bool] | None:
        """The value of a name whose line ends at its separator (``pos``): one token alone on
        the next, indented line (an INI continuation line, a YAML plain scalar) -- not a nested
        ``key:``, a ``name=`` assignment, a list item or a comment."""
        text = self.text
        line_end = text.find("\n", pos)
        if line_end < 0 or text[pos:line_end].strip():
            return None
        m = _CONTINUATION_RE.match(text, line_end + 1)
        if m is None or (not whole and "…" in m.group("value")):
            return None  # (``…``: masked already)
        return m.start("value"), _trim_value(text, m.start("value"), m.end("value")), False

    def block_scalar(self, pos: int) -> tuple[int, int] | None:
        """The first non-blank line after a YAML ``|``/``>`` block indicator ending at ``pos``."""
        text = self.text
        line_end = text.find("\n", pos)
        if line_end < 0 or text[pos:line_end].strip():
            return None
        m = _BLOCK_LINE_RE.match(text, line_end + 1)
        if m is None:
            return None
        return m.start("value"), m.end("value")

    def values_at_words(self, words: tuple[str, ...], pattern: re.Pattern[str]) -> None:
        """Every ``value`` group of ``pattern`` matched where one of ``words`` starts a word
        (found with ``str.find``: a regex starting with an alternation of words would try
        every position of the text), masked whole."""
        text = self.text
        budget = self.budget
        for word in words:
            at = text.find(word)
            while at >= 0:
                if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                    budget -= 1
                    if budget < 0:
                        self.over_budget(at)
                        return
                    m = pattern.match(text, at)
                    if m is not None:
                        self.value(m.start("value"), m.end("value"), whole=True)
                at = text.find(word, at + len(word))

    def values(self, pattern: re.Pattern[str], whole: bool = False, literal: bool = False) -> None:
        """Every ``value`` (or ``quoted``) group of ``pattern`` (``literal``: see
        :func:`_is_reference`)."""
        quoted = "quoted" in pattern.groupindex
        for m in self.within_budget(pattern.finditer(self.text)):
            if quoted and m.start("quoted") >= 0:
                self.add(m.start("quoted"), m.end("quoted"), whole)
            else:
                self.value(m.start("value"), m.end("value"), whole=whole, literal=literal)

    def matches_at(
        self, pattern: re.Pattern[str], words: tuple[str, ...], offset: int, lowered: bool = False
    ) -> Iterator[re.Match[str]]:
        """:func:`matches_at` in the text (``lowered``: the words found in its lower case)."""
        text = self.text
        if len(text) < MIN_CHARS_SEARCHED_AT_WORDS:
            return pattern.finditer(text)  # (as :func:`matches_at`, without its calls)
        return matches_at(pattern, text, words, offset, self.lowered() if lowered else "")

    def lowered(self) -> str:
        """The text in lower case, character for character (:func:`.families.lowered`).
        Computed once per text: several rules read it."""
        if self._lowered is None:
            self._lowered = lowered_text(self.text)
        return self._lowered

    def runs(self, minimum: int = MIN_VENDOR_RUN_CHARS) -> list[tuple[int, int]]:
        """``(start, end)`` of the runs of token characters at least ``minimum`` long (at
        least :data:`MIN_VENDOR_RUN_CHARS`), in text order. At most one run per
        :data:`MIN_VENDOR_RUN_CHARS` + 1 characters, so looking at each run costs linear time.
        In a text of :data:`MIN_CHARS_LISTING_LONG_RUNS_APART` or more, the long runs
        (:data:`_LONG_RUN_CHARS`: what the token rules search) are listed by their own regex
        and the runs of :data:`MIN_VENDOR_RUN_CHARS` only when asked for (a text with few long
        runs); in a shorter one, every run at once and the long ones filtered from them. The
        list for a longer minimum is filtered once from the closest shorter one and kept (the
        rules ask for a handful of minimums)."""
        cache = self._runs
        found = cache.get(minimum)
        if found is not None:
            return found
        view = _LONG_RUN_CHARS if minimum >= _LONG_RUN_CHARS else MIN_VENDOR_RUN_CHARS
        listed = cache.get(view)
        if listed is None:
            if view == MIN_VENDOR_RUN_CHARS:
                listed = _listed_runs(_RUNS_RE, self.text)
            elif len(self.text) >= MIN_CHARS_LISTING_LONG_RUNS_APART:
                listed = _listed_runs(_LONG_RUNS_RE, self.text)
            else:
                listed = [
                    (s, e) for s, e in self.runs(MIN_VENDOR_RUN_CHARS) if e - s >= _LONG_RUN_CHARS
                ]
            cache[view] = listed
            self._longest[view] = max([end - start for start, end in listed]) if listed else 0
        if minimum <= view:
            return listed
        if minimum > self._longest[view]:
            return []  # (no list built per minimum)
        found = cache.get(minimum)
        if found is None:
            base = max(m for m in cache if view <= m <= minimum)
            found = cache[minimum] = [(s, e) for s, e in cache[base] if e - s >= minimum]
        return found

    def longest_run(self) -> int:
        """The length of the longest run of token characters (0: none of
        :data:`MIN_VENDOR_RUN_CHARS`)."""
        longest = self._longest
        if _LONG_RUN_CHARS not in longest:
            self.runs(_LONG_RUN_CHARS)  # (in a short text, every run: see :meth:`runs`)
        if longest[_LONG_RUN_CHARS]:
            return longest[_LONG_RUN_CHARS]
        if MIN_VENDOR_RUN_CHARS not in longest:
            self.runs(MIN_VENDOR_RUN_CHARS)
        return longest[MIN_VENDOR_RUN_CHARS]

    def has_run(self, minimum: int) -> bool:
        """Whether one run of token characters is at least ``minimum`` long."""
        return self.longest_run() >= minimum

    def in_runs(
        self,
        pattern: re.Pattern[str],
        minimum: int = MIN_VENDOR_RUN_CHARS,
        anchor: str = "",
        anchor_at: int = -1,
    ) -> Iterator[tuple[int, re.Match[str]]]:
        """Every match of ``pattern`` (whose matches take run characters only, so each lies
        inside one run of token characters at least ``minimum`` long), as ``(offset, match)``:
        the match's positions plus ``offset`` are its positions in the text.

        A few runs are each searched in the text itself (offset 0). More are searched in ONE
        call over :meth:`joined`, the runs side by side, each with the character before and
        after it (what a lookbehind or lookahead of the pattern sees, so the matches are the
        same): the prose between the runs is never scanned and the regex is called once, not
        once per run (the vendor scan of a 10 MB message: ~0.5 s in regions of runs, ~0.2 s
        over the joined runs). ``anchor_at`` >= 0: every match holds ``anchor`` that many
        characters after its start, so the pattern is tried only there (:func:`matches_at`:
        the same matches)."""
        text = self.text
        # two lists of runs serve every minimum: the runs of a vendor token and the long runs
        # of a nameless token (a pattern longer than the list's minimum still only matches in
        # runs long enough; filtering and joining the runs per minimum cost more than it saved)
        view = _LONG_RUN_CHARS if minimum >= _LONG_RUN_CHARS else MIN_VENDOR_RUN_CHARS
        runs = self.runs(view)
        if len(runs) <= MAX_RUNS_SEARCHED_ALONE:
            if anchor_at >= 0:  # (the text once, from each anchor: no run is missed)
                for m in matches_at(pattern, text, (anchor,), anchor_at):
                    yield 0, m
                return
            for start, end in runs:
                for m in pattern.finditer(text, start, end):
                    yield 0, m
            return
        joined, starts, offsets = self.joined(view)
        found = (
            matches_at(pattern, joined, (anchor,), anchor_at)
            if anchor_at >= 0
            else pattern.finditer(joined)
        )
        for m in found:
            yield offsets[bisect.bisect_right(starts, m.start()) - 1], m

    def joined(self, minimum: int) -> tuple[str, list[int], list[int]]:
        """The runs at least ``minimum`` long, each with its neighbouring characters, in one
        string; where each piece starts in it; the offset from there to the text (kept per
        minimum). Two pieces meet at two characters no run holds, so no match spans them."""
        if self._joined is None:
            self._joined = {}
        found = self._joined.get(minimum)
        if found is None:
            text = self.text
            size = len(text)
            runs = self.runs(minimum)
            firsts = [start - 1 if start else 0 for start, _ in runs]
            pieces = [
                text[first : end + 1 if end < size else end]
                for first, (_, end) in zip(firsts, runs, strict=True)
            ]
            starts = list(itertools.accumulate(map(len, pieces), initial=0))[:-1]
            offsets = [first - at for first, at in zip(firsts, starts, strict=True)]
            found = self._joined[minimum] = ("".join(pieces), starts, offsets)
        return found

    def public_pem_ranges(self) -> list[tuple[int, int]]:
        """Where the public PEM blocks (certificates, public keys) of the text lie."""
        text = self.text
        ranges: list[tuple[int, int]] = []
        pos = 0
        while (m := _PEM_PUBLIC_BEGIN_RE.search(text, pos)) is not None:
            end = text.find("-----END", m.end())
            if end < 0:
                ranges.append((m.end(), len(text)))
                break
            ranges.append((m.end(), end))
            pos = end + 1
        return ranges
