"""Tokens: the text FTS5 indexes, and a Python mirror of how FTS5 tokenizes it.

The FTS5 table uses ``tokenize='unicode61 remove_diacritics 2'``. That tokenizer makes a whole
run of CJK characters ONE token (``数据`` would not find ``我们的数据库``), so every text is passed
through :func:`index_body` before it reaches FTS5 -- documents when indexed, quoted query strings
when compiled -- which puts a space on both sides of every CJK character: each CJK character is
then its own token, and a CJK query becomes a phrase of single characters, i.e. an exact
substring match of any length (1 character included).

Invariants:

* :func:`index_body` is the only form in which text reaches FTS5. It always returns text that
  encodes as UTF-8 (NUL becomes a space, lone surrogates U+FFFD), and it returns its argument
  itself (same object, no copy) for clean text without a CJK character.
* :func:`tokenize` yields, with offsets into the ORIGINAL text, the tokens FTS5 produces from
  ``index_body(text)``: token characters are the Unicode categories L*, N*, Co and Cn
  (SQLite's tables treat code points they do not know as token characters; U+FFFE/U+FFFF
  excepted), everything else separates; the combining diacritics SQLite strips continue a
  token but never start one; each CJK character is a token by itself. :func:`fold` normalises a
  token the way the tokenizer does (simple case folding, Latin diacritics removed).
  Measured against FTS5 on SQLite 3.40.1 over every code point (``"q" + ch + "q"``):
  tokenization agrees for 99.6 % of them and folding for 99.96 % of the token characters; the
  differences are characters added to Unicode after SQLite's tables (recent emoji and symbols,
  letters such as Georgian Mtavruli), never ASCII, Latin or CJK. The mirror drives query term
  dropping and snippet windows (a difference can cost a rare match or pick a less good window,
  never produce an FTS5 error), and a narrow caller's suggestions on SQLite, only for text
  :func:`mirror_is_exact` vouches for (:data:`MIRROR_EXACT_RANGES`, measured against FTS5).
* :func:`latin1_tokens` holds a Latin-1 text's tokens as two byte strings of one byte per
  character (folded forms, token marks): the tokens, folded forms and offsets of
  :func:`scan_tokens`, counted and searched without a Python object per token.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import NamedTuple, TypeVar

import regex  # type: ignore[import-untyped,unused-ignore]  # no stubs in the venv

_T = TypeVar("_T")

#: Inclusive code point ranges of the CJK characters that :func:`index_body` isolates. Each one
#: becomes a token by itself, so any substring of CJK text can be searched.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 iteration mark, 〆, 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # vertical kana repeat marks
    (0x3038, 0x303C),  # 〸〹〺 numerals, 〻 vertical iteration mark, 〼 masu mark
    (0x3041, 0x309F),  # Hiragana (incl. ゝゞ iteration marks)
    (0x30A0, 0x30FF),  # Katakana (incl. ー prolonged sound mark, ヽヾ)
    (0x3105, 0x312F),  # Bopomofo
    (0x3131, 0x318E),  # Hangul Compatibility Jamo
    (0x31A0, 0x31BF),  # Bopomofo Extended
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7A3),  # Hangul Syllables
    (0xD7B0, 0xD7FF),  # Hangul Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # Halfwidth Katakana (incl. ｰ and the halfwidth sound marks)
    (0xFFA0, 0xFFDC),  # Halfwidth Hangul
    (0x1AFF0, 0x1B16F),  # Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Ext.
    (0x20000, 0x2FFFF),  # Supplementary Ideographic Plane: Extensions B-F, I, Compat. Supplement
    (0x30000, 0x3FFFF),  # Tertiary Ideographic Plane: Extensions G, H
)

#: The combining marks that ``unicode61 remove_diacritics 2`` treats as part of the token before
#: them and then drops (measured on SQLite 3.40.1: a subset of U+0300..U+0331). Everywhere else a
#: combining mark separates tokens, as in SQLite.
DIACRITIC_MARKS: frozenset[str] = frozenset(
    chr(cp)
    for cp in (
        *range(0x300, 0x305),
        *range(0x306, 0x30D),
        0x30F,
        0x311,
        0x31B,
        *range(0x323, 0x329),
        0x32D,
        0x32E,
        0x330,
        0x331,
    )
)

#: Inclusive ranges of precomposed letters whose diacritics ``remove_diacritics 2`` strips (the
#: Latin blocks and the angstrom sign; Greek, Cyrillic, ... keep theirs, as in SQLite).
LATIN_DIACRITIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00C0, 0x024F),
    (0x1E00, 0x1EFF),
    (0x212B, 0x212B),
)

#: Latin letters SQLite folds differently from the rule above (measured on SQLite 3.40.1).
FOLD_EXCEPTIONS: dict[str, str] = {"Ǡ": "ǡ", "ǡ": "ǡ", "ẛ": "s"}

#: Bound of the per-character fold cache (folding is only computed for non-ASCII characters).
FOLD_CACHE_SIZE = 65536

_CJK_STARTS = [lo for lo, _ in CJK_RANGES]
#: Below it no character is CJK (:func:`is_cjk` needs no look-up).
_FIRST_CJK = chr(min(_CJK_STARTS))


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


_CJK_CLASS = _char_class(CJK_RANGES)
_CJK_RUN_RE = re.compile(f"[{_CJK_CLASS}]+")
_DIRTY_RE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_SPECIAL_RE = re.compile(f"[\x00\ud800-\udfff{_CJK_CLASS}]")

_TOKEN_BASE = r"\p{L}\p{N}\p{Co}\p{Cn}"
_TOKEN_CHAR = rf"[[{_TOKEN_BASE}]--[\uFFFE\uFFFF{_CJK_CLASS}]]"
_CJK_TOKEN_CHAR = rf"[[{_TOKEN_BASE}]&&[{_CJK_CLASS}]]"
_DIACRITIC_CHAR = "[" + "".join(sorted(DIACRITIC_MARKS)) + "]"
# The exact pattern, and three faster ones that give the same tokens on text they are used for:
# ASCII text and Latin text below U+0250 (only letters and digits are token characters
# there: the stdlib's `re`), and text without CJK characters, strippable diacritics and
# U+FFFE/U+FFFF (no token ends at a CJK character and no diacritic continues one). Set
# operations make the exact pattern ~3x slower.
_TOKEN_RE = regex.compile(
    rf"{_CJK_TOKEN_CHAR}|{_TOKEN_CHAR}(?:{_TOKEN_CHAR}|{_DIACRITIC_CHAR})*", regex.V1
)
_ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")
#: Text with no character from U+0250 on (ASCII, Latin-1, Latin Extended-A and -B) is
#: tokenized by :data:`_LATIN_TOKEN_RE`: Python's word characters without ``_`` are there
#: exactly the letters and digits (\p{L}\p{N}), and no character there is unassigned or
#: private use.
_NOT_LATIN_RE = re.compile("[^\x00-\u024f]")
#: The first code point :data:`_NOT_LATIN_RE` sends to the slower patterns.
_LATIN_END = 0x250


def _latin_token_class() -> str:
    """Python's ``[^\\W_]`` below U+0250 as explicit ranges of code points (eleven): the
    same characters, matched about a quarter faster (measured on the bench's Latin messages,
    15.5 -> 11.4 µs a 480-character message), since ``\\W`` looks each one up in Unicode's
    tables."""
    word = re.compile(r"[^\W_]")
    ranges: list[list[int]] = []
    for code in range(_LATIN_END):
        if word.match(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    return "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)


_LATIN_TOKEN_RE = re.compile(f"[{_latin_token_class()}]+")
#: The two patterns above, capturing: ``split`` gives the separators and the tokens in turn.
_ASCII_SPLIT_RE = re.compile(f"({_ASCII_TOKEN_RE.pattern})")
_LATIN_SPLIT_RE = re.compile(f"({_LATIN_TOKEN_RE.pattern})")
_PLAIN_TOKEN_RE = regex.compile(rf"[{_TOKEN_BASE}]+")
_NOT_PLAIN_RE = re.compile(f"[{_CJK_CLASS}{''.join(sorted(DIACRITIC_MARKS))}\ufffe\uffff]")
_ANY_TOKEN_CHAR_RE = regex.compile(rf"[[{_TOKEN_BASE}]--[\uFFFE\uFFFF]]", regex.V1)


class Token(NamedTuple):
    """One token: ``text[start:end]`` of the original text, and its folded form."""

    start: int
    end: int
    norm: str


def is_cjk(ch: str) -> bool:
    """True when ``ch`` (one character) is a CJK character that :func:`index_body` isolates."""
    if len(ch) != 1:
        return False
    cp = ord(ch)
    i = bisect.bisect_right(_CJK_STARTS, cp) - 1
    return i >= 0 and cp <= CJK_RANGES[i][1]


def is_token_char(ch: str) -> bool:
    """True when ``ch`` (one character) can start a token (letter, digit, private use, ...)."""
    return len(ch) == 1 and _ANY_TOKEN_CHAR_RE.match(ch) is not None


def has_token(text: str) -> bool:
    """True when ``text`` contains at least one token (cheaper than ``bool(tokenize(text))``)."""
    return _ANY_TOKEN_CHAR_RE.search(text) is not None


def _is_latin1(text: str) -> bool:
    """True when every character is below U+0100 (no CJK, no surrogate): a copy for text that
    CPython stores one byte per character, an early exception otherwise. Far cheaper than a
    character-class scan (~40 ns per character with ``re``)."""
    if text.isascii():
        return True
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def is_valid_unicode(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (no lone surrogate): storable as a key or id."""
    return _SURROGATE_RE.search(text) is None


