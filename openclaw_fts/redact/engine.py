"""Credential masking for snippets and history text (OpenClaw's rule, docs/redaction.md).

Invariant: for every string ``t``, :meth:`Redactor.redact` returns ``t`` character for
character, except that every *credential span* found in ``t`` (overlapping spans merged first)
is replaced by its mask: ``***`` when the span is a password or shorter than
:data:`MIN_PARTIAL_MASK_CHARS`,
else its first :data:`KEEP_START_CHARS` and last :data:`KEEP_END_CHARS` characters around
``…``; a PEM private-key block becomes its BEGIN line, ``\\n…redacted…\\n`` and its END line.
So no 8-character substring of the masked-away middle of a recognised secret survives (the
search layer relies on this). Spans are all found on the ORIGINAL text, so the result does not
depend on the order of the rules, and for the built-in rules the work is linear in ``len(t)``:
every pattern starts only where its token starts (never inside a longer run of the same
characters) and is built so that a failed attempt never rescans what a later attempt scans.

What is a credential span (the "families", all tested; docs/redaction.md states them in full):

* the VALUE of an assignment whose name is sensitive (:func:`is_sensitive_name`) in every
  common syntax of config files and code (env, JSON/YAML/TOML, ``os.environ['X'] = …``,
  ``$x = …``, Go/C#/Java/Kotlin/Python declarations, make's ``?= ::= :::= +=``, PHP ``.=``,
  CSV, ``setProperty("X", "…")``, YAML block scalars, XML elements, ``<add key value>``);
  a bare value runs to the next blank (a ``<``/``>``/quote inside does not end it);
* the VALUE of a sensitive CLI flag, the password of ``curl -u``/``--user``, of the short
  password flags of well-known commands (``mysql -p…``, ``sshpass -p``, ``redis-cli -a``:
  the table is :data:`openclaw_fts.redact.data.CLI_PASSWORD_COMMANDS`), of ``.netrc``,
  ``openssl … pass:`` and ``sqlplus user/…@db``;
* the credential of ``Authorization:`` with ANY scheme (the scheme word stays) and of a bare
  ``Bearer <18+ chars>``;
* the password of a URL's userinfo and the value of a sensitive URL query/fragment key;
* vendor-prefixed keys and whole-pattern tokens (the rule DATA, each rule with its sample, is
  :mod:`openclaw_fts.redact.data`), Discord bot tokens, 40-character AWS secret keys, PEM
  private-key blocks;
* tokens with no known prefix that look random (:func:`is_opaque_token`);
* quoted literals that look random (:func:`looks_random`) where code passes a key: an
  argument of a constructor or client call, or the value of a name that is not an id, hash or
  version, or a labelled argument naming the key of an SDK start-up call
  (``configure(withIdentifier: "…")``); and the values of weak names (``stripe_key``,
  :func:`is_weak_secret_name`) that look random, or are a UUID under a ``<word>_key`` name
  (Sauce Labs and Heroku keys are UUIDs). Checksums that are public by nature (go.sum ``h1:``,
  SRI, pip hashes), git SHAs, other UUIDs and the values of id/pagination fields are never
  masked by these rules;
* whatever a host adds with ``extra_patterns`` (group 1 if the pattern has a group, else the
  whole match). Host patterns run on Python's backtracking engine: their cost is the host's.

Passwords (:func:`is_password_name`, URL and ``curl`` passwords, auth-param lists) are masked
whole: ``***`` whatever their length.

Deliberately NOT masked (ordinary prose and code stay searchable): words such as "the token
bucket algorithm" or "password reset page" that are not followed by ``=``/``:`` and a value;
``name: value`` where the value is a plain word (``token: bucket``, ``apiKey: string``) — with a
colon, a value is masked only when it looks like a credential (it holds a digit or a symbol, or
has at least :data:`LOOSE_VALUE_MIN_CHARS` characters); references to a secret rather than the
secret (``$API_KEY``, ``${TOKEN}``, ``process.env.TOKEN``, ``api_key=api_key``, ``null``),
computations (``computeToken()``) and, in code, variables (``token = nextchar``); git
commit hashes, UUIDs and other bare hex strings without a vendor prefix or a sensitive name
(a hash is not a credential, and masking them would make commits unsearchable).

A hostile text with more than :data:`MAX_CANDIDATES_PER_RULE` candidates for one rule (plus
one per :data:`CHARS_PER_EXTRA_CANDIDATE` characters of the text) is
masked from the first candidate that rule did not examine to its end (:data:`OVERFLOW_MASK`):
bounded work, nothing leaks.

Known limits: a secret in free prose with no recognisable shape (``my password is hunter2``) is
not found; a quoted value is taken to its closing quote on the same line; a value containing
``…`` is cut there (that character marks an already-masked value, which keeps redaction
idempotent); an unterminated PEM block is masked from its BEGIN line to the end of its
base64-looking body.
"""

from __future__ import annotations

import bisect
import itertools
import re
import string
import sys
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Final

from . import data as rules
from .families import OVERFLOW as FAMILY_OVERFLOW
from .families import WHOLE as FAMILY_WHOLE
from .families import family_spans, is_lower_token, is_upper_token
from .families import lowered as lowered_text

__all__ = [
    "DEFAULT_REDACTOR",
    "KEEP_END_CHARS",
    "KEEP_START_CHARS",
    "MAX_CANDIDATES_PER_RULE",
    "MIN_PARTIAL_MASK_CHARS",
    "OVERFLOW_MASK",
    "Redactor",
    "field_mask",
    "is_opaque_token",
    "is_password_name",
    "is_sensitive_name",
    "is_weak_secret_name",
    "looks_random",
    "mask_fragments",
    "mask_secret",
    "redact_text",
]

# --------------------------------------------------------------------------- the mask itself

#: Secrets shorter than this become ``***`` (OpenClaw): keeping 6 + 4 characters of a short
#: secret would reveal most of it.
MIN_PARTIAL_MASK_CHARS: Final = 18
#: Characters kept at the start of a long secret (OpenClaw): enough to tell ``sk-ant`` from
#: ``sk-or-`` when debugging, too few to use.
KEEP_START_CHARS: Final = 6
#: Characters kept at the end of a long secret (OpenClaw): enough to tell two keys apart.
KEEP_END_CHARS: Final = 4
#: Joins the kept start and end of a long secret (one character, U+2026).
MASK_ELLIPSIS: Final = "…"
#: The whole mask of a short secret.
SHORT_SECRET_MASK: Final = "***"
#: Replaces the body of a PEM private-key block, between its BEGIN and END lines.
PEM_BODY_MASK: Final = "\n…redacted…\n"

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
#: A bare ``Bearer`` followed by a token this long is a credential (OpenClaw); shorter words
#: after "bearer" are prose ("the bearer of the note").
BARE_BEARER_MIN_CHARS: Final = 18
#: Longest user name of a URL userinfo looked at; bounds the work per ``://``.
MAX_URL_USER_CHARS: Final = 128
#: Longest URL password looked at (a longer one is not recognised); bounds the work per ``://``
#: and lets the password contain an unencoded ``@`` (the LAST ``@`` in reach ends it).
MAX_URL_PASSWORD_CHARS: Final = 256
#: Longest name of a URL query or fragment parameter looked at.
MAX_QUERY_NAME_CHARS: Final = 64
#: Longest label between ``BEGIN`` and ``PRIVATE KEY`` (``ENCRYPTED``, ``OPENSSH``, ``RSA`` …).
MAX_PEM_LABEL_CHARS: Final = 40

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

# Literal values that are never credentials (``token = None``, ``"password": null``). The short
# mask ``***`` is not one either (re-redacting a redacted text changes nothing).
_LITERAL_VALUES: Final = frozenset(
    {"false", "nil", "none", "null", "true", "undefined", "yes", "no", "on", "off"}
)
# ``:`` too: ``f(x, trio_token=None):`` ends a Python signature.
_TRAILING_PUNCTUATION: Final = ".,;:)]}\"'`"
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
_PLACEHOLDERS: Final = frozenset({"%s", "%d", "%r", "%x", "?", "<redacted>", "<token>", "salt"})
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
# Where a tool reads the secret from (``--passphrase file://…``, ``pass:env:VAR``).
_SOURCE_PREFIXES: Final = ("file:", "fileb:", "env:")
# Last words of a variable named for a password that a CamelCase value may end with; in an
# assignment WITHOUT blanks (``DB_PASSWORD=SuperPwd``, env and YAML) such a value is a password.
_PASSWORD_VALUE_SUFFIXES: Final = ("pwd", "pass", "password", "passwd")
# A format field with a conversion or a format spec (``{password!r}``, ``{token:>8}``), its
# closing brace possibly trimmed with the punctuation after it.
_FORMAT_FIELD_RE: Final = re.compile(r"\{[A-Za-z_][\w.]{0,64}(?:![rsa]|:[^{}\s]{0,32})\}?")
_BRACE_PLACEHOLDER_RE: Final = re.compile(r"\{[A-Za-z0-9_.]{0,64}\}")
# In code (``token = nextchar``, ``Token = Ignore + PlainToken``): blanks around ``=`` and a value
# that is an identifier without digits, or any identifier called or indexed, is an expression.
_CODE_VALUE_RE: Final = re.compile(
    r"[A-Za-z_][A-Za-z_.]*$|[A-Za-z_][A-Za-z0-9_.]*[(\[]|[a-z_][a-z0-9]*(?:_[a-z0-9]+)+$"
)
# The value of a ``*_KEY`` constant that names a key instead of holding one
# (``HOST_KEY = 'HTTP_HOST'``, ``SSE_KEY = 'fs.s3.enableServerSideEncryption'``, ``'-e'``).
_KEY_NAME_VALUE_RE: Final = re.compile(
    r"-{1,2}[A-Za-z][\w\-]*|_*[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+"
)
# Words that follow a flag in prose ("pass --token or --token-file"), never a secret.
_PROSE_WORDS: Final = frozenset(
    {"a", "an", "and", "as", "flag", "for", "if", "in", "is", "of", "option", "or", "the", "to",
     "with", "instead", "when"}
)  # fmt: skip
#: Words that start an expression rather than being a value (``token = await fetch()``): a
#: named value that is exactly one of them is read as code, never masked.
EXPRESSION_WORDS: Final = frozenset(
    {"await", "new", "lambda", "function", "async", "yield", "typeof", "not", "self", "this"}
)
#: A Windows environment reference (``%API_KEY%``, ``%ProgramFiles(x86)%``): a name, not
#: ``%`` around anything (``"%00000000%"`` or ``"%a9$…%"`` can be the secret itself).
_WINDOWS_REFERENCE_RE: Final = re.compile(r"%[A-Za-z_][A-Za-z0-9_()]*%")
_IDENTIFIER_PATH_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _trim_value(text: str, start: int, end: int) -> int:
    """End of the value ``text[start:end]`` without trailing sentence/bracket punctuation."""
    while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
        end -= 1
    return end


