"""Every rule of openclaw_fts.redact.data masks its own sample, and the families that used to
leak (password flags, .netrc, plain YAML passwords, unnamed literals in code, aligned values,
values holding ``! = @ ] |``, vendor formats) are masked in the syntaxes users paste, while the
public-by-nature strings (lock-file checksums, git SHAs, UUIDs, labels) stay (docs/redaction.md).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from upstream_vectors import json_strings

from openclaw_fts.redact import (
    KEEP_END_CHARS,
    KEEP_START_CHARS,
    MIN_PARTIAL_MASK_CHARS,
    redact_text,
)
from openclaw_fts.redact import data as rules
from openclaw_fts.redact.rules.tokens import _shortest

#: Characters of a masked-away middle that count as a leak (docs/redaction.md).
LEAK_WINDOW_CHARS = 8


def _leaks(secret: str, out: str) -> bool:
    if len(secret) < MIN_PARTIAL_MASK_CHARS:
        return secret in out
    middle = secret[KEEP_START_CHARS:-KEEP_END_CHARS]
    return any(
        middle[i : i + LEAK_WINDOW_CHARS] in out
        for i in range(max(1, len(middle) - LEAK_WINDOW_CHARS + 1))
    )


@pytest.mark.parametrize("rule", rules.VENDOR_TOKENS, ids=lambda r: r.family)
def test_every_vendor_rule_masks_its_sample(rule: rules.VendorToken) -> None:
    for text in (rule.sample, f"here is the key {rule.sample} ok", f'"{rule.sample}"'):
        out = redact_text(text)
        assert out != text, text
        body = rule.sample[-rule.minimum :]
        assert not _leaks(body, out), out
        assert redact_text(out) == out


@pytest.mark.parametrize("rule", rules.PATTERN_TOKENS, ids=lambda r: r.family)
def test_every_pattern_rule_masks_its_sample(rule: rules.PatternToken) -> None:
    out = redact_text(f"value: {rule.sample} end")
    tail = rule.sample.splitlines()[-1][-20:]
    assert tail not in out, out
    assert redact_text(out) == out


@pytest.mark.parametrize("rule", rules.CLI_PASSWORD_COMMANDS, ids=lambda r: r.family)
def test_every_password_command_masks_its_sample(rule: rules.PasswordCommand) -> None:
    out = redact_text(rule.sample)
    assert "Q3egRPn7Xk" not in out and "***" in out, out
    assert out.split()[0] == rule.sample.split()[0]  # the command stays searchable


PASSWORD = "S3cret!Pa55"


@pytest.mark.parametrize(
    "template",
    [
        "psexec \\\\host -u admin -p {p} cmd.exe",
        "sshpass -p '{p}' ssh deploy@host",
        'sshpass -p "{p}" scp a b',
        "mysql -u root -p{p} shop",
        "mysql -u root -p'{p}' shop",
        "mysqldump -uroot -p {p} shop > dump.sql",
        "redis-cli -h cache -p 6379 -a {p} ping",
        "sqlcmd -S db -U sa -P {p} -Q 'select 1'",
        "ldapsearch -x -D cn=admin -w {p} -b dc=example,dc=com",
        "docker login -u ci -p {p} registry.example.com",
        "tool --password {p} --verbose",
        "tool --password={p}",
        "keytool -importkeystore -srcstorepass {p} -deststorepass {p}",
        "openssl pkcs12 -in a.p12 -passin pass:{p} -nodes",
        "sqlplus scott/{p}@orcl",
        "machine api.example.com login octocat password {p}",
        "machine api.example.com\n  login octocat\n  password {p}\n",
        "password: {p}",
        "password:                        {p}",
        "db:\n  password: hunterpass\n",
        "DB_PASSWORD=SuperPwd",
        "java -Djavax.net.ssl.keyStorePassword={p} -jar app.jar",
        "-Dsonar.password={p}",
        '$cred = ConvertTo-SecureString -Password "{p}"',
    ],
)
def test_passwords_are_masked_whole(template: str) -> None:
    text = template.replace("{p}", PASSWORD)
    out = redact_text(text)
    secret = (
        "hunterpass" if "hunterpass" in text else "SuperPwd" if "SuperPwd" in text else PASSWORD
    )
    assert secret not in out, out
    assert "***" in out
    assert redact_text(out) == out


KEY_HEX = "4f9e8d7c6b5a43e2d1c0b9a8f7e6d5c4b3a2f1e0"
KEY_LOWER = "r2ofhhzv4tq8nbd7wpy3kxm5jcs6gfea"
KEY_MIXED = "q7vXk2Lm9Qr4Tv7Wn3YsBc6"


@pytest.mark.parametrize(
    "text",
    [
        f"const client = new Client('{KEY_LOWER}');",
        f'client := mailgun.NewClient("{KEY_HEX}")',
        f'Client client = new Client("{KEY_HEX}");',
        f'stripe = Stripe("{KEY_LOWER}")',
        f'api.login("{KEY_HEX}")',
        f'key = "{KEY_LOWER}"',
        f'k = "{KEY_HEX}"',
        f"stripe_key: {KEY_LOWER}",
        f'"license": "{KEY_MIXED}"',
        f"mvn sonar:sonar -Dsonar.login={KEY_HEX}",
        f'config = {{"foo": "{KEY_MIXED}"}}',
        f"the vendor secret {KEY_LOWER} is rotated monthly",
        f"my API token is {KEY_HEX}",
        f"Password: {KEY_MIXED}",
    ],
)
def test_unnamed_literals_in_code_are_masked(text: str) -> None:
    out = redact_text(text)
    secret = next(k for k in (KEY_HEX, KEY_LOWER, KEY_MIXED) if k in text)
    assert not _leaks(secret, out), out


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer abc!def!ghi123456789xyz0",
        "Authorization: Bearer abc|def]ghi@jkl123456789",
        "Bearer 00D5g000004ABCD!AQ8AQHx9yJ2kLmNoPqRsTuVwXyZ0123456789",
        "session 00D5g000004ABCD!AQ8AQHx9yJ2kLmNoPqRsTuVwXyZ0123456789",
        "ghs_abc_defghijklmnopqrstuvwxyz0123456789",
        "vault: s.Ab3dEfGh1jKlMnOpQrStUvWx",
        "mapbox sk.eyJ1IjoiYWJjZGVmIiwiYSI6ImFiY2RlZmdoaWprbG1ub3AifQ.abcdefghijklmnopqrstuv",
        "dp.audit.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        "patAbCdEfGhIjKlMn.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "https://acme.webhook.office.com/webhookb2/a1b2c3d4-e5f6-7890-abcd-ef1234567890"
        "@a1b2c3d4-e5f6-7890-abcd-ef1234567890/IncomingWebhook/0123456789abcdef0123456789abcdef",
        "nuget push pkg.nupkg -k oy2abcdefghijklmnopqrstuvwxyz0123456789abcdefg",
    ],
)
def test_values_are_masked_to_their_end(text: str) -> None:
    out = redact_text(text)
    tail = text.split()[-1].split("/")[-1]
    assert not _leaks(tail, out), out


@pytest.mark.parametrize(
    "text",
    [
        "golang.org/x/text v0.3.7 h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=",
        "golang.org/x/text v0.3.7/go.mod h1:u+2+/6zg+i71rQMx5EYifcz6MCKuco9NR6JIITiCfzQ=",
        '"integrity": "sha512-Xyzabc123DEFghi456JKLmno789PQRstu0VWXyz1AbCdEfGhIjKlMnOpQ=="',
        "--hash=sha256:3f2c1a5b8d7e6f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a",
        'commit_sha = "8f3a9c0d2b7e4f1a6c5d8e9f0a1b2c3d4e5f6a7b"',
        'request_id = "a1b2c3d4-e5f6-7890-abcd-ef1234567890"',
        'security_code="CVV2"',
        "hashlib.pbkdf2_hmac('sha256', password, b'salt', 100000)",
        "GoogleCloudDataplexV1EntrySourceAncestor",
        "Authorization: messages.Authorization()",
        "token: ${{ github.token }}",
        "api_key: {{ .Values.apiKey }}",
        "HOST_KEY = 'HTTP_HOST'",
        "sort_key: q7vXk2Lm9Qr4Tv7Wn3YsBc6",
        "ssh -p 2222 deploy@host",
        "mkdir -p build/out",
        "password: string",
        "login: alice",
        'publicKeyToken="XXXX"',
        'version = "1.2.3-rc1+build.20240101"',
        "* Add new upstream signing key 19882D92DDA4C400C22C0D56CC2AF4472167BE03",
        "the key difference is python3-venv-x86_64-linux",
    ],
)
def test_public_strings_and_labels_are_not_masked(text: str) -> None:
    assert redact_text(text) == text


def test_lock_file_checksums_of_real_files_are_never_masked() -> None:
    """go.sum ``h1:``, npm ``integrity``, pip ``--hash`` and pip RECORD lines built from the
    SHA digests of this project's own files (real checksums of real bytes)."""
    import base64
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    files = sorted(root.glob("openclaw_fts/**/*.py")) + sorted(root.glob("tests/*.py"))
    assert len(files) > 50
    for path in files:
        data = path.read_bytes()
        sha256 = hashlib.sha256(data).digest()
        name = path.stem.replace("_", "-")
        b64 = base64.b64encode(sha256).decode()
        lines = [
            f"github.com/acme/{name} v1.2.3 h1:{b64}",
            f"github.com/acme/{name} v1.2.3/go.mod h1:{b64[::-1]}",
            f'  "integrity": "sha512-{base64.b64encode(hashlib.sha512(data).digest()).decode()}",',
            f"{name}==1.2.3 --hash=sha256:{sha256.hex()}",
            f"{name}/{path.name},sha256={base64.urlsafe_b64encode(sha256).decode().rstrip('=')},"
            f"{len(data)}",
            f'commit = "{hashlib.sha1(data).hexdigest()}"',
        ]
        for line in lines:
            assert redact_text(line) == line, line


