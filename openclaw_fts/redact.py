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
* the VALUE of a sensitive CLI flag, and the password of ``curl -u``/``--user``;
* the credential of ``Authorization:`` with ANY scheme (the scheme word stays) and of a bare
  ``Bearer <18+ chars>``;
* the password of a URL's userinfo and the value of a sensitive URL query/fragment key;
* vendor-prefixed keys (~120 families: OpenClaw's newest list and gitleaks' rules), JWTs,
  Discord bot tokens, 40-character AWS secret keys, PEM private-key blocks;
* tokens with no known prefix that look random (:func:`is_opaque_token`);
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

A hostile text with more than :data:`MAX_CANDIDATES_PER_RULE` candidates for one rule is
masked from the first candidate that rule did not examine to its end (:data:`OVERFLOW_MASK`):
bounded work, nothing leaks.

Known limits: a secret in free prose with no recognisable shape (``my password is hunter2``) is
not found; a quoted value is taken to its closing quote on the same line; a value containing
``…`` is cut there (that character marks an already-masked value, which keeps redaction
idempotent); an unterminated PEM block is masked from its BEGIN line to the end of its
base64-looking body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Final

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
#: Blanks allowed around ``=``/``:`` (``KEY   =   value``); bounded for the same reason.
MAX_SEPARATOR_BLANKS: Final = 8
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

# Words that make a name sensitive wherever they occur in it (``*PASSWORD*``, ``*PASSWD*``).
_ANYWHERE_WORDS: Final = ("password", "passwd", "passphrase")
# Last words (or whole one-word names, lower-cased, separators removed) that are secrets.
_SECRET_COMPOUNDS: Final = frozenset(
    {
        "apikey",
        "apisecret",
        "apitoken",
        "accesskey",
        "accesstoken",
        "authkey",
        "authtoken",
        "bearertoken",
        "clientsecret",
        "encryptionkey",
        "idtoken",
        "masterkey",
        "privatekey",
        "refreshtoken",
        "secretkey",
        "sessiontoken",
        "signingkey",
        # payment credentials (OpenClaw): a card number, its CVC, a payment credential
        "cardnumber",
        "securitycode",
        "paymentcredential",
    }
)
# Compounds recognised at the end of one glued lower-case word (``theapikey``).
_GLUED_COMPOUNDS: Final = ("apikey", "apitoken", "accesstoken", "authtoken", "secretkey")
# "<word> token" is NOT a secret for these words (pagination and language-model vocabulary).
_HARMLESS_TOKEN_PREFIXES: Final = frozenset(
    {
        "bos",
        "cancel",
        "cancellation",
        "cls",
        "continuation",
        "end",
        "eos",
        "mask",
        "max",
        "min",
        "next",
        "num",
        "pad",
        "page",
        "prev",
        "previous",
        "sep",
        "special",
        "start",
        "stop",
        "unk",
    }
)
# "<word> key" in lower/camel case (code, JSON) is a secret only after these words; a bare
# ``key`` or ``sort_key``/``sessionKey``/``cacheKey`` is an ordinary identifier.
_SECRET_KEY_PREFIXES: Final = frozenset(
    {
        "access",
        "account",
        "admin",
        "api",
        "app",
        "application",
        "auth",
        "client",
        "encryption",
        "license",
        "master",
        "private",
        "secret",
        "service",
        "signing",
        "subscription",
    }
)
# "<WORD>_KEY" in UPPER case (environment variables) is a secret unless after these words.
_HARMLESS_ENV_KEY_PREFIXES: Final = frozenset(
    {
        "cache",
        "foreign",
        "hash",
        "lookup",
        "partition",
        "primary",
        "pub",
        "public",
        "routing",
        "row",
        "session",
        "sort",
    }
)
# First words of a name that is a flag about a secret (``HAS_API_TOKEN``, ``USE_PASSWORD``).
_FLAG_FIRST_WORDS: Final = frozenset({"have", "has", "is", "use", "enable", "disable", "no"})
# ``password_hint``, ``PASSWORD_MIN_LENGTH``: about a password, not one.
_HARMLESS_PASSWORD_SUFFIXES: Final = frozenset(
    {
        "attempts",
        "changed",
        "expiry",
        "expires",
        "field",
        "hint",
        "label",
        "len",
        "length",
        "policy",
        "prompt",
        "required",
        "reset",
        "rules",
        "strength",
    }
)
# Last words that make any name sensitive (``client_secret``, ``db_credential``, ``jwt``).
_SECRET_LAST_WORDS: Final = frozenset({"secret", "credential", "credentials", "jwt", "cvc", "cvv"})
# "<word> pass" that is not a password (``by pass``, ``first_pass``, ``boarding pass``).
_HARMLESS_PASS_PREFIXES: Final = frozenset(
    {"by", "first", "second", "third", "last", "one", "two", "multi", "single", "boarding"}
)
# Names whose value is masked WHOLE (``***``), never as first 6 + last 4: a password is often
# short and human-chosen, so ten of its characters would give most of it away.
_PASSWORD_LAST_WORDS: Final = frozenset({"pass", "pwd"})


