"""The upstream redaction vectors (tests/fixtures/redaction_upstream/) as cases to run, and the
leak judge used by the tests and by ``bench.redaction_figures``.

Invariant: the fixtures are read, never changed; what counts as a secret of a case is
derived only from the upstream expectation (the strings OpenClaw's test says must be gone,
the parts of the input its expected output hides behind ``***`` or ``abcdef…ghij``, the
secret detect-secrets' keyword test names, for a gitleaks sample the secret gitleaks itself
reports: :func:`gitleaks_secrets`), or, where upstream names no secret value, by the one
documented rule of :func:`token_secret`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "redaction_upstream"
#: OpenClaw's functions that redact a text (the ones this plugin's redaction stands in for).
OPENCLAW_TEXT_FUNCTIONS = frozenset(
    {
        "redactSensitiveText",
        "redactSensitiveLines",
        "redactSourceInputTextWithConfig",
        "redactToolPayloadTextWithConfig",
        "redactModelVisibleToolPayloadText",
        "redactToolDetail",
    }
)
#: Markers of a masked span in OpenClaw's expected outputs.
MASK_MARKERS = re.compile(r"\*\*\*|…")
#: A hidden part shorter than this is not judged by itself (``cvc=***`` hides ``123``).
MIN_HIDDEN_CHARS = 6
#: Characters of a secret's never-shown middle that count as a leak when they survive.
LEAK_WINDOW_CHARS = 8
#: Characters a partial mask may show at the start and at the end.
SHOWN_START_CHARS = 6
SHOWN_END_CHARS = 4
#: Characters of a token to count as the secret of a sample that names none.
MIN_TOKEN_SECRET_CHARS = 8


@dataclass
class Case:
    """One text to import, and what must not come back from it."""

    family: str
    origin: str  # repository path:line
    text: str
    secrets: list[str] = field(default_factory=list)  # none may appear whole
    hidden: list[str] = field(default_factory=list)  # none may appear whole or in part
    patterns: list[str] = field(default_factory=list)  # none may match the output

    visible: list[str] = field(default_factory=list)  # what upstream's output itself shows

    def leaks(self, out: str) -> list[str]:
        """What of this case's secrets ``out`` shows (empty: no leak)."""
        found = [s for s in self.secrets if s in out]
        found += [h for h in self.hidden if self._shows_part(h, out)]
        found += [p for p in self.patterns if re.search(p, out)]
        return found

    def leak_kind(self, out: str) -> str | None:
        """``"whole"`` when a secret shows whole, ``"part"`` when only a piece of a hidden
        middle does, None when nothing leaks."""
        if (
            any(s in out for s in self.secrets)
            or any(h in out and not any(h in v for v in self.visible) for h in self.hidden)
            or any(re.search(p, out) for p in self.patterns)
        ):
            return "whole"
        return "part" if self.leaks(out) else None

    def _shows_part(self, hidden: str, out: str) -> bool:
        """``hidden`` whole (unless upstream's own output shows that string elsewhere), or a
        window of its never-shown middle that the rest of the input does not hold."""
        if hidden in out and not any(hidden in v for v in self.visible):
            return True
        middle = hidden[SHOWN_START_CHARS:-SHOWN_END_CHARS]
        if any(c.isspace() for c in hidden) or len(middle) < LEAK_WINDOW_CHARS:
            return False
        rest = self.text.replace(hidden, "\0")
        return any(
            w in out and w not in rest
            for w in (
                middle[i : i + LEAK_WINDOW_CHARS]
                for i in range(len(middle) - LEAK_WINDOW_CHARS + 1)
            )
        )