#: Pieces the generated texts are made of: secrets' words and the names of public values, the
#: separators and quotes around them, runs long enough to be values, and the two characters
#: whose lower case holds a token character while they are none.
_RUN_BOUNDED_PIECES = (
    "api key is ",
    "the ritekit secret ",
    "password: ",
    "token =",
    "NextToken: ",
    "VersionId=",
    "job_arn = '",
    "cursor:",
    "url: https://x",
    ' "',
    "'",
    "`",
    " ",
    "\t",
    "\n",
    "=",
    ":",
    "q7vXk2LmP9sT4wYz8RbN3cFh",
    "3f9a1b2c4d5e6f708192a3b4",
    "AKIAabcdefghijklmnop",
    "a" * 30,
    "ids",
    "\u0130",
    "\u212a",
    "é",
    "secrets  was  ",
    "new Client(",
    ")",
)


def test_the_run_bounded_finders_find_what_their_patterns_find() -> None:
    """The opaque rule's finders that search only near the runs of token characters
    (``quoted_literals``, ``prose_key_matches``) or one word at a time (``public_name_tails``)
    give the matches their pattern's ``finditer`` gives over the whole text, in order: on
    every string of the upstream redaction vectors and on texts made of the pieces those
    searches turn on."""

    from openclaw_fts.redact.rules import opaque
    from openclaw_fts.redact.scan import Scan

    folder = Path(__file__).parent / "fixtures" / "redaction_upstream"
    texts = [
        s
        for name in ("openclaw.json", "gitleaks.json", "detect_secrets.json")
        for s in json_strings(json.loads((folder / name).read_text(encoding="utf-8"))["vectors"])
    ]
    rng = random.Random(20261207)
    texts += ["".join(rng.choices(_RUN_BOUNDED_PIECES, k=rng.randint(1, 40))) for _ in range(3000)]
    assert len(texts) > 3000

    def seen(
        matches: Iterable[re.Match[str]],
    ) -> list[tuple[tuple[int, int], dict[str, str | None]]]:
        return [(m.span(), m.groupdict()) for m in matches]

    for text in texts:
        scan = Scan(text)
        low = scan.lowered()
        assert seen(opaque.quoted_literals(scan)) == seen(
            opaque._QUOTED_LITERAL_RE.finditer(text)
        ), text
        assert seen(opaque.prose_key_matches(scan)) == seen(opaque._PROSE_KEY_RE.finditer(low)), (
            text
        )
        assert seen(opaque.public_name_tails(low)) == seen(
            opaque._PUBLIC_NAME_TAIL_RE.finditer(low)
        ), text


