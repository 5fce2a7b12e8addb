"""Credential masking for snippets and history text (OpenClaw's rule, docs/redaction.md).

Invariant: this package's public names are the redaction API the rest of the plugin imports
(the store, search, history and suggestion layers); which rule families run, in which
modules, is behind them. :func:`redact_text` / :meth:`Redactor.redact` return the text
character for character except the credential spans, each replaced by its mask in OpenClaw's
format (``***`` for a password or a short secret, the first 6 and last 4 characters around
``…`` for a long one, a PEM block's body as ``…redacted…``).

Modules (one responsibility each):

* :mod:`.data`: the rule DATA (vendor prefixes and token shapes, password commands, the name
  words), each rule with a sample the suite masks; :mod:`.family_data`: the families' words;
* :mod:`.judges`: the judgments several rules share (sensitive names, references, randomness);
* :mod:`.scan`: the per-text scan context every finder gets (cached views, the budget);
* :mod:`.rules` (one module per family) and :mod:`.families`: the finders;
* :mod:`.pipeline`: every rule with its prefilter (data) and its finder, run by one loop;
* :mod:`.engine`: merges the spans and renders the masks (the mask format lives there).
"""

from __future__ import annotations

from .data import EXPRESSION_WORDS
from .engine import (
    DEFAULT_REDACTOR,
    KEEP_END_CHARS,
    KEEP_START_CHARS,
    MIN_PARTIAL_MASK_CHARS,
    OVERFLOW_MASK,
    Redactor,
    field_mask,
    mask_fragments,
    mask_secret,
    redact_text,
)
from .judges import (
    is_opaque_token,
    is_password_name,
    is_sensitive_name,
    is_weak_secret_name,
    looks_random,
)
from .scan import CHARS_PER_EXTRA_CANDIDATE, MAX_CANDIDATES_PER_RULE

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
