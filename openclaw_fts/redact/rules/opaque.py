"""Rule family ``bare high-entropy tokens``: tokens with no name and no known prefix.

Invariant: every finder here reads only the runs of 20+ token characters (its prefilter in
:mod:`..pipeline`): :func:`opaque` a run that is random by shape
(:func:`..judges.is_opaque_token`, an upper/lower-case key of :mod:`..families`, a 40-character
AWS secret key, a Discord bot token); :func:`code_literals` a random-looking quoted literal
where code passes a key; :func:`prose_keys` a secret's word followed by a random-looking
token. Public values are spared: the values of id and pagination names
(:func:`public_values`), public checksums, data URLs, public PEM blocks.
"""

from __future__ import annotations

import bisect
import heapq
import operator
import re
import sys
from collections.abc import Iterator
from typing import Final

from .. import data as rules
from ..families import is_lower_token, is_upper_token
from ..judges import (
    _HEX_RE,
    _NAME_WORD_RE,
    _PUBLIC_HASH_PREFIXES,
    _UUID_RE,
    MAX_RANDOM_LITERAL_CHARS,
    MIN_OPAQUE_TOKEN_CHARS,
    MIN_RANDOM_LITERAL_CHARS,
    _by_first_character,
    _mean_piece_chars,
    is_opaque_token,
    looks_random,
    start_of_name,
)
from ..scan import _PLAIN, Scan

#: Longest run examined: longer runs are data (base64 images, minified code), not keys.
MAX_OPAQUE_TOKEN_CHARS: Final = 512


# ``/`` separates (paths, URLs); a key holding ``/`` is found by the AWS rule below.
_OPAQUE_RE: Final = re.compile(
    rf"(?<![A-Za-z0-9+/_\-=.%\\])[A-Za-z0-9+_\-]{{{MIN_OPAQUE_TOKEN_CHARS},{MAX_OPAQUE_TOKEN_CHARS}}}"
    r"(?![A-Za-z0-9+/_\-.])=*"
)


#: Characters of an AWS secret access key (base64 of 30 random bytes).
AWS_SECRET_KEY_CHARS: Final = 40


_AWS_SECRET_RE: Final = re.compile(
    rf"(?<![A-Za-z0-9+/=_\-.%:\\])[A-Za-z0-9+/]{{{AWS_SECRET_KEY_CHARS}}}(?![A-Za-z0-9+/=_\-.])"
)


# Discord bot token: 24-28 base64url characters, a 6-character timestamp, a 27+ HMAC.
_DISCORD_BOT_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_\-.])[A-Za-z0-9_\-]{24,28}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}"
)


MIN_DISCORD_BOT_CHARS: Final = 24 + 1 + 6 + 1 + 27


#: Widths of the lines of PEM (64) and MIME (76) base64 bodies: a line that is nothing but a
#: base64 run of this width is a body line of an encoded certificate or attachment.
ENCODED_LINE_WIDTHS: Final = frozenset({64, 76})


# ``git describe`` output (``COREUTILS-6_8-58-g553d347d3``): a tag, a count, ``g`` + commit.
_GIT_DESCRIBE_RE: Final = re.compile(r".*-[0-9]+-g[0-9a-f]{7,40}")


def _is_public_run(text: str, start: int, token: str) -> bool:
    """A base64-looking run that is public by nature: it holds a UUID (an identifier such as
    ``ArchiveRule-<uuid>``), is a ``git describe`` name, or is a whole line of a PEM/MIME body."""
    if "EXAMPLE" in token:
        return True  # AWS's documentation placeholder (``AKIAIOSFODNN7EXAMPLE``, ``…-EXAMPLE1``)
    if "-" in token and (_UUID_RE.search(token) or _GIT_DESCRIBE_RE.fullmatch(token)):
        return True
    if len(token) in ENCODED_LINE_WIDTHS:
        end = start + len(token)
        line_start = text.rfind("\n", 0, start) + 1
        return not text[line_start:start].strip() and (end == len(text) or text[end] in "\r\n")
    return False


#: A 40-character run whose letter/digit pieces average this many characters or more is an
#: identifier (``GoogleCloudDataplexV1EntrySourceAncestor``), not an AWS secret key.
MAX_AWS_SECRET_MEAN_PIECE_CHARS: Final = 3.0


