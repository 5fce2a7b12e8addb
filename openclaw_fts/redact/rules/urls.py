"""Rule family ``URLs and query strings``: URL passwords and sensitive query values.

Invariant: :func:`url_userinfo` masks the password of ``scheme://user:password@`` whole;
:func:`url_hash_passwords` a password name's value after ``=#``; :func:`query_params` the
value of a sensitive name (percent-decoded, invisible characters dropped) in a query,
fragment, form or request body. Each is driven by one ``finditer`` (or ``str.find`` of a body
label) bounded by the scan's candidate budget.
"""

from __future__ import annotations

import re
from typing import Final

from .. import data as rules
from ..judges import (
    _INVISIBLE_CHARS,
    _NAME_CHARS,
    _NAME_WORD_RE,
    MAX_URL_PASSWORD_CHARS,
    MAX_URL_USER_CHARS,
    _decode_name,
    is_password_name,
    is_sensitive_name,
)
from ..scan import Scan

#: Longest name of a URL query or fragment parameter looked at.
MAX_QUERY_NAME_CHARS: Final = 64


_INVISIBLE_RE: Final = re.compile(f"[{_INVISIBLE_CHARS}]")


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


#: Characters looked back over from a form's ``&name=`` for its first pair.
MAX_FORM_PAIR_CHARS: Final = 256


# The first pair of a form body (``sig=…&x-api-key=…``, ``key=…&safe=1``): the pair ending
# right before an ``&name=`` (found by :data:`_URL_PARAM_RE`), at the start of a line or after
# a blank, quote or opening bracket. A lone ``code=E1`` in prose is no form body and stays.
_FORM_FIRST_RE: Final = re.compile(
    rf"(?:^|(?<=[\s\"'`(\[{{:=]))(?P<name>{_PARAM_NAME})=" + _PARAM_VALUE + r"\Z",
    re.MULTILINE,
)


_BODY_LABEL_END_RE: Final = re.compile(r"[ \t]*[:=][ \t]*[\"'`]?")


_PAIR_RE: Final = re.compile(rf"(?P<name>{_PARAM_NAME})=" + _PARAM_VALUE)


# A password parameter whose value starts with ``#`` (unencoded, ``&password=#x…``): the
# parameter rule above takes ``#`` for the start of a fragment.
_URL_HASH_PASSWORD_RE: Final = re.compile(
    rf"[?&;](?P<name>[{_NAME_CHARS}]{{1,{MAX_QUERY_NAME_CHARS}}})=(?P<value>#[^&\s\"'<>`\\…]+)"
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
        and words[-1] not in rules.QUERY_HARMLESS_LAST
        and any(w in rules.QUERY_SECRET_WORDS for w in words)
    )


def url_userinfo(scan: Scan) -> None:
    """The password of a URL's ``user:password@`` (masked whole)."""
    scan.values(_URL_USERINFO_RE, whole=True, literal=True)


def url_hash_passwords(scan: Scan) -> None:
    """``…=#password=…``: a password name's value after a ``#``."""
    for m in _URL_HASH_PASSWORD_RE.finditer(scan.text):
        if is_password_name(_decode_name(m.group("name"))):
            scan.add(m.start("value"), m.end("value"), whole=True)


def query_params(scan: Scan) -> None:
    """The values of sensitive names in URL queries and fragments, forms and request bodies."""
    budget = scan.budget
    text = scan.text
    pairs: list[re.Match[str]] = []
    for m in _URL_PARAM_RE.finditer(text):
        budget -= 1
        if budget < 0:
            scan.over_budget(m.start())
            return
        pairs.append(m)
        if text[m.start()] == "&":  # a form or query: its first pair, if not after ``?``
            back = max(0, m.start() - MAX_FORM_PAIR_CHARS)
            first = _FORM_FIRST_RE.search(text, back, m.start())
            if first is not None:
                pairs.append(first)
    lowered = None
    for word in rules.BODY_LABELS:
        if word not in text and word.capitalize() not in text and word.upper() not in text:
            continue
        lowered = lowered or scan.lowered()
        at = lowered.find(word)
        while at >= 0:
            budget -= 1
            if budget < 0:
                scan.over_budget(at)
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
                scan.add(m.start("quoted"), m.end("quoted"), is_password_name(clean))
            else:
                scan.value(m.start("value"), m.end("value"), clean, is_password_name(clean))