# URL query/fragment parameters whose value is a credential (besides sensitive names).
_SECRET_QUERY_NAMES: Final = frozenset(
    {
        "access_token",
        "api-key",
        "api_key",
        "apikey",
        "auth",
        "auth_token",
        "client_secret",
        "code",
        "credential",
        "authorization",
        "security_code",
        "cvc",
        "cvv",
        "x-api-key",
        "x-access-token",
        "x-auth-token",
        "id_token",
        "jwt",
        "key",
        "pass",
        "passwd",
        "password",
        "private_token",
        "pwd",
        "refresh_token",
        "secret",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
        "x-goog-credential",
        "x-goog-signature",
    }
)

_NAME_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: Distinct names whose verdict is remembered: a text repeats the same few names (``"token":``
#: in every object of a JSON dump), so a small cache removes the word splitting from hot loops.
NAME_CACHE_SIZE: Final = 4096


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
    if words and words[0] in _FLAG_FIRST_WORDS:
        return False  # HAVE_STRUCT_PASSWD_PW_GECOS, HAS_API_KEY: a feature flag
    if any(word in lowered for word in _ANYWHERE_WORDS):
        return not words or words[-1] not in _HARMLESS_PASSWORD_SUFFIXES
    if not words:
        return False
    last = words[-1]
    previous = words[-2] if len(words) > 1 else ""
    if last in _SECRET_COMPOUNDS or (previous + last) in _SECRET_COMPOUNDS:
        return True
    if len(words) == 1 and last.endswith(_GLUED_COMPOUNDS):
        return True  # ``theapikey``, ``myaccesstoken``
    if last in _SECRET_LAST_WORDS:
        return True
    if last == "token":
        return previous not in _HARMLESS_TOKEN_PREFIXES
    if last == "pwd":
        return bool(previous)
    if last == "pass":
        return not previous or previous not in _HARMLESS_PASS_PREFIXES
    if last == "key" and previous:
        letters = [c for c in name if c.isalpha()]
        if letters and all(c.isupper() for c in letters):
            return previous not in _HARMLESS_ENV_KEY_PREFIXES
        return previous in _SECRET_KEY_PREFIXES
    return False


@lru_cache(maxsize=NAME_CACHE_SIZE)
def is_password_name(name: str) -> bool:
    """Whether the value of ``name`` is a password (masked whole): ``*password*``,
    ``*passwd*``, ``*passphrase*``, ``db_pass``, ``DB_PWD``."""
    lowered = name.lower()
    if any(word in lowered for word in _ANYWHERE_WORDS):
        return True
    words = _NAME_WORD_RE.findall(name)
    return bool(words) and words[-1].lower() in _PASSWORD_LAST_WORDS and is_sensitive_name(name)


# --------------------------------------------------------------------------- value checks

# Literal values that are never credentials (``token = None``, ``"password": null``). The short
# mask ``***`` is not one either (re-redacting a redacted text changes nothing).
_LITERAL_VALUES: Final = frozenset({"false", "nil", "none", "null", "true", "undefined"})
_TRAILING_PUNCTUATION: Final = ".,;)]}\"'`"
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
_PLACEHOLDERS: Final = frozenset({"%s", "%d", "%r", "%x", "?", "<redacted>", "<token>"})
_BRACE_PLACEHOLDER_RE: Final = re.compile(r"\{[A-Za-z0-9_.]{0,64}\}")
# In code (``token = nextchar``, ``Token = Ignore + PlainToken``): blanks around ``=`` and a value
# that is an identifier without digits, or any identifier called or indexed, is an expression.
_CODE_VALUE_RE: Final = re.compile(r"[A-Za-z_][A-Za-z_.]*$|[A-Za-z_][A-Za-z0-9_.]*[(\[]")
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


def _is_reference(value: str, name: str | None) -> bool:
    """Whether ``value`` names a secret instead of being one (``$TOKEN``, ``null``, …)."""
    if value in _PLACEHOLDERS or _BRACE_PLACEHOLDER_RE.fullmatch(value):
        return True  # a format placeholder (``key=%s``, ``token={}``)
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
    if name is not None and _IDENTIFIER_PATH_RE.fullmatch(value):
        # ``api_key=api_key``, ``token: self.token``, ``API_KEY=settings.API_KEY``, and a
        # variable named for a secret (``token = timeObserverToken``)
        last = value.rsplit(".", 1)[-1]
        return last.lower() == name.rsplit(".", 1)[-1].lower() or (
            ("." in value or any(c.isupper() for c in last[1:]) or "_" in last)
            and is_sensitive_name(last)
        )
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
    r"(?P<kw>[KkTtSsPpCcJjNn](?:(?<=[Kk])(?i:ey)|(?<=[Tt])(?i:oken)|(?<=[Ss])(?i:ecret)"
    r"|(?<=[Cc])(?i:redentials?|v[cv]|ode)|(?<=[Jj])(?i:wt)|(?<=[Nn])(?i:umber)"
    r"|(?<=[Pp])(?i:wd)|(?<=[Pp])(?i:ass)(?i:word|wd|phrase)?"
    # the rest of a *PASSWORD* name, taken atomically: (?=(...))(?P=...) never backtracks
    rf"(?=(?P<rest>[{_NAME_CHARS}]{{0,{MAX_NAME_CHARS}}}))(?P=rest)))"
    r"(?P<quote>\\?[\"'])?(?:\[\]|\])?" + _TYPE_ANNOTATION + _BLANKS + _SEPARATOR
)
# A whole name, read backwards from its end: at most MAX_NAME_CHARS name characters, and the
# run must end there (a longer run is not a name).
_REVERSED_NAME_RE: Final = re.compile(rf"[{_NAME_CHARS}]{{1,{MAX_NAME_CHARS}}}(?![{_NAME_CHARS}])")
# A name right after one of these is not an assignment: a name after ``? & #`` is a URL
# parameter (its own rule). ``$NAME`` is one only with ``=`` (PHP, Perl, PowerShell:
# ``$password = "…"``); ``$NAME:`` and ``$NAME,`` are shell expansions in prose.
_NOT_BEFORE_NAME: Final = "?&#"