def clean_text(text: str) -> str:
    """``text`` made safe to encode as UTF-8: NUL becomes a space, a lone surrogate U+FFFD.

    A well-formed surrogate pair (two code points in a Python ``str``) is joined into the
    character it encodes. Clean text is returned as is (same object).
    """
    if _is_latin1(text) or _DIRTY_RE.search(text) is None:
        return text.replace("\x00", " ") if "\x00" in text else text
    text = text.replace("\x00", " ")
    if _SURROGATE_RE.search(text) is not None:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def utf16_len(text: str) -> int:
    """JavaScript's ``text.length``: UTF-16 code units (a character above U+FFFF, such as most
    emoji, counts 2; a lone surrogate 1). OpenClaw's length limits count these."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_fit(text: str, units: int) -> int:
    """How many characters of ``text``, from its start, fit in ``units`` UTF-16 code units —
    the prefix a UTF-16-safe cut at ``units`` keeps (a character above U+FFFF is never split)."""
    if units <= 0:
        return 0
    head = text[:units]
    if head.isascii():
        return len(head)
    data = head.encode("utf-16-le", "surrogatepass")[: 2 * units]
    kept = data.decode("utf-16-le", "surrogatepass")
    count = len(kept)
    if count and "\ud800" <= kept[-1] <= "\udbff" and head[count - 1] != kept[-1]:
        count -= 1  # the cut fell between the two halves of one character
    return count


def _space_run(match: re.Match[str]) -> str:
    return " " + " ".join(match.group()) + " "


def index_body(text: str) -> str:
    """The text FTS5 indexes for ``text``: :func:`clean_text`, then every CJK character spaced.

    Clean text without CJK comes back unchanged, as the same object: Latin-1 text (ASCII
    included) after one encode, other text after one scan for NUL, surrogates and CJK.
    Only CJK runs change: ``"用SQLite部署"`` becomes ``" 用 SQLite 部 署 "``.
    """
    if _is_latin1(text):
        return text.replace("\x00", " ") if "\x00" in text else text
    if _SPECIAL_RE.search(text) is None:
        return text
    text = clean_text(text)
    if _CJK_RUN_RE.search(text) is None:
        return text
    return _CJK_RUN_RE.sub(_space_run, text)


def body_is_clean_text(body: str) -> bool:
    """True when an indexed ``body`` is exactly ``clean_text`` of the message (no CJK run was
    spaced by :func:`index_body`), so it can stand in for the message text."""
    return _is_latin1(body) or _CJK_RUN_RE.search(body) is None


def _in_ranges(cp: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


@functools.lru_cache(maxsize=FOLD_CACHE_SIZE)
def _fold_char(ch: str) -> str:
    if ch in DIACRITIC_MARKS:
        return ""
    if ch in FOLD_EXCEPTIONS:
        return FOLD_EXCEPTIONS[ch]
    if _in_ranges(ord(ch), LATIN_DIACRITIC_RANGES):
        decomposed = unicodedata.normalize("NFD", ch)
        if (
            len(decomposed) > 1
            and decomposed[0].isascii()
            and all(unicodedata.combining(mark) for mark in decomposed[1:])
        ):
            ch = decomposed[0]
    folded = ch.casefold()
    if len(folded) == 1:
        return folded
    lowered = ch.lower()  # full folding would change the length (ß -> ss): keep it 1:1
    return lowered if len(lowered) == 1 else ch


def fold(token: str) -> str:
    """``token`` normalised like ``unicode61 remove_diacritics 2``: ``"Résumé"`` -> ``"resume"``."""
    if token.isascii():
        return token.lower()
    return "".join(map(_fold_char, token))


def scan_tokens(
    text: str, pos: int = 0, endpos: int | None = None
) -> tuple[list[int], list[int], list[str]]:
    """The tokens of ``text[pos:endpos]`` as three parallel lists: starts, ends (offsets into
    ``text``) and folded forms. Same tokens as :func:`tokenize`, without a tuple per token
    (about 3x faster on long ASCII text: the snippet builder scans whole messages)."""
    end = len(text) if endpos is None else min(endpos, len(text))
    part = text[pos:end] if pos > 0 or end < len(text) else text
    if part.isascii():
        # One split into separators and tokens, their offsets summed up: C loops, no match
        # object and no Python frame per token (a quarter less time than finditer's matches).
        return _split_tokens(_ASCII_SPLIT_RE.split(part.lower()), pos)
    if _NOT_LATIN_RE.search(part) is None:
        # Latin text (accents, no CJK, no combining mark): the stdlib's `re`, whose letters
        # and digits are exactly \p{L}\p{N} below U+0250 (every code point there is assigned,
        # none is private use), a quarter less time than the `regex` module's pattern. A
        # token of ASCII folds by lower-casing (as fold does); the others by fold.
        starts, ends, tokens = _split_tokens(_LATIN_SPLIT_RE.split(part), pos)
        norms = list(map(str.lower, tokens))
        for at in indexes_of(list(map(str.isascii, tokens)), False):
            norms[at] = fold(tokens[at])
        return starts, ends, norms
    pattern = _TOKEN_RE if _NOT_PLAIN_RE.search(part) is not None else _PLAIN_TOKEN_RE
    matches = list(pattern.finditer(text, pos, end))
    if not matches:
        return [], [], []
    match = type(matches[0])  # the regex module's match type
    starts = list(map(match.start, matches))
    ends = list(map(match.end, matches))
    return starts, ends, list(map(fold, map(match.group, matches)))


def indexes_of(items: list[_T], value: _T) -> list[int]:
    """Every index of ``value`` in ``items``, in order (``list.index``: a C loop between
    them, no Python frame per item)."""
    found: list[int] = []
    at = -1
    try:
        while True:
            at = items.index(value, at + 1)
            found.append(at)
    except ValueError:
        return found


def _split_tokens(parts: list[str], pos: int) -> tuple[list[int], list[int], list[str]]:
    """Starts, ends and texts of the tokens of ``re.split`` over a pattern that captures
    whole tokens (``[separator, token, separator, ..., separator]``), offsets from ``pos``."""
    offsets = list(itertools.accumulate(map(len, parts), initial=pos))
    return offsets[1:-2:2], offsets[2::2], parts[1::2]


#: Bound of the caches of :class:`Latin1Tokens`' compiled patterns (per skip count, per term).
LATIN1_PATTERN_CACHE = 256

_SEPARATOR_BYTE = ord(" ")
_TOKEN_MARK = ord("a")


def _latin1_tables() -> tuple[bytes, bytes, bytes]:
    """For each Latin-1 byte: its folded form when it is a token character (as
    :func:`scan_tokens` and :func:`fold` see it), else a space; ``a`` for a token character,
    else a space; and the token characters whose folded form is not one Latin-1 character
    (``µ`` folds to Greek ``μ``), which the tables cannot hold."""
    folded = bytearray([_SEPARATOR_BYTE]) * 256
    marks = bytearray([_SEPARATOR_BYTE]) * 256
    unfit = bytearray()
    for code in range(256):
        ch = chr(code)
        if _LATIN_TOKEN_RE.fullmatch(ch) is None:
            continue
        norm = fold(ch)
        if len(norm) != 1 or ord(norm) > 0xFF or _LATIN_TOKEN_RE.fullmatch(norm) is None:
            unfit.append(code)
            continue
        folded[code] = ord(norm)
        marks[code] = _TOKEN_MARK
    return bytes(folded), bytes(marks), bytes(unfit)


_LATIN1_FOLDED, _LATIN1_MARKS, _LATIN1_UNFIT = _latin1_tables()
_LATIN1_UNFIT_RE = re.compile(b"[" + re.escape(_LATIN1_UNFIT) + b"]") if _LATIN1_UNFIT else None


# The three patterns below alternate runs of marks and of spaces: each greedy run ends where
# the other byte begins, so a match never backtracks (linear; Python 3.10 has no possessive
# quantifier).
@functools.lru_cache(maxsize=LATIN1_PATTERN_CACHE)
def _skip_forward(count: int) -> re.Pattern[bytes]:
    """From a token's first mark: ``count`` tokens and the separators after each."""
    return re.compile(b"(?:a+ +){%d}" % count)


