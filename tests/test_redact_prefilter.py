"""The redaction prefilter (openclaw_fts/redact/pipeline.py, ``nothing_to_find``): a text where no
rule's trigger occurs is returned without running the rules. It must never skip a text some
rule masks: the default redactor (prefilter on) and a redactor with a host pattern that never
matches (the prefilter is off whenever a host adds patterns, so every rule runs) agree on
every text, through the public API.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from upstream_vectors import json_strings

from openclaw_fts.redact import DEFAULT_REDACTOR, Redactor

#: Every rule runs: a host pattern (one that never matches) turns the prefilter off.
ALL_RULES = Redactor([r"(?!)"])
FIXTURES = Path(__file__).parent / "fixtures" / "redaction_upstream"


def _upstream_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(FIXTURES.glob("*.json")):
        texts.extend(json_strings(json.loads(path.read_text(encoding="utf-8"))))
    return texts


def test_the_prefilter_skips_no_upstream_vector() -> None:
    texts = _upstream_texts()
    assert len(texts) > 1000
    masked = 0
    for text in texts:
        expected = ALL_RULES.redact(text)
        assert DEFAULT_REDACTOR.redact(text) == expected, text
        masked += expected != text
    assert masked > 500  # the comparison is not between two no-ops


@pytest.mark.parametrize(
    "text",
    [
        "https://h/?client%5Fs%65cret=abcd1234efgh5678",  # a name hidden behind percent-encoding
        "?client_se\u200bcret=abcd1234efgh5678",  # ... behind an invisible character
        "mysql -u root -pHunter2x",  # a password command's short flag
        "Authorization: Basic dXNlcjpwYXNz",
        "sqlplus scott/tiger@db",
        "kind: Secret\ndata:\n  k: dmFsdWU=\n",
        "https://user:hunter22@example.com",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_the_prefilter_lets_through_what_a_rule_masks(text: str) -> None:
    expected = ALL_RULES.redact(text)
    assert expected != text
    assert DEFAULT_REDACTOR.redact(text) == expected


_ALPHABET = st.sampled_from(
    [
        *"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\n=:;,.'\"-_/@?&#%<>",
        *("key", "pass", "token", "secret", "pw", "://", " -p", "Bearer ", "€", "\u0130"),
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_the_prefilter_agrees_with_every_rule_on_any_text(text: str) -> None:
    assert DEFAULT_REDACTOR.redact(text) == ALL_RULES.redact(text)
