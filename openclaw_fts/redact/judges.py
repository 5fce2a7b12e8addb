"""The judgments several credential rules share (docs/redaction.md).

Invariant: pure functions and data, no state and no text scanning beyond the value or name
given: whether a NAME holds a secret (:func:`is_sensitive_name`, :func:`is_password_name`,
:func:`is_weak_secret_name`), whether a VALUE is a reference to a secret rather than the
secret (``_is_reference``: ``$TOKEN``, ``null``, ``{{ x }}`` …) or looks like a credential,
whether a token looks randomly generated (:func:`looks_random`, :func:`is_opaque_token`), and
the character class of a run of token characters every token rule starts in (``_RUN_RE``).
Every bound is a named constant here; the rule modules import these, never each other.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import Final

from . import data as rules

#: The whole mask of a short secret.
SHORT_SECRET_MASK: Final = "***"


# --------------------------------------------------------------------------- bounds

#: Longest identifier considered as the name of an assignment or CLI flag. Real names are far
#: shorter; the bound caps the work per candidate position on a hostile run of name characters.
MAX_NAME_CHARS: Final = 64


#: Blanks allowed around ``=``/``:`` (``KEY   =   value``, a YAML file aligned in columns);
#: bounded for the same reason.
MAX_SEPARATOR_BLANKS: Final = 40


#: With a ``:`` separator, a value made only of letters is taken for prose (``token: bucket``)
#: unless it is at least this long (a long letters-only word after ``password:`` is a password).
LOOSE_VALUE_MIN_CHARS: Final = 16


#: Longest user name of a URL userinfo looked at; bounds the work per ``://``.
MAX_URL_USER_CHARS: Final = 128


#: Longest URL password looked at (a longer one is not recognised); bounds the work per ``://``
#: and lets the password contain an unencoded ``@`` (the LAST ``@`` in reach ends it).
MAX_URL_PASSWORD_CHARS: Final = 256


# --------------------------------------------------------------------------- sensitive names
# The name words are data (redact.data, "names"); these functions read them.

_NAME_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


#: Distinct names whose verdict is remembered: a text repeats the same few names (``"token":``
#: in every object of a JSON dump), so a small cache removes the word splitting from hot loops.
NAME_CACHE_SIZE: Final = 4096


#: Digits of an index after a name (``api_key_2``); a longer number is part of a value.
MAX_NAME_INDEX_DIGITS: Final = 2


@lru_cache(maxsize=NAME_CACHE_SIZE)
def is_sensitive_name(name: str) -> bool:
    """Whether ``name`` (a variable, JSON field or CLI flag name) holds a credential.

    Words are split at ``_ - .`` and camelCase. Sensitive: any name containing ``password``,
    ``passwd`` or ``passphrase``; a name whose last word is ``secret`` or ``token`` (but not
    ``max_token``, ``eos_token``, ``next_token`` …), or a known compound (``apikey``,
    ``accesstoken``, ``clientsecret``, ``privatekey`` …); ``*_KEY`` in upper case unless it is
    ``PUBLIC_KEY``, ``SORT_KEY``, ``SESSION_KEY`` …; ``*Key``/``*_key`` in code only after
    ``api``, ``secret``, ``private``, ``access``, ``client`` …; ``*_PWD`` (not ``PWD`` alone,
    the current directory).
    """
    lowered = name.lower()
    words = [w.lower() for w in _NAME_WORD_RE.findall(name)]
    if words and words[0] in rules.FLAG_FIRST_WORDS:
        return False  # HAVE_STRUCT_PASSWD_PW_GECOS, HAS_API_KEY: a feature flag
    if len(words) > 1 and (
        words[-1] in rules.VALUE_SUFFIX_WORDS
        or (len(name) > 1 and name[-1].isupper() and name[-2].islower())  # ``secretA``
        or (words[-1].isdigit() and len(words[-1]) <= MAX_NAME_INDEX_DIGITS)
    ):
        # ``secret_value``, ``token_b64``, ``secretA``, ``api_key_2``: the name before the
        # suffix says what the value is (an index or an encoding does not change it)
        stem = _NAME_WORD_RE.findall(name)
        cut = name.rfind(stem[-1])
        if cut > 0 and is_sensitive_name(name[:cut].rstrip("_-. ")):
            return True
    if any(word in lowered for word in rules.ANYWHERE_WORDS):
        return not words or words[-1] not in rules.HARMLESS_PASSWORD_SUFFIXES
    if not words:
        return False
    last = words[-1]
    previous = words[-2] if len(words) > 1 else ""
    if last in rules.SECRET_COMPOUNDS or (previous + last) in rules.SECRET_COMPOUNDS:
        return True
    if len(words) == 1 and last.endswith(rules.GLUED_COMPOUNDS + rules.GLUED_PASSWORDS):
        return True  # ``theapikey``, ``myaccesstoken``, keytool's ``-storepass``
    if last in rules.SECRET_LAST_WORDS:
        return True
    if last == "token":
        return previous not in rules.HARMLESS_TOKEN_PREFIXES
    if last == "pwd":
        return bool(previous)
    if last == "pass":
        return not previous or previous not in rules.HARMLESS_PASS_PREFIXES
    if last == "key" and previous:
        letters = [c for c in name if c.isalpha()]
        if letters and all(c.isupper() for c in letters):
            return previous not in rules.HARMLESS_ENV_KEY_PREFIXES
        return previous in rules.SECRET_KEY_PREFIXES
    return False


@lru_cache(maxsize=NAME_CACHE_SIZE)
def is_password_name(name: str) -> bool:
    """Whether the value of ``name`` is a password (masked whole): ``*password*``,
    ``*passwd*``, ``*passphrase*``, ``db_pass``, ``DB_PWD``."""
    lowered = name.lower()
    if any(word in lowered for word in rules.ANYWHERE_WORDS):
        return True
    words = _NAME_WORD_RE.findall(name)
    if not words:
        return False
    last = words[-1].lower()
    if len(words) == 1 and last.endswith(rules.GLUED_PASSWORDS):
        return True
    return last in rules.PASSWORD_LAST_WORDS and is_sensitive_name(name)


@lru_cache(maxsize=NAME_CACHE_SIZE)
def is_weak_secret_name(name: str) -> bool:
    """Whether ``name`` may hold a secret although :func:`is_sensitive_name` says no: its last
    word is ``key``, ``login``, ``auth`` … (the value decides, :func:`looks_random`)."""
    words = [w.lower() for w in _NAME_WORD_RE.findall(name)]
    if not words or words[0] in rules.FLAG_FIRST_WORDS or words[-1] not in rules.WEAK_LAST_WORDS:
        return False
    return len(words) == 1 or words[-2] not in rules.PUBLIC_KEY_PREFIXES


# --------------------------------------------------------------------------- value checks


_REFERENCE_PREFIXES: Final = (
    "process.env.",
    "import.meta.env.",
    "os.environ",
    "os.getenv(",
    "getenv(",
    "env(",
    "env.",
    "secrets.",
)


# ``$NAME``, ``${NAME}``, ``${NAME:-}`` (an EMPTY default), ``$(command)``: group ``var`` is
# the variable. ``${NAME:-literal}`` is not a reference: the literal is the secret.
_SHELL_REFERENCE_RE: Final = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?[-=?+])?\}?|\([^)]*\)?"
    r"|(?P<var>[A-Za-z_][A-Za-z0-9_]*):?)"
)


# A value that computes the secret instead of holding it: a call (``computeToken()``,
# ``os.getenv("X")``, ``new Foo(``, ``get<T>(``), a parenthesised expression.
_COMPUTED_VALUE_RE: Final = re.compile(
    r"\(|(?:new[ \t]+)?[A-Za-z_$][A-Za-z0-9_$.]*(?:<[^<>\s]{0,64}>)?"
    r"[(\[]"
)


# Format placeholders, and ``salt``: a key-derivation call's literal salt (``password, b'salt'``).
#: A value of ONE repeated character this long (``xxx``, ``XXXX``) is a placeholder; a longer
#: run may be a (test) secret and is masked.
MIN_PLACEHOLDER_RUN: Final = 3


MAX_PLACEHOLDER_RUN: Final = 8


_PLACEHOLDER_CHARS: Final = "xX*#"


# A template expression (GitHub Actions ``${{ github.token }}``, Jinja/Helm ``{{ .Values.x }}``):
# the template engine fills the secret in, the text holds its name.
_TEMPLATE_PREFIXES: Final = ("${{", "{{", "{%", "<%=")


# A value that is a structure or a bracketed placeholder rather than a secret.
_STRUCTURE_VALUE_RE: Final = re.compile(
    r"[\[{]|[\[{][A-Za-z_][\w.]*[\]},]?|\[[^\[\]]*\s[^\[\]]*\]|<[^<>]*[\s_\-][^<>]*>"
)


# A lower-case snake name ending in a secret's word (``next_token``, ``api_key``): the NAME of a
# field, given as a value (botocore's ``"input_token": "next_token"``).
_NAME_VALUE_RE: Final = re.compile(r"[a-z]+(?:_[a-z]+)*_(?:token|key|secret|password|id)")


# A format field with a conversion or a format spec (``{password!r}``, ``{token:>8}``), its
# closing brace possibly trimmed with the punctuation after it.
_FORMAT_FIELD_RE: Final = re.compile(r"\{[A-Za-z_][\w.]{0,64}(?:![rsa]|:[^{}\s]{0,32})\}?")


_BRACE_PLACEHOLDER_RE: Final = re.compile(r"\{[A-Za-z0-9_.]{0,64}\}")


#: A Windows environment reference (``%API_KEY%``, ``%ProgramFiles(x86)%``): a name, not
#: ``%`` around anything (``"%00000000%"`` or ``"%a9$…%"`` can be the secret itself).
_WINDOWS_REFERENCE_RE: Final = re.compile(r"%[A-Za-z_][A-Za-z0-9_()]*%")


_IDENTIFIER_PATH_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _is_reference(value: str, name: str | None, literal: bool = False) -> bool:
    """Whether ``value`` names a secret instead of being one (``$TOKEN``, ``null``, …).

    ``literal``: the value sits where no variable or field name can stand (a URL's password,
    ``curl -u user:password``), so a name-shaped value (``db_password``) is the secret itself.
    """
    if value in rules.PLACEHOLDERS or _BRACE_PLACEHOLDER_RE.fullmatch(value):
        return True  # a format placeholder (``key=%s``, ``token={}``)
    if value.startswith(_TEMPLATE_PREFIXES) or value.startswith(rules.SOURCE_PREFIXES):
        return True
    if (
        _STRUCTURE_VALUE_RE.fullmatch(value)
        or (value[0] == "{" and "}" in value)
        or _FORMAT_FIELD_RE.fullmatch(value)
    ):
        return True  # ``= [PGconn_ptr]``, ``": {``, ``'[secret key]'``, ``f'{name}.lang'``
    if "EXAMPLE" in value or (not literal and _NAME_VALUE_RE.fullmatch(value)):
        return True  # AWS's documentation placeholder; ``"input_token": "next_token"``
    if (
        MIN_PLACEHOLDER_RUN <= len(value) <= MAX_PLACEHOLDER_RUN
        and value[0] in _PLACEHOLDER_CHARS
        and len(set(value)) == 1
    ):
        return True  # ``xxx``, ``XXXX``, ``****``: a placeholder
    first = value[0]
    if first == "$":
        ref = _SHELL_REFERENCE_RE.fullmatch(value)
        if ref is None:
            return False
        var = ref.group("braced") or ref.group("var")
        # ``TOKEN=$TOKEN``, ``API_KEY=${OPENAI_API_KEY}``: a secret's own name; a name that is
        # not a secret's (``TOKEN=$SUPERSECRET123``) may be the secret itself.
        return var is None or name is None or var == name or is_sensitive_name(var)
    if first == "%":
        return _WINDOWS_REFERENCE_RE.fullmatch(value) is not None  # %API_KEY%
    if first == "(":
        return name is not None
    if not (first.isalpha() or first == "_"):
        return value == SHORT_SECRET_MASK
    lowered = value.lower()
    if (
        lowered in rules.LITERAL_VALUES
        or (name is not None and value in rules.EXPRESSION_WORDS)
        or value.startswith(_REFERENCE_PREFIXES)
    ):
        return True
    if name is not None and not literal and _IDENTIFIER_PATH_RE.fullmatch(value):
        # ``api_key=api_key``, ``token: self.token``, ``API_KEY=settings.API_KEY``, and a
        # variable named for a secret (``token = timeObserverToken``)
        last = value.rsplit(".", 1)[-1]
        if len(last) >= 3 and name.rsplit(".", 1)[-1].lower().endswith(last.lower()):
            return True  # ``api_key=api_key``, ``trio_token=token``
        if (
            "." not in value
            and "_" not in value
            and last.lower().endswith(rules.PASSWORD_VALUE_SUFFIXES)
        ):
            return False  # ``DB_PASSWORD=SuperPwd``: a password that ends like a variable name
        return (
            "." in value or any(c.isupper() for c in last[1:]) or "_" in last
        ) and is_sensitive_name(last)
    return name is not None and _COMPUTED_VALUE_RE.match(value) is not None


def _looks_like_credential(value: str) -> bool:
    """For ``name: value``: a digit or a symbol in it, or a long word (see module doc)."""
    return len(value) >= LOOSE_VALUE_MIN_CHARS or not value.isalpha()


# --------------------------------------------------------------------------- patterns
#
# Linear time: a pattern is tried at a position only when that position starts its token (a
# lookbehind, placed after a literal first character so that the regex engine can skip ahead
# to that character), repetitions are bounded or end where the next element cannot match, and
# a value that was taken is never scanned again by the same rule.

_BLANKS: Final = rf"[ \t]{{0,{MAX_SEPARATOR_BLANKS}}}"


_NAME_CHARS: Final = r"A-Za-z0-9_.%\-"


#: Characters that do not show (controls, zero-width and format characters, Hangul fillers):
#: inside a parameter name they can only hide the name from a reader, so they are dropped
#: before the name is judged (``client_se\u200bcret`` is ``client_secret``).
_INVISIBLE_CHARS: Final = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u00ad\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u3164\ufeff\uffa0"
)


# A whole name, read backwards from its end: at most MAX_NAME_CHARS name characters, and the
# run must end there (a longer run is not a name).
_REVERSED_NAME_RE: Final = re.compile(rf"[{_NAME_CHARS}]{{1,{MAX_NAME_CHARS}}}(?![{_NAME_CHARS}])")


def start_of_name(text: str, name_end: int) -> int:
    """Where the name ending at ``name_end`` starts: the run of name characters ending there,
    if it is 1 to :data:`MAX_NAME_CHARS` long, else -1. :data:`_REVERSED_NAME_RE` reads at
    most :data:`MAX_NAME_CHARS` + 1 characters back, so it is matched on those characters
    reversed, not on the whole text reversed (a 10 MB message: one 40 MB copy and ~0.02 s
    less)."""
    run = _REVERSED_NAME_RE.match(text[max(0, name_end - MAX_NAME_CHARS - 1) : name_end][::-1])
    return -1 if run is None else name_end - run.end()


# Cheap test (``str.__contains__``) before looking for command words: a blank, a dash, then
# one of the password flags of :data:`rules.CLI_PASSWORD_COMMANDS`.
_SHORT_PASSWORD_FLAGS: Final = tuple(
    sorted({f" -{flag}" for rule in rules.CLI_PASSWORD_COMMANDS for flag in rule.flags})
)


_PERCENT_RE: Final = re.compile(r"%[0-9A-Fa-f]{2}|\+")


def _decode_name(name: str) -> str:
    """``client%5Fsecret`` → ``client_secret``; encoded invisible or non-ASCII bytes and ``+``
    (``client_se%E2%80%8Bcret``, ``client_se+cret``) are dropped, so they cannot hide a name."""
    return _PERCENT_RE.sub(
        lambda m: (
            chr(int(m.group()[1:], 16))
            if m.group() != "+" and 0x21 <= int(m.group()[1:], 16) < 0x7F
            else ""
        ),
        name,
    )


def _by_first_character(alternatives: list[str]) -> str:
    """``a1|a2|b1`` as ``a(?:1|2)|b1``: the engine tests each first character once instead of
    once per alternative (the vendor regex is the costliest scan of ordinary text; grouping cut
    it ~3.5x). Every alternative starts with a literal character or an escaped one (``\\.``)."""
    groups: dict[str, list[str]] = {}
    for alternative in alternatives:
        key = alternative[:2] if alternative.startswith("\\") else alternative[0]
        assert key == "\\." or key.isalnum() or key in "_/", alternative
        groups.setdefault(key, []).append(alternative[len(key) :])
    return "|".join(
        key + (rest[0] if len(rest) == 1 else "(?:" + "|".join(rest) + ")")
        for key, rest in groups.items()
    )


#: Characters that may not come right before a vendor prefix (it would be inside a word).
_WORD_CHAR_SET: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


#: Characters of a token run: every vendor prefix and body is made of them (checked when the
#: module loads), so a vendor token, an opaque token or an AWS secret lies inside one run.
_RUN_CLASS: Final = r"A-Za-z0-9_\-./+=@~:"


_RUN_CHAR_SET: Final = frozenset(c for c in map(chr, range(128)) if re.match(f"[{_RUN_CLASS}]", c))


def _check_runs() -> None:
    for rule in rules.VENDOR_TOKENS:
        assert set(rule.sample) <= _RUN_CHAR_SET, rule.family
        outside = [c for c in map(chr, range(32, 128)) if c not in _RUN_CHAR_SET]
        assert not any(re.fullmatch(rule.body, c) for c in outside), rule.family
        literal = set(re.sub(r"\\(.)", r"\1", rule.prefix)) - set("[]()?|")
        assert literal <= _RUN_CHAR_SET, rule.family
    for token in rules.PATTERN_TOKENS:
        if token.in_runs:
            m = re.search(token.pattern, token.sample)
            assert m is not None and set(m.group("value")) <= _RUN_CHAR_SET, token.family
            assert len(m.group("value")) >= token.in_runs, token.family


_check_runs()


#: Shortest vendor token (prefix and minimum body): the vendor rule looks only at runs of
#: token characters at least this long.
MIN_VENDOR_RUN_CHARS: Final = min(
    re._parser.parse(r.prefix).getwidth()[0] + r.minimum  # type: ignore[attr-defined]
    for r in rules.VENDOR_TOKENS
)


# (the lookbehind: tried only where a run starts, not again at each character of a short word)
_RUN_RE: Final = re.compile(f"(?<![{_RUN_CLASS}])[{_RUN_CLASS}]{{{MIN_VENDOR_RUN_CHARS},}}")


#: The same runs, listed by ``finditer`` (group 1; the last match may have none): each match
#: first takes, possessively, every character up to the next run of
#: :data:`MIN_VENDOR_RUN_CHARS` (the shorter runs whole, a word at a time), where
#: :data:`_RUN_RE` tries its lookbehind at every position (the runs of a 10 MB message:
#: ~0.2 s instead of ~0.3 s). At the text's end it takes the rest, so no position is retried.
def _runs_regex(minimum: int) -> re.Pattern[str]:
    return re.compile(
        f"[^{_RUN_CLASS}]*+(?:[{_RUN_CLASS}]{{1,{minimum - 1}}}+[^{_RUN_CLASS}]++)*+"
        f"(?:([{_RUN_CLASS}]{{{minimum},}})"
        f"|[{_RUN_CLASS}]{{0,{minimum - 1}}}+\\Z)"
    )


_RUNS_RE: Final = _runs_regex(MIN_VENDOR_RUN_CHARS)


# --------------------------------------------------------------------------- opaque tokens
#
# A credential with no vendor prefix and no sensitive name around it (an AWS secret access key,
# a bare API key pasted into a message): a run of base64/base64url characters that is long,
# mixes upper case, lower case and digits, and changes character class so often that it cannot
# be an identifier (``getHTTPResponse2Code`` splits into 5 long words; a random key into dozens
# of 1-2 character pieces). Measured leak and false-positive rates: docs/security.md.

#: Shortest run examined (real keys: 32-64; shorter random runs are ids, not secrets).
MIN_OPAQUE_TOKEN_CHARS: Final = 24


#: A run is opaque when its mean "word" length (camelCase/digit pieces) is below this.
MAX_OPAQUE_MEAN_WORD_CHARS: Final = 2.6


#: ... and it holds at least this many distinct characters.
MIN_OPAQUE_DISTINCT_CHARS: Final = 14


_PIECE_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


_DIGIT_RE: Final = re.compile(r"[0-9]")


def is_opaque_token(token: str) -> bool:
    """Whether ``token`` (a run of base64/base64url characters) looks randomly generated."""
    body = token.rstrip("=")
    if len(body) < MIN_OPAQUE_TOKEN_CHARS:
        return False
    if (
        body.lower() == body
        or body.upper() == body
        or _DIGIT_RE.search(body) is None
        or len(set(body)) < MIN_OPAQUE_DISTINCT_CHARS
    ):
        return False  # a random key mixes upper case, lower case and digits
    if "_" in body and _has_word_pieces(_PIECE_RE.findall(body)):
        return False  # ``NID_pbeWithSHA1AndRC2_CBC``: an identifier made of words
    return _mean_piece_chars(body) < MAX_OPAQUE_MEAN_WORD_CHARS


_SYMBOL_RE: Final = re.compile(r"[^A-Za-z0-9]")


def _mean_piece_chars(token: str) -> float:
    """Mean length of the camelCase/digit pieces of an ASCII token (the pieces cover every
    letter and digit, so their total length is the number of letters and digits)."""
    pieces = len(_PIECE_RE.findall(token))
    return (len(token) - len(_SYMBOL_RE.findall(token))) / max(1, pieces)


#: An identifier with ``_`` whose pieces are words (3+ letters) at least this often is a name.
MIN_WORD_PIECE_SHARE: Final = 0.5


def _has_word_pieces(pieces: list[str]) -> bool:
    words = sum(1 for p in pieces if len(p) >= 3 and p.isalpha())
    return words >= MIN_WORD_PIECE_SHARE * len(pieces)


#: A literal with no sensitive name around it (``new Client("…")``, ``key = "…"``,
#: ``stripe_key: …``) is a secret when it looks randomly generated: this many characters at
#: least (shorter random strings are ids) ...
MIN_RANDOM_LITERAL_CHARS: Final = 20


#: ... and at most this many (longer ones are data: images, fixtures, minified code) ...
MAX_RANDOM_LITERAL_CHARS: Final = 200


#: ... holding at least this many distinct characters ...
MIN_RANDOM_DISTINCT_CHARS: Final = 10


#: ... whose letter/digit/case pieces average fewer characters than this (an identifier such as
#: ``user_profile_2024`` splits into words, a random string into 1-2 character pieces).
MAX_RANDOM_MEAN_PIECE_CHARS: Final = 2.6


#: For a literal in one case (``r2ofhhzv4t…``, hex): its pieces average fewer characters than
#: this ...
MAX_SINGLE_CASE_MEAN_PIECE_CHARS: Final = 4.0


#: ... and it has at least this many runs of digits ...
MIN_SINGLE_CASE_DIGIT_RUNS: Final = 3


#: ... and (when not hex) fewer vowels among its letters than this share.
MAX_RANDOM_VOWEL_SHARE: Final = 0.35


#: Random letters are vowels about 1 time in 5, words (and names made of them) about 2 in 5.
#: A literal whose letters are vowels less often than this is random with a single run of
#: digits (``rwqh7r0qrcisbuyd…``), or in mixed case with longer pieces (``MzuqpITiFt3DSTh…``).
MAX_CLEARLY_RANDOM_VOWEL_SHARE: Final = 0.25


#: A single-case literal with this many runs of digits among its letters is random whatever its
#: vowels (``k07d6ap3buub2w6ba6…``): names hold a digit run or two, not four.
MIN_CLEARLY_RANDOM_DIGIT_RUNS: Final = 4


#: A literal made of short parts (``pk_12345678_V796L5…``) is random when one part this long
#: is.
MIN_RANDOM_SEGMENT_CHARS: Final = 20


#: A hex literal may carry a short upper-case prefix (Twilio's ``SK…``, ``AC…``).
MAX_HEX_PREFIX_CHARS: Final = 3


def _is_word(segment: str) -> bool:
    """A segment of a name that is a word (``venv``, ``linux``): 3+ letters, vowels in it."""
    if len(segment) < 3 or not segment.isalpha():
        return False
    vowels = sum(1 for c in segment.lower() if c in "aeiouy")
    return vowels * 5 >= len(segment)


_UUID_RE: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


_HEX_RE: Final = re.compile(r"[0-9a-fA-F]+")


_SEGMENT_SPLIT_RE: Final = re.compile(r"[-_+]")


# Checksums that are public by nature: go.sum ``h1:``, SRI ``sha512-…`` (npm ``integrity``),
# pip ``sha256:…``, OpenShift-style ``sha256~``.
_PUBLIC_HASH_PREFIXES: Final = tuple(
    f"{algo}{sep}"
    for algo in ("h1", "sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b")
    for sep in (":", "-", "=")
)


# A run of token characters long enough for a nameless token (opaque, AWS secret, Discord bot
# token, quoted literal, prose key): without one, those rules cannot match.
_LONG_RUN_CHARS: Final = min(MIN_RANDOM_LITERAL_CHARS, MIN_OPAQUE_TOKEN_CHARS)


#: The long runs alone, listed as :data:`_RUNS_RE` lists the runs (the shorter runs are taken
#: whole between them: a 10 MB message's 46,000 long runs in ~0.05 s, its 205,000 runs of
#: :data:`MIN_VENDOR_RUN_CHARS` in ~0.09 s).
_LONG_RUNS_RE: Final = _runs_regex(_LONG_RUN_CHARS)


#: Characters in order this long (``abcd``, ``6789``) mark an alphabet written out; a random
#: string holds such a run about once in 50,000 positions.
SEQUENCE_RUN_CHARS: Final = 4


_SEQUENCE_RE: Final = re.compile(
    "|".join(
        re.escape(alphabet[i : i + SEQUENCE_RUN_CHARS])
        for alphabet in (string.ascii_lowercase, string.ascii_uppercase, string.digits)
        for i in range(len(alphabet) - SEQUENCE_RUN_CHARS + 1)
    )
)


def looks_random(value: str, hex_ok: bool = False) -> bool:
    """Whether ``value`` looks randomly generated, for a literal with no sensitive name.

    Letters and digits mixed, 20-200 characters, 10+ distinct characters, short pieces (see
    :data:`MAX_RANDOM_MEAN_PIECE_CHARS`). Never a UUID or a public checksum; a hex string only
    when ``hex_ok`` (the context says key, not hash).
    """
    body = value.rstrip("=")
    if not MIN_RANDOM_LITERAL_CHARS <= len(body) <= MAX_RANDOM_LITERAL_CHARS:
        return False
    if body.startswith(_PUBLIC_HASH_PREFIXES) or _UUID_RE.fullmatch(body) or "EXAMPLE" in body:
        return False
    if not hex_ok and _HEX_RE.fullmatch(body):
        return False
    if not (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
        return False
    if len(set(body)) < MIN_RANDOM_DISTINCT_CHARS or _SEQUENCE_RE.search(body) is not None:
        return False  # few characters, or an alphabet written out (``abcdef…0123456789``)
    pieces = _PIECE_RE.findall(body)
    mean = sum(len(p) for p in pieces) / max(1, len(pieces))
    segments = _SEGMENT_SPLIT_RE.split(body)
    if len(segments) > 1 and "." not in body and "/" not in body:
        longest = max(segments, key=len)
        if (
            len(longest) >= MIN_RANDOM_SEGMENT_CHARS
            and not any(_is_word(segment) for segment in segments)
            and looks_random(longest, hex_ok)
        ):
            return True  # ``pk_12345678_V796L5XF…``: a random part behind a short prefix
    letters = [c for c in body.lower() if c.isalpha()]
    vowel_share = sum(1 for c in letters if c in "aeiou") / max(1, len(letters))
    head = len(body) - len(body.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    if hex_ok and 0 < head <= MAX_HEX_PREFIX_CHARS and _HEX_RE.fullmatch(body[head:]):
        return looks_random(body[head:], hex_ok)  # Twilio's ``SK`` + 32 hex
    if body.lower() == body or body.upper() == body:
        # one case: letter runs are longer (no case changes split them); a random string still
        # has digits all along it, and no dots or word-separated segments (file and package
        # names, versions: ``python3-venv-x86_64``)
        if "." in body or "/" in body:
            return False
        if len(segments) > 2 and any(_is_word(segment) for segment in segments):
            return False
        digit_runs = sum(1 for p in pieces if p[0].isdigit())
        if _HEX_RE.fullmatch(body):
            return (
                digit_runs >= MIN_SINGLE_CASE_DIGIT_RUNS and mean < MAX_SINGLE_CASE_MEAN_PIECE_CHARS
            )
        # random letters are vowels ~1 time in 5; words (and names made of them) ~2 in 5
        if digit_runs >= MIN_CLEARLY_RANDOM_DIGIT_RUNS:
            return True
        if digit_runs >= MIN_SINGLE_CASE_DIGIT_RUNS:
            return vowel_share < MAX_RANDOM_VOWEL_SHARE
        return vowel_share < MAX_CLEARLY_RANDOM_VOWEL_SHARE and not any(
            _is_word(segment) for segment in segments
        )
    if mean < MAX_RANDOM_MEAN_PIECE_CHARS:
        return True
    return vowel_share < MAX_CLEARLY_RANDOM_VOWEL_SHARE and mean < MAX_SINGLE_CASE_MEAN_PIECE_CHARS
