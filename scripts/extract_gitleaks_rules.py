"""Extract gitleaks' rule definitions (regex and secretGroup) into a JSON fixture, so the
leak judge can name a gitleaks sample's secret the way gitleaks itself does.

Invariant: ``tests/fixtures/redaction_upstream/gitleaks_rules.json`` is written by this
script only, from gitleaks' published default configuration ``config/gitleaks.toml`` (each
rule's ``id``, ``regex`` and ``secretGroup``, values verbatim) and, from
``cmd/generate/config/rules/*.go``, which Go function defines which rule id (the samples of
``gitleaks.json`` name their function). Both are read at the commit of ``gitleaks.json``.
No upstream code is copied: only the rule values. A function whose rule id is not in the
published configuration is listed under ``unpublished``.

    python scripts/extract_gitleaks_rules.py --gitleaks /work/.mirror/gitleaks+gitleaks/repo
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "redaction_upstream"
CONFIG_PATH = "config/gitleaks.toml"
RULES_DIR = "cmd/generate/config/rules"
_FUNC = re.compile(r"func (\w+)\(\)\s*\*config\.Rule\s*\{")
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def rule_ids_by_function(sources: dict[str, str]) -> dict[str, str]:
    """The rule id each ``func X() *config.Rule`` of the Go sources sets."""
    found: dict[str, str] = {}
    for text in sources.values():
        for m in _FUNC.finditer(text):
            rest = text[m.end() :]
            end = rest.find("\nfunc ")
            rule = _RULE_ID.search(rest if end < 0 else rest[:end])
            if rule:
                found[m.group(1)] = rule.group(1)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gitleaks", required=True, help="git mirror of gitleaks/gitleaks")
    args = parser.parse_args()
    repo = Path(args.gitleaks)
    samples = json.loads((OUT / "gitleaks.json").read_text(encoding="utf-8"))
    commit = samples["source"]["commit"]
    config = tomllib.loads(_git(repo, "show", f"{commit}:{CONFIG_PATH}"))
    rules: dict[str, Any] = {
        r["id"]: {"regex": r.get("regex"), "secretGroup": r.get("secretGroup", 0)}
        for r in config["rules"]
    }
    names = _git(repo, "ls-tree", "--name-only", commit, f"{RULES_DIR}/").split()
    sources = {n: _git(repo, "show", f"{commit}:{n}") for n in names if n.endswith(".go")}
    by_function = rule_ids_by_function(sources)
    used = sorted({v["function"] for v in samples["vectors"]})
    published = {by_function[f] for f in used if by_function.get(f) in rules}
    out = {
        "source": {"repository": "gitleaks/gitleaks", "path": CONFIG_PATH, "commit": commit},
        "functions": {f: by_function[f] for f in used if by_function.get(f) in rules},
        "unpublished": {f: by_function.get(f) for f in used if by_function.get(f) not in rules},
        "rules": {rid: rules[rid] for rid in sorted(published)},
    }
    path = OUT / "gitleaks_rules.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path}: {len(out['rules'])} rules, {len(out['unpublished'])} unpublished")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