@functools.lru_cache(maxsize=LATIN1_PATTERN_CACHE)
def _through_forward(count: int) -> re.Pattern[bytes]:
    """From a token's first mark: it and ``count`` more tokens, to the last one's end."""
    return re.compile(b"a+(?: +a+){%d}" % count)


@functools.lru_cache(maxsize=LATIN1_PATTERN_CACHE)
def _skip_backward(count: int) -> re.Pattern[bytes]:
    """In the reversed marks, from just before a token: ``count`` separators and tokens."""
    return re.compile(b"(?: +a+){%d}" % count)


def compile_steps(counts: int) -> None:
    """Compile the patterns :meth:`Latin1Tokens.start_of` (backward) and
    :meth:`Latin1Tokens.end_of` step over ``count`` tokens with, for every count below
    ``counts`` (:mod:`openclaw_fts.snippet` asks for its window's at import: a window's edges
    are at most that many tokens from its hit). Compiled on a search's first snippet meeting
    that count, each cost the search 25-40 µs (sre's compiler is Python), dozens of them on the
    first searches of a process; all of them take ~1 ms here, once."""
    for count in range(counts):
        _skip_backward(count)
        _through_forward(count)


@functools.lru_cache(maxsize=LATIN1_PATTERN_CACHE)
def _sequence_pattern(tokens: tuple[str, ...], prefix: bool) -> re.Pattern[bytes] | None:
    """A separator and then the folded ``tokens`` in a row (the last one a prefix of its token
    when ``prefix``) in :attr:`Latin1Tokens.folded`; None when no token sequence there can be
    them (a character beyond Latin-1, a space, an empty token other than a last prefix)."""
    try:
        encoded = [token.encode("latin-1") for token in tokens]
    except UnicodeEncodeError:
        return None
    *heads, last = encoded
    if any(b" " in token for token in encoded) or not all(heads):
        return None
    if prefix:
        tail = re.escape(last) + (b"[^ ]*" if last else b"[^ ]+")
    elif last:
        tail = re.escape(last) + b"(?= )"
    else:
        return None
    return re.compile(b" (" + b"".join(re.escape(head) + b" +" for head in heads) + tail + b")")