def _is_reference(value: str, name: str | None, literal: bool = False) -> bool:
    """Whether ``value`` names a secret instead of being one (``$TOKEN``, ``null``, …).

    ``literal``: the value sits where no variable or field name can stand (a URL's password,
    ``curl -u user:password``), so a name-shaped value (``db_password``) is the secret itself.
    """
    if value in _PLACEHOLDERS or _BRACE_PLACEHOLDER_RE.fullmatch(value):
        return True  # a format placeholder (``key=%s``, ``token={}``)
    if value.startswith(_TEMPLATE_PREFIXES) or value.startswith(_SOURCE_PREFIXES):
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
        lowered in _LITERAL_VALUES
        or (name is not None and value in EXPRESSION_WORDS)
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
            and last.lower().endswith(_PASSWORD_VALUE_SUFFIXES)
        ):
            return False  # ``DB_PASSWORD=SuperPwd``: a password that ends like a variable name
        return (
            "." in value or any(c.isupper() for c in last[1:]) or "_" in last
        ) and is_sensitive_name(last)
    return name is not None and _COMPUTED_VALUE_RE.match(value) is not None


#: Last words of the payment names (a card number, its CVC): their value is masked only when it
#: is made of digits (``cvc: 123``, ``card_number=4111 1111 …``); ``security_code="CVV2"`` is a
#: label.
_PAYMENT_WORDS: Final = frozenset({"cvc", "cvv", "code", "number"})
_PAYMENT_VALUE_RE: Final = re.compile(r"[0-9][0-9 \-]*")


def _is_payment_label(name: str, value: str) -> bool:
    """``security_code="CVV2"``: a payment name whose value is not made of digits."""
    words = _NAME_WORD_RE.findall(name)
    return (
        bool(words)
        and words[-1].lower() in _PAYMENT_WORDS
        and not is_password_name(name)
        and _PAYMENT_VALUE_RE.fullmatch(value) is None
    )


#: Words after ``password:`` that describe the field rather than being the password.
_DESCRIPTIVE_VALUES: Final = frozenset(
    {"string", "str", "text", "required", "optional", "none", "secret", "hidden", "masked",
     "redacted", "omitted", "empty", "blank", "unset", "yes", "no", "on", "off", "enabled",
     "disabled", "prompt", "ask", "env", "file", "see", "your", "the", "a", "an", "same",
     "boolean", "bool", "int", "integer", "object", "array", "secretstr", "password", "type"}
)  # fmt: skip


def _is_plain_password(text: str, value: str, end: int) -> bool:
    """``password: hunterpass`` (YAML): one plain word that ends its line is a password, unless
    it describes the field (``password: string``, ``password: required``)."""
    line_end = text.find("\n", end)
    rest = text[end : len(text) if line_end < 0 else line_end]
    return value.lower() not in _DESCRIPTIVE_VALUES and not rest.strip(" \t\r,}")


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
_INVISIBLE_RE: Final = re.compile(f"[{_INVISIBLE_CHARS}]")
# ``=``, ``:``, ``:=``, ``=>``, make's ``::=`` ``:::=`` ``?=`` ``+=``, PHP's ``.=``, and ``,``
# (``setProperty("NAME", "value")``, CSV ``name,value,``; checked further in Python).
# A blank before a quoted value is one too (``private_key 'v';``), if a ``;`` follows the value.
_SEPARATOR: Final = r"(?P<sep>:{1,3}=|[?+.]=|=>|=(?![=~])|:(?![:=])|,|[ \t](?=[ \t]{0,8}[\"']))"
# A type between a name and its ``=`` (Go ``var apiToken string =``, Python ``API_KEY: str =``).
_TYPE_ANNOTATION: Final = (
    r"(?:[ \t]{0,8}:[ \t]{0,8}(?:str|string|String|&str|SecretStr)(?=[ \t]{0,8}=)"
    r"|[ \t]{1,8}(?:string|String|str|SecretString)(?=[ \t]{0,8}=))?"
)

# The END of a sensitive-looking name and its separator: a name ending in key/token/secret/pwd
# or holding password/passwd/passphrase, an optional closing quote (``"apiKey":``), ``=``,
# ``:``, ``:=`` or ``=>``. The start of the name is then found on the reversed text
# (:data:`_REVERSED_NAME_RE`): anchoring on the keyword keeps the scan fast on prose, where
# almost every word starts a name but few names are sensitive.
_ASSIGN_TAIL_RE: Final = re.compile(
    # matched on the LOWER-CASED text (:meth:`_Scan.lowered`): a literal alternation runs ~8x
    # faster than case-insensitive groups, and lower-casing keeps every position
    r"(?P<kw>key|token|secret|sig|login|license|auth|credentials?|cv[cv]|code|jwt|number|pat|pwd"
    r"|crumb|cookie"
    r"|pass(?:word|wd|phrase)?"
    # the rest of a *PASSWORD* name, taken atomically: (?=(...))(?P=...) never backtracks
    rf"(?=(?P<rest>[{_NAME_CHARS}]{{0,{MAX_NAME_CHARS}}}))(?P=rest))"
    # an index or an encoding after the keyword (``secretA``, ``api_key_2``, ``secret_value``)
    r"(?P<suffix>[_.\-]?(?:value|val|string|str|b64|base64|hex|raw|plaintext|plain|bytes"
    r"|[0-9]{1,2}|[a-z])(?![a-z0-9]))?"
    r"(?P<quote>\\?[\"'])?(?:\[\]|\])?" + _TYPE_ANNOTATION.lower() + _BLANKS + _SEPARATOR
)
# A whole name, read backwards from its end: at most MAX_NAME_CHARS name characters, and the
# run must end there (a longer run is not a name).
_REVERSED_NAME_RE: Final = re.compile(rf"[{_NAME_CHARS}]{{1,{MAX_NAME_CHARS}}}(?![{_NAME_CHARS}])")
# A name right after one of these is not an assignment: a name after ``? & #`` is a URL
# parameter (its own rule). ``$NAME`` is one only with ``=`` (PHP, Perl, PowerShell:
# ``$password = "…"``); ``$NAME:`` and ``$NAME,`` are shell expansions in prose.
_NOT_BEFORE_NAME: Final = "?&#"

# ``--name=`` or ``--name <blanks>``; the ``--`` does not continue a word or a longer dash run.
# One dash also (``-storepass v``, ``-Password v``): then the name has 4+ characters and must
# be a password's (checked in Python), so ``-o file`` or ``-name x`` are never taken.
_CLI_FLAG_RE: Final = re.compile(
    r"-(?<![A-Za-z0-9_\-]-)(?P<dashes>-?)"
    rf"(?P<name>[A-Za-z][A-Za-z0-9_\-]{{0,{MAX_NAME_CHARS - 1}}})"
    r"(?P<sep>=|[ \t]+)"
)


def _command_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for rule in rules.CLI_PASSWORD_COMMANDS:
        for command in rule.commands:
            table[command] = rule.flags
    return table


