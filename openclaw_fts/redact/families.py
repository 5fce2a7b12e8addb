"""Rule families of credential masking that generalize, run by one pipeline (docs/redaction.md).

Invariant: every family is a :class:`Rule`: a PREFILTER (a compiled regex; the family's finder
runs only on a text where it is found, so a text without the family's keywords costs one C-level
search) and a FINDER yielding ``(start, end, whole)`` spans of the ORIGINAL text (``whole``: a
password, masked ``***`` whatever its length). Finders are linear: each is driven by one
``finditer`` whose pattern starts at a literal or a bounded class, and the work at each match
is bounded by the named constants below. Word lists are data (:mod:`.family_data`).
The one pipeline (:mod:`.pipeline`) runs these rules beside the others.

Families here:

* ``named-values``: the value of a name that holds a secret, in every assignment syntax
  (``=``, ``:``, ``:=``, ``::=``, ``?=``, ``+=``, ``.assign(``, a declaration ``type name("…")``,
  ``name "…"``, ``name[] =``/``name[25] =``, a quoted name), whatever the word's place in the
  name (``db_pass_secure``, ``apikey_myservice``, ``cloudant_pw``); ``…_key`` names with a
  token-like value; access ids with a random-looking value;
* ``manifest-secrets``: the values of a Kubernetes ``Secret``'s ``data``/``stringData`` map;
* ``bundler-credentials``: ``BUNDLE_<HOST>=user:password`` (Bundler's per-host credentials);
* ``basic-auth-users``: the user of a URL's ``user:password@`` or of ``curl -u`` when it is a
  token (random-looking, or ``curl -u token:`` with an empty password), and the password of
  ``curl --user "user":"password"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from . import family_data as words

#: A span a finder reports: start, end, and its kind (:data:`PLAIN`, :data:`WHOLE`,
#: :data:`OVERFLOW`).
Span = tuple[int, int, int]
#: Masked as OpenClaw masks a secret (kept start and end around ``…``, or ``***`` if short).
PLAIN: Final = 0
#: A password: masked ``***`` whatever its length.
WHOLE: Final = 1
#: The finder ran out of its candidate budget here: the engine masks from ``start`` to the
#: end of the text (its overflow mask): bounded work on a hostile text, nothing leaks.
OVERFLOW: Final = 2

#: Longest name looked at around a keyword (bounds the work per keyword hit).
MAX_NAME_CHARS: Final = 64
#: Candidates one finder examines in a text: this many, plus one per
#: :data:`CHARS_PER_EXTRA_CANDIDATE` characters (the engine's budget, for the same reason: a
#: megabyte of ``KEY=KEY=…`` costs a bounded time).
MAX_CANDIDATES_PER_RULE: Final = 10_000
CHARS_PER_EXTRA_CANDIDATE: Final = 64
#: Distinct names whose kind is remembered (a text repeats its few names).
NAME_CACHE_SIZE: Final = 4096
#: Longest quoted value looked at (a longer literal is cut here: its head is masked).
MAX_VALUE_CHARS: Final = 512
#: Shortest value masked by ``named-values`` (shorter ones are flags, digits, ``on``/``off``).
MIN_VALUE_CHARS: Final = 4
#: ``…_key`` names: shortest token-like value masked.
MIN_KEY_VALUE_CHARS: Final = 16
#: Access ids: shortest random-looking value masked.
MIN_ACCESS_ID_CHARS: Final = 12
#: A URL or ``curl -u`` user this long and random-looking is a token.
MIN_TOKEN_USER_CHARS: Final = 8
#: Longest user / password of a URL userinfo looked at.
MAX_USERINFO_CHARS: Final = 128


@dataclass(frozen=True)
class Rule:
    """One family: its name, its prefilter and its finder."""

    name: str
    prefilter: re.Pattern[str]
    #: Given the text and the text in lower case (made once per text and shared).
    find: Callable[[str, str], Iterator[Span]]
    #: The prefilter (and :attr:`words`) run on the lower-cased text (the finder gets both).
    on_lowered: bool = False
    #: The finder finds nothing in a text holding none of these words: tested before the
    #: prefilter (a substring test costs less than a regex search on a short line).
    words: tuple[str, ...] = ()


# --------------------------------------------------------------------------- names

_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def name_words(name: str) -> list[str]:
    """The lower-case words of an identifier (``apiKey_myService`` -> api, key, my, service)."""
    return [w.lower() for w in _WORD_RE.findall(name)]


@lru_cache(maxsize=NAME_CACHE_SIZE)
def name_kind(name: str) -> str:
    """``password``, ``secret``, ``key`` (a ``…_key`` name), ``access-id`` or ``""``."""
    ws = name_words(name)
    if ws[-2:] == ["access", "id"] or ws[-1:] == ["accessid"]:
        return "access-id"
    if not ws or ws[-1] in words.ABOUT_SECRET_LAST_WORDS or ws == ["pwd"]:
        return ""  # (``PWD`` alone: the shell's working directory)
    kind = ""
    for i, w in enumerate(ws):
        if w in words.NOT_SECRET_WORDS:
            continue
        if w in words.PASSWORD_WORDS or w.startswith(words.PASSWORD_STEMS):
            return "password"
        if w.startswith(words.SECRET_STEMS) or (w == "api" and ws[i + 1 : i + 2] == ["key"]):
            kind = "secret"
    if kind:
        return kind
    if len(ws) >= 2 and ws[-1] in ("key", "apikey") and ws[-2] not in words.HARMLESS_KEY_PREFIXES:
        return "key"
    return ""


# --------------------------------------------------------------------------- named values

#: On the LOWER-CASED text: a literal alternation (the C scanner skips ahead between hits).
#: The name around a hit and the operator after it are read at the hit, in Python, each run of
#: name characters once (a keyword repeated inside one run is skipped): linear.
_KEYWORD_RE: Final = re.compile(r"secret|pass|pw|credent|key|access.?id")
#: Lower case, one character for one (positions stay the same).
_ASCII_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


#: The one character whose lower case is two characters (U+0130, ``İ`` -> ``i̇``), and its
#: lower case without the combining dot: replaced first, every position stays the same.
_LONG_LOWER: Final = ("\u0130", "i")


#: A long text that is not all ASCII is lower-cased in pieces of about this many characters,
#: each ending at a line break: ``str.lower`` reads a piece of ASCII characters in its fast
#: path, where a whole text holding one ``é`` goes character by character (a 10 MB message:
#: ~0.15 s -> ~0.06 s).
LOWER_PIECE_CHARS: Final = 1024


def _lower(text: str) -> str:
    """``text.lower()``, a long non-ASCII text piece by piece. The same string: the only
    lower-casing that reads a character's neighbours (a final sigma) looks no further than
    the nearest character that is neither cased nor case-ignorable, and every piece ends at a
    line break, which is neither."""
    size = len(text)
    if text.isascii() or size <= 4 * LOWER_PIECE_CHARS:
        return text.lower()
    pieces: list[str] = []
    find = text.find
    pos = 0
    while pos < size:
        end = find("\n", pos + LOWER_PIECE_CHARS)
        end = size if end < 0 else end + 1
        pieces.append(text[pos:end].lower())
        pos = end
    return "".join(pieces)


def lowered(text: str) -> str:
    """``text`` in lower case with every position unchanged (what the keyword scans read).

    ``str.lower`` keeps positions except for U+0130, which is replaced by ``i`` first (one C
    pass; a ``translate`` of the whole text, as before, took ~1 s on a 10 MB message holding
    one such character). Should a later Unicode add another such character, only ASCII
    letters are lowered (positions still kept)."""
    low = _lower(text.replace(*_LONG_LOWER) if _LONG_LOWER[0] in text else text)
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


#: After a name: an optional closing quote and index, then the operator, then blanks.
_AFTER_NAME_RE: Final = re.compile(
    r"""(?P<q>["']?)(?:\[\d{0,6}\])?[ \t]{0,40}"""
    r"""(?P<op>:{1,3}=|\?=|\+=|=(?![=>~])|:(?![:/])|\.assign\(|\((?=["'])|(?<=[ \t])(?=["']))"""
    r"""[ \t]{0,40}"""
)
#: A bare value that is code, not a literal: a name, a dotted name, a call, an index.
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*(?:[(\[].*)?")
_DECLARATION_BEFORE_RE: Final = re.compile(r"[A-Za-z0-9_>:]+[ \t]+$")
_NOT_DECLARATION_WORDS: Final = frozenset(
    {"def", "fn", "func", "function", "return", "await", "new", "async", "yield", "if", "elif"}
)
#: The value of a ``…_key`` name that may be a key: token characters only.
_KEY_VALUE_RE: Final = re.compile(r"[A-Za-z0-9+/=_\-]+")
#: A bare value ends at a blank or one of these (``?api_key=…&lang=en``, ``<b>pw=…</b>``).
_BARE_VALUE_ENDS: Final = "&\"'`"
#: A bare value: up to the first blank or :data:`_BARE_VALUE_ENDS` (one C-level scan).
_BARE_VALUE_RE: Final = re.compile(rf"[^\s{re.escape(_BARE_VALUE_ENDS)}]*")
_REFERENCE_STARTS: Final = ("$", "%", "{", "<", "[", "(", "&", "*", "@", "#", "!", "\\", "…")


def _value_at(text: str, pos: int, quoted_only: bool) -> tuple[int, int, bool] | None:
    """The value starting at ``pos``: ``(start, end, quoted)``, or None."""
    if pos >= len(text):
        return None
    q = text[pos]
    if q in "\"'`":
        line_end = text.find("\n", pos + 1, pos + 1 + MAX_VALUE_CHARS)
        limit = line_end if line_end >= 0 else min(len(text), pos + 1 + MAX_VALUE_CHARS)
        close = text.find(q, pos + 1, limit)
        if close < 0:
            return None
        return pos + 1, close, True
    if quoted_only:
        return None
    bare = _BARE_VALUE_RE.match(text, pos, min(len(text), pos + MAX_VALUE_CHARS))
    end = bare.end() if bare is not None else pos
    while end > pos and text[end - 1] in ";,:)]}":
        end -= 1
    return pos, end, False


def _looks_like_token(value: str, minimum: int) -> bool:
    """Letters and digits, no blank, not a path, not an alphabet written out (every character
    distinct: ``"ABC…XYZ234567"``)."""
    return (
        len(value) >= minimum
        and len(set(value)) < len(value)
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and not any(c.isspace() for c in value)
        and (
            "/" not in value
            or ("." not in value and not value.startswith(("/", "~")) and value[-1] != "/")
        )
    )


def _mixed_case_token(value: str, minimum: int) -> bool:
    return (
        len(value) >= minimum
        and value.isalnum()
        and any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
        and any(c.isupper() for c in value)
    )


def _is_value(value: str, quoted: bool, kind: str, name: str) -> bool:
    """Whether ``value`` under the name ``name`` of ``kind`` is the secret (not a reference, a
    type, a placeholder, prose, or a word of the name itself: ``pass_stmt: 'pass'``)."""
    if len(value) < MIN_VALUE_CHARS or value.startswith(_REFERENCE_STARTS) or "…" in value:
        return False
    if value.lower() in name_words(name):
        return False
    if value.lower() in words.PLACEHOLDER_VALUES or any(c.isspace() for c in value):
        return False
    if kind == "key":  # one token (``agent:main:42``, ``a.b.c`` are identifiers, paths)
        return _KEY_VALUE_RE.fullmatch(value) is not None and _looks_like_token(
            value, MIN_KEY_VALUE_CHARS
        )
    if kind == "access-id":
        return _mixed_case_token(value, MIN_ACCESS_ID_CHARS)
    if kind == "password" and value.startswith("/") and value.count("/") > 1:
        return False  # an absolute path (``pwd_file=/run/secrets/db``)
    if quoted:
        return not (value.isupper() and "_" in value)  # ``"SECRET_KEY"``: an env var's name
    return _IDENTIFIER_RE.fullmatch(value) is None and not value.isdigit()


#: A run of :data:`_NAME_CHARS`; matched on the characters before a keyword reversed too (the
#: start of the name ending there: at most :data:`MAX_NAME_CHARS` of them, reversed on their
#: own, not the whole text).
_NAME_RUN_RE: Final = re.compile(r"[A-Za-z0-9_.\-]+")


def _named_values(text: str, low: str) -> Iterator[Span]:
    last_name_end = -1
    budget = MAX_CANDIDATES_PER_RULE + len(text) // CHARS_PER_EXTRA_CANDIDATE
    for m in _KEYWORD_RE.finditer(low):
        start, end = m.start(), m.end()
        if start < last_name_end:
            continue  # inside a name already looked at
        budget -= 1
        if budget < 0:
            yield start, len(text), OVERFLOW
            return
        floor = max(0, start - MAX_NAME_CHARS)
        if start > floor and text[start - 1] in _NAME_CHARS:
            # the name's start: its characters read backwards, in one C-level match
            back = _NAME_RUN_RE.match(text[floor:start][::-1])
            if back is not None:
                start -= back.end()
        tail = _NAME_RUN_RE.match(text, m.start())
        end = tail.end() if tail is not None else m.start()
        if end - start > MAX_NAME_CHARS or start == floor > 0 or text.endswith("://", 0, start):
            last_name_end = end
            continue  # a run too long for a name (data), or a URL's user (``://secret:…@``)
        if text.endswith(".assign", start, end) and text.startswith("(", end):
            end -= len(".assign")  # C++ ``secret.assign("…")``: the operator, not the name
        last_name_end = end
        name = text[start:end].strip("-.")
        kind = name_kind(name)
        if not kind:
            continue
        after = _AFTER_NAME_RE.match(text, end)
        if after is None:
            continue
        op = after.group("op")
        if not op and kind != "secret":
            continue  # ``name "value"`` with no operator: only a SECRET name (not ``pass``)
        if after.group("q") and (start == 0 or text[start - 1] != after.group("q")):
            continue  # a closing quote with no opening one: not a quoted name
        if op == "(":
            before = _DECLARATION_BEFORE_RE.search(text, max(0, start - MAX_NAME_CHARS), start)
            if before is None or before.group().split()[0] in _NOT_DECLARATION_WORDS:
                continue  # ``get_secret("db")``: a call, not a declaration
        found = _value_at(text, after.end(), quoted_only=op in ("(", ""))
        if found is None:
            continue
        v_start, v_end, quoted = found
        if _is_value(text[v_start:v_end], quoted, kind, name):
            yield v_start, v_end, WHOLE if kind == "password" else PLAIN


# --------------------------------------------------------------------------- manifests

_SECRET_KIND_RE: Final = re.compile(r"""kind:[ \t]*["']?[Ss](?:ecret|ECRET)["']?[ \t]*$""", re.M)
_MAP_LINE_RE: Final = re.compile(
    r"""(?P<indent>[ \t]*)(?P<key>[A-Za-z0-9_.\-]+):[ \t]*(?P<rest>.*)"""
)


def _manifest_secrets(text: str, low: str) -> Iterator[Span]:
    if _SECRET_KIND_RE.search(text) is None:
        return
    map_indent = -1  # indentation of the ``data:`` line we are under, -1: none
    block_indent = -1  # indentation of a key whose value is a block scalar
    pos = 0
    size = len(text)
    while pos < size:
        nl = text.find("\n", pos)
        line_end = size if nl < 0 else nl
        line = text[pos:line_end]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" \t"))
        if stripped and not stripped.startswith("#"):
            if block_indent >= 0 and indent > block_indent:
                yield pos + indent, pos + len(line.rstrip()), PLAIN
            else:
                block_indent = -1
                if map_indent >= 0 and indent <= map_indent:
                    map_indent = -1
                m = _MAP_LINE_RE.fullmatch(line)
                if m is not None:
                    rest = m.group("rest").rstrip()
                    if map_indent >= 0:
                        value = rest.strip("\"'")
                        if rest[:1] in ("|", ">"):
                            block_indent = indent
                        elif value:
                            v_start = pos + m.start("rest") + rest.index(value)
                            yield v_start, v_start + len(value), PLAIN
                    elif m.group("key").lower() in words.SECRET_MANIFEST_MAPS and not rest:
                        map_indent = indent
        pos = line_end + 1


# --------------------------------------------------------------------------- bundler

_BUNDLER_RE: Final = re.compile(
    r"""BUNDLE_[A-Z0-9_]*__[A-Z0-9]+\b["']?[ \t]*[=:][ \t]*["']?(?P<value>[^\s"';&]+)"""
)


def _bundler_credentials(text: str, low: str) -> Iterator[Span]:
    for m in _BUNDLER_RE.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
            continue
        if ":" in m.group("value"):
            yield m.start("value"), m.end("value"), WHOLE


# --------------------------------------------------------------------------- basic auth users

_URL_USERINFO_RE: Final = re.compile(
    rf"://(?P<user>[^\s:/@\"'<>]{{{MIN_TOKEN_USER_CHARS},{MAX_USERINFO_CHARS}}})"
    rf":[^\s/@\"'<>]{{1,{MAX_USERINFO_CHARS}}}@"
)
_CURL_USER_RE: Final = re.compile(
    r"""-(?:u|-user)(?:[ \t]+|=)(?P<cred>"[^"\n]*"(?::"[^"\n]*")?|'[^'\n]*'|[^\s"']+)"""
)


def _random_user(user: str) -> bool:
    """A user name that is a token: long enough, letters and digits interleaved (a digit
    before a letter AND a letter before a digit: ``cafeb4b3``, not ``admin2024``)."""
    return (
        len(user) >= MIN_TOKEN_USER_CHARS
        and re.search(r"[0-9][A-Za-z]", user) is not None
        and (re.search(r"[A-Za-z][0-9]", user) is not None)
    )


def _basic_auth_users(text: str, low: str) -> Iterator[Span]:
    if "://" in text:
        for m in _URL_USERINFO_RE.finditer(text):
            if _random_user(m.group("user")):
                yield m.start("user"), m.end("user"), PLAIN
    if "-u" in text:
        for m in _CURL_USER_RE.finditer(text):
            if m.start() and not text[m.start() - 1].isspace():
                continue
            cred, base = m.group("cred"), m.start("cred")
            if cred.startswith('"') and '":"' in cred:
                split = cred.index('":"')
                user_span = (base + 1, base + split)
                password_span = (base + split + 3, base + len(cred) - 1)
            else:
                inner_start = base + (1 if cred[:1] in "\"'" else 0)
                inner = text[inner_start : base + len(cred) - (1 if cred[:1] in "\"'" else 0)]
                colon = inner.find(":")
                user_span = (inner_start, inner_start + (colon if colon >= 0 else len(inner)))
                password_span = (inner_start + colon + 1, inner_start + len(inner))
                if colon >= 0 and colon == len(inner) - 1:
                    yield user_span[0], user_span[1], WHOLE  # ``-u token:``: the user is the key
                    continue
                if colon < 0:
                    password_span = (0, 0)
            user = text[user_span[0] : user_span[1]].strip("{}")
            if _random_user(user) or _looks_like_token(user, MIN_KEY_VALUE_CHARS):
                yield user_span[0], user_span[1], PLAIN
            if password_span[1] - password_span[0] >= MIN_VALUE_CHARS and cred.startswith('"'):
                yield password_span[0], password_span[1], WHOLE


# --------------------------------------------------------------------------- shaped tokens

#: An upper-case token (letters and digits, no name beside it) this long or longer.
MIN_UPPER_TOKEN_CHARS: Final = 32
MAX_UPPER_TOKEN_CHARS: Final = 64
#: Digits and letters an upper-case token holds at least (a word in capitals has no digits,
#: a number no letters).
MIN_UPPER_TOKEN_DIGITS: Final = 6
MIN_UPPER_TOKEN_LETTERS: Final = 6
_UPPER_TOKEN_RE: Final = re.compile(r"[A-Z0-9]+")
_NOT_HEX: Final = frozenset("GHIJKLMNOPQRSTUVWXYZ")


def is_upper_token(token: str) -> bool:
    """A bare token in capitals and digits (SonarQube, some license and API keys): 32 to 64
    of them, not a hash (a letter past ``F``), digits and letters both, not a run of a few
    characters, not an alphabet written out (every character distinct: ``"0123…XYZ"``).

    The engine's bare-token scan (runs of token characters, the ``opaque`` rule) is this
    family's prefilter and finder: it calls this judge on every candidate run."""
    if not MIN_UPPER_TOKEN_CHARS <= len(token) <= MAX_UPPER_TOKEN_CHARS:
        return False
    if _UPPER_TOKEN_RE.fullmatch(token) is None:
        return False
    digits = sum(c.isdigit() for c in token)
    return (
        digits >= MIN_UPPER_TOKEN_DIGITS
        and len(token) - digits >= MIN_UPPER_TOKEN_LETTERS
        and not _NOT_HEX.isdisjoint(token)
        and len(token) // 4 < len(set(token)) < len(token)
    )


#: A bare token in lower case and digits (many vendors' 32-64 character keys): this long ...
MIN_LOWER_TOKEN_CHARS: Final = 32
MAX_LOWER_TOKEN_CHARS: Final = 64
#: ... with digits scattered through it in at least this many runs (a name holds a number or
#: two: ``python310_x86_64``; a random string of 32 characters from ``[a-z0-9]`` ~6) ...
MIN_LOWER_TOKEN_DIGIT_RUNS: Final = 4
#: ... holding this many distinct characters (random: ~21 of 36 in 32 characters) ...
MIN_LOWER_TOKEN_DISTINCT_CHARS: Final = 14
#: ... and its letters vowels less often than this (random: ~1 in 5; words: ~2 in 5).
MAX_LOWER_TOKEN_VOWEL_SHARE: Final = 0.3
_LOWER_TOKEN_RE: Final = re.compile(r"[a-z0-9]+")
_DIGIT_RUN_RE: Final = re.compile(r"[0-9]+")
_NOT_HEX_LOWER: Final = frozenset("ghijklmnopqrstuvwxyz")


def is_lower_token(token: str) -> bool:
    """A bare token in lower case and digits, 32 to 64 of them, that is random: not hex (a
    hash, a commit: readable), digits in many runs through it, few vowels among its letters,
    not a run of a few characters. Called by the engine's bare-token scan beside
    :func:`is_upper_token`."""
    if not MIN_LOWER_TOKEN_CHARS <= len(token) <= MAX_LOWER_TOKEN_CHARS:
        return False
    if _LOWER_TOKEN_RE.fullmatch(token) is None or _NOT_HEX_LOWER.isdisjoint(token):
        return False
    if len(_DIGIT_RUN_RE.findall(token)) < MIN_LOWER_TOKEN_DIGIT_RUNS:
        return False
    letters = [c for c in token if c.isalpha()]
    vowels = sum(c in "aeiou" for c in letters)
    return (
        vowels < MAX_LOWER_TOKEN_VOWEL_SHARE * len(letters)
        and len(set(token)) >= MIN_LOWER_TOKEN_DISTINCT_CHARS
    )


# --------------------------------------------------------------------------- the pipeline

PIPELINE: Final[tuple[Rule, ...]] = (
    Rule(
        "named-values",
        _KEYWORD_RE,
        _named_values,
        on_lowered=True,
        words=("secret", "pass", "pw", "credent", "key", "access"),
    ),
    # (the finder reads ``kind:`` in lower case only: ``_SECRET_KIND_RE``)
    Rule("manifest-secrets", re.compile(r"(?i)kind:"), _manifest_secrets, words=("kind:",)),
    Rule("bundler-credentials", re.compile(r"BUNDLE_"), _bundler_credentials, words=("BUNDLE_",)),
    Rule("basic-auth-users", re.compile(r"://|-u|--user"), _basic_auth_users, words=("://", "-u")),
)
