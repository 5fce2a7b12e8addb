"""Redaction figures: leaks per family, over-masking per 10,000 ordinary lines, masking cost.

Invariant: a measurement, never a gate: it prints what it measured and exits 0 (the tests
hold the goals). Every figure comes from this run on this machine.

    .venv/bin/python -m bench.redaction                  # all figures, ~1 min
    .venv/bin/python -m bench.redaction --detect-secrets /path/to/site-packages

* Leaks: tests/fixtures/redaction_corpus.jsonl (scripts/make_redaction_corpus.py), each text
  through :func:`redact_text`; a secret leaks when its masked-away middle survives
  (docs/redaction.md, "Measuring a leak").
* Over-masking: lines of ordinary text that redaction changes, per 10,000: CPython's own
  ``Lib/*.py`` (code) and prose (the licence texts under /usr/share/common-licenses and the
  package descriptions of the installed distributions).
* Cost: CPU time of ``store.append_many`` and of ``store.search`` with the masking, divided by
  the same calls with masking replaced by the identity (same process, interleaved).
* FTS5 ``snippet()``: on the same hits, how often SQLite's own snippet (cut from the masked
  index) equals ours, and whether it ever shows a masked secret.
* ``--detect-secrets DIR``: the same leak and over-masking figures for detect-secrets'
  default plugins (its ``scan_line``), with DIR put on ``sys.path``.
"""

from __future__ import annotations

import argparse
import atexit
import collections
import glob
import json
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts import redact as redact_module
from openclaw_fts.query import compile_query
from openclaw_fts.redact import KEEP_END_CHARS, KEEP_START_CHARS, MIN_PARTIAL_MASK_CHARS
from openclaw_fts.snippet import ELLIPSIS, SNIPPET_WINDOW_TOKENS, make_snippet

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "redaction_corpus.jsonl"
#: Characters of a secret's masked-away middle that count as a leak when they survive.
LEAK_WINDOW_CHARS = 8
#: Messages ingested (and searched) for the cost figures.
COST_MESSAGES = 2_000
#: Rounds of the cost measurement (best round kept: robust to a busy machine).
COST_ROUNDS = 3
PROSE_GLOBS = ("/usr/share/common-licenses/*",)


def leaked(case: dict[str, Any], out: str) -> bool:
    secret = case["secret"]
    if case["family"].startswith("openclaw"):
        return bool(secret in out)  # OpenClaw's own criterion: the string is gone
    middle = (
        secret if len(secret) < MIN_PARTIAL_MASK_CHARS else secret[KEEP_START_CHARS:-KEEP_END_CHARS]
    )
    if len(middle) < LEAK_WINDOW_CHARS:
        return middle in out
    return any(
        middle[i : i + LEAK_WINDOW_CHARS] in out for i in range(len(middle) - LEAK_WINDOW_CHARS + 1)
    )