#: Pieces of the texts the anchored finders are checked on: every pattern rule's sample and
#: anchor, the header and operator words in several cases (one with a dotless ``ı``), the
#: characters around them, and runs of token characters (more than a few: the joined runs).
_ANCHORED_PIECES = (
    *(rule.sample for rule in rules.PATTERN_TOKENS),
    *(rule.anchor for rule in rules.PATTERN_TOKENS if rule.anchor),
    "Authorization: Bearer ",
    "AUTHORIZATION=",
    "authorızation: ",
    "\\nauthorization: Basic ",
    "x-Authorization: ",
    "bearer ",
    "BEARER\t",
    "earer ",
    "q7vXk2LmP9sT4wYz8RbN3cFh",
    "3f9a0c4d" * 4,
    "==",
    "!=",
    "===",
    " -p",
    "\t-a",
    "-P",
    "A",
    "_",
    "-",
    ".",
    " ",
    "\n",
    "'",
    "!",
    ":",
    "~",
    "\u0130",
    "\u212a",
    *(rule.sample for rule in rules.VENDOR_TOKENS),
    # the shortest tokens, alone in their run (a run shorter than a long run)
    *(f" {rule.sample[: _shortest(rule)]} " for rule in rules.VENDOR_TOKENS),
    "sk-",
    "xoxb-",
    "LTAI",
    "glft-",
    "q7vXk2LmP9sT4",
    "task-sk-ab12cd34ef56gh78",
)


