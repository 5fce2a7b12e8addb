"""Rule family ``headers and cookies``: ``Authorization:`` with any scheme, a bare ``Bearer``.

Invariant: the credential of an ``Authorization``/``Proxy-Authorization`` header (the scheme
word stays; an auth-param list is masked whole) and of a ``Bearer <token>`` standing alone,
each found by one ``finditer`` bounded by the scan's candidate budget; a header whose value is
a word, a reference or a call is left alone.
"""

from __future__ import annotations

import re
from typing import Final

from .. import data as rules
from ..judges import _BLANKS, _looks_like_credential
from ..scan import Scan

#: A bare ``Bearer`` followed by a token this long is a credential (OpenClaw); shorter words
#: after "bearer" are prose ("the bearer of the note").
BARE_BEARER_MIN_CHARS: Final = 18


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


#: What every match of :data:`_AUTHORIZATION_RE` holds one character after its start (the
#: ``u``), in the lower-cased text: no character but ``t``/``T`` lowers to ``t``, nor matches
#: ``(?i:t)``, and so on for ``h``, ``o``, ``r`` (``i`` has two more: ``ı``, ``İ``). The rule
#: tries the regex only there (:meth:`..scan.Scan.matches_at`; a 10 MB message: ~0.033 s
#: trying it at every ``u`` -> ~0.007 s).
_AUTHORIZATION_WORD: Final = "thor"


#: The same for :data:`_BARE_BEARER_RE` (after its ``b``; ``e``, ``a``, ``r`` alike).
_BEARER_WORD: Final = "earer"


def headers(scan: Scan) -> None:
    text = scan.text
    found = scan.matches_at(_AUTHORIZATION_RE, (_AUTHORIZATION_WORD,), 1, lowered=True)
    for m in scan.within_budget(found):
        scheme = m.group("scheme")
        if m.group("params") is not None:
            start, end = m.start("params"), m.end("params")
            while end > start and text[end - 1] in " \t":
                end -= 1
            opening = text[m.start() - 2] if m.start() >= 2 else ""
            if opening in "\"'" and opening and text[end - 1] == opening:
                end -= 1  # the quote around a whole header (``-H 'Authorization: …'``)
            scan.add(start, end, whole=True)  # many small fields: *** for the lot
            continue
        value = m.group("value")
        if text.startswith("(", m.end("value")):
            continue  # a call: ``Authorization: messages.Authorization()``
        if scheme is None and (
            value.lower() in rules.AUTH_SCHEMES
            or not _looks_like_credential(value)
            or _SCHEME_WORD_RE.match(text, m.end("value")) is not None
        ):
            continue  # "Authorization: Bearer $TOKEN", "authorization: required"
        if (
            scheme is not None
            and scheme.lower() not in rules.AUTH_SCHEMES
            and not _looks_like_credential(value)
        ):
            continue  # "authorization: required for admin routes"
        scan.value(m.start("value"), m.end("value"))


def bare_bearers(scan: Scan) -> None:
    """``Bearer <token>`` with no header name before it."""
    found = scan.matches_at(_BARE_BEARER_RE, (_BEARER_WORD,), 1, lowered=True)
    for m in scan.within_budget(found):
        scan.value(m.start("value"), m.end("value"))
