"""The rule families of openclaw_fts/redact/families.py and the token shapes added to its data
(docs/redaction.md, "Rule families"): each masks what it is for, in OpenClaw's mask format,
and leaves its look-alikes alone. Through the public API (:func:`redact_text`)."""

from __future__ import annotations

import pytest

from openclaw_fts.redact import redact_text

VALUE = "m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"
TOKEN = "abcd1234abcd1234abcd1234ABCD1234ABCD1234--__"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # named values: the secret word anywhere in the name, every assignment syntax
        (f'secrete = "{VALUE}"', VALUE),
        (f"db_pass_secure := {VALUE}", VALUE),
        (f'apikey_myservice: "{VALUE}"', VALUE),
        (f'char secrete[25] = "{VALUE}";', VALUE),
        (f'std::string secret("{VALUE}");', VALUE),
        (f'secrete.assign("{VALUE}",17);', VALUE),
        (f'secrete "{VALUE}";', VALUE),
        ("secrete = A,.:-¨@*¿?!", "A,.:-¨@*¿?!"),
        ("cloudant_pw='abcd1234abcd1234abcd1234'", "abcd1234abcd1234abcd1234"),
        (f"ibm_cloud_iam-key : {TOKEN}", TOKEN),
        (f'"ibm-iam_key" := "{TOKEN}"', TOKEN),
        ('SUMO_ACCESS_ID = "suGyI5imvADdvU"', "suGyI5imvADdvU"),
        # a Kubernetes Secret's data
        ("kind: Secret\ndata:\n  key: bXlwYXNzd29yZA==\n", "bXlwYXNzd29yZA=="),
        ("kind: Secret\ndata:\n  .dockercfg: |\n    eyJhdXRocyI6e30K\n", "eyJhdXRocyI6e30K"),
        # Bundler's per-host credentials
        ("export BUNDLE_GEMS__CONTRIBSYS__COM=cafebabe:deadbeef", "cafebabe:deadbeef"),
        # a token as a URL's or curl's user
        ("https://cafeb4b3:d3adb33f@enterprise.contribsys.com", "cafeb4b3"),
        ('curl -u "d2LkV78zLx!t:" https://localhost:9200', "d2LkV78zLx!t"),
        # token shapes
        ("AKCp8aB3cD4eF5gH6jK7", "AKCp8aB3cD4eF5gH6jK7"),
        ("SK3f9a0c4d3f9a0c4d3f9a0c4d3f9a0c4d", "SK3f9a0c4d3f9a0c4d3f9a0c4d3f9a0c4d"),
        ("AROAQ3EGRPN7XKZL2M4T", "AROAQ3EGRPN7XKZL2M4T"),
        ("12345678ABCDEFH1234567890ABCDEFH12345678", "12345678ABCDEFH1234567890ABCDEFH12345678"),
        # a bare key in lower case and digits, no name beside it (many vendors' 32-64 keys)
        (
            "the key is in the ticket: x9mq4tz7kd2wr8pn5vb3hj6fc1lsg0yq now",
            "x9mq4tz7kd2wr8pn5vb3hj6fc1lsg0yq",
        ),
        (
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        ),
    ],
)
def test_family_masks_its_secret(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert "***" in out or "…" in out


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"db_pass_secure := {VALUE}", "db_pa"),  # the name stays: only the value is masked
        ('secrete = "q7vXk2Lm9Qr4Tv7Wn3YsB8cD"', 'secrete = "q7vXk2…B8cD"'),  # OpenClaw's mask
        ("cloudant_pw='abcd1234abcd1234abcd1234'", "cloudant_pw='***'"),  # a password: whole
    ],
)
def test_family_mask_format(text: str, kept: str) -> None:
    assert kept in redact_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "the secretary said the password reset page is down",
        'secret = get_secret("db")',
        'x = get_secret("database-main")',
        "secret = params['oauth_token_secret'][0]",
        "return cls(value, secret=True)",
        "pass_stmt: 'pass'",
        "PWD=/home/alice/src",
        "session_key=agent:main:subagent:42",
        'cache_key = "user1234profile5678x"',
        # lower case and digits, but a hash (hex) or a name made of words and versions
        "commit 3f9a0c4d1b2e7f186b2e7f183f9a0c4d1b2e7f18 fixed it",
        "built libpython310x86x64linuxgnurelease2024build here",
        'charset_key = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"',
        'vin_chars = "1234567890ABCDEFGHJKLMNPRSTUVWXYZ"',
        "kind: ConfigMap\ndata:\n  mode: production-2024\n",
        "BUNDLE_GEMFILE=Gemfile.lock",
        "https://admin2024:hunter2@db.example.test",
        "curl -u alice https://example.test",
        "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709, uuid 1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        "version 1.2.3-rc.4+build.2024 of APPLICATION_CONFIGURATION",
    ],
)
def test_family_look_alikes_stay(text: str) -> None:
    assert redact_text(text).replace("hunter2", "***") in (text, text.replace("hunter2", "***"))
