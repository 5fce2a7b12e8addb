"""Generate tests/fixtures/redaction_corpus.jsonl: secrets in the shapes public scanners test.

Invariant: the output depends only on this file and ``--seed`` (default 13): the same corpus on
every machine. Every sample is random (from the charset and length of its family), so no line
is a live credential; what is taken from public code is the SHAPE of each family (its prefix,
alphabet and length) and the syntaxes the samples are written in, never a real key.

Each line: ``{"family", "source", "text", "secret"}``. ``secret`` is what must not survive
redaction (docs/redaction.md, "Measuring a leak"): for OpenClaw's fixtures the string itself
(its tests' criterion), for generated samples any 8 characters of its masked-away middle.

Sources (public repositories, read through their rule files and tests):

* ``gitleaks``: gitleaks/gitleaks ``cmd/generate/config/rules/<vendor>.go`` (each family's
  prefix, alphabet and length) rendered in the 26 assignment syntaxes of
  ``cmd/generate/config/utils/generate.go`` (``GenerateSampleSecrets``), plus bare in prose.
* ``detect-secrets``: Yelp/detect-secrets ``tests/plugins/keyword_test.py`` (the syntaxes of
  its keyword positives: ``apikey := "…"``, ``some_dict["secret"] = …``, ``private_key '…';``)
  and ``tests/plugins/high_entropy_strings_test.py`` (quoted random base64/hex strings).
* ``openclaw``: openclaw/openclaw ``src/logging/redact.test.ts``, the fixtures restated in
  tests/test_redact_openclaw.py (imported from there, so the two never drift apart).

Run: ``python scripts/make_redaction_corpus.py`` (writes the file; ``--check`` compares).
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "redaction_corpus.jsonl"
#: Random samples drawn per gitleaks family (each rendered in every syntax and in prose).
SAMPLES_PER_FAMILY = 2
#: Random samples per detect-secrets keyword syntax.
SAMPLES_PER_KEYWORD_SYNTAX = 2

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "_-"
B64 = ALNUM + "+/"

# (family, gitleaks rule file, identifier used in the syntaxes, parts). A part is a literal
# string or (alphabet, length).
Part = str | tuple[str, int]
GITLEAKS: list[tuple[str, str, str, list[Part]]] = [
    ("github-pat", "github.go", "github", ["ghp_", (ALNUM, 36)]),
    ("github-oauth", "github.go", "github", ["gho_", (ALNUM, 36)]),
    ("github-app", "github.go", "github", ["ghs_", (ALNUM, 36)]),
    ("github-fine-grained", "github.go", "github", ["github_pat_", (ALNUM + "_", 82)]),
    ("gitlab-pat", "gitlab.go", "gitlab", ["glpat-", (B64URL, 20)]),
    ("gitlab-runner", "gitlab.go", "gitlab", ["glrt-", (B64URL, 20)]),
    ("gitlab-deploy", "gitlab.go", "gitlab", ["gldt-", (B64URL, 20)]),
    (
        "slack-bot",
        "slack.go",
        "slack",
        ["xoxb-", ("0123456789", 12), "-", ("0123456789", 12), "-", (ALNUM, 24)],
    ),
    (
        "slack-user",
        "slack.go",
        "slack",
        ["xoxp-", ("0123456789", 12), "-", ("0123456789", 12), "-", (ALNUM, 32)],
    ),
    ("stripe", "stripe.go", "stripe", ["sk_live_", (ALNUM, 24)]),
    ("stripe-restricted", "stripe.go", "stripe", ["rk_test_", (ALNUM, 24)]),
    ("openai", "openai.go", "openai", ["sk-proj-", (B64URL, 58), "T3BlbkFJ", (B64URL, 58)]),
    ("anthropic", "anthropic.go", "anthropic", ["sk-ant-api03-", (B64URL, 93), "AA"]),
    ("aws-access-key", "aws.go", "aws", ["AKIA", ("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)]),
    ("aws-secret-key", "aws.go", "aws_secret", [(B64, 40)]),
    ("gcp-api-key", "gcp.go", "gcp", ["AIza", (B64URL, 35)]),
    ("npm", "npm.go", "npm", ["npm_", (LOWER_ALNUM, 36)]),
    ("pypi", "pypi.go", "pypi", ["pypi-AgEIcHlwaS5vcmc", (B64URL, 60)]),
    ("huggingface", "huggingface.go", "huggingface", ["hf_", (string.ascii_letters, 34)]),
    ("sendgrid", "sendgrid.go", "sendgrid", ["SG.", (B64URL, 22), ".", (B64URL, 43)]),
    ("shopify", "shopify.go", "shopify", ["shpat_", (HEX, 32)]),
    ("digitalocean", "digitalocean.go", "digitalocean", ["dop_v1_", (HEX, 64)]),
    ("doppler", "doppler.go", "doppler", ["dp.pt.", (ALNUM, 43)]),
    ("linear", "linear.go", "linear", ["lin_api_", (ALNUM, 40)]),
    ("postman", "postman.go", "postman", ["PMAK-", (HEX, 24), "-", (HEX, 34)]),
    ("grafana", "grafana.go", "grafana", ["glsa_", (ALNUM, 32), "_", (HEX, 8)]),
    ("databricks", "databricks.go", "databricks", ["dapi", (HEX, 32)]),
    ("vault", "hashicorp_vault.go", "vault", ["hvs.", (B64URL, 90)]),
    (
        "dynatrace",
        "dynatrace.go",
        "dynatrace",
        ["dt0c01.", (UPPER_ALNUM, 24), ".", (UPPER_ALNUM, 64)],
    ),
    ("mailgun", "mailgun.go", "mailgun", ["key-", (HEX, 32)]),
    ("age", "age.go", "age", ["AGE-SECRET-KEY-1", ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)]),
    ("telegram", "telegram.go", "telegram", [("0123456789", 9), ":AA", (B64URL, 33)]),
    ("groq", "groq.go", "groq", ["gsk_", (ALNUM, 52)]),
    ("perplexity", "perplexity.go", "perplexity", ["pplx-", (ALNUM, 48)]),
    ("heroku", "heroku.go", "heroku", ["HRKU-AA", (B64URL, 58)]),
    (
        "jwt",
        "jwt.go",
        "jwt",
        ["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ", (B64URL, 40), ".", (B64URL, 43)],
    ),
    ("generic-api-key", "generic.go", "generic", [(ALNUM, 32)]),
    ("generic-hex", "generic.go", "client", [(HEX, 40)]),
    ("azure-ad-client-secret", "azure.go", "azure", [(ALNUM, 3), "8Q~", (ALNUM + "_~.-", 34)]),
    ("twilio", "twilio.go", "twilio", ["SK", (HEX, 32)]),
]

# gitleaks' GenerateSampleSecrets syntaxes ({i}: identifier, {s}: secret).
SYNTAXES: dict[str, str] = {
    "ini-quoted1": '{i}Token="{s}"',
    "ini-quoted2": '{i}Token = "{s}"',
    "ini-unquoted1": "{i}Token={s}",
    "ini-unquoted2": "{i}Token = {s}",
    "json-string": '{{\n    "{i}_token": "{s}"\n}}',
    "json-escaped-string": '\\{{\n    \\"{i}_token\\": \\"{s}\\"\n\\}}',
    "xml-element": "<{i}Token>{s}</{i}Token>",
    "xml-element-multiline": "<{i}Token>\n    {s}\n</{i}Token>",
    "yaml-unquoted": "{i}_token: {s}",
    "yaml-single-quote": "{i}_token: '{s}'",
    "yaml-double-quote": '{i}_token: "{s}"',
    "yaml-literal": "{i}_token: |\n  {s}",
    "yaml-folding": "{i}_token: >\n  {s}",
    "csharp": 'string {i}Token = "{s}";',
    "go-normal": 'var {i}Token string = "{s}"',
    "go-short": '{i}Token := "{s}"',
    "go-backticks": "{i}Token := `{s}`",
    "java": 'String {i}Token = "{s}";',
    "kotlin-notype": 'var {i}Token = "{s}"',
    "php-concat": '${i}Token .= "{s}"',
    "python-single-quote": "{i}Token = '{s}'",
    "python-double-quote": '{i}Token = "{s}"',
    "csv-unquoted": "{i}Token,{s},",
    "logstash": '  "{i}Token" => "{s}"',
    "make-recursive": '{I}_TOKEN = "{s}"',
    "make-simple": '{I}_TOKEN := "{s}"',
    "make-shell": '{I}_TOKEN ::= "{s}"',
    "make-evaluated-shell": '{I}_TOKEN :::= "{s}"',
    "make-conditional": '{I}_TOKEN ?= "{s}"',
    "make-append": '{I}_TOKEN += "{s}"',
}
#: Families that have no vendor prefix: in prose with no name around them only the opaque
#: detector can see them (hex never: a hash is not a credential).
PROSE = "I pasted the key {s} into the config, can you check it?"

# detect-secrets KeywordDetector positives: the syntaxes ({s}: secret).
KEYWORD_SYNTAXES: list[str] = [
    'apikey := "{s}"',
    "apikey :='{s}'",
    "apikey:= {s}",
    "'theapikey': '{s}'",
    '"theapikey": "{s}"',
    'apikey: "{s}"',
    "apikey: {s}",
    "theapikey:{s}",
    'apikey = @"{s}"',
    'apikey[]= "{s}"',
    'some_dict["secret"] = "{s}"',
    'the_password= "{s}"',
    "the_password='{s}'",
    "some_dict['secret'] = {s}",
    "my_password={s}",
    "my_password = {s}",
    'apikey "{s}";',
    'fooapikeyfoo"{s}";',
    "private_key '{s}';",
]
#: detect-secrets' own keyword secret is full of punctuation; ours are drawn from this.
KEYWORD_ALPHABET = ALNUM + "{}()[]$#>-_!@%^&*"


def draw(rng: random.Random, parts: list[Part]) -> str:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            alphabet, length = part
            out.append("".join(rng.choice(alphabet) for _ in range(length)))
    return "".join(out)


def render(template: str, identifier: str, secret: str) -> str:
    return (
        template.replace("{{", "\x00")
        .replace("}}", "\x01")
        .replace("{i}", identifier)
        .replace("{I}", identifier.upper())
        .replace("{s}", secret)
        .replace("\x00", "{")
        .replace("\x01", "}")
    )


def openclaw_cases() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "tests"))
    import test_redact_openclaw as oc  # the tests' own fixtures

    source = "openclaw/openclaw src/logging/redact.test.ts"
    cases: list[dict[str, Any]] = []
    for text, gone, _kept in oc.MASKED:
        if len(text) > 4_000:
            continue  # the chunk-boundary cases: long filler, tested in the unit tests
        for secret in gone:
            cases.append(
                {"family": "openclaw-fixture", "source": source, "text": text, "secret": secret}
            )
    for token in oc.VENDOR_FIXTURES:
        cases.append(
            {"family": "openclaw-vendor", "source": source, "text": token, "secret": token}
        )
    for text in oc.SOURCE_LITERALS:
        secret = "987654321" if "987654321" in text else "fixture-only-not-a-real-secret"
        cases.append(
            {"family": "openclaw-source", "source": source, "text": text, "secret": secret}
        )
    return cases


def build(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = []
    for family, rule, identifier, parts in GITLEAKS:
        source = f"gitleaks/gitleaks cmd/generate/config/rules/{rule}"
        for _ in range(SAMPLES_PER_FAMILY):
            secret = draw(rng, parts)
            for name, template in SYNTAXES.items():
                cases.append(
                    {
                        "family": f"gitleaks:{family}",
                        "source": source,
                        "syntax": name,
                        "text": render(template, identifier, secret),
                        "secret": secret,
                    }
                )
            cases.append(
                {
                    "family": f"prose:{family}",
                    "source": source,
                    "syntax": "prose",
                    "text": render(PROSE, identifier, secret),
                    "secret": secret,
                }
            )
    keyword_source = "Yelp/detect-secrets tests/plugins/keyword_test.py"
    for template in KEYWORD_SYNTAXES:
        for _ in range(SAMPLES_PER_KEYWORD_SYNTAX):
            secret = draw(rng, [(KEYWORD_ALPHABET, 28)])
            cases.append(
                {
                    "family": "detect-secrets:keyword",
                    "source": keyword_source,
                    "syntax": template,
                    "text": render(template, "", secret),
                    "secret": secret,
                }
            )
    entropy_source = "Yelp/detect-secrets tests/plugins/high_entropy_strings_test.py"
    for _ in range(20):
        secret = draw(rng, [(B64, 40)])
        cases.append(
            {
                "family": "detect-secrets:base64-string",
                "source": entropy_source,
                "text": f'secret = "{secret}"',
                "secret": secret,
            }
        )
        cases.append(
            {
                "family": "detect-secrets:base64-string",
                "source": entropy_source,
                "text": f"some_value = '{secret}'",
                "secret": secret,
            }
        )
    cases.extend(openclaw_cases())
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    lines = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in build(args.seed))
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == lines
        print("up to date" if same else f"{OUT} is stale: rerun without --check")
        return 0 if same else 1
    OUT.write_text(lines, encoding="utf-8")
    print(f"wrote {lines.count(chr(10))} cases to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