class Latin1Tokens:
    """The tokens of a Latin-1 text (:func:`latin1_tokens`) as two byte strings of one byte per
    character, searched and counted in C without a Python object per token: ``folded``, each
    token character folded as :func:`fold` does and every other character a space (a space
    added at both ends), and ``marks``, ``a`` for a token character and a space for the others
    (a space added in front). Offsets are the text's characters, from ``pos``; the tokens are
    exactly :func:`scan_tokens`'s (a token is a run of token characters: none is CJK)."""

    __slots__ = ("_reversed", "count", "folded", "marks", "pos")

    def __init__(self, raw: bytes, pos: int) -> None:
        self.pos = pos
        self.folded = b" " + raw.translate(_LATIN1_FOLDED) + b" "
        self.marks = b" " + raw.translate(_LATIN1_MARKS)
        self.count = self.marks.count(b" a")
        self._reversed: bytes | None = None

    def find(self, tokens: tuple[str, ...], prefix: bool) -> list[tuple[int, int]]:
        """``(start, end)`` of every run of consecutive tokens whose folded forms are
        ``tokens`` (the last one only starting with its own when ``prefix``), in order. One
        token that is not a prefix (a word: most queries) is found with ``bytes.find``, the
        matches :func:`_sequence_pattern`'s would give: a pattern per word, compiled on the
        word's first snippet that needs tokens, cost that search 0.03-0.15 ms."""
        if len(tokens) == 1 and not prefix:
            return self._find_word(tokens[0])
        pattern = _sequence_pattern(tokens, prefix)
        found: list[tuple[int, int]] = []
        if pattern is None:
            return found
        at = 0
        shift = self.pos - 1  # folded[i] is the character pos + i - 1
        while (match := pattern.search(self.folded, at)) is not None:
            found.append((match.start(1) + shift, match.end(1) + shift))
            at = match.start(1)
        return found

    def _find_word(self, token: str) -> list[tuple[int, int]]:
        """:meth:`find` of one whole token: a separator, the folded token, a separator."""
        try:
            encoded = token.encode("latin-1")
        except UnicodeEncodeError:
            return []
        if not encoded or b" " in encoded:
            return []
        needle = b" " + encoded + b" "
        found: list[tuple[int, int]] = []
        size = len(encoded)
        at = self.folded.find(needle)
        while at >= 0:
            start = at + self.pos  # folded[at + 1] is the character pos + at
            found.append((start, start + size))
            at = self.folded.find(needle, at + 1)
        return found

    def indexes(self, starts: list[int]) -> list[int]:
        """The token index of each of ``starts`` (tokens' starts, in order)."""
        out: list[int] = []
        index = 0
        previous = 0
        for start in starts:
            at = start - self.pos
            # " a" at marks[q] is a token starting at character q: count those before ``at``
            # from the previous start on (that one included).
            index += self.marks.count(b" a", previous, at + 1)
            out.append(index)
            previous = at
        return out

    def next_start(self, start: int) -> int:
        """The start of the first token at or after ``start`` (-1 when none)."""
        at = self.marks.find(b" a", max(0, start - self.pos))
        return at if at < 0 else at + self.pos

    def start_of(self, anchor: int, count: int) -> int:
        """The start of the token ``count`` tokens after (``count`` < 0: before) the token
        that starts at ``anchor``."""
        if not count:
            return anchor
        at = anchor - self.pos
        if count > 0:
            match = _skip_forward(count).match(self.marks, at + 1)
            assert match is not None
            return match.end() - 1 + self.pos
        if self._reversed is None:
            self._reversed = self.marks[::-1]
        size = len(self.marks)
        match = _skip_backward(-count).match(self._reversed, size - 1 - at)
        assert match is not None
        return size - 1 - match.end() + self.pos

    def end_of(self, anchor: int, count: int) -> int:
        """The end of the token ``count`` (>= 0) tokens after the token that starts at
        ``anchor``."""
        match = _through_forward(count).match(self.marks, anchor - self.pos + 1)
        assert match is not None
        return match.end() - 1 + self.pos


