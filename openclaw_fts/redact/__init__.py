"""Credential masking for snippets and history text (OpenClaw's rule, docs/redaction.md).

Invariant: this package's public names are the redaction API the rest of the plugin imports
(the store, search, history and suggestion layers); which rule families run, in which
modules, is behind them. :func:`redact_text` / :meth:`Redactor.redact` return the text
character for character except the credential spans, each replaced by its mask in OpenClaw's
format (``***`` for a password or a short secret, the first 6 and last 4 characters around
``…`` for a long one, a PEM block's body as ``…redacted…``).

Modules (one responsibility each):

* :mod:`.data`: the rule DATA (vendor prefixes and token shapes, password commands, the name
  words), each rule with a sample the suite masks;
* :mod:`.families`: the rule families added on top of the engine, each a prefilter, a finder
  and its word lists (data in :mod:`.family_data`), run by one pipeline;
* :mod:`.engine`: the scanner that runs every rule on the original text, merges the spans and
  renders the masks (the mask format and the candidate budget live there).
"""

from __future__ import annotations

from .engine import (
    CHARS_PER_EXTRA_CANDIDATE,
    DEFAULT_REDACTOR,
    EXPRESSION_WORDS,
    KEEP_END_CHARS,
    KEEP_START_CHARS,
    MAX_CANDIDATES_PER_RULE,
    MIN_PARTIAL_MASK_CHARS,
    OVERFLOW_MASK,
    Redactor,
    field_mask,
    is_opaque_token,
    is_password_name,
    is_sensitive_name,
    is_weak_secret_name,
    looks_random,
    mask_fragments,
    mask_secret,
    redact_text,
)

__all__ = [
    "CHARS_PER_EXTRA_CANDIDATE",
    "DEFAULT_REDACTOR",
    "EXPRESSION_WORDS",
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
