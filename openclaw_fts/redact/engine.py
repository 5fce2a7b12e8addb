"""Credential masking for snippets and history text (OpenClaw's rule, docs/redaction.md).

Invariant: for every string ``t``, :meth:`Redactor.redact` returns ``t`` character for
character, except that every *credential span* found in ``t`` (overlapping spans merged first)
is replaced by its mask: ``***`` when the span is a password or shorter than
:data:`MIN_PARTIAL_MASK_CHARS`,
else its first :data:`KEEP_START_CHARS` and last :data:`KEEP_END_CHARS` characters around
``…``; a PEM private-key block becomes its BEGIN line, ``\\n…redacted…\\n`` and its END line.
So no 8-character substring of the masked-away middle of a recognised secret survives (the
search layer relies on this). This module only merges, masks and renders: the spans are found
by the rules :mod:`.pipeline` runs (one per family module in :mod:`.rules`, and
:mod:`.families`), all on the ORIGINAL text, so the result does not depend on the order of
the rules, and for the built-in rules the work is linear in ``len(t)``:
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

import re
from collections.abc import Iterable
from typing import Final

from .judges import (
    SHORT_SECRET_MASK,
    _is_reference,
    is_password_name,
    is_sensitive_name,
)
from .pipeline import nothing_to_find, run
from .scan import _OVERFLOW, _PLAIN, Scan

__all__ = [
    "DEFAULT_REDACTOR",
    "KEEP_END_CHARS",
    "KEEP_START_CHARS",
    "MIN_PARTIAL_MASK_CHARS",
    "OVERFLOW_MASK",
    "Redactor",
    "field_mask",
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


#: Replaces the body of a PEM private-key block, between its BEGIN and END lines.
PEM_BODY_MASK: Final = "\n…redacted…\n"


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

    def _scan(self, text: str) -> Scan:
        scan = Scan(text)
        if not self._extra and nothing_to_find(scan):
            return scan  # (most ordinary lines: two C-level searches, no rule runs)
        run(scan)
        extra(scan, self._extra)
        return scan

    def secret_spans(self, text: str) -> list[tuple[int, int]]:
        """The merged ``(start, end)`` ranges of ``text`` that :meth:`redact` masks, in order."""
        return [(start, end) for start, end, _ in merged(self._scan(text))]

    def redact(self, text: str) -> str:
        """``text`` with every credential masked."""
        if not text:
            return text
        scan = self._scan(text)
        return render(scan) if scan.spans or scan.cutoff < len(text) else text

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


def extra(scan: Scan, patterns: tuple[re.Pattern[str], ...]) -> None:
    for pattern in patterns:
        for m in scan.within_budget(pattern.finditer(scan.text)):
            if pattern.groups and m.start(1) >= 0:
                scan.spans.append((m.start(1), m.end(1), _PLAIN))
            else:
                scan.spans.append((m.start(), m.end(), _PLAIN))


def merged(scan: Scan) -> list[tuple[int, int, list[int]]]:
    """Spans sorted and merged: ``(start, end, kinds other than plain)``.

    The kept start (before ``…``) or end (after ``…``) of an already masked secret is not
    a secret: skipping it keeps redaction idempotent.
    """
    text = scan.text
    spans = scan.spans
    if scan.cutoff < len(text):
        spans.append((scan.cutoff, len(text), _OVERFLOW))
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


def render(scan: Scan) -> str:
    text = scan.text
    parts: list[str] = []
    pos = 0
    for start, end, kinds in merged(scan):
        parts.append(text[pos:start])
        if not kinds:
            parts.append(mask_secret(text[start:end]))
        elif _OVERFLOW in kinds:
            parts.append(OVERFLOW_MASK)
        elif not (pem := [k for k in kinds if k >= 0]):
            parts.append(SHORT_SECRET_MASK)  # a password: masked whole
        else:
            begin = scan.pems[pem[0]][0]
            end_line = scan.pems[pem[-1]][1]
            parts.append(
                begin + PEM_BODY_MASK + end_line
                if end_line is not None
                else begin + PEM_BODY_MASK.rstrip("\n")
            )
        pos = end
    parts.append(text[pos:])
    return "".join(parts)