def latin1_tokens(text: str, pos: int = 0, endpos: int | None = None) -> Latin1Tokens | None:
    """The tokens of ``text[pos:endpos]`` as :class:`Latin1Tokens`, or None when a character
    there is beyond Latin-1 or folds beyond it (``µ``)."""
    end = len(text) if endpos is None else min(endpos, len(text))
    try:
        raw = text[pos:end].encode("latin-1")
    except UnicodeEncodeError:
        return None
    if _LATIN1_UNFIT_RE is not None and _LATIN1_UNFIT_RE.search(raw) is not None:
        return None
    return Latin1Tokens(raw, pos)


#: Ranges of code points where the mirror and FTS5 (SQLite's Unicode 6.1 tables) agree on every
#: character: tokenized and folded alike, alone and between letters (tests/test_tokens.py checks
#: each one against FTS5, from which the ranges were measured; the CJK characters, spaced by
#: :func:`index_body`, are sampled). Text made of them only is tokenized here exactly as FTS5
#: does (:func:`mirror_is_exact`); outside them are mostly characters newer than those tables
#: (recent emoji and symbols, U+2066..U+2069), and the blocks not measured.
MIRROR_EXACT_RANGES: tuple[tuple[int, int], ...] = (
    (0x0001, 0x037E),  # ASCII, Latin-1, Latin Extended-A/B, IPA, modifiers, diacritics, Greek
    (0x0380, 0x0527),  # Greek and Coptic, Cyrillic, Cyrillic Supplement
    (0x1E00, 0x1FFF),  # Latin Extended Additional, Greek Extended
    (0x2000, 0x2065),  # General Punctuation (U+2066..U+2069 are newer than SQLite's tables)
    (0x206A, 0x20B9),  # the rest of it, super- and subscripts, currency signs to U+20B9
    (0x20C5, 0x2189),  # combining marks for symbols, letterlike symbols, number forms
    (0x218C, 0x23F3),  # arrows, mathematical operators, technical (U+218A..B are newer)
    (0x2400, 0x2426),  # control pictures
    (0x242A, 0x26FF),  # OCR, enclosed alphanumerics, box drawing, shapes, symbols
    (0x2701, 0x27BF),  # dingbats
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms
    *CJK_RANGES,
)
_NOT_MIRROR_EXACT_RE = re.compile(f"[^{_char_class(MIRROR_EXACT_RANGES)}]")