# A quoted literal that may be an unnamed key (its context is checked in Python).
_QUOTED_LITERAL_RE: Final = re.compile(
    r"(?P<q>[\"'`])(?P<value>[A-Za-z0-9_+/=.~\-]"
    rf"{{{MIN_RANDOM_LITERAL_CHARS},{MAX_RANDOM_LITERAL_CHARS}}})(?P=q)"
)


#: Characters looked at before a literal for its call or its name.
MAX_LITERAL_CONTEXT_CHARS: Final = 160


# The callee before ``(``: ``new Foo``, ``pkg.NewClient``, ``Stripe``, ``client.login``, with
# an optional generic argument (``Create<T>``).
_CALLEE_RE: Final = re.compile(
    r"(?P<new>\bnew[ \t]+)?(?P<callee>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)"
    r"[ \t]*(?:<[^<>\n]{0,64}>)?[ \t]*$"
)


#: Blanks after a secret's word (and after its ``is``) in prose.
MAX_PROSE_KEY_BLANKS: Final = 4


#: The words between a secret's word and its value in prose.
_PROSE_KEY_LINKS: Final = ("is", "was", "of", "for", "to", "=", ":")


# In prose, a secret's word (:data:`..data.PROSE_KEY_WORDS`) and then the key (``the ritekit
# secret 3f9a…``, ``my API key is q7vX…``): an optional ``is``/``was``, then a token. Matched
# on the LOWER-CASED text (the value is read from the original text).
_PROSE_KEY_RE: Final = re.compile(
    r"(?P<word>"
    + _by_first_character(sorted(rules.PROSE_KEY_WORDS, key=len, reverse=True))
    + r")s?"
    rf"[ \t]{{1,{MAX_PROSE_KEY_BLANKS}}}"
    rf"(?:(?:{'|'.join(_PROSE_KEY_LINKS)})[ \t]{{1,{MAX_PROSE_KEY_BLANKS}}})?"
    rf"(?P<value>[A-Za-z0-9_+/=~\-]{{{MIN_RANDOM_LITERAL_CHARS},{MAX_RANDOM_LITERAL_CHARS}}})"
    r"(?![A-Za-z0-9_+/=~\-])"
)


# The name before ``=``/``:``/``:=``/``=>`` (``key``, ``"key"``, ``cfg['key']``, ``$key``).
_LITERAL_NAME_RE: Final = re.compile(
    r"(?P<name>[A-Za-z_$][\w$.\-]{0,63})[\"'`]?\]?[ \t]*(?::=|=>|=|:)[ \t]*$"
)


def _callee_takes_keys(callee: str, constructed: bool) -> bool:
    """Whether a literal argument of ``callee`` may be a key: a constructor (``new X``,
    ``NewClient``, a class name) or a client/login call; never a hashing or parsing call."""
    last = callee.rsplit(".", 1)[-1]
    words = {w.lower() for w in _NAME_WORD_RE.findall(last)}
    if words & rules.PUBLIC_VALUE_WORDS:
        return False
    return constructed or last[:1].isupper() or bool(words & rules.KEY_CONTEXT_WORDS)


def _is_sdk_key_argument(before: str, label: str) -> bool:
    """``configure(withIdentifier: `` before a literal: a labelled argument of an SDK start-up
    call (:data:`rules.SDK_SETUP_CALLS`) whose label names the key."""
    paren = before.rfind("(")
    if paren < 0 or ")" in before[paren:]:
        return False
    call = _CALLEE_RE.search(before, 0, paren)
    if call is None or call.group("callee").rsplit(".", 1)[-1] not in rules.SDK_SETUP_CALLS:
        return False
    return bool({w.lower() for w in _NAME_WORD_RE.findall(label)} & rules.SDK_KEY_LABEL_WORDS)


def _literal_name_kind(name: str) -> str:
    """``"public"`` (an id, a hash, a version …), ``"key"`` (a key-ish word), else ``"any"``."""
    words = {w.lower() for w in _NAME_WORD_RE.findall(name)}
    if not words or words & rules.PUBLIC_VALUE_WORDS:
        return "public"
    if words & rules.KEY_CONTEXT_WORDS or len(name.lstrip("$")) <= 2:
        return "key"
    return "any"