def json_strings(value: object) -> list[str]:
    """Every string inside a JSON value (the vectors' inputs, expectations and notes alike)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def _hidden_parts(expected: str, text: str, whole: bool) -> list[str]:
    """The parts of ``text`` that ``expected`` (an output with masks) hides."""
    pieces = MASK_MARKERS.split(expected)
    if len(pieces) == 1:
        return []
    pattern = "(.+?)".join(re.escape(p) for p in pieces)
    m = (re.fullmatch if whole else re.search)(pattern, text, flags=re.S)
    if m is None and whole:
        m = re.search(pattern, text, flags=re.S)
    if m is None:
        return []
    return [g for g in m.groups() if len(g) >= MIN_HIDDEN_CHARS]


def openclaw_cases() -> list[Case]:
    """OpenClaw's text vectors in the default or ``tools`` mode with the default patterns;
    its exact-value registry (a value the test registers) is not part of this plugin."""
    data = load("openclaw.json")
    src = data["source"]
    cases = []
    for v in data["vectors"]:
        if not v["literal"] or v["function"] not in OPENCLAW_TEXT_FUNCTIONS:
            continue
        options = v.get("options", "")
        if 'mode: "off"' in options or ("patterns" in options and "defaults" not in options):
            continue
        text = v["input"]
        if isinstance(text, list):
            text = "\n".join(text)
        if not isinstance(text, str) or not text.strip():
            continue
        if any("redactPatterns" in c for c in v.get("config_files", [])):
            continue  # custom patterns from a config file
        registered = {r for r in v.get("registered", []) if isinstance(r, str)}
        case = Case("openclaw", f"{src['repository']} {src['path']}:{v['call_line']}", text)
        for e in v["expect"]:
            value = e.get("value")
            if isinstance(value, list) and all(isinstance(x, str) for x in value):
                value = "\n".join(value)
            if e["matcher"] == "not.toContain" and isinstance(value, str):
                # (a name called in code, ``computeToken(``, is no value)
                if (
                    value.strip()
                    and value in text
                    and value not in registered
                    and (value + "(" not in text)
                ):
                    case.secrets.append(value)
            elif e["matcher"] == "not.toMatch" and "regex" in e:
                case.patterns.append(e["regex"])
            elif e["matcher"] in ("toBe", "toEqual", "toStrictEqual", "toContain") and isinstance(
                value, str
            ):
                whole = e["matcher"] != "toContain"
                case.visible.append(MASK_MARKERS.sub("\0", value))
                for h in _hidden_parts(value, text, whole):
                    if not any(r in h or h in r for r in registered):
                        case.hidden.append(h)
        if case.secrets or case.hidden or case.patterns:
            cases.append(case)
    return cases


def token_secret(text: str) -> str | None:
    """The secret of a sample whose source names none: its longest run of token characters
    (letters, digits and ``+/_-.~``, ``=`` only as padding at the end) holding both a letter
    and a digit, of at least :data:`MIN_TOKEN_SECRET_CHARS`; a run with ``//`` (a URL) or an
    ``@`` is split there. With no such run, the longest run."""
    runs = [r for r in re.findall(r"[A-Za-z0-9+/_\-.~]+=*", text.replace("//", " "))]
    mixed = [r for r in runs if any(c.isdigit() for c in r) and any(c.isalpha() for c in r)]
    best = max(mixed or runs, key=len, default="")
    return best if len(best) >= MIN_TOKEN_SECRET_CHARS else None


def _value_of(found: str) -> str:
    """A reported secret without what surrounds the value (``_authToken=…``, `` AP6…``,
    ``"…"``): detect-secrets' regex plugins report their whole match."""
    found = found.strip(" \t\"'`:=,;")
    for sep in ("=", ":"):
        head, _, tail = found.rpartition(sep)
        if head and len(tail) >= MIN_TOKEN_SECRET_CHARS:
            found = tail
    return found


_GO_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def python_regex(go: str) -> re.Pattern[str]:
    """Go's RE2 ``go`` as a Python pattern of the same meaning: ``\\z`` is Python's ``\\Z``,
    and a flag group ``(?i)`` after the start (RE2: the flag holds to the end of the group
    it is in) becomes a scoped group ``(?i:…)`` closed where that group (or alternative)
    ends."""
    go = go.replace(r"\z", r"\Z")
    while (m := next((f for f in _GO_FLAGS.finditer(go) if f.start() > 0), None)) is not None:
        depth, i, in_class = 0, m.end(), False
        while i < len(go):
            c = go[i]
            if c == "\\":
                i += 2
                continue
            if in_class:
                in_class = c != "]"
            elif c == "[":
                in_class = True
                if go[i + 1 : i + 2] == "]":
                    i += 1
            elif c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c == "|" and depth == 0:
                break
            i += 1
        tail = go[i:]
        if tail.startswith("|"):  # the flag holds in the next alternative too
            tail = f"|(?{m.group(1)}){tail[1:]}"
        go = f"{go[: m.start()]}(?{m.group(1)}:{go[m.end() : i]}){tail}"
    return re.compile(go)