_COMMAND_FLAGS: Final = _command_table()
# Command words as typed (lower case, or capitalised: ``PsExec``); one literal alternative per
# word and the word boundary checked after it, so the regex skips ahead to their first letters.
_PASSWORD_COMMAND_RE: Final = re.compile(
    r"(?P<cmd>"
    + "|".join(re.escape(w) for w in sorted(_COMMAND_FLAGS, key=len, reverse=True))
    + r")(?:\.exe)?(?![A-Za-z0-9_.\-])"
)
# Cheap test (``str.__contains__``) before looking for command words: a blank, a dash, then
# one of the password flags of :data:`rules.CLI_PASSWORD_COMMANDS`.
_SHORT_PASSWORD_FLAGS: Final = tuple(
    sorted({f" -{flag}" for rule in rules.CLI_PASSWORD_COMMANDS for flag in rule.flags})
)
#: A blank then one of those flags: where a password command's flag may start (one pass).
_PASSWORD_FLAG_START_RE: Final = re.compile(
    "[ \t]-[" + "".join(sorted({f[-1] for f in _SHORT_PASSWORD_FLAGS})) + "]"
)
#: A command word right after one of these is part of a longer word or path (checked in Python).
_COMMAND_GLUE: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/"
)
# A command ends at a line break, a pipe, ``;`` or ``&&``.
_COMMAND_END_RE: Final = re.compile(r"[\r\n|;]|&&")
# A short flag: ``-p`` alone or with its value glued (``-pSECRET``, ``-p'x'``).
_SHORT_FLAG_RE: Final = re.compile(r"(?<![^ \t])-(?P<flag>[A-Za-z])")
# ``openssl … -passin pass:SECRET`` (``env:``/``file:`` name where the secret is, not it).
_OPENSSL_PASS_RE: Final = re.compile(r"-pass(?:in|out|word)?[ \t]+pass:(?P<value>[^\s\"']+)")
# ``.netrc``: ``machine host login user password SECRET`` (on one line or several).
_NETRC_WORDS: Final = ("machine", "default")
_NETRC_RE: Final = re.compile(
    r"\b(?:machine[ \t]+\S{1,256}|default)(?:\s{1,64}(?:login|account|port)[ \t]+\S{1,256}){0,3}"
    r"\s{1,64}password[ \t]+(?P<value>\S{1,256})"
)
# ``sqlplus user/SECRET@db`` (Oracle tools, also ``rman``, ``expdp``/``impdp``).
_SLASH_PASSWORD_COMMANDS: Final = ("sqlplus", "rman", "expdp", "impdp", "sqlldr")
_SLASH_PASSWORD_RE: Final = re.compile(
    r"\b(?:sqlplus|rman|expdp|impdp|sqlldr)(?:[ \t]+-\w+)*[ \t]+\"?[A-Za-z0-9_$#]{1,64}"
    r"/(?P<value>[^\s@/\"]{1,256})(?=[@\s\"]|$)"
)
#: Longest command line (from its command word) searched for a password flag.
MAX_COMMAND_CHARS: Final = 1_000
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

_AUTH_SCHEMES: Final = ("bearer", "basic", "token", "bot", "apikey", "api-key", "sso-key")
#: Blank characters allowed around an ``Authorization`` header's ``:`` (also a JSON-escaped
#: line break or tab, as in a header logged inside a JSON string).
_AUTH_BLANKS: Final = r"(?:[ \t\r\n]|\\[rnt]){0,8}"
# ``Authorization`` (also ``Proxy-Authorization``, ``X-Authorization``, any case), found by its
# ``u``; then ANY scheme word (Digest, AWS4-HMAC-SHA256, Negotiate, Hawk …) and its
# credential. The credential is either one token68 (``Bearer abc…``) or, when the scheme is
# followed by ``name=``, the whole auth-param list up to the end of the line, an escaped line
# break, or ``; name=`` (``; status=401`` after it is kept).
_HEADER_FOLD: Final = r"(?:\r?\n|\\r\\n|\\n)(?:[ \t]|\\t)+"
_AUTHORIZATION_RE: Final = re.compile(
    # (after a JSON-escaped line break ``\nAuthorization`` the ``n`` is not part of a word)
    r"[Uu](?<=[Aa][Uu])(?:(?<![A-Za-z0-9_][Aa][Uu])|(?<=\\[nrt][Aa][Uu]))(?i:thorization)"
    r"\\?[\"']?"
    + _BLANKS
    + r"[:=]"
    + _AUTH_BLANKS
    + r"\\?[\"']?"
    + _BLANKS
    + r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+._~\-]{0,40})(?:[ \t]+|\\t|"
    + _HEADER_FOLD
    + r"))?"
    # auth-params: from the first ``name=`` (a damaged list may start with ``junk,,``) to the
    # end of the header, which may be folded onto indented lines (obs-fold)
    r"(?:(?P<params>[A-Za-z0-9_*,\-]{0,64}?[A-Za-z0-9_*\-]{1,64}[ \t]*=(?!=)"
    r"(?:[^\r\n;\\]|" + _HEADER_FOLD + r"|\\(?![rn])|;(?![ \t]*[A-Za-z_][\w\-]*=))*)"
    # ``! = @ ] |`` inside a token do not end it (Salesforce ``00D…!…``)
    r"|(?P<value>[A-Za-z0-9._~+/:@%!|\]=\-]+))"
)
# After a scheme word whose credential was not recognised (``AWS4-HMAC-SHA256 ***``, already
# masked): blanks, then more text on the line.
_SCHEME_WORD_RE: Final = re.compile(r"[ \t]+[^\s,;)}\]\"']")
_BARE_BEARER_RE: Final = re.compile(
    r"[Bb](?<![A-Za-z0-9_\-][Bb])(?i:earer)[ \t]+"
    rf"(?P<value>[A-Za-z0-9._~+/\-]{{{BARE_BEARER_MIN_CHARS},}}(?:[!|@=][A-Za-z0-9._~+/=\-]+)*=*)"
)

# ``scheme://user:password@``: the literal ``://`` first (fast scan), the scheme checked behind.
# The password runs to the LAST ``@`` of the authority (an ``@`` inside a password is not
# split on), which also keeps the rule idempotent: a masked ``p@s…word@`` is not re-masked.
_URL_USERINFO_RE: Final = re.compile(
    r"://(?<=[A-Za-z0-9]://)"
    rf"(?P<user>[^\s:/?#@\"'<>\[\]\\…]{{0,{MAX_URL_USER_CHARS}}}):"
    # a ``#`` inside is the password's, not a fragment: an ``@`` still follows (unencoded, as
    # people paste them)
    rf"(?P<value>[^\s/?\"'<>\\…]{{1,{MAX_URL_PASSWORD_CHARS}}})@(?![^\s/?@\"'<>\\]*@)"
)
# The name may be percent-encoded (``client%5Fsecret``); the value may be quoted.
_PARAM_NAME: Final = rf"[{_NAME_CHARS}%+{_INVISIBLE_CHARS}]{{1,{MAX_QUERY_NAME_CHARS}}}"
_PARAM_VALUE: Final = r"(?:\"(?P<quoted>[^\"&#\s…]+)\"|(?P<value>[^&#\s\"'<>`\\…]+))"
_URL_PARAM_RE: Final = re.compile(rf"[?&#](?P<name>{_PARAM_NAME})=" + _PARAM_VALUE)
# Comparisons with a literal (``if (api_key == "…")``, ``if ("…" !== password)``): found by
# their operator, then a sensitive name on one side and a quoted literal on the other.
#: Longest quoted literal compared with a sensitive name.
MAX_COMPARED_LITERAL_CHARS: Final = 256
_COMPARISON_RE: Final = re.compile(r"(?:==|!=)=?")
# A word of a sensitive name (:func:`is_sensitive_name` decides), looked for near ``==``.
_COMPARED_HINT_RE: Final = re.compile(r"key|token|secret|pass|pwd|auth|cred|jwt|cookie|sig")
_COMPARED_NAME_AFTER_RE: Final = re.compile(rf"[A-Za-z_][{_NAME_CHARS}]{{0,{MAX_NAME_CHARS - 1}}}")
_COMPARED_NAME_BEFORE_RE: Final = re.compile(
    rf"(?<![{_NAME_CHARS}])[A-Za-z_][{_NAME_CHARS}]{{0,{MAX_NAME_CHARS - 1}}}\Z"
)
_COMPARED_LITERAL_AFTER_RE: Final = re.compile(
    rf"(?P<q>[\"'`])(?P<value>[^\"'`\r\n]{{1,{MAX_COMPARED_LITERAL_CHARS}}})(?P=q)"
)
_COMPARED_LITERAL_BEFORE_RE: Final = re.compile(
    rf"(?P<q>[\"'`])(?P<value>[^\"'`\r\n]{{1,{MAX_COMPARED_LITERAL_CHARS}}})(?P=q)\Z"
)

#: Characters looked back over from a form's ``&name=`` for its first pair.
MAX_FORM_PAIR_CHARS: Final = 256
# The first pair of a form body (``sig=…&x-api-key=…``, ``key=…&safe=1``): the pair ending
# right before an ``&name=`` (found by :data:`_URL_PARAM_RE`), at the start of a line or after
# a blank, quote or opening bracket. A lone ``code=E1`` in prose is no form body and stays.
_FORM_FIRST_RE: Final = re.compile(
    rf"(?:^|(?<=[\s\"'`(\[{{:=]))(?P<name>{_PARAM_NAME})=" + _PARAM_VALUE + r"\Z",
    re.MULTILINE,
)
# An explicit body label (``body: code=…``, ``form_body=signature=…``), found on the
# lower-cased text, then the single pair after it.
_BODY_LABELS: Final = ("body", "form", "payload")
_BODY_LABEL_END_RE: Final = re.compile(r"[ \t]*[:=][ \t]*[\"'`]?")
_PAIR_RE: Final = re.compile(rf"(?P<name>{_PARAM_NAME})=" + _PARAM_VALUE)
# A password parameter whose value starts with ``#`` (unencoded, ``&password=#x…``): the
# parameter rule above takes ``#`` for the start of a fragment.
_URL_HASH_PASSWORD_RE: Final = re.compile(
    rf"[?&;](?P<name>[{_NAME_CHARS}]{{1,{MAX_QUERY_NAME_CHARS}}})=(?P<value>#[^&\s\"'<>`\\…]+)"
)
_PERCENT_RE: Final = re.compile(r"%[0-9A-Fa-f]{2}|\+")
# Words of a query parameter name that make it a secret wherever they stand in it
# (``__openclaw_mms_token_<id>``), unless the name ends in a harmless word (``token_count``).
_QUERY_SECRET_WORDS: Final = frozenset({"token", "secret", "password", "signature"})
_QUERY_HARMLESS_LAST: Final = frozenset({"count", "type", "kind", "name", "limit", "algorithm"})


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