#: The last words of a name that may hold an id or a pagination token.
_PUBLIC_NAME_TAIL_WORDS: Final = ("ids?", "token", "arn", "url", "location", "marker", "cursor")


#: What follows such a word: its separator and the quotes and blanks around it.
_PUBLIC_NAME_TAIL: Final = r"\\?[\"']?[ \t]{0,8}(?P<sep>=|:(?!//))[ \t]{0,8}\\?[\"']?"


# The end of a name that may hold an id or a pagination token (``VersionId``, ``NextToken``,
# ``job_arn``), its separator, an opening quote; the name itself is checked in Python.
# Runs on the LOWER-CASED text: an alternation of literals, which the regex engine skips to
# (the mixed-case classes it replaces were tried at every position: 8x slower on 10 MB).
# The reference of :func:`public_name_tails`, which finds the same matches faster
# (tests/test_redact_rules.py holds the two equal).
_PUBLIC_NAME_TAIL_RE: Final = re.compile(
    f"(?:{'|'.join(_PUBLIC_NAME_TAIL_WORDS)}){_PUBLIC_NAME_TAIL}"
)


# The same, one regex per word: each starts with a literal, which the regex engine skips to
# (the alternation is tried at every position: a 10 MB message, ~0.14 s -> ~0.07 s for the
# seven). Their matches merged in text order, each skipped that starts inside the one before,
# are those of :data:`_PUBLIC_NAME_TAIL_RE`: the words start with different letters (one
# alternative at most matches at a position), and no word's match starts inside another match
# of the same word (no word holds its own start later on, the tail holds no letter), so each
# word's ``finditer`` lists every match of that word.
_PUBLIC_NAME_TAIL_RES: Final = tuple(
    re.compile(word + _PUBLIC_NAME_TAIL) for word in _PUBLIC_NAME_TAIL_WORDS
)
assert len({word[0] for word in _PUBLIC_NAME_TAIL_WORDS}) == len(_PUBLIC_NAME_TAIL_WORDS)


_start: Final = operator.methodcaller("start")