def load_cases(path: Path = CORPUS) -> list[dict[str, Any]]:
    """A corpus of secret cases (one JSON object a line: ``text``, ``secret``, ``family`` …)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def group(family: str) -> str:
    return family.split(":", 1)[0] if ":" in family else family


def leak_table(cases: list[dict[str, Any]], redact: Callable[[str], str]) -> dict[str, Any]:
    tried: collections.Counter[str] = collections.Counter()
    leaks: collections.Counter[str] = collections.Counter()
    for case in cases:
        fam = case["family"]
        tried[fam] += 1
        if leaked(case, redact(case["text"])):
            leaks[fam] += 1
    return {"tried": dict(tried), "leaked": dict(leaks)}


def ordinary_lines() -> tuple[list[str], list[str]]:
    lib = sysconfig.get_paths()["stdlib"]
    code: list[str] = []
    for path in sorted(glob.glob(f"{lib}/*.py")):
        code += Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    prose: list[str] = []
    for pattern in PROSE_GLOBS:
        for path in sorted(glob.glob(pattern)):
            if Path(path).is_file():
                prose += Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    for path in sorted(glob.glob(f"{sys.prefix}/lib/python3*/site-packages/*.dist-info/METADATA")):
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        prose += text.split("\n\n", 1)[-1].splitlines()  # the description, not the headers
    return [ln for ln in code if ln.strip()], [ln for ln in prose if ln.strip()]


def over_masked(lines: list[str], changed: Callable[[str], bool]) -> tuple[int, list[str]]:
    hits = [line for line in lines if changed(line)]
    return len(hits), hits[:10]


def _messages(cases: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    filler = "the deploy of the staging build went fine after the cache was warmed up again"
    for i in range(COST_MESSAGES):
        body = cases[i % len(cases)]["text"] if i % 10 == 0 else f"{filler} case{i}"
        yield {
            "type": "message",
            "id": f"m{i}",
            "parentId": f"m{i - 1}" if i else None,
            "timestamp": 1_790_000_000_000 + i,
            "message": {"role": "user" if i % 2 == 0 else "assistant", "content": body},
        }


def cost(cases: list[dict[str, Any]]) -> dict[str, float]:
    """CPU of ingest and search with masking / the same with masking replaced by identity."""
    events = list(_messages(cases))
    caller = Caller("agent:main:main", visibility="agent")
    queries = [f"case{i}" for i in range(1, COST_MESSAGES, 97)] + ["deploy staging", "token"]
    original = redact_module.Redactor.redact
    timings: dict[str, list[float]] = collections.defaultdict(list)
    for _round in range(COST_ROUNDS):
        for masked in (True, False):
            if not masked:
                redact_module.Redactor.redact = lambda self, text: text  # type: ignore[method-assign]
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    store = TranscriptStore(f"sqlite:///{tmp}/b.sqlite", background=False)
                    store.create_session("s1", "agent:main:main")
                    started = time.process_time()
                    for start in range(0, len(events), 100):
                        store.append_many("s1", events[start : start + 100])
                    timings[f"ingest-{masked}"].append(time.process_time() - started)
                    started = time.process_time()
                    for query in queries:
                        store.search(caller, query)
                    timings[f"search-{masked}"].append(time.process_time() - started)
                    store.close()
            finally:
                redact_module.Redactor.redact = original  # type: ignore[method-assign]
    return {
        "ingest": min(timings["ingest-True"]) / min(timings["ingest-False"]),
        "search": min(timings["search-True"]) / min(timings["search-False"]),
    }


def fts_snippets(cases: list[dict[str, Any]]) -> dict[str, int]:
    """Our snippets against FTS5's snippet() on the same hits of a masked index.

    Each message is long (a corpus text between two runs of filler words), so both have to
    choose a window; FTS5 gets the same window length in tokens and the same ellipsis.
    """
    from sqlalchemy import text

    filler = [f"w{i}" for i in range(80)]
    events = []
    for i in range(0, COST_MESSAGES, 10):
        body = " ".join([*filler[:40], f"probe{i}", cases[i % len(cases)]["text"], *filler[40:]])
        events.append(
            {
                "type": "message",
                "id": f"m{i}",
                "parentId": f"m{i - 10}" if i else None,
                "timestamp": 1_790_000_000_000 + i,
                "message": {"role": "user", "content": body},
            }
        )
    by_id = {e["id"]: e for e in events}
    out = {"hits": 0, "same": 0, "fts_shows_secret": 0, "ours_shows_secret": 0}
    with tempfile.TemporaryDirectory() as tmp:
        store = TranscriptStore(f"sqlite:///{tmp}/s.sqlite", background=False)
        store.create_session("s1", "agent:main:main")
        store.append_many("s1", events)
        with store.engine.connect() as conn:
            for i in range(0, COST_MESSAGES, 10):
                case = cases[i % len(cases)]
                compiled = compile_query(f"probe{i}")
                assert compiled is not None
                rows = conn.execute(
                    text(
                        "SELECT i.event_id, snippet(message_fts, 0, '', '', :e, :n) "
                        "FROM message_fts JOIN message_index i ON i.id = message_fts.rowid "
                        "WHERE message_fts MATCH :q"
                    ),
                    {"q": compiled.match, "e": ELLIPSIS, "n": SNIPPET_WINDOW_TOKENS},
                ).all()
                for event_id, fts_snip in rows:
                    content = by_id[event_id]["message"]["content"]
                    ours = make_snippet(redact_module.redact_text(content), compiled.terms)
                    out["hits"] += 1
                    out["same"] += int(" ".join(fts_snip.split()) == " ".join(ours.split()))
                    out["fts_shows_secret"] += int(leaked(case, fts_snip))
                    out["ours_shows_secret"] += int(leaked(case, ours))
        store.close()
    return out


def detect_secrets_findings() -> Callable[[str], Iterator[str]]:
    """detect-secrets' default plugins and filters over one line, as its ``scan_line`` does but
    without the "eager" search it turns on for ad-hoc strings (which flags almost every line of
    ordinary text): the found secrets' values, lazily (``any`` stops at the first). Raises
    ImportError when it is not installed; enters its default settings for the process (the
    plugins read the global settings)."""
    from detect_secrets.core.scan import _is_filtered_out, _scan_line
    from detect_secrets.settings import default_settings, get_plugins
    from detect_secrets.util.code_snippet import get_code_snippet

    settings = default_settings()
    settings.__enter__()
    # Left at exit, not before: a collected one would reset the settings mid-run, and one left
    # at interpreter shutdown fails to import what its cleanup needs.
    atexit.register(settings.__exit__, None, None, None)
    plugins = list(get_plugins())

    def findings(line: str) -> Iterator[str]:
        context = get_code_snippet(lines=[line], line_number=1)
        for plugin in plugins:
            for found in _scan_line(
                plugin=plugin,
                filename="message.txt",
                line=line,
                line_number=0,
                context=context,
                enable_eager_search=False,
            ):
                if not _is_filtered_out(
                    required_filter_parameters=["context"],
                    filename=found.filename,
                    secret=found.secret_value,
                    plugin=plugin,
                    line=line,
                    context=context,
                ):
                    yield found.secret_value or ""

    return findings


def detect_secrets_figures(
    path: str, cases: list[dict[str, Any]], code: list[str], prose: list[str]
) -> dict[str, Any]:
    sys.path.insert(0, path)
    findings = detect_secrets_findings()

    def flagged(line: str) -> bool:
        return any(True for _ in findings(line))

    started = time.process_time()
    table = leak_table(
        cases,
        lambda t: " ".join(
            "***" if any(v and v in line for v in findings(line)) else line
            for line in t.split("\n")
        ),
    )
    leak_cpu = time.process_time() - started
    started = time.process_time()
    code_hits, code_examples = over_masked(code, flagged)
    prose_hits, _ = over_masked(prose, flagged)
    scan_cpu = time.process_time() - started
    return {
        "leaks": table,
        "code_changed": code_hits,
        "prose_changed": prose_hits,
        "examples": code_examples,
        "cpu_corpus_s": leak_cpu,
        "cpu_ordinary_s": scan_cpu,
    }


def print_leaks(title: str, table: dict[str, Any]) -> None:
    tried, leaks = table["tried"], table["leaked"]
    groups: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for fam, n in tried.items():
        groups[group(fam)][0] += leaks.get(fam, 0)
        groups[group(fam)][1] += n
    total_leaked = sum(leaks.values())
    total = sum(tried.values())
    print(f"\n## {title}: {total_leaked}/{total} leaked ({100 * total_leaked / total:.2f} %)")
    print("| group | leaked / tried |\n| --- | --- |")
    for name, (bad, n) in sorted(groups.items()):
        print(f"| {name} | {bad}/{n} ({100 * bad / n:.1f} %) |")
    worst = sorted(((leaks[f], f) for f in leaks), reverse=True)
    if worst:
        print("families with leaks: " + ", ".join(f"{f} {n}/{tried[f]}" for n, f in worst))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detect-secrets", metavar="DIR", help="site-packages holding it")
    parser.add_argument("--skip-cost", action="store_true")
    args = parser.parse_args()
    cases = load_cases()
    started = time.process_time()
    table = leak_table(cases, redact_module.redact_text)
    corpus_cpu = time.process_time() - started
    print_leaks("openclaw-fts redaction, corpus", table)
    code, prose = ordinary_lines()
    started = time.process_time()
    code_hits, code_ex = over_masked(code, lambda ln: redact_module.redact_text(ln) != ln)
    prose_hits, prose_ex = over_masked(prose, lambda ln: redact_module.redact_text(ln) != ln)
    ordinary_cpu = time.process_time() - started
    n = len(code) + len(prose)
    print(
        f"\n## Over-masking: {code_hits + prose_hits} of {n} ordinary lines changed "
        f"({1e4 * (code_hits + prose_hits) / n:.2f} per 10,000): code {code_hits}/{len(code)}, "
        f"prose {prose_hits}/{len(prose)}"
    )
    for line in code_ex + prose_ex:
        print(f"  {line.strip()[:100]!r}")
    print(f"CPU: corpus {corpus_cpu:.2f} s, ordinary lines {ordinary_cpu:.2f} s")
    if not args.skip_cost:
        ratios = cost(cases)
        print(
            f"\n## Cost of masking (CPU, with / without): ingest {ratios['ingest']:.2f}x, "
            f"search {ratios['search']:.2f}x"
        )
    snip = fts_snippets(cases)
    print(
        f"\n## FTS5 snippet(): {snip['same']}/{snip['hits']} hits give our snippet text; "
        f"snippets showing a masked secret: FTS5 {snip['fts_shows_secret']}, "
        f"ours {snip['ours_shows_secret']}"
    )
    if args.detect_secrets:
        ds = detect_secrets_figures(args.detect_secrets, cases, code, prose)
        print_leaks(
            "detect-secrets 1.5 default plugins, same corpus (line flagged = masked)", ds["leaks"]
        )
        print(
            f"detect-secrets over-flagging: code {ds['code_changed']}/{len(code)}, prose "
            f"{ds['prose_changed']}/{len(prose)} "
            f"({1e4 * (ds['code_changed'] + ds['prose_changed']) / n:.2f} per 10,000); CPU "
            f"corpus {ds['cpu_corpus_s']:.2f} s, ordinary lines {ds['cpu_ordinary_s']:.2f} s"
        )
        for line in ds["examples"][:5]:
            print(f"  {line.strip()[:100]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