def _query_name_is_secret(name: str) -> bool:
    if "%" in name or "+" in name:
        name = _decode_name(name)
    if _INVISIBLE_RE.search(name):
        name = _INVISIBLE_RE.sub("", name)
    if name.lower() in rules.SECRET_QUERY_NAMES or is_sensitive_name(name):
        return True
    words = [w.lower() for w in _NAME_WORD_RE.findall(name)]
    return (
        bool(words)
        and words[-1] not in _QUERY_HARMLESS_LAST
        and any(w in _QUERY_SECRET_WORDS for w in words)
    )


# XML: ``<apiToken>value</apiToken>`` (the value may span lines) and .NET config
# ``<add key="ApiKey" value="…"/>`` (also ``name="…" value="…"``).
MAX_XML_NAME_CHARS: Final = 64
#: Longest element text taken as a value (longer text is content, not a credential).
MAX_XML_VALUE_CHARS: Final = 4096
_XML_ELEMENT_RE: Final = re.compile(
    rf"<(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{{0,{MAX_XML_NAME_CHARS - 1}}})(?:[ \t][^<>]{{0,256}})?>"
    rf"(?P<value>[^<]{{1,{MAX_XML_VALUE_CHARS}}})</(?P=name)>"
)
_XML_VALUE_ATTRIBUTE_RE: Final = re.compile(r"value[ \t]*=[ \t]*[\"']")
_XML_KEY_VALUE_RE: Final = re.compile(
    r"(?:key(?<![A-Za-z0-9_]key)|name(?<![A-Za-z0-9_]name))[ \t]*=[ \t]*(?P<q>[\"'])"
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_.:\-]{{0,{MAX_XML_NAME_CHARS - 1}}})(?P=q)"
    r"[ \t]+value[ \t]*=[ \t]*(?P<q2>[\"'])(?P<value>[^\"'\r\n]*)(?P=q2)"
)
# ``curl -u user:password`` / ``--user user:password``.
# The user may be empty (``-u :password``) and the password quoted on its own
# (``--user name:'password'``).
_CLI_USER_RE: Final = re.compile(
    r"-(?<![A-Za-z0-9_\-]-)(?:u|-user)(?:[ \t]+|=)\\?[\"']?"
    rf"[^\s:\"'\\]{{0,{MAX_URL_USER_CHARS}}}:"
    rf"(?:(?P<q>[\"'])(?P<quoted>[^\"'\r\n]{{1,{MAX_URL_PASSWORD_CHARS}}})(?P=q)"
    rf"|(?P<value>[^\s\"'\\]{{1,{MAX_URL_PASSWORD_CHARS}}}))"
)

_PEM_LABEL: Final = rf"[ A-Z0-9]{{0,{MAX_PEM_LABEL_CHARS}}}PRIVATE KEY(?: BLOCK)?-----"
_PEM_BEGIN_RE: Final = re.compile(r"-----BEGIN" + _PEM_LABEL)
_PEM_END_RE: Final = re.compile(r"-----END" + _PEM_LABEL)
# The body: base64 lines and ``Proc-Type:``/``DEK-Info:`` headers, possibly JSON-escaped
# (``\n``). It is matched only up to the next ``-----`` (found with ``str.find``), so each
# character is looked at by one block at most.
_PEM_BODY_RE: Final = re.compile(r"[A-Za-z0-9+/=\s:,.\\\-]*")

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


_VENDOR_RE: Final = re.compile(
    _by_first_character(
        [_vendor_alternative(r.prefix, r.body, r.minimum) for r in rules.VENDOR_TOKENS]
    )
)
#: Characters looked back over to see whether a vendor prefix sits inside a checksum.
MAX_CHECKSUM_LOOKBACK: Final = 128
_B64_CHAR_SET: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/_-"
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
#: Up to this many runs, each run is searched alone (joining them costs more than it saves).
MAX_RUNS_SEARCHED_ALONE: Final = 8
# (the lookbehind: tried only where a run starts, not again at each character of a short word)
_RUN_RE: Final = re.compile(f"(?<![{_RUN_CLASS}])[{_RUN_CLASS}]{{{MIN_VENDOR_RUN_CHARS},}}")


_TOKEN_RULES: Final[tuple[tuple[str, re.Pattern[str], int], ...]] = tuple(
    (rule.anchor, re.compile(rule.pattern), rule.in_runs) for rule in rules.PATTERN_TOKENS
)

# --------------------------------------------------------------------------- opaque tokens
#
# A credential with no vendor prefix and no sensitive name around it (an AWS secret access key,
# a bare API key pasted into a message): a run of base64/base64url characters that is long,
# mixes upper case, lower case and digits, and changes character class so often that it cannot
# be an identifier (``getHTTPResponse2Code`` splits into 5 long words; a random key into dozens
# of 1-2 character pieces). Measured leak and false-positive rates: docs/security.md.

#: Shortest run examined (real keys: 32-64; shorter random runs are ids, not secrets).
MIN_OPAQUE_TOKEN_CHARS: Final = 24
#: Longest run examined: longer runs are data (base64 images, minified code), not keys.
MAX_OPAQUE_TOKEN_CHARS: Final = 512
#: A run is opaque when its mean "word" length (camelCase/digit pieces) is below this.
MAX_OPAQUE_MEAN_WORD_CHARS: Final = 2.6
#: ... and it holds at least this many distinct characters.
MIN_OPAQUE_DISTINCT_CHARS: Final = 14
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
# A public PEM block (certificate, public key): its base64 body is not a secret.
_PEM_PUBLIC_BEGIN_RE: Final = re.compile(r"-----BEGIN (?![A-Z ]{0,40}PRIVATE)[A-Z0-9 ]{1,40}-----")
_PIECE_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Discord bot token: 24-28 base64url characters, a 6-character timestamp, a 27+ HMAC.
_DISCORD_BOT_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_\-.])[A-Za-z0-9_\-]{24,28}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}"
)
MIN_DISCORD_BOT_CHARS: Final = 24 + 1 + 6 + 1 + 27


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
_CSS_COLOUR_RE: Final = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")
_SEGMENT_SPLIT_RE: Final = re.compile(r"[-_+]")
# Checksums that are public by nature: go.sum ``h1:``, SRI ``sha512-…`` (npm ``integrity``),
# pip ``sha256:…``, OpenShift-style ``sha256~``.
_PUBLIC_HASH_PREFIXES: Final = tuple(
    f"{algo}{sep}"
    for algo in ("h1", "sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b")
    for sep in (":", "-", "=")
)


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


# A run of token characters long enough for a nameless token (opaque, AWS secret, Discord bot
# token, quoted literal, prose key): without one, those rules cannot match.
_LONG_RUN_CHARS: Final = min(MIN_RANDOM_LITERAL_CHARS, MIN_OPAQUE_TOKEN_CHARS)


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
# In prose, a secret's word and then the key (``the ritekit secret 3f9a…``, ``my API key is
# q7vX…``): the word in its usual spellings, then an optional ``is``/``was``, then a token.
# Matched on the LOWER-CASED text (a secret's word in any case; the value is read from the
# original text).
_PROSE_KEY_WORDS: Final = ("secret", "key", "token", "password", "passwd", "apikey", "credential")
_PROSE_KEY_RE: Final = re.compile(
    r"(?P<word>" + _by_first_character(sorted(_PROSE_KEY_WORDS, key=len, reverse=True)) + r")s?"
    r"[ \t]{1,4}(?:(?:is|was|of|for|to|=|:)[ \t]{1,4})?"
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


def _is_uuid_key(name: str, value: str) -> bool:
    """A UUID under a weak name whose last word says key (``sauce_key: "<uuid>"``): Sauce Labs
    and Heroku keys are UUIDs (:data:`rules.UUID_KEY_LAST_WORDS`)."""
    words = [w.lower() for w in _NAME_WORD_RE.findall(name)]
    return (
        len(words) >= 2
        and words[-1] in rules.UUID_KEY_LAST_WORDS
        and _UUID_RE.fullmatch(value.strip("\"'")) is not None
    )


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


# The end of a name that may hold an id or a pagination token (``VersionId``, ``NextToken``,
# ``job_arn``), its separator, an opening quote; the name itself is checked in Python.
# Runs on the LOWER-CASED text: an alternation of literals, which the regex engine skips to
# (the mixed-case classes it replaces were tried at every position: 8x slower on 10 MB).
_PUBLIC_NAME_TAIL_RE: Final = re.compile(
    r"(?:ids?|token|arn|url|location|marker|cursor)"
    r"\\?[\"']?[ \t]{0,8}(?P<sep>=|:(?!//))[ \t]{0,8}\\?[\"']?"
)
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


# Telegram bot token ``123456789:AA…``, alone or as ``/bot<token>/`` in an API URL. Where it
# starts is checked in Python (a lookbehind in front would be tried at every position).
_TELEGRAM_RE: Final = re.compile(
    rf"[0-9]{{{TELEGRAM_BOT_ID_DIGITS[0]},{TELEGRAM_BOT_ID_DIGITS[1]}}}:"
    rf"{_TOKEN_CHARS}{{{MIN_TELEGRAM_SECRET_CHARS},}}"
)
_TOKEN_CHAR_SET: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
)


# --------------------------------------------------------------------------- spans

# A span is ``(start, end, kind)``: ``text[start:end]`` is a secret; ``kind`` is :data:`_PLAIN`,
# :data:`_OVERFLOW` (the rest of a text with too many candidates), or the index of the
# ``(BEGIN line, END line or None)`` of a PEM block in the scan's ``pems`` list.
_Span = tuple[int, int, int]
_PLAIN: Final = -1
_OVERFLOW: Final = -2
_FULL: Final = -3  # a password: masked whole (``***``) whatever its length