# ``--name=`` or ``--name <blanks>``; the ``--`` does not continue a word or a longer dash run.
_CLI_FLAG_RE: Final = re.compile(
    r"--(?<![A-Za-z0-9_\-]--)"
    rf"(?P<name>[A-Za-z][A-Za-z0-9_\-]{{0,{MAX_NAME_CHARS - 1}}})"
    r"(?P<sep>=|[ \t]+)"
)


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
        rf"|(?P<bare>(?:[^\s\\&{stop}]|\\(?![nrt\"'\\])|&(?![A-Za-z0-9_%.\-]{{1,64}}=))+)"
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
_AUTHORIZATION_RE: Final = re.compile(
    r"[Uu](?<=[Aa][Uu])(?<![A-Za-z0-9_][Aa][Uu])(?i:thorization)\\?[\"']?"
    + _BLANKS
    + r"[:=]"
    + _AUTH_BLANKS
    + r"\\?[\"']?"
    + _BLANKS
    + r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+._~\-]{0,40})(?:[ \t]+|\\t))?"
    r"(?:(?P<params>[A-Za-z0-9_*\-]{1,64}[ \t]*=(?!=)"
    r"(?:[^\r\n;\\]|\\(?![rn])|;(?![ \t]*[A-Za-z_][\w\-]*=))*)"
    r"|(?P<value>[A-Za-z0-9._~+/:@%\-]+=*))"
)
# After a scheme word whose credential was not recognised (``AWS4-HMAC-SHA256 ***``, already
# masked): blanks, then more text on the line.
_SCHEME_WORD_RE: Final = re.compile(r"[ \t]+[^\s,;)}\]\"']")
_BARE_BEARER_RE: Final = re.compile(
    r"[Bb](?<![A-Za-z0-9_\-][Bb])(?i:earer)[ \t]+"
    rf"(?P<value>[A-Za-z0-9._~+/\-]{{{BARE_BEARER_MIN_CHARS},}}=*)"
)