def mirror_is_exact(text: str) -> bool:
    """Whether every character of ``text`` is one the mirror tokenizes and folds as FTS5 does
    (:data:`MIRROR_EXACT_RANGES`): then :func:`scan_tokens` and :func:`words_starting` give
    exactly FTS5's tokens. NUL is outside (it never reaches FTS5: :func:`index_body`)."""
    if text.isascii():
        return "\x00" not in text
    return _NOT_MIRROR_EXACT_RE.search(text) is None


#: Bound of the cache of :func:`words_starting`'s per-head patterns.
HEAD_PATTERN_CACHE = 256

#: Ranges from U+0250 on whose every character separates tokens (spaces, punctuation, symbols,
#: format characters), for the mirror and for FTS5 alike: CJK Symbols and Punctuation beside the
#: CJK characters, General Punctuation (without U+2065, unassigned, and U+2066..U+2069, too
#: recent for SQLite's tables: token characters there), the fullwidth punctuation and the
#: halfwidth CJK punctuation. tests/test_tokens.py checks each against both.
SEPARATOR_RANGES: tuple[tuple[int, int], ...] = (
    (0x2000, 0x2064),
    (0x206A, 0x206F),
    (0x3000, 0x3004),
    (0x3008, 0x3020),
    (0x302A, 0x3030),
    (0x3036, 0x3037),
    (0x303D, 0x303F),
    (0xFF01, 0xFF0F),
    (0xFF1A, 0xFF20),
    (0xFF3B, 0xFF40),
    (0xFF5B, 0xFF65),
)
_SEPARATORS_CLASS = _char_class(SEPARATOR_RANGES)
# A character other than ASCII, a CJK character or a separator of SEPARATOR_RANGES.
_BEYOND_ASCII_RE = re.compile(f"[^\\x00-\\x7f{_CJK_CLASS}{_SEPARATORS_CLASS}]")
# The same beyond U+0250 (Latin-1, Latin Extended-A and -B kept).
_BEYOND_LATIN_RE = re.compile(f"[^\\x00-\\u024f{_CJK_CLASS}{_SEPARATORS_CLASS}]")
# Word characters that are neither ``_`` nor CJK: a Latin token's characters in such a text.
_LATIN_WORD_CHAR = f"[^\\W_{_CJK_CLASS}]"
_ASCII_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