# YAML block scalar indicators (``token: |`` then the value on the next, indented line).
_BLOCK_INDICATORS: Final = frozenset({"|", ">", "|-", ">-", "|+", ">+"})
# A password word, blanks, a rule (``----``, ``->``, ``=>``), blanks, one word ending the line.
# Runs on the LOWER-CASED text (literal words first: the scan skips ahead to them); the
# character before the word is checked in Python.
_RULED_PASSWORD_RE: Final = re.compile(
    r"pass(?:word|wd|phrase)[ \t]{1,40}(?:-{2,8}>?|=>|->)[ \t]{1,40}"
    r"(?P<value>[^\s]{4,128})[ \t]*(?=\r?\n|$)"
)
_LINE_REST_RE: Final = re.compile(r"[ \t]*(?:\r?\n|$)")
# One token alone on an indented line (see :meth:`_Scan.continuation`).
_CONTINUATION_RE: Final = re.compile(
    r"[ \t]{1,64}(?P<value>(?![A-Za-z_][\w.\-]{0,64}=[^=])[^\s#\-\[{!|>&*][^\s]{0,4095})"
    r"(?<!:)[ \t]*(?:\r?\n|$)"
)
# A type path before a name (``AWS::IAM::``, ``Foo::Bar::``): a C++/CloudFormation type.
_TYPE_PATH_RE: Final = re.compile(r"(?<![A-Za-z0-9_:])[A-Z][A-Za-z0-9_]*::(?:[A-Za-z0-9_]+::)*$")
# A YAML tag standing for the value's type (``!!binary``, ``!!str``) or a function (``!Ref``).
_YAML_TAG_RE: Final = re.compile(r"!!?[A-Za-z][\w\-]{0,32}")
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
#: Replaces the tail of a text that exceeded :data:`MAX_CANDIDATES_PER_RULE`.
OVERFLOW_MASK: Final = "…(redacted: too many credential-like values)…"


def mask_secret(secret: str) -> str:
    """``***`` for a secret shorter than 18 characters, else first 6 + ``…`` + last 4."""
    if len(secret) < MIN_PARTIAL_MASK_CHARS:
        return SHORT_SECRET_MASK
    return f"{secret[:KEEP_START_CHARS]}{MASK_ELLIPSIS}{secret[-KEEP_END_CHARS:]}"


def mask_fragments(masked: str) -> list[tuple[int, int]]:
    """Where the characters a partial mask keeps of a secret may be in an already masked
    text, as ``(start, end)`` offsets: for every :data:`MASK_ELLIPSIS` between two non-blank
    characters, the :data:`KEEP_START_CHARS` before it and the :data:`KEEP_END_CHARS` after
    it. An ellipsis a person typed between two words (``wait…what``) counts too, so the spans
    cover every kept fragment, and sometimes a little more; the ellipses of
    :data:`PEM_BODY_MASK` stand between line breaks and keep nothing."""
    spans: list[tuple[int, int]] = []
    at = masked.find(MASK_ELLIPSIS)
    while at != -1:
        after = at + len(MASK_ELLIPSIS)
        between_words = (
            at > 0
            and after < len(masked)
            and not masked[at - 1].isspace()
            and not masked[after].isspace()
        )
        if between_words:
            spans.append((max(0, at - KEEP_START_CHARS), at))
            spans.append((after, min(len(masked), after + KEEP_END_CHARS)))
        at = masked.find(MASK_ELLIPSIS, after)
    return spans