def public_name_tails(lowered: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`_PUBLIC_NAME_TAIL_RE` in ``lowered``, in order, as its
    ``finditer`` finds them (see :data:`_PUBLIC_NAME_TAIL_RES`)."""
    taken = 0
    for m in heapq.merge(*(p.finditer(lowered) for p in _PUBLIC_NAME_TAIL_RES), key=_start):
        if m.start() >= taken:
            taken = m.end()
            yield m


_PUBLIC_VALUE_RE: Final = re.compile(r"[^\s\"',;]{1,2048}")


def _is_aws_secret(token: str) -> bool:
    """40 base64 characters with upper and lower case and a digit or ``/``/``+``, not words."""
    if (
        token.lower() == token
        or token.upper() == token
        or _DIGIT_OR_SLASH_RE.search(token) is None
        or len(set(token)) < 3
    ):
        return False
    return _mean_piece_chars(token) < MAX_AWS_SECRET_MEAN_PIECE_CHARS


_DIGIT_OR_SLASH_RE: Final = re.compile(r"[0-9/+]")


def opaque(scan: Scan) -> None:
    text = scan.text
    spans = scan.spans
    public = scan.public_pem_ranges() if "-----BEGIN" in text else []
    budget = scan.budget
    for pattern, minimum in (
        (_OPAQUE_RE, MIN_OPAQUE_TOKEN_CHARS),
        (_AWS_SECRET_RE, AWS_SECRET_KEY_CHARS),
    ):
        for offset, m in scan.in_runs(pattern, minimum):
            budget -= 1
            start = m.start() + offset
            if budget < 0:
                scan.over_budget(start)
                break
            token = m.group()
            # the shape first (cheap, and false for almost every run of ordinary text),
            # then where the token stands: the bare-token shape family's judge
            # (:func:`.families.is_upper_token`) beside the opaque one
            if not (
                is_opaque_token(token) or is_upper_token(token) or is_lower_token(token)
                if pattern is _OPAQUE_RE
                else _is_aws_secret(token)
            ):
                continue
            if text.endswith("base64,", 0, start) or text.endswith(_PUBLIC_HASH_PREFIXES, 0, start):
                continue  # a data URL's payload is data; a go.sum ``h1:`` hash is public
            if any(lo <= start < hi for lo, hi in public) or in_public(scan, start):
                continue
            if token.startswith(_PUBLIC_HASH_PREFIXES) or _is_public_run(text, start, token):
                continue  # SRI ``sha512-…`` (npm ``integrity``): a public checksum
            spans.append((start, start + len(token), _PLAIN))
    for offset, m in scan.in_runs(_DISCORD_BOT_RE, MIN_DISCORD_BOT_CHARS):
        budget -= 1
        if budget < 0:
            scan.over_budget(m.start() + offset)
            break
        spans.append((m.start() + offset, m.end() + offset, _PLAIN))


def public_values(scan: Scan) -> None:
    """The values of names that hold ids or pagination tokens, never secrets."""
    text = scan.text
    budget = scan.budget
    scan.public = public = []
    for m in public_name_tails(scan.lowered()):
        budget -= 1
        if budget < 0:
            return  # nothing is masked less for it: the ranges only spare values
        name_end = m.start("sep")
        while name_end > 0 and text[name_end - 1] in " \t\"'\\":
            name_end -= 1
        start = start_of_name(text, name_end)
        if start < 0:
            continue
        words = [w.lower() for w in _NAME_WORD_RE.findall(text[start:name_end])]
        if not words:
            continue
        last, previous = words[-1], (words[-2] if len(words) > 1 else "")
        if last in rules.PUBLIC_NAME_LAST_WORDS or (
            last == "token" and previous in rules.HARMLESS_TOKEN_PREFIXES
        ):
            value = _PUBLIC_VALUE_RE.match(text, m.end())
            if value is not None:
                public.append((value.start(), value.end()))


def in_public(scan: Scan, position: int) -> bool:
    if scan.public is None:
        public_values(scan)
    public = scan.public
    assert public is not None
    if not public:
        return False
    i = bisect.bisect_right(public, (position, sys.maxsize)) - 1
    return i >= 0 and public[i][0] <= position < public[i][1]


#: The quotes of :data:`_QUOTED_LITERAL_RE`.
_QUOTES: Final = "\"'`"


def quoted_literals(scan: Scan) -> Iterator[re.Match[str]]:
    """The matches of :data:`_QUOTED_LITERAL_RE` in the text, in order, as its ``finditer``
    finds them -- read only where one can be: its value's characters are token characters
    and quotes are not, so a value is a whole run of at least
    :data:`MIN_RANDOM_LITERAL_CHARS` (:meth:`..scan.Scan.runs`) with the same quote on either
    side (a 10 MB message: ~0.06 s over the text -> ~0.01 s over its runs). A closing quote
    that a match took opens no other literal, as in ``finditer``."""
    text = scan.text
    match = _QUOTED_LITERAL_RE.match
    taken = 0  # where the last match ended
    for start, end in scan.runs(MIN_RANDOM_LITERAL_CHARS):
        if start <= taken or end - start > MAX_RANDOM_LITERAL_CHARS:
            continue  # no quote before it, its quote closed the last match, or too long
        quote = text[start - 1]
        if quote in _QUOTES and text.startswith(quote, end):
            m = match(text, start - 1)
            if m is not None:
                taken = m.end()
                yield m


def code_literals(scan: Scan) -> None:
    """Quoted literals with no sensitive name that look random, where code passes a key:
    an argument of a constructor or client call (``new Client('…')``, ``NewClient("…")``)
    or the value of a name that is not an id, hash or version (``key = "…"``)."""
    text = scan.text
    for m in scan.within_budget(quoted_literals(scan)):
        value = m.group("value")
        if not looks_random(value, hex_ok=True) or in_public(scan, m.start("value")):
            continue
        pos = m.start()
        lo = max(0, pos - MAX_LITERAL_CONTEXT_CHARS, text.rfind("\n", 0, pos) + 1)
        before = text[lo:pos].rstrip(" \t")
        if before.endswith(("b", "r", "u", "f", "@", "$")) and len(before) > 1:
            before = before[:-1] if not before[-2].isalnum() else before  # b"…", @"…"
        if not before:
            continue
        hex_value = _HEX_RE.fullmatch(value.rstrip("=")) is not None
        last = before[-1]
        if last in "(,":
            paren = before.rfind("(")
            if paren < 0 or ")" in before[paren:]:
                continue
            call = _CALLEE_RE.search(before, 0, paren)
            if call is None or not _callee_takes_keys(
                call.group("callee"), call.group("new") is not None
            ):
                continue
        elif last in "=:>":
            if before.endswith(("==", "!=", "<=", ">=")) or before.endswith("::"):
                continue
            named = _LITERAL_NAME_RE.search(before)
            if named is None:
                continue
            kind = _literal_name_kind(named.group("name"))
            if (kind == "public" or (hex_value and kind != "key")) and not (
                last == ":" and _is_sdk_key_argument(before, named.group("name"))
            ):
                continue
        else:
            continue
        scan.add(m.start("value"), m.end("value"))


#: Characters from the start of a :data:`_PROSE_KEY_RE` match to its value at most (the word,
#: ``s``, blanks, a link word, blanks). Their stretches without a blank (the word and its
#: ``s``, the link) are shorter than a run of :data:`MIN_RANDOM_LITERAL_CHARS`: a match never
#: reaches over a whole run to a value in the next one.
MAX_PROSE_KEY_LEAD_CHARS: Final = (
    max(map(len, rules.PROSE_KEY_WORDS))
    + 1
    + MAX_PROSE_KEY_BLANKS
    + max(map(len, _PROSE_KEY_LINKS))
    + MAX_PROSE_KEY_BLANKS
)
assert max(map(len, rules.PROSE_KEY_WORDS)) + 1 < MIN_RANDOM_LITERAL_CHARS
assert not any(c in " \t" for w in rules.PROSE_KEY_WORDS for c in w)


#: The characters whose lower case holds a token character while they are none (``İ`` ->
#: ``i``, the Kelvin sign -> ``k``): a text holding one has runs in lower case that it has not.
_LOWER_TO_TOKEN_CHARS: Final = ("\u0130", "\u212a")


def prose_key_matches(scan: Scan) -> Iterator[re.Match[str]]:
    """The matches of :data:`_PROSE_KEY_RE` in the lower-cased text, in order, as its
    ``finditer`` finds them -- searched only where one can be: a value is
    :data:`MIN_RANDOM_LITERAL_CHARS` token characters, so it lies in a run at least that long
    (:meth:`..scan.Scan.runs`; the runs of the text are those of its lower case unless it
    holds one of :data:`_LOWER_TO_TOKEN_CHARS`) that it starts (a blank is before it), and
    its match starts at most :data:`MAX_PROSE_KEY_LEAD_CHARS` before that run, never in a
    run before it (:data:`MAX_PROSE_KEY_LEAD_CHARS`). Each run's stretch is searched from
    there, or from the end of the last match, to the run's end (where the value's lookahead
    reads a character no value holds, as in the text). A 10 MB message: ~0.12 s over the
    text -> ~0.04 s over its runs."""
    text = scan.text
    lowered = scan.lowered()
    if not text.isascii() and any(c in text for c in _LOWER_TO_TOKEN_CHARS):
        yield from _PROSE_KEY_RE.finditer(lowered)
        return
    search = _PROSE_KEY_RE.search
    pos = 0
    for start, end in scan.runs(MIN_RANDOM_LITERAL_CHARS):
        if pos < start - MAX_PROSE_KEY_LEAD_CHARS:
            pos = start - MAX_PROSE_KEY_LEAD_CHARS
        while (m := search(lowered, pos, end)) is not None:
            pos = m.end()
            yield m


def prose_keys(scan: Scan) -> None:
    """``the ritekit secret 3f9a…``: a secret's word, then a token that looks random."""
    text = scan.text
    for m in scan.within_budget(prose_key_matches(scan)):
        start = m.start()
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue  # inside a word (``monkey``, ``api_token``: a name, its own rules)
        value = text[m.start("value") : m.end("value")]
        # hex after "key" is a key id or a fingerprint (``signing key 1988…BE03``)
        hex_ok = m.group("word") != "key"
        if looks_random(value, hex_ok=hex_ok) and not _is_public_run(text, m.start("value"), value):
            scan.add(m.start("value"), m.end("value"))