@functools.lru_cache(maxsize=HEAD_PATTERN_CACHE)
def _ascii_spelling(head: str) -> re.Pattern[str]:
    """``head`` (ASCII letters and digits) and the rest of an ASCII token, in lower-cased text.
    No look-behind for the token's start: a pattern that starts with a literal is searched
    for as a literal (~10x faster); :func:`words_starting` checks the character before."""
    return re.compile(f"{re.escape(head)}[a-z0-9]*")


@functools.lru_cache(maxsize=HEAD_PATTERN_CACHE)
def _latin_spelling(head: str) -> re.Pattern[str] | None:
    """The spellings of ``head`` in a text of Latin and CJK characters, with the rest of the
    token: each character is one of the letters and digits below U+0250 that fold to
    ``head``'s character (None when one of ``head``'s characters has none). No look-behind,
    as in :func:`_ascii_spelling` (~6x faster)."""
    classes = []
    for ch in head:
        folding = [c for c in map(chr, range(0x250)) if c.isalnum() and _fold_char(c) == ch]
        if not folding:
            return None
        classes.append("[" + "".join(map(re.escape, folding)) + "]")
    return re.compile(f"{''.join(classes)}{_LATIN_WORD_CHAR}*")


def words_starting(text: str, head: str) -> list[str]:
    """The folded tokens of ``text`` that start with ``head`` (a folded token's first letters),
    in text order, repeats kept: ``[w for w in scan_tokens(text)[2] if w.startswith(head)]``.
    Text of ASCII, Latin and CJK characters is searched for ``head``'s spellings alone,
    without a list of its every token (:func:`words_starting_at`)."""
    return words_starting_at(text, head)[1]


def words_starting_at(text: str, head: str) -> tuple[list[int], list[str]]:
    """:func:`words_starting` with where each word starts in ``text``: two parallel lists, the
    starts (offsets into ``text``, in order) and the folded words."""
    if not head or _CJK_RUN_RE.search(head) is not None:
        return _starting_in_tokens(text, head)
    if text.isascii() or _BEYOND_ASCII_RE.search(text) is None:
        return _ascii_words_at(text, head)
    if _BEYOND_LATIN_RE.search(text) is None:
        return _latin_words_at(text, head)
    return _starting_in_tokens(text, head)


def _ascii_words_at(text: str, head: str) -> tuple[list[int], list[str]]:
    """:func:`words_starting_at` of a text of ASCII, CJK characters and separators: its tokens
    are ASCII letters and digits (folded: lower-cased) and CJK characters, each a token by
    itself (never one that starts with a head of two characters)."""
    if not (head.isascii() and head.isalnum()):
        return [], []
    lowered = text.lower()
    found = [
        m
        for m in _ascii_spelling(head).finditer(lowered)
        if not (start := m.start()) or lowered[start - 1] not in _ASCII_TOKEN_CHARS
    ]
    return [m.start() for m in found], [m.group() for m in found]