def gitleaks_secrets(rule: dict[str, Any], text: str) -> list[str]:
    """The secrets gitleaks reports for ``text`` under ``rule`` (its ``regex`` and
    ``secretGroup``), as gitleaks' detector names them: for each match, the group
    ``secretGroup`` when set, else the first non-empty capturing group, else the whole
    match."""
    found: list[str] = []
    if not rule["regex"]:  # a rule on file names only names no secret in a text
        return found
    for m in python_regex(rule["regex"]).finditer(text):
        secret = m.group(0)
        if m.groups():
            if rule["secretGroup"]:
                secret = m.group(rule["secretGroup"]) or secret
            else:
                secret = next((g for g in m.groups() if g), secret)
        if secret and secret not in found:
            found.append(secret)
    return found


def gitleaks_cases() -> tuple[list[Case], list[str]]:
    """gitleaks' literal true positives (each sample a text), and its literal false
    positives (texts, for over-masking).

    A sample's secret is what gitleaks reports for it (:func:`gitleaks_secrets` with the
    sample's rule from ``gitleaks_rules.json``: gitleaks' published ``regex`` and
    ``secretGroup``). A sample whose rule is not in gitleaks' published configuration, or
    whose rule does not match it outside gitleaks' file-path conditions, falls back to
    :func:`token_secret`; a generated sample's secret is the literal it was built from."""
    data = load("gitleaks.json")
    rules = load("gitleaks_rules.json")
    repo = data["source"]["repository"]
    positives: list[Case] = []
    negatives: list[str] = []
    for v in data["vectors"]:
        origin = f"{repo} {v['path']}:{v['line']}"
        family = f"gitleaks:{v['function']}"
        if v["kind"] == "literal" and v["list"] == "tps":
            rule_id = rules["functions"].get(v["function"])
            secrets = gitleaks_secrets(rules["rules"][rule_id], v["text"]) if rule_id else []
            if not secrets:
                token = token_secret(v["text"])
                secrets = [token] if token else []
            if secrets:
                positives.append(Case(family, origin, v["text"], hidden=secrets))
        elif v["kind"] == "generated-from-literal":
            positives.append(Case(family, origin, v["secret"], hidden=[v["secret"]]))
        elif v["kind"] == "literal" and v["list"] == "fps":
            negatives.append(v["text"])
    return positives, negatives


def detect_secrets_cases(
    find_secrets: Any = None,
) -> tuple[list[Case], list[str]]:
    """detect-secrets' cases: the keyword test's lines with the secret it names (positives)
    or ``None`` (negatives), and every ``payload``/``line`` with ``should_flag``. A positive
    whose test names no secret value gets the secrets ``find_secrets(text)`` reports
    (detect-secrets itself, in the benchmark) or else :func:`token_secret`."""
    data = load("detect_secrets.json")
    repo = data["source"]["repository"]
    positives: list[Case] = []
    negatives: list[str] = []
    for v in data["vectors"]:
        if not v["literal"]:
            continue
        values = v["values"]
        origin = f"{repo} {v['path']}:{v['line']}"
        family = "detect-secrets:" + v["path"].rsplit("/", 1)[-1].removesuffix("_test.py")
        text = values.get("line", values.get("payload"))
        if not isinstance(text, str):
            continue
        if "expected_secret" in values:
            if values["expected_secret"]:
                positives.append(Case(family, origin, text, hidden=[values["expected_secret"]]))
            else:
                negatives.append(text)
            continue
        flag = values.get("should_flag", True)
        if not flag:
            negatives.append(text)
            continue
        found = [_value_of(f) for f in (find_secrets(text) if find_secrets else [])]
        found = [f for f in found if len(f) >= MIN_TOKEN_SECRET_CHARS]
        if not found:
            secret = token_secret(text)
            found = [secret] if secret else []
        if found:
            positives.append(Case(family, origin, text, hidden=found))
    return positives, negatives