def test_the_anchored_finders_find_what_their_patterns_find() -> None:
    """The finders that try a pattern only where a word stands at a fixed place in its
    matches (:func:`openclaw_fts.redact.scan.matches_at`: the anchored pattern rules, in the
    runs or the text; ``Authorization``, a bare ``Bearer``, ``==``/``!=``), the vendor rule's
    (the long runs joined, the shorter ones from the heads of the short tokens) and the
    password flags' start matched from its ``-`` give the matches of their pattern's
    ``finditer`` over the whole text, in order: on every string of the upstream redaction
    vectors and on texts made of those words, the rules' samples and runs of token
    characters."""
    from openclaw_fts.redact import scan as scan_module
    from openclaw_fts.redact.judges import _SHORT_PASSWORD_FLAGS
    from openclaw_fts.redact.rules import comparisons, flags, headers, tokens
    from openclaw_fts.redact.scan import Scan

    folder = Path(__file__).parent / "fixtures" / "redaction_upstream"
    texts = [
        s
        for name in ("openclaw.json", "gitleaks.json", "detect_secrets.json")
        for s in json_strings(json.loads((folder / name).read_text(encoding="utf-8"))["vectors"])
    ]
    rng = random.Random(41)
    short = ["".join(rng.choices(_ANCHORED_PIECES, k=rng.randint(1, 60))) for _ in range(3000)]
    # long texts too: a text of MIN_CHARS_SEARCHED_AT_WORDS or more is searched from its words,
    # one of MIN_CHARS_LISTING_LONG_RUNS_APART or more lists its long runs apart
    texts += short + ["\n".join(short[i : i + 100]) for i in range(0, len(short), 100)]
    texts += ["\n".join(texts[i : i + 60]) for i in range(0, len(texts) - len(short), 60)]
    texts += ["\n".join(rng.choices(short, k=2000)) for _ in range(4)]
    assert sum(len(t) >= scan_module.MIN_CHARS_SEARCHED_AT_WORDS for t in texts) >= 50
    assert sum(len(t) >= scan_module.MIN_CHARS_LISTING_LONG_RUNS_APART for t in texts) >= 4

    def seen(matches: Iterable[re.Match[str]]) -> list[tuple[int, int]]:
        return [m.span() for m in matches]

    # (the regex the flags rule had: a blank first)
    flag_start = re.compile(
        "[ \t]-[" + "".join(sorted({f[-1] for f in _SHORT_PASSWORD_FLAGS})) + "]"
    )
    for text in texts:
        scan = Scan(text)
        for anchor, pattern, in_runs, anchor_at in tokens._TOKEN_RULES:
            if anchor_at < 0:
                continue
            expected = seen(pattern.finditer(text))
            if in_runs:
                got = [(m.start() + at, m.end() + at) for at, m in scan.in_runs(pattern, in_runs)]
                anchored = scan.in_runs(pattern, in_runs, anchor, anchor_at)
                assert [(m.start() + at, m.end() + at) for at, m in anchored] == expected, text
                assert got == expected, text
            else:
                assert seen(scan.matches_at(pattern, (anchor,), anchor_at)) == expected, text
        vendor = [(m.start() + at, m.end() + at) for at, m in tokens.vendor_matches(scan)]
        assert vendor == seen(tokens._VENDOR_RE.finditer(text)), text
        assert seen(
            scan.matches_at(headers._AUTHORIZATION_RE, (headers._AUTHORIZATION_WORD,), 1, True)
        ) == seen(headers._AUTHORIZATION_RE.finditer(text)), text
        assert seen(
            scan.matches_at(headers._BARE_BEARER_RE, (headers._BEARER_WORD,), 1, True)
        ) == seen(headers._BARE_BEARER_RE.finditer(text)), text
        assert seen(scan.matches_at(comparisons._COMPARISON_RE, comparisons._OPERATORS, 0)) == seen(
            comparisons._COMPARISON_RE.finditer(text)
        ), text
        assert [m.start() - 1 for m in flags._PASSWORD_FLAG_START_RE.finditer(text)] == [
            m.start() for m in flag_start.finditer(text)
        ], text