def _latin_words_at(text: str, head: str) -> tuple[list[int], list[str]]:
    """:func:`words_starting_at` of a text of ASCII, Latin (below U+0250) and CJK characters
    and separators: ``head``'s spellings there, folded."""
    pattern = _latin_spelling(head)
    if pattern is None:
        return [], []
    starts: list[int] = []
    words: list[str] = []
    for m in pattern.finditer(text):
        start = m.start()
        before = text[start - 1] if start else " "
        if before.isalnum() and (before < _FIRST_CJK or not is_cjk(before)):
            continue  # inside a token (a CJK character is a token by itself)
        word = fold(m.group())
        if word.startswith(head):
            starts.append(start)
            words.append(word)
    return starts, words


#: What :func:`exact_words_starting` joins its texts with to search them as one: a separator
#: for the mirror and for FTS5 alike, so no token spans two texts.
TEXTS_JOINER = "\n"


def exact_words_starting(texts: Sequence[str], head: str) -> list[list[str]] | None:
    """:func:`words_starting` of each of ``texts`` (in order), or None when a character of
    them is one the mirror may tokenize or fold otherwise than FTS5 (:func:`mirror_is_exact`
    of every text). The ASCII texts are searched as one text, joined by
    :data:`TEXTS_JOINER`, and so are the others when they are all of ASCII, Latin and CJK
    characters and separators (text :func:`mirror_is_exact` vouches for, NUL aside: that
    scan is the only one): one scan of each kind for all the texts instead of one per text
    (a narrow caller's messages read for a search that found nothing, bench/NOTES.md).
    Other texts are searched one by one."""
    found: list[list[str]] = [[] for _ in texts]
    plain = [n for n, text in enumerate(texts) if text.isascii()]
    other = [n for n, text in enumerate(texts) if not text.isascii()]
    for group in (plain, other):
        if not group:
            continue
        joined = TEXTS_JOINER.join(texts[n] for n in group)
        if "\x00" in joined:
            return None
        if not head or _CJK_RUN_RE.search(head) is not None:
            words_at = None
        elif group is plain or _BEYOND_ASCII_RE.search(joined) is None:
            words_at = _ascii_words_at
        elif _BEYOND_LATIN_RE.search(joined) is None:
            words_at = _latin_words_at
        else:
            words_at = None
        if words_at is not None:
            ends = list(itertools.accumulate(len(texts[n]) + 1 for n in group))
            for start, word in zip(*words_at(joined, head), strict=True):
                found[group[bisect.bisect_right(ends, start)]].append(word)
            continue
        if not mirror_is_exact(joined):
            return None
        for n in group:
            found[n] = words_starting(texts[n], head)
    return found


def ascii_holds_token(text: str, word: str) -> bool:
    """Whether ``word`` (a folded token) is a token of ``text``, an ASCII text lower-cased
    (NUL aside, its tokens are its runs of ASCII letters and digits, folded by lower-casing:
    :func:`scan_tokens`). A word beyond ASCII letters and digits is a token of none."""
    if not word or not word.isascii() or not word.isalnum():
        return False
    size = len(word)
    at = text.find(word)
    while at >= 0:
        end = at + size
        if (not at or text[at - 1] not in _ASCII_TOKEN_CHARS) and (
            end == len(text) or text[end] not in _ASCII_TOKEN_CHARS
        ):
            return True
        at = text.find(word, at + 1)
    return False


def _starting_in_tokens(text: str, head: str) -> tuple[list[int], list[str]]:
    """:func:`words_starting_at` from every token of ``text`` (:func:`scan_tokens`)."""
    starts, _, norms = scan_tokens(text)
    kept = [n for n, word in enumerate(norms) if word.startswith(head)]
    return [starts[n] for n in kept], [norms[n] for n in kept]


def iter_tokens(text: str, pos: int = 0, endpos: int | None = None) -> Iterator[Token]:
    """Lazily, the tokens of ``text[pos:endpos]`` (offsets into ``text``), see :func:`tokenize`."""
    end = len(text) if endpos is None else endpos
    for m in _TOKEN_RE.finditer(text, pos, end):
        yield Token(m.start(), m.end(), fold(m.group()))


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text`` as FTS5 sees them in ``index_body(text)``, offsets into ``text``."""
    return list(map(Token, *scan_tokens(text)))