class _Scan:
    """The credential spans of one text, rule by rule."""

    __slots__ = (
        "_joined",
        "_longest_run",
        "_lowered",
        "_reversed",
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
        self._runs: dict[int, list[tuple[int, int]]] | None = None  # found on first use
        self._lowered: str | None = None  # found on first use
        self._reversed: str | None = None  # found on first use
        self._joined: dict[int, tuple[str, list[int], list[int]]] | None = None  # on first use
        self._longest_run = 0
        # candidates one rule may examine: a budget for the text and a share of its length, so
        # a long log with a ``key=`` on every line is examined whole, a hostile text is not
        self.budget = MAX_CANDIDATES_PER_RULE + len(text) // CHARS_PER_EXTRA_CANDIDATE

    def _over_budget(self, position: int) -> None:
        if position < self.cutoff:
            self.cutoff = position

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

    def _statement(self, name_start: int, value_end: int) -> bool:
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

    def assignments(self) -> None:
        text = self.text
        size = len(text)
        reversed_text = ""
        budget = self.budget
        lowered = self.lowered()
        search = _ASSIGN_TAIL_RE.search
        pos = 0
        while (m := search(lowered, pos)) is not None:
            # the next search starts after this name, or after the value taken for it (a
            # ``name=`` inside a value is part of that value): never one match per character
            # of a long value (the pattern never matches empty)
            pos = m.end()
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            name_end = (
                m.start("quote")
                if m.group("quote")
                else m.end("suffix")
                if m.group("suffix")
                else m.end("kw")
            )
            if not reversed_text:
                reversed_text = self.reversed()
            run = _REVERSED_NAME_RE.match(reversed_text, size - name_end)
            if run is None:
                continue  # a run of name characters longer than MAX_NAME_CHARS
            name_start = name_end - run.end() + run.start()
            if text.startswith("-D", name_start) and name_end - name_start > 2:
                name_start += 2  # a Java system property: ``-Dsonar.password=…``
            first = text[name_start]
            sep = m.group("sep")
            before = text[name_start - 1] if name_start else ""
            if not (first.isalpha() or first == "_") or (
                (before and before in _NOT_BEFORE_NAME)
                or (before == "$" and sep in (":", ","))
                or (before == "=" and sep == ",")  # ``--tags Status=Secret,Team=x``
                or (  # ``"AWS::IAM::AccessKey": …`` (a type), not ``service::api_key: …``
                    text.startswith("::", name_start - 2)
                    and _TYPE_PATH_RE.search(text, max(0, name_start - MAX_NAME_CHARS), name_start)
                    is not None
                )
            ):
                continue
            name = text[name_start:name_end]
            if "%" in name:
                name = _decode_name(name)
            if text.startswith("//", name_start - 2):
                continue  # ``postgres://secret:pw@`` is a URL user (its own rule)
            # a connection string's ``;Pwd=``: a password (alone, ``pwd`` is the shell's
            # current directory)
            connection = before == ";" and name.lower() in rules.CONNECTION_PASSWORD_NAMES
            # a weak name (``stripe_key``, ``sonar.login``) holds a secret only when its value
            # looks randomly generated
            weak = not connection and not is_sensitive_name(name)
            if weak and (sep == "," or not is_weak_secret_name(name)):
                continue  # (a weak name in CSV: ``LICENSE,sha256=…`` is a pip RECORD line)
            whole = connection or is_password_name(name)
            found = self.value_at(m.end(), whole)
            if found is None and sep in ("=", ":"):
                found = self.continuation(m.end(), whole)  # ``api_key =`` then the value, indented
            if found is None:
                continue
            start, end, quoted = found
            if sep == "," and text.startswith(_PUBLIC_HASH_PREFIXES, start):
                continue  # ``…/password.py,sha256=…,7821``: a pip RECORD line
            if sep == ",":
                # ``setProperty("NAME", "value")`` (a quoted name, a quoted value) or CSV
                # ``NAME,value,`` (no blank after the comma, the value ends at a comma)
                # (a bounded look back: the slice must not grow with the text)
                lo = max(0, name_start - 2 - MAX_SEPARATOR_BLANKS)
                opener = text[lo : name_start - 1].rstrip(" \t")[-1:]
                if (
                    m.group("quote")
                    and before
                    and before in "\"'"
                    and quoted
                    and (
                        opener == "("
                        # after a ``,`` only a random-looking value: ``"password", "repository"``
                        # is a list of names
                        or (opener == "," and looks_random(text[start:end].strip("\"'"), True))
                    )
                ):
                    # ``setProperty("NAME", "value")``, Gradle's
                    # ``buildConfigField 'String', 'API_KEY', '"value"'``
                    if any(c.isspace() for c in text[start:end]):
                        continue  # ``namedtuple('Token', 'type string start')``: a word list
                elif (
                    m.group("quote")
                    or quoted
                    or start != m.end()
                    or text[end : end + 1] not in (",", "\n", "\r", "")
                ):
                    continue
            if sep in (" ", "\t") and not (
                quoted and (text.startswith(";", end + 1) or self._statement(name_start, end + 1))
            ):
                continue  # ``name "value";`` (C, Java) or alone on its line (Gradle, Ruby DSLs)
            value = text[start:end]
            if sep == ":" and not quoted and _YAML_TAG_RE.fullmatch(value):
                if not value.startswith("!!"):
                    continue  # ``!Ref DbPassword``, ``!secret db_password``: a reference
                again = self.value_at(end, whole)  # ``!!binary <base64>``: the value follows
                if again is None or "\n" in text[end : again[0]]:
                    continue
                start, end, quoted = again
                value = text[start:end]
            pos = max(pos, end)  # a ``name=`` inside this value is part of it
            if sep == ":" and not quoted and value in _BLOCK_INDICATORS:
                block = self.block_scalar(end)
                if block is not None and (whole or "…" not in text[block[0] : block[1]]):
                    self.add(block[0], block[1], whole)
                continue
            if weak and len(value) < MIN_RANDOM_LITERAL_CHARS:
                continue  # too short to look random (``key=value``): skips the checks below
            if not value.strip() or _is_reference(value, name):
                continue
            if not whole and _CSS_COLOUR_RE.fullmatch(value.strip("\"'")):
                continue  # Pygments' ``Token: "#cccccc"``: a colour (a password may be one)
            if weak:
                if looks_random(value, hex_ok=True) or _is_uuid_key(name, value):
                    self.add(start, end)
                continue
            if (
                quoted
                and not whole
                and name[-3:].lower() == "key"
                and _KEY_NAME_VALUE_RE.fullmatch(value) is not None
                and not looks_random(value)
            ):
                continue  # ``HOST_KEY = 'HTTP_HOST'``: the name of a key
            if _is_payment_label(name, value):
                continue
            if (
                sep in (":", ",")
                and not quoted
                and not _looks_like_credential(value)
                and not (sep == ":" and whole and _is_plain_password(text, value, end))
            ):
                continue
            if (
                not quoted
                and sep in ("=", "+=", ":=")
                and text[m.start("sep") - 1 : m.start("sep")] in (" ", "\t")
                and _CODE_VALUE_RE.match(value) is not None
            ):
                continue  # code: ``token = nextchar``, ``passwd = getpass(prompt)``
            if len(value) == 1 and not whole:
                continue  # ``HAS_KEY: 1``: one character is no secret
            self.add(start, end, whole)

    def markup(self) -> None:
        text = self.text
        budget = self.budget
        patterns = [_XML_ELEMENT_RE] if "<" in text else []
        if _XML_VALUE_ATTRIBUTE_RE.search(text) is not None:
            patterns.append(_XML_KEY_VALUE_RE)
        for pattern in patterns:
            for m in pattern.finditer(text):
                budget -= 1
                if budget < 0:
                    self._over_budget(m.start())
                    return
                name = m.group("name")
                if not is_sensitive_name(name):
                    continue
                start, end = m.start("value"), m.end("value")
                while start < end and text[start].isspace():
                    start += 1
                while end > start and text[end - 1].isspace():
                    end -= 1
                whole = is_password_name(name)
                if "…" in text[start:end] and not whole:
                    continue  # already masked (keeps redaction idempotent)
                # (markup text and a quoted attribute are literals: never a variable's name)
                if end > start and not _is_reference(text[start:end], name, literal=True):
                    self.add(start, end, whole)

    def cli_flags(self) -> None:
        text = self.text
        budget = self.budget
        for m in _CLI_FLAG_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                break
            name = m.group("name")
            if not is_sensitive_name(name) or (
                not m.group("dashes") and (len(name) < 4 or not is_password_name(name))
            ):
                continue
            whole = is_password_name(name)
            if m.group("sep") == "=" and text[m.end() : m.end() + 1] in (" ", "\t", ""):
                continue  # "the option --passphrase= can be empty"
            found = self.value_at(m.end(), whole)
            if found is None:
                continue
            start, end, quoted = found
            value = text[start:end]
            if not value.strip() or (not quoted and value.startswith("-")):
                continue  # ``--password-stdin --user x``: the next flag is not the value
            if not quoted and value.lower() in _PROSE_WORDS:
                continue  # "use either --password or --password-file"
            if not _is_reference(value, None):  # a flag's value is never a variable name
                self.add(start, end, whole)
        if "-u" in text:
            self._values(_CLI_USER_RE, whole=True, literal=True)
        if "pass:" in text:
            self._values(_OPENSSL_PASS_RE, whole=True)
        if "password" in text:
            self._values_at_words(_NETRC_WORDS, _NETRC_RE)
        if "/" in text:
            self._values_at_words(_SLASH_PASSWORD_COMMANDS, _SLASH_PASSWORD_RE)
        if any(flag in text for flag in _SHORT_PASSWORD_FLAGS):
            self.command_passwords()

    def command_passwords(self) -> None:
        """``mysql -pSECRET``, ``sshpass -p x``, ``redis-cli -a x`` … (the command decides which
        short flag is a password): the value of the first such flag after the command word."""
        text = self.text
        budget = self.budget
        for m in self._password_command_words():
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            if m.start() and text[m.start() - 1] in _COMMAND_GLUE:
                continue
            flags = _COMMAND_FLAGS[m.group("cmd").lower()]
            stop = _COMMAND_END_RE.search(text, m.end(), m.end() + MAX_COMMAND_CHARS)
            limit = (
                stop.start() if stop is not None else min(len(text), m.end() + MAX_COMMAND_CHARS)
            )
            for flag in _SHORT_FLAG_RE.finditer(text, m.end(), limit):
                if flag.group("flag") not in flags:
                    continue
                pos = flag.end()
                found = self.value_at(pos, whole=True) if pos < limit else None
                if found is None:
                    continue
                start, end, quoted = found
                value = text[start:end]
                if not value.strip() or (not quoted and value.startswith("-")):
                    continue
                if not _is_reference(value, None):
                    self.add(start, end, whole=True)
                break

    def _password_command_words(self) -> Iterator[re.Match[str]]:
        """The command words (on the lower-cased text) that a password flag follows on the same
        line within :data:`MAX_COMMAND_CHARS`: the word regex runs only in the windows before
        the flags (found with ``str.find``), not over the whole text."""
        text = self.text
        lowered = self.lowered()
        window_end = -1
        window_start = 0
        for flag in _PASSWORD_FLAG_START_RE.finditer(text):
            flag_pos = flag.start()
            line_start = text.rfind("\n", max(0, flag_pos - MAX_COMMAND_CHARS), flag_pos) + 1
            start = max(line_start, flag_pos - MAX_COMMAND_CHARS)
            if start <= window_end:
                window_end = flag_pos
                continue
            if window_end >= 0:
                yield from _PASSWORD_COMMAND_RE.finditer(lowered, window_start, window_end)
            window_start, window_end = start, flag_pos
        if window_end >= 0:
            yield from _PASSWORD_COMMAND_RE.finditer(lowered, window_start, window_end)

    def _values_at_words(self, words: tuple[str, ...], pattern: re.Pattern[str]) -> None:
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
                        self._over_budget(at)
                        return
                    m = pattern.match(text, at)
                    if m is not None:
                        self.value(m.start("value"), m.end("value"), whole=True)
                at = text.find(word, at + len(word))

    def _values(self, pattern: re.Pattern[str], whole: bool = False, literal: bool = False) -> None:
        """Every ``value`` (or ``quoted``) group of ``pattern`` (``literal``: see
        :func:`_is_reference`)."""
        budget = self.budget
        quoted = "quoted" in pattern.groupindex
        for m in pattern.finditer(self.text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            if quoted and m.start("quoted") >= 0:
                self.add(m.start("quoted"), m.end("quoted"), whole)
            else:
                self.value(m.start("value"), m.end("value"), whole=whole, literal=literal)

    def headers(self) -> None:
        text = self.text
        budget = self.budget
        for m in _AUTHORIZATION_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                break
            scheme = m.group("scheme")
            if m.group("params") is not None:
                start, end = m.start("params"), m.end("params")
                while end > start and text[end - 1] in " \t":
                    end -= 1
                opening = text[m.start() - 2] if m.start() >= 2 else ""
                if opening in "\"'" and opening and text[end - 1] == opening:
                    end -= 1  # the quote around a whole header (``-H 'Authorization: …'``)
                self.add(start, end, whole=True)  # many small fields: *** for the lot
                continue
            value = m.group("value")
            if text.startswith("(", m.end("value")):
                continue  # a call: ``Authorization: messages.Authorization()``
            if scheme is None and (
                value.lower() in _AUTH_SCHEMES
                or not _looks_like_credential(value)
                or _SCHEME_WORD_RE.match(text, m.end("value")) is not None
            ):
                continue  # "Authorization: Bearer $TOKEN", "authorization: required"
            if (
                scheme is not None
                and scheme.lower() not in _AUTH_SCHEMES
                and not _looks_like_credential(value)
            ):
                continue  # "authorization: required for admin routes"
            self.value(m.start("value"), m.end("value"))
        if "earer" in text:
            self._values(_BARE_BEARER_RE)

    def urls(self) -> None:
        if "://" in self.text:
            self._values(_URL_USERINFO_RE, whole=True, literal=True)
        if "=#" in self.text:
            for m in _URL_HASH_PASSWORD_RE.finditer(self.text):
                if is_password_name(_decode_name(m.group("name"))):
                    self.add(m.start("value"), m.end("value"), whole=True)
        budget = self.budget
        text = self.text
        pairs: list[re.Match[str]] = []
        for m in _URL_PARAM_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            pairs.append(m)
            if text[m.start()] == "&":  # a form or query: its first pair, if not after ``?``
                back = max(0, m.start() - MAX_FORM_PAIR_CHARS)
                first = _FORM_FIRST_RE.search(text, back, m.start())
                if first is not None:
                    pairs.append(first)
        lowered = None
        for word in _BODY_LABELS:
            if word not in text and word.capitalize() not in text and word.upper() not in text:
                continue
            lowered = lowered or self.lowered()
            at = lowered.find(word)
            while at >= 0:
                budget -= 1
                if budget < 0:
                    self._over_budget(at)
                    return
                if at == 0 or not lowered[at - 1].isalnum():  # (``form_body`` is one)
                    label = _BODY_LABEL_END_RE.match(text, at + len(word))
                    pair = _PAIR_RE.match(text, label.end()) if label else None
                    if pair is not None:
                        pairs.append(pair)
                at = lowered.find(word, at + len(word))
        for m in pairs:
            name = m.group("name")
            if _query_name_is_secret(name):
                clean = _INVISIBLE_RE.sub("", _decode_name(name))
                if m.start("quoted") >= 0:
                    self.add(m.start("quoted"), m.end("quoted"), is_password_name(clean))
                else:
                    self.value(m.start("value"), m.end("value"), clean, is_password_name(clean))

    def comparisons(self) -> None:
        """A quoted literal compared with a sensitive name, either side of ``==``/``!=``."""
        text = self.text
        lowered = self.lowered()
        budget = self.budget
        for m in _COMPARISON_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            near = lowered[max(0, m.start() - MAX_NAME_CHARS) : m.end() + MAX_NAME_CHARS]
            if _COMPARED_HINT_RE.search(near) is None:
                continue  # no sensitive word on either side: most ``==`` in code
            left, right = m.start(), m.end()
            while left > 0 and text[left - 1] in " \t":
                left -= 1
            while right < len(text) and text[right] in " \t":
                right += 1
            back = max(0, left - MAX_COMPARED_LITERAL_CHARS - 2)
            name = _COMPARED_NAME_BEFORE_RE.search(text, max(0, left - MAX_NAME_CHARS), left)
            literal = _COMPARED_LITERAL_AFTER_RE.match(text, right)
            if name is None or literal is None:
                name = _COMPARED_NAME_AFTER_RE.match(text, right)
                literal = _COMPARED_LITERAL_BEFORE_RE.search(text, back, left)
            if name is None or literal is None or not is_sensitive_name(name.group()):
                continue
            value = literal.group("value")
            if not value.strip() or not any(c.isalnum() for c in value):
                continue  # ``password == ""``, ``token != '-'``
            whole = is_password_name(name.group())
            self.value(literal.start("value"), literal.end("value"), name.group(), whole, True)

    def pem_blocks(self) -> None:
        text = self.text
        pos = 0
        budget = self.budget
        while (m := _PEM_BEGIN_RE.search(text, pos)) is not None:
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            body_start = m.end()
            dashes = text.find("-----", body_start)
            if dashes < 0:
                dashes = len(text)
            body = _PEM_BODY_RE.match(text, body_start, dashes)
            stop = body.end() if body is not None else body_start
            closing = _PEM_END_RE.match(text, dashes) if stop == dashes else None
            if closing is not None:
                self.spans.append((m.start(), closing.end(), len(self.pems)))
                self.pems.append((m.group(), closing.group()))
                pos = closing.end()
                continue
            pos = max(stop, body_start)
            while stop > body_start:  # drop trailing blanks and escaped line breaks
                if text[stop - 1].isspace():
                    stop -= 1
                elif stop - 2 >= body_start and text[stop - 2 : stop] in ("\\n", "\\r"):
                    stop -= 2
                else:
                    break
            if stop > body_start:  # unterminated, with a body (a blank one hides nothing)
                self.spans.append((m.start(), stop, len(self.pems)))
                self.pems.append((m.group(), None))

    def reversed(self) -> str:
        """The text reversed (names are read backwards from their end); computed once."""
        if self._reversed is None:
            self._reversed = self.text[::-1]
        return self._reversed

    def lowered(self) -> str:
        """The text in lower case, character for character (:func:`.families.lowered`).
        Computed once per text: several rules read it."""
        if self._lowered is None:
            self._lowered = lowered_text(self.text)
        return self._lowered

    def runs(self, minimum: int = MIN_VENDOR_RUN_CHARS) -> list[tuple[int, int]]:
        """``(start, end)`` of the runs of token characters at least ``minimum`` long (at
        least :data:`MIN_VENDOR_RUN_CHARS`), in text order. At most one run per
        :data:`MIN_VENDOR_RUN_CHARS` + 1 characters, so looking at each run costs linear time;
        the list for a longer minimum is filtered once from the closest shorter one and kept
        (the rules ask for a handful of minimums)."""
        if self._runs is None:
            spans = [m.span() for m in _RUN_RE.finditer(self.text)]
            self._longest_run = max([end - start for start, end in spans]) if spans else 0
            self._runs = {MIN_VENDOR_RUN_CHARS: spans}
        cache = self._runs
        if minimum > self._longest_run:
            return []  # (most short texts: no list built per minimum)
        if minimum <= MIN_VENDOR_RUN_CHARS:
            return cache[MIN_VENDOR_RUN_CHARS]
        found = cache.get(minimum)
        if found is None:
            base = max(m for m in cache if m <= minimum)
            found = cache[minimum] = [(s, e) for s, e in cache[base] if e - s >= minimum]
        return found

    def has_run(self, minimum: int) -> bool:
        """Whether one run of token characters is at least ``minimum`` long."""
        self.runs()
        return self._longest_run >= minimum

    def _in_runs(
        self, pattern: re.Pattern[str], minimum: int = MIN_VENDOR_RUN_CHARS
    ) -> Iterator[tuple[int, re.Match[str]]]:
        """Every match of ``pattern`` (whose matches take run characters only, so each lies
        inside one run of token characters at least ``minimum`` long), as ``(offset, match)``:
        the match's positions plus ``offset`` are its positions in the text.

        A few runs are each searched in the text itself (offset 0). More are searched in ONE
        call over :meth:`joined`, the runs side by side, each with the character before and
        after it (what a lookbehind or lookahead of the pattern sees, so the matches are the
        same): the prose between the runs is never scanned and the regex is called once, not
        once per run (the vendor scan of a 10 MB message: ~0.5 s in regions of runs, ~0.2 s
        over the joined runs)."""
        text = self.text
        # two lists of runs serve every minimum: the runs of a vendor token and the long runs
        # of a nameless token (a pattern longer than the list's minimum still only matches in
        # runs long enough; filtering and joining the runs per minimum cost more than it saved)
        view = _LONG_RUN_CHARS if minimum >= _LONG_RUN_CHARS else MIN_VENDOR_RUN_CHARS
        runs = self.runs(view)
        if len(runs) <= MAX_RUNS_SEARCHED_ALONE:
            for start, end in runs:
                for m in pattern.finditer(text, start, end):
                    yield 0, m
            return
        joined, starts, offsets = self.joined(view)
        for m in pattern.finditer(joined):
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

    def tokens(self) -> None:
        text = self.text
        spans = self.spans
        budget = self.budget
        for offset, m in self._in_runs(_VENDOR_RE):
            budget -= 1
            start = m.start() + offset
            if budget < 0:
                self._over_budget(start)
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
        budget = self.budget
        self.runs()
        longest = self._longest_run
        for anchor, pattern, in_runs in _TOKEN_RULES:
            if (anchor and anchor not in text) or in_runs > longest:
                continue  # (a short text has no run long enough: no generator is built)
            found = (
                self._in_runs(pattern, in_runs)
                if in_runs
                else ((0, m) for m in pattern.finditer(text))
            )
            for offset, m in found:
                budget -= 1
                if budget < 0:
                    self._over_budget(m.start() + offset)
                    break
                spans.append((m.start("value") + offset, m.end("value") + offset, _PLAIN))
        budget = self.budget
        telegram = (
            self._in_runs(_TELEGRAM_RE, MIN_TELEGRAM_BOT_CHARS)
            if longest >= (MIN_TELEGRAM_BOT_CHARS)
            else ()
        )
        for offset, m in telegram:
            budget -= 1
            start = m.start() + offset
            if budget < 0:
                self._over_budget(start)
                return
            if start and text[start - 1] == ":":
                continue
            before = start - 3 if start >= 3 and text.startswith("bot", start - 3) else start
            if before and (text[before - 1] in _TOKEN_CHAR_SET or text[before - 1] == ":"):
                continue
            spans.append((start, m.end() + offset, _PLAIN))

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

    def opaque(self) -> None:
        text = self.text
        spans = self.spans
        public = self.public_pem_ranges() if "-----BEGIN" in text else []
        budget = self.budget
        for pattern, minimum in (
            (_OPAQUE_RE, MIN_OPAQUE_TOKEN_CHARS),
            (_AWS_SECRET_RE, AWS_SECRET_KEY_CHARS),
        ):
            for offset, m in self._in_runs(pattern, minimum):
                budget -= 1
                start = m.start() + offset
                if budget < 0:
                    self._over_budget(start)
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
                if text.endswith("base64,", 0, start) or text.endswith(
                    _PUBLIC_HASH_PREFIXES, 0, start
                ):
                    continue  # a data URL's payload is data; a go.sum ``h1:`` hash is public
                if any(lo <= start < hi for lo, hi in public) or self._in_public(start):
                    continue
                if token.startswith(_PUBLIC_HASH_PREFIXES) or _is_public_run(text, start, token):
                    continue  # SRI ``sha512-…`` (npm ``integrity``): a public checksum
                spans.append((start, start + len(token), _PLAIN))
        for offset, m in self._in_runs(_DISCORD_BOT_RE, MIN_DISCORD_BOT_CHARS):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start() + offset)
                break
            spans.append((m.start() + offset, m.end() + offset, _PLAIN))

    def public_values(self) -> None:
        """The values of names that hold ids or pagination tokens, never secrets."""
        text = self.text
        size = len(text)
        reversed_text = ""
        budget = self.budget
        self.public = public = []
        for m in _PUBLIC_NAME_TAIL_RE.finditer(self.lowered()):
            budget -= 1
            if budget < 0:
                return  # nothing is masked less for it: the ranges only spare values
            if not reversed_text:
                reversed_text = self.reversed()
            name_end = m.start("sep")
            while name_end > 0 and text[name_end - 1] in " \t\"'\\":
                name_end -= 1
            run = _REVERSED_NAME_RE.match(reversed_text, size - name_end)
            if run is None:
                continue
            words = [
                w.lower()
                for w in _NAME_WORD_RE.findall(text[name_end - run.end() + run.start() : name_end])
            ]
            if not words:
                continue
            last, previous = words[-1], (words[-2] if len(words) > 1 else "")
            if last in rules.PUBLIC_NAME_LAST_WORDS or (
                last == "token" and previous in rules.HARMLESS_TOKEN_PREFIXES
            ):
                value = _PUBLIC_VALUE_RE.match(text, m.end())
                if value is not None:
                    public.append((value.start(), value.end()))

    def _in_public(self, position: int) -> bool:
        if self.public is None:
            self.public_values()
        public = self.public
        assert public is not None
        if not public:
            return False
        i = bisect.bisect_right(public, (position, sys.maxsize)) - 1
        return i >= 0 and public[i][0] <= position < public[i][1]

    def code_literals(self) -> None:
        """Quoted literals with no sensitive name that look random, where code passes a key:
        an argument of a constructor or client call (``new Client('…')``, ``NewClient("…")``)
        or the value of a name that is not an id, hash or version (``key = "…"``)."""
        text = self.text
        budget = self.budget
        for m in _QUOTED_LITERAL_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            value = m.group("value")
            if not looks_random(value, hex_ok=True) or self._in_public(m.start("value")):
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
            self.add(m.start("value"), m.end("value"))

    def prose_keys(self) -> None:
        """``the ritekit secret 3f9a…``: a secret's word, then a token that looks random."""
        text = self.text
        budget = self.budget
        for m in _PROSE_KEY_RE.finditer(self.lowered()):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            start = m.start()
            if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue  # inside a word (``monkey``, ``api_token``: a name, its own rules)
            value = text[m.start("value") : m.end("value")]
            # hex after "key" is a key id or a fingerprint (``signing key 1988…BE03``)
            hex_ok = m.group("word") != "key"
            if looks_random(value, hex_ok=hex_ok) and not _is_public_run(
                text, m.start("value"), value
            ):
                self.add(m.start("value"), m.end("value"))

    def ruled_passwords(self) -> None:
        """``Ldap password ---- S3cret!x``: a password word, a rule of dashes or arrows, and one
        word that ends its line and holds a digit or a symbol (a table row, a note)."""
        budget = self.budget
        text = self.text
        for m in _RULED_PASSWORD_RE.finditer(self.lowered()):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue
            value = text[m.start("value") : m.end("value")]
            if not value.isalpha() and not _is_reference(value, None):
                self.add(m.start("value"), m.end("value"), whole=True)

    def extra(self, patterns: tuple[re.Pattern[str], ...]) -> None:
        for pattern in patterns:
            budget = self.budget
            for m in pattern.finditer(self.text):
                budget -= 1
                if budget < 0:
                    self._over_budget(m.start())
                    break
                if pattern.groups and m.start(1) >= 0:
                    self.spans.append((m.start(1), m.end(1), _PLAIN))
                else:
                    self.spans.append((m.start(), m.end(), _PLAIN))

    def merged(self) -> list[tuple[int, int, list[int]]]:
        """Spans sorted and merged: ``(start, end, kinds other than plain)``.

        The kept start (before ``…``) or end (after ``…``) of an already masked secret is not
        a secret: skipping it keeps redaction idempotent.
        """
        text = self.text
        spans = self.spans
        if self.cutoff < len(text):
            spans.append((self.cutoff, len(text), _OVERFLOW))
        out: list[tuple[int, int, list[int]]] = []
        last_end = -1
        for start, end, kind in sorted(spans):
            length = end - start
            if length <= 0:
                continue
            if length <= KEEP_START_CHARS and (
                text.startswith(MASK_ELLIPSIS, end)
                or (length <= KEEP_END_CHARS and start and text[start - 1] == MASK_ELLIPSIS)
            ):
                continue
            if start < last_end:
                group_start, group_end, kinds = out[-1]
                if kind != _PLAIN:
                    kinds.append(kind)
                if end > group_end:
                    out[-1] = (group_start, end, kinds)
                    last_end = end
            else:
                out.append((start, end, [] if kind == _PLAIN else [kind]))
                last_end = end
        return out

    def render(self) -> str:
        text = self.text
        parts: list[str] = []
        pos = 0
        for start, end, kinds in self.merged():
            parts.append(text[pos:start])
            if not kinds:
                parts.append(mask_secret(text[start:end]))
            elif _OVERFLOW in kinds:
                parts.append(OVERFLOW_MASK)
            elif not (pem := [k for k in kinds if k >= 0]):
                parts.append(SHORT_SECRET_MASK)  # a password: masked whole
            else:
                begin = self.pems[pem[0]][0]
                end_line = self.pems[pem[-1]][1]
                parts.append(
                    begin + PEM_BODY_MASK + end_line
                    if end_line is not None
                    else begin + PEM_BODY_MASK.rstrip("\n")
                )
            pos = end
        parts.append(text[pos:])
        return "".join(parts)


# --------------------------------------------------------------------------- the prefilter

#: Every rule's trigger in one regex, on the LOWER-CASED text: a word a sensitive name, query
#: name, header, command or family keyword holds (each name rule judges a name holding one of
#: these words: :data:`rules.SECRET_COMPOUNDS`, :data:`rules.SECRET_QUERY_NAMES` … all do),
#: a password command's short flag, and ``%`` or an invisible character (a name may hide its
#: word behind them: ``client%5Fs%65cret``, ``se\u200bcret``). A text where this finds nothing
#: and that holds no run of :data:`MIN_VENDOR_RUN_CHARS` token characters (where every token
#: rule matches) has nothing any built-in rule masks. The suite checks this against the rules
#: (tests/test_redact_prefilter.py).
_ANY_RULE_RE: Final = re.compile(
    r"key|token|secret|sig|login|licen|auth|cred|cv[cv]|code|jwt|number|pat|pw|crumb|cookie"
    r"|pass|access|bearer|kind:|bundle_|://|-u|sqlplus|rman|expdp|impdp|sqlldr|%"
    rf"|[{_INVISIBLE_CHARS}]"
    r"|[ \t]-[" + "".join(sorted({f[-1].lower() for f in _SHORT_PASSWORD_FLAGS})) + "]"
)


def _nothing_to_find(text: str, scan: _Scan) -> bool:
    """Whether no built-in rule can find a credential in ``text`` (see :data:`_ANY_RULE_RE`)."""
    return _RUN_RE.search(text) is None and _ANY_RULE_RE.search(scan.lowered()) is None


# --------------------------------------------------------------------------- public API


def _compile_extra(pattern: str | re.Pattern[str]) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid redaction pattern {pattern!r}: {exc}") from exc


class Redactor:
    """Masks credentials in text (see the module docstring for the rules and the invariant).

    ``extra_patterns``: a host's own patterns (strings are compiled with :func:`re.compile`,
    no flags; an invalid one raises :class:`ValueError` here rather than being ignored). A match
    masks group 1 when the pattern has a group and group 1 took part in the match, else the
    whole match; empty matches are ignored.
    """

    def __init__(self, extra_patterns: Iterable[str | re.Pattern[str]] = ()) -> None:
        self._extra: tuple[re.Pattern[str], ...] = tuple(_compile_extra(p) for p in extra_patterns)

    @property
    def extra_patterns(self) -> tuple[re.Pattern[str], ...]:
        """The host patterns, compiled."""
        return self._extra

    def _scan(self, text: str) -> _Scan:
        scan = _Scan(text)
        if not self._extra and _nothing_to_find(text, scan):
            return scan  # (most ordinary lines: two C-level searches, no rule runs)
        scan.pem_blocks()
        scan.assignments()
        if "==" in text or "!=" in text:
            scan.comparisons()
        if "<" in text or "value" in text:
            scan.markup()
        scan.cli_flags()
        scan.headers()
        scan.urls()
        if "--" in text or "->" in text or "=>" in text:
            scan.ruled_passwords()
        scan.tokens()
        if scan.has_run(_LONG_RUN_CHARS):
            # the rules for tokens with no prefix need a run of 20+ token characters
            scan.opaque()
            if "'" in text or '"' in text or "`" in text:
                scan.code_literals()
            scan.prose_keys()
        for start, end, kind in family_spans(text, scan.lowered()):
            if kind == FAMILY_OVERFLOW:
                scan._over_budget(start)
            else:
                scan.add(start, end, kind == FAMILY_WHOLE)
        scan.extra(self._extra)
        return scan

    def secret_spans(self, text: str) -> list[tuple[int, int]]:
        """The merged ``(start, end)`` ranges of ``text`` that :meth:`redact` masks, in order."""
        return [(start, end) for start, end, _ in self._scan(text).merged()]

    def redact(self, text: str) -> str:
        """``text`` with every credential masked."""
        if not text:
            return text
        scan = self._scan(text)
        return scan.render() if scan.spans or scan.cutoff < len(text) else text

    def redact_field(self, name: str, value: str) -> str:
        """A string ``value`` stored under the key ``name`` of a structured object.

        The whole value is masked when ``name`` is sensitive (see :func:`field_mask`);
        otherwise the value is redacted as text.
        """
        masked = field_mask(name, value)
        return self.redact(value) if masked is None else masked


def field_mask(name: str, value: str) -> str | None:
    """The mask of ``value`` if, stored under the key ``name``, it is a credential, else None.

    As ``"name": "value"`` in JSON text: ``name`` is sensitive (:func:`is_sensitive_name`)
    and ``value`` is neither blank nor a reference (``$TOKEN``, ``null`` …). O(1) in
    ``len(value)`` apart from the reference check.
    """
    if value.strip() and is_sensitive_name(name) and not _is_reference(value, name):
        return SHORT_SECRET_MASK if is_password_name(name) else mask_secret(value)
    return None


#: The redactor with the built-in rules only.
DEFAULT_REDACTOR: Final = Redactor()


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """``text`` with every credential masked, by ``redactor`` or :data:`DEFAULT_REDACTOR`."""
    return (redactor or DEFAULT_REDACTOR).redact(text)