# ``scheme://user:password@``: the literal ``://`` first (fast scan), the scheme checked behind.
# The password runs to the LAST ``@`` of the authority (an ``@`` inside a password is not
# split on), which also keeps the rule idempotent: a masked ``p@s…word@`` is not re-masked.
_URL_USERINFO_RE: Final = re.compile(
    r"://(?<=[A-Za-z0-9]://)"
    rf"(?P<user>[^\s:/?#@\"'<>\[\]\\…]{{0,{MAX_URL_USER_CHARS}}}):"
    rf"(?P<value>[^\s/?#\"'<>\\…]{{1,{MAX_URL_PASSWORD_CHARS}}})@(?![^\s/?#@\"'<>\\]*@)"
)
# The name may be percent-encoded (``client%5Fsecret``); the value may be quoted.
_URL_PARAM_RE: Final = re.compile(
    rf"[?&#](?P<name>[{_NAME_CHARS}%+]{{1,{MAX_QUERY_NAME_CHARS}}})="
    r"(?:\"(?P<quoted>[^\"&#\s…]+)\"|(?P<value>[^&#\s\"'<>`\\…]+))"
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
    if name.lower() in _SECRET_QUERY_NAMES or is_sensitive_name(name):
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
_XML_KEY_VALUE_RE: Final = re.compile(
    r"\b(?:key|name)[ \t]*=[ \t]*(?P<q>[\"'])"
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

# Vendor-prefixed tokens: (family, prefix, body character class, minimum body length). The
# minimum is well below the vendor's real length and high enough that kebab-case words
# (``sk-button-primary``, ``fw-tooshort``) do not qualify. The prefix must start a word: it is
# not preceded by a letter, digit or ``_`` (checked in Python; ``prefix-ghp_…`` is a token,
# ``fixture_fw_…`` is not). All families are ONE regex, so the text is scanned once for all.
_TOKEN_CHARS: Final = r"[A-Za-z0-9_\-]"
_VENDOR_TOKENS: Final[tuple[tuple[str, str, str, int], ...]] = (
    # OpenAI, Anthropic, OpenRouter, DeepSeek …: a real key always holds a digit.
    ("sk", r"sk-", r"(?=[A-Za-z0-9_\-]*?[0-9])[A-Za-z0-9_\-]", 16),
    ("stripe-secret", r"sk_(?:live|test)_", r"[A-Za-z0-9]", 16),
    ("stripe-restricted", r"rk_(?:live|test)_", r"[A-Za-z0-9]", 16),
    ("stripe-webhook", r"whsec_", r"[A-Za-z0-9]", 16),
    ("github", r"gh[pousr]_", r"[A-Za-z0-9]", 20),
    ("github-pat", r"github_pat_", r"[A-Za-z0-9_]", 20),
    ("gitlab", r"glpat-", _TOKEN_CHARS, 20),
    ("slack", r"xox[baprs]-", r"[A-Za-z0-9\-]", 10),
    ("slack-app", r"xapp-", r"[A-Za-z0-9\-]", 10),
    ("google-api", r"AIza", _TOKEN_CHARS, 30),
    ("google-oauth", r"ya29\.", _TOKEN_CHARS, 20),
    ("huggingface", r"hf_", r"[A-Za-z0-9]", 20),
    ("npm", r"npm_", r"[A-Za-z0-9]", 20),
    ("pypi", r"pypi-", _TOKEN_CHARS, 20),
    ("groq", r"gsk_", r"[A-Za-z0-9]", 20),
    ("xai", r"xai-", r"[A-Za-z0-9]", 20),
    ("perplexity", r"pplx-", r"[A-Za-z0-9]", 20),
    # OpenClaw's newer prefixes (src/logging/redact-patterns.ts) and gitleaks' rules
    ("anthropic", r"sk-ant-", _TOKEN_CHARS, 16),
    ("openai-project", r"sk-proj-", _TOKEN_CHARS, 16),
    ("openrouter", r"sk-or-", _TOKEN_CHARS, 16),
    ("openai-service", r"sk-svcacct-", _TOKEN_CHARS, 16),
    ("openai-admin", r"sk-admin-", _TOKEN_CHARS, 16),
    ("sk-underscore", r"sk_", r"[A-Za-z0-9]", 20),
    ("stripe-prod", r"[sr]k_prod_", r"[A-Za-z0-9]", 16),
    ("replicate", r"r8_", r"[A-Za-z0-9]", 20),
    *(
        (f"gitlab-{kind}", f"gl{kind}-", r"[A-Za-z0-9_.\-]", 20)
        for kind in ("oas", "dt", "cbt", "ptt", "ft", "imt", "agent", "wt", "soat", "ffct", "rt")
    ),
    ("gitlab-rtr", r"glrtr-", r"[A-Za-z0-9_.\-]", 20),
    # feed and runner tokens can be short: 8+ characters holding a digit
    ("gitlab-ft-short", r"glft-", r"(?=[A-Za-z0-9_\-]{0,19}[0-9])[A-Za-z0-9_\-]", 8),
    ("gitlab-rt-short", r"glrt-", r"(?=[A-Za-z0-9_\-]{0,19}[0-9])[A-Za-z0-9_\-]", 8),
    ("gitlab-runner", r"GR1348941", _TOKEN_CHARS, 20),
    ("gitlab-session", r"_gitlab_session=", r"[A-Za-z0-9]", 20),
    ("grafana-sa", r"glsa_", r"[A-Za-z0-9_+/=]", 32),
    ("grafana-cloud", r"glc_", r"[A-Za-z0-9_+/=]", 32),
    ("fal", r"fal_", _TOKEN_CHARS, 20),
    ("firecrawl", r"fc-", r"[A-Za-z0-9]", 20),
    ("browserbase", r"bb_live_", _TOKEN_CHARS, 20),
    ("huggingface-org", r"api_org_", r"[A-Za-z0-9]", 20),
    ("digitalocean", r"do[opr]_v1_", r"[A-Za-z0-9]", 20),
    *((f"doppler-{k}", rf"dp\.{k}\.", r"[A-Za-z0-9]", 20) for k in ("pt", "st", "sa", "ct")),
    ("docker", r"dckr_(?:pat|oat)_", _TOKEN_CHARS, 20),
    ("buildkite", r"bkua_", r"[A-Za-z0-9]", 20),
    ("circleci", r"CCIPAT_", _TOKEN_CHARS, 20),
    ("supabase", r"sbp_", r"[A-Za-z0-9]", 20),
    ("databricks", r"dapi", r"[A-Za-z0-9]", 32),
    ("datadog", r"ddp_", r"[A-Za-z0-9]", 20),
    ("netlify", r"nfp_", r"[A-Za-z0-9]", 20),
    ("contentful", r"CFPAT-", _TOKEN_CHARS, 20),
    ("atlassian", r"ATATT", r"[A-Za-z0-9_\-=]", 20),
    ("atlassian-cloud", r"ATCTT3xFfG", r"[A-Za-z0-9_\-=]", 20),
    ("bitbucket", r"ATBB", r"[A-Za-z0-9]", 20),
    ("bitbucket-dc", r"BBDC-", _TOKEN_CHARS, 20),
    ("heroku", r"HRKU-", _TOKEN_CHARS, 20),
    ("hubspot", r"pat-(?:na|eu)[12]-", r"[A-Za-z0-9\-]", 20),
    ("apify", r"apify_api_", r"[A-Za-z0-9]", 20),
    ("flyio", r"FlyV1 fm", r"[A-Za-z0-9+/=_\-]", 20),
    ("frameio", r"fio-u-", _TOKEN_CHARS, 20),
    ("agentmail", r"am_", r"[A-Za-z0-9]", 20),
    ("tavily", r"tvly-", _TOKEN_CHARS, 20),
    ("exa", r"exa_", r"[A-Za-z0-9]", 20),
    ("matrix", r"syt_", _TOKEN_CHARS, 20),
    ("retaindb", r"retaindb_", r"[A-Za-z0-9]", 20),
    ("hsk", r"hsk-", _TOKEN_CHARS, 20),
    ("mem0", r"mem0_", r"[A-Za-z0-9]", 20),
    ("brv", r"brv_", r"[A-Za-z0-9]", 20),
    ("fireworks", r"fw[-_]", r"[A-Za-z0-9]", 20),
    ("fireworks-pk", r"fpk_", r"[A-Za-z0-9]", 20),
    ("tencent", r"AKID", r"[A-Za-z0-9]", 20),
    ("alibaba", r"LTAI", r"[A-Za-z0-9]", 12),
    ("google-refresh", r"1//0", _TOKEN_CHARS, 20),
    ("slack-webhook", r"//hooks\.slack\.com/services/", r"[A-Za-z0-9/_\-]", 20),
    ("slack-workflow", r"//hooks\.slack\.com/workflows/", r"[A-Za-z0-9/_\-]", 20),
    ("discord-webhook", r"//discord\.com/api/webhooks/", r"[A-Za-z0-9/_\-]", 20),
    ("discordapp-webhook", r"//discordapp\.com/api/webhooks/", r"[A-Za-z0-9/_\-]", 20),
    ("linear", r"lin_api_", r"[A-Za-z0-9]", 20),
    ("postman", r"PMAK-", r"[A-Za-z0-9\-]", 20),
    ("shopify", r"shp(?:at|ca|pa|ss)_", r"[A-Fa-f0-9]", 20),
    ("sentry", r"sntry[su]_", r"[A-Za-z0-9+/=_]", 20),
    ("newrelic", r"NRAK-", r"[A-Z0-9]", 20),
    ("planetscale", r"pscale_tkn_", _TOKEN_CHARS, 20),
    ("planetscale-pw", r"pscale_pw_", _TOKEN_CHARS, 20),
    ("age", r"AGE-SECRET-KEY-1", r"[A-Z0-9]", 20),
    ("vault", r"hv[sbr]\.", _TOKEN_CHARS, 20),
    ("mailgun", r"key-", r"[a-f0-9]", 32),
    ("brevo", r"xkeysib-", r"[A-Za-z0-9\-]", 20),
    ("dynatrace", r"dt0c01\.", r"[A-Za-z0-9.]", 20),
    ("rubygems", r"rubygems_", r"[a-f0-9]", 20),
    ("clojars", r"CLOJARS_", r"[A-Za-z0-9]", 20),
    ("easypost", r"EZ[AT]K", r"[A-Za-z0-9]", 40),
    ("duffel", r"duffel_(?:test|live)_", _TOKEN_CHARS, 20),
    ("flutterwave", r"FLW(?:PUB|SEC)K_TEST-", r"[A-Za-z0-9\-]", 20),
    ("readme", r"rdme_", r"[a-z0-9]", 20),
    ("prefect", r"pnu_", r"[A-Za-z0-9]", 20),
    ("typeform", r"tfp_", _TOKEN_CHARS, 20),
    ("figma", r"figd_", _TOKEN_CHARS, 20),
    ("notion", r"secret_", r"[A-Za-z0-9]", 32),
    ("notion-ntn", r"ntn_", r"[A-Za-z0-9]", 32),
    ("langsmith", r"lsv2_(?:pt|sk)_", r"[A-Za-z0-9_]", 20),
    ("fernet", r"gAAAA", r"[A-Za-z0-9_\-=]", 20),
    ("1password", r"ops_eyJ", r"[A-Za-z0-9+/=]", 20),
    ("openai-org", r"org-", r"(?=[A-Za-z0-9]{0,23}[0-9])[A-Za-z0-9]", 24),
    ("twitch", r"oauth:", r"[a-z0-9]", 30),
    ("artifactory", r"AKCp", r"[A-Za-z0-9]", 60),
    ("adafruit", r"aio_", r"[A-Za-z0-9]", 28),
    ("scalingo", r"tk-us-", _TOKEN_CHARS, 40),
    ("sourcegraph", r"sgp_", r"[A-Za-z0-9_]", 32),
    ("pulumi", r"pul-", r"[a-f0-9]", 40),
)
#: Segments of a JWT shorter than this are not a JWT (a real header is ~36 characters).
MIN_JWT_SEGMENT_CHARS: Final = 5
#: Segments after a JWT's header and payload: 1 for a signed JWT (JWS), 3 for an encrypted one
#: (JWE: header.key.iv.ciphertext.tag).
MAX_JWT_EXTRA_SEGMENTS: Final = 3
#: Characters after ``AKIA``/``ASIA`` in an AWS access key id (exactly this many).
AWS_KEY_ID_BODY_CHARS: Final = 16
#: Both dot-separated parts of a SendGrid key are at least this long (real: 22 and 43).
MIN_SENDGRID_PART_CHARS: Final = 16
#: Digits of a Telegram bot id (real ids: 8 to 10).
TELEGRAM_BOT_ID_DIGITS: Final = (6, 12)
#: Characters after the colon of a Telegram bot token (real: 35).
MIN_TELEGRAM_SECRET_CHARS: Final = 30


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


_VENDOR_RE: Final = re.compile("|".join(_vendor_alternative(*rule[1:]) for rule in _VENDOR_TOKENS))
#: Characters that may not come right before a vendor prefix (it would be inside a word).
_WORD_CHAR_SET: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


_SPECIAL_TOKENS: Final[tuple[tuple[str, str], ...]] = (
    (
        "jwt",
        rf"(?P<value>eyJ(?<!{_TOKEN_CHARS}eyJ){_TOKEN_CHARS}{{{MIN_JWT_SEGMENT_CHARS},}}"
        rf"\.{_TOKEN_CHARS}{{{MIN_JWT_SEGMENT_CHARS},}}(?:\.{_TOKEN_CHARS}*){{1,{MAX_JWT_EXTRA_SEGMENTS}}})",
    ),
    (
        "sendgrid",
        rf"(?P<value>SG\.(?<!{_TOKEN_CHARS}SG\.){_TOKEN_CHARS}{{{MIN_SENDGRID_PART_CHARS},}}"
        rf"\.{_TOKEN_CHARS}{{{MIN_SENDGRID_PART_CHARS},}})",
    ),
    (
        "aws",
        rf"(?P<value>A[KS]IA(?<![A-Za-z0-9_\-]A[KS]IA)[A-Z0-9]{{{AWS_KEY_ID_BODY_CHARS}}})"
        r"(?![A-Za-z0-9])",
    ),
)
_TOKEN_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (family, re.compile(pattern)) for family, pattern in _SPECIAL_TOKENS
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


def is_opaque_token(token: str) -> bool:
    """Whether ``token`` (a run of base64/base64url characters) looks randomly generated."""
    body = token.rstrip("=")
    if len(body) < MIN_OPAQUE_TOKEN_CHARS:
        return False
    has_upper = has_lower = has_digit = False
    for c in body:
        if c.isdigit():
            has_digit = True
        elif c.isupper():
            has_upper = True
        elif c.islower():
            has_lower = True
    if not (has_upper and has_lower and has_digit) or len(set(body)) < MIN_OPAQUE_DISTINCT_CHARS:
        return False
    pieces = _PIECE_RE.findall(body)
    letters = sum(len(p) for p in pieces)
    return letters / max(1, len(pieces)) < MAX_OPAQUE_MEAN_WORD_CHARS


def _is_aws_secret(token: str) -> bool:
    """40 base64 characters with upper and lower case and a digit or ``/``/``+``."""
    return (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() or c in "/+" for c in token)
        and len(set(token)) >= 3
    )


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
_BLOCK_LINE_RE: Final = re.compile(r"[ \t]{1,64}(?P<value>[^\s][^\r\n]*?)[ \t]*(?:\r?\n|$)")

#: Candidates one rule examines in Python per text (a ``name=``, a ``?param=``, a token …).
#: A real message holds a handful of credentials; tens of thousands only occur in generated or
#: hostile text, where examining each costs a few microseconds. Past this budget the rule
#: stops and the text from its first unexamined candidate to the end is replaced by
#: :data:`OVERFLOW_MASK`: nothing leaks, and a 1 MB hostile text costs a bounded ~0.1 s/rule.
MAX_CANDIDATES_PER_RULE: Final = 10_000
#: Replaces the tail of a text that exceeded :data:`MAX_CANDIDATES_PER_RULE`.
OVERFLOW_MASK: Final = "…(redacted: too many credential-like values)…"


def mask_secret(secret: str) -> str:
    """``***`` for a secret shorter than 18 characters, else first 6 + ``…`` + last 4."""
    if len(secret) < MIN_PARTIAL_MASK_CHARS:
        return SHORT_SECRET_MASK
    return f"{secret[:KEEP_START_CHARS]}{MASK_ELLIPSIS}{secret[-KEEP_END_CHARS:]}"


class _Scan:
    """The credential spans of one text, rule by rule."""

    __slots__ = ("cutoff", "pems", "spans", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[_Span] = []
        self.pems: list[tuple[str, str | None]] = []
        self.cutoff = len(text)  # from here on, everything is masked (candidate budget)

    def _over_budget(self, position: int) -> None:
        if position < self.cutoff:
            self.cutoff = position

    def add(self, start: int, end: int, whole: bool = False) -> None:
        """``text[start:end]`` is a secret; ``whole``: mask it as ``***`` whatever its length."""
        self.spans.append((start, end, _FULL if whole else _PLAIN))

    def value(self, start: int, end: int, name: str | None = None, whole: bool = False) -> None:
        """Add ``text[start:end]`` (trailing punctuation trimmed) unless it is a reference."""
        text = self.text
        while end > start and text[end - 1] in _TRAILING_PUNCTUATION:
            end -= 1
        if end > start and not _is_reference(text[start:end], name):
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
        resume = 0  # inside a value already taken, a "name=" is part of that value
        budget = MAX_CANDIDATES_PER_RULE
        for m in _ASSIGN_TAIL_RE.finditer(text):
            if m.start() < resume:
                continue
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            name_end = m.start("quote") if m.group("quote") else m.end("kw")
            if not reversed_text:
                reversed_text = text[::-1]
            run = _REVERSED_NAME_RE.match(reversed_text, size - name_end)
            if run is None:
                continue  # a run of name characters longer than MAX_NAME_CHARS
            name_start = name_end - run.end() + run.start()
            first = text[name_start]
            sep = m.group("sep")
            before = text[name_start - 1] if name_start else ""
            if not (first.isalpha() or first == "_") or (
                (before and before in _NOT_BEFORE_NAME) or (before == "$" and sep in (":", ","))
            ):
                continue
            name = text[name_start:name_end]
            if "%" in name:
                name = _decode_name(name)
            if not is_sensitive_name(name) or text.startswith("//", name_start - 2):
                continue  # ``postgres://secret:pw@`` is a URL user (its own rule)
            whole = is_password_name(name)
            found = self.value_at(m.end(), whole)
            if found is None:
                continue
            start, end, quoted = found
            if sep == ",":
                # ``setProperty("NAME", "value")`` (a quoted name, a quoted value) or CSV
                # ``NAME,value,`` (no blank after the comma, the value ends at a comma)
                opener = text[: name_start - 1].rstrip(" \t")[-1:]
                if m.group("quote") and before and before in "\"'" and quoted and opener == "(":
                    pass
                elif (
                    m.group("quote")
                    or quoted
                    or start != m.end()
                    or text[end : end + 1] not in (",", "\n", "\r", "")
                ):
                    continue
            if sep in (" ", "\t") and not (quoted and text.startswith(";", end + 1)):
                continue  # ``name "value";`` only (C, Objective-C, Java statements)
            resume = end
            value = text[start:end]
            if sep == ":" and not quoted and value in _BLOCK_INDICATORS:
                block = self.block_scalar(end)
                if block is not None and (whole or "…" not in text[block[0] : block[1]]):
                    self.add(block[0], block[1], whole)
                continue
            if not value.strip() or _is_reference(value, name):
                continue
            if sep in (":", ",") and not quoted and not _looks_like_credential(value):
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
        budget = MAX_CANDIDATES_PER_RULE
        for pattern in (_XML_ELEMENT_RE, _XML_KEY_VALUE_RE):
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
                if end > start and not _is_reference(text[start:end], name):
                    self.add(start, end, whole)

    def cli_flags(self) -> None:
        text = self.text
        budget = MAX_CANDIDATES_PER_RULE
        for m in _CLI_FLAG_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                break
            name = m.group("name")
            if not is_sensitive_name(name):
                continue
            found = self.value_at(m.end())
            if found is None:
                continue
            start, end, quoted = found
            value = text[start:end]
            if not value.strip() or (not quoted and value.startswith("-")):
                continue  # ``--password-stdin --user x``: the next flag is not the value
            if not quoted and value.lower() in _PROSE_WORDS:
                continue  # "use either --password or --password-file"
            if not _is_reference(value, name):
                self.spans.append((start, end, _PLAIN))
        self._values(_CLI_USER_RE, whole=True)

    def _values(self, pattern: re.Pattern[str], whole: bool = False) -> None:
        """Every ``value`` (or ``quoted``) group of ``pattern``."""
        budget = MAX_CANDIDATES_PER_RULE
        quoted = "quoted" in pattern.groupindex
        for m in pattern.finditer(self.text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            if quoted and m.start("quoted") >= 0:
                self.add(m.start("quoted"), m.end("quoted"), whole)
            else:
                self.value(m.start("value"), m.end("value"), whole=whole)

    def headers(self) -> None:
        text = self.text
        budget = MAX_CANDIDATES_PER_RULE
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
        self._values(_BARE_BEARER_RE)

    def urls(self) -> None:
        self._values(_URL_USERINFO_RE, whole=True)
        budget = MAX_CANDIDATES_PER_RULE
        for m in _URL_PARAM_RE.finditer(self.text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            name = m.group("name")
            if _query_name_is_secret(name):
                if m.start("quoted") >= 0:
                    self.add(m.start("quoted"), m.end("quoted"), is_password_name(name))
                else:
                    self.value(m.start("value"), m.end("value"), name, is_password_name(name))

    def pem_blocks(self) -> None:
        text = self.text
        pos = 0
        budget = MAX_CANDIDATES_PER_RULE
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

    def tokens(self) -> None:
        text = self.text
        spans = self.spans
        budget = MAX_CANDIDATES_PER_RULE
        for m in _VENDOR_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                break
            start = m.start()
            if (
                start
                and text.startswith("gAAAA", start)
                and (text[start - 1] in "+=-" or text.endswith(";base64,", 0, start))
            ):
                continue  # a Fernet shape inside a base64 blob or a data URL
            spans.append((start, m.end(), _PLAIN))
        budget = MAX_CANDIDATES_PER_RULE
        for _family, pattern in _TOKEN_RULES:
            for m in pattern.finditer(text):
                budget -= 1
                if budget < 0:
                    self._over_budget(m.start())
                    break
                spans.append((m.start("value"), m.end("value"), _PLAIN))
        budget = MAX_CANDIDATES_PER_RULE
        for m in _TELEGRAM_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                return
            start = m.start()
            if start and text[start - 1] == ":":
                continue
            before = start - 3 if start >= 3 and text.startswith("bot", start - 3) else start
            if before and (text[before - 1] in _TOKEN_CHAR_SET or text[before - 1] == ":"):
                continue
            spans.append((start, m.end(), _PLAIN))

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
        budget = MAX_CANDIDATES_PER_RULE
        for pattern in (_OPAQUE_RE, _AWS_SECRET_RE):
            for m in pattern.finditer(text):
                budget -= 1
                if budget < 0:
                    self._over_budget(m.start())
                    break
                start = m.start()
                if text.endswith("base64,", 0, start):
                    continue  # a data URL's payload is data
                if any(lo <= start < hi for lo, hi in public):
                    continue
                token = m.group()
                if is_opaque_token(token) if pattern is _OPAQUE_RE else _is_aws_secret(token):
                    spans.append((start, m.end(), _PLAIN))
        for m in _DISCORD_BOT_RE.finditer(text):
            budget -= 1
            if budget < 0:
                self._over_budget(m.start())
                break
            spans.append((m.start(), m.end(), _PLAIN))

    def extra(self, patterns: tuple[re.Pattern[str], ...]) -> None:
        for pattern in patterns:
            budget = MAX_CANDIDATES_PER_RULE
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
        scan.pem_blocks()
        scan.assignments()
        if "<" in text or "value" in text:
            scan.markup()
        scan.cli_flags()
        scan.headers()
        scan.urls()
        scan.tokens()
        scan.opaque()
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
