"""The redaction figures of docs/redaction.md: leaks of the verbatim upstream corpora
(tests/fixtures/redaction_upstream/: OpenClaw's redact.test.ts, gitleaks' rule samples,
detect-secrets' plugin tests; whole and in part, per family), over-masking of ordinary text,
throughput against detect-secrets, the time of one 10 MB message; then, as extra lines, the
project's restated corpora (never the figures).

The leak judge is tests/upstream_vectors.py's: a secret is what the upstream test names
(OpenClaw's ``not.toContain`` values and the input its expected ``***``/``abcdef…ghij``
output hides; detect-secrets' ``expected_secret``, or what detect-secrets itself reports for
a ``should_flag`` payload); for gitleaks' literal samples, what gitleaks reports (the rule's
``regex`` and ``secretGroup``, tests/fixtures/redaction_upstream/gitleaks_rules.json).
A leak is the secret whole, or in part: 8 characters of its never-shown middle.

Invariant: a measurement, never a gate: it prints what it measured and exits 0 (the tests
hold the bounds). The ordinary text is DISCOVERED at run time on this machine (so the figure
is reproducible on any Debian-like machine with Python, not a fixed file):

* code: ``*.py`` of the standard library (``sysconfig`` stdlib) and of every ``site-packages``
  / ``dist-packages`` folder on ``sys.path``;
* docs: ``*.md``/``*.rst``/``*.txt`` under those folders;
* changelogs: ``/usr/share/doc/*/changelog*.gz`` (Debian package histories);
* lock files: every ``*.dist-info/RECORD`` (pip's ``path,sha256=…,size`` lines), and lines
  in the shapes of go.sum (``h1:`` + base64 SHA-256), npm ``package-lock.json``
  (``"integrity": "sha512-…"``) and pip ``--hash=sha256:…`` built from the SHA digests of
  the installed files themselves (real checksums of real files).

Lines are taken round-robin from the sources up to ``--lines`` (default 200,000), blank lines
dropped. A changed line is one :func:`redact_text` changes; ``--show N`` prints N changed lines
per source for classification by eye.

    .venv/bin/python -m bench.redaction_figures                 # all figures
    .venv/bin/python -m bench.redaction_figures --show 40       # and the changed lines

Throughput: detect-secrets (``pip install -e ".[bench]"``) scans the same lines with its
default plugins in the same process (``scan_line`` per line, no eager search); all timed with
``time.process_time`` in :data:`ROUNDS` interleaved rounds (ours, ours per message,
detect-secrets, then again); the ratio reported is the MEDIAN of the per-round ratios, with the
lowest and highest round beside it (a busy shared machine slows single rounds, not the median).

The leak measure (docs/redaction.md, "Measuring a leak"), the case reader and detect-secrets'
scan are :mod:`bench.redaction`'s, so the two commands count alike.
"""

from __future__ import annotations

import argparse
import base64
import collections
import glob
import gzip
import hashlib
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.redaction import (
    CORPUS,
    ROOT,
    detect_secrets_findings,
    leak_table,
    leaked,
    load_cases,
)
from openclaw_fts.redact import redact_text

PUBLIC_CORPUS = CORPUS
HELDOUT_CORPUS = ROOT / "tests" / "fixtures" / "redaction_heldout.jsonl"
#: Ordinary lines measured by default.
DEFAULT_LINES = 200_000
#: Lines taken from one package (top folder under site-packages, or one stdlib module): keeps
#: one huge package (awscli's thousands of example pages) from being the whole sample.
MAX_LINES_PER_PACKAGE = 2_000
#: Files hashed for the lock-file shapes.
LOCK_SOURCE_FILES = 3_000
#: Lines per throughput round (the same for both scanners).
THROUGHPUT_LINES = 20_000
#: Interleaved throughput rounds; the median round ratio is reported.
ROUNDS = 7


def leak_rate(cases: list[dict[str, Any]]) -> tuple[int, int, collections.Counter[str]]:
    bad = collections.Counter(leak_table(cases, redact_text)["leaked"])
    return sum(bad.values()), len(cases), bad


# --------------------------------------------------------------------------- verbatim corpora

#: Size of the one large message timed whole (the issue's 10 MB message).
LARGE_MESSAGE_BYTES = 10_000_000


def _upstream() -> Any:
    sys.path.insert(0, str(ROOT / "tests"))
    import upstream_vectors

    return upstream_vectors


def verbatim_figures(show: int) -> None:
    """Leaks of the verbatim upstream corpora (tests/fixtures/redaction_upstream/), whole and
    in part, per family; and how many of their negatives (gitleaks' false positives,
    detect-secrets' non-findings) this redaction changes."""
    up = _upstream()
    try:
        findings = detect_secrets_findings()
        find: Callable[[str], list[str]] | None = lambda text: list(findings(text))  # noqa: E731
    except ImportError:
        find = None
    gl_pos, gl_neg = up.gitleaks_cases()
    ds_pos, ds_neg = up.detect_secrets_cases(find)
    corpora = {
        "openclaw (redact.test.ts)": up.openclaw_cases(),
        "gitleaks (rule samples)": gl_pos,
        "detect-secrets (plugin tests)": ds_pos,
    }
    print("verbatim upstream corpora (tests/fixtures/redaction_upstream/), redact_text:")
    all_n = all_whole = all_part = 0
    for corpus, cases in corpora.items():
        whole: collections.Counter[str] = collections.Counter()
        part: collections.Counter[str] = collections.Counter()
        examples: list[str] = []
        for case in cases:
            kind = case.leak_kind(redact_text(case.text))
            if kind == "whole":
                whole[case.family] += 1
            elif kind == "part":
                part[case.family] += 1
            if kind and len(examples) < show:
                examples.append(f"{case.origin}: {case.text[:100]!r}")
        n, w, p = len(cases), sum(whole.values()), sum(part.values())
        all_n, all_whole, all_part = all_n + n, all_whole + w, all_part + p
        print(
            f"  {corpus}: {w + p}/{n} leak ({100 * (w + p) / max(1, n):.2f} %): "
            f"{w} whole, {p} in part"
        )
        for fam in sorted(set(whole) | set(part)):
            print(f"    {fam}: {whole[fam]} whole, {part[fam]} in part")
        for example in examples:
            print(f"    e.g. {example}")
    print(
        f"  all public: {all_whole + all_part}/{all_n} leak "
        f"({100 * (all_whole + all_part) / max(1, all_n):.2f} %): {all_whole} whole, "
        f"{all_part} in part"
    )
    if find is None:
        print("  (detect-secrets not installed: its unnamed secrets judged by token shape)")
    for label, texts in (("gitleaks fps", gl_neg), ("detect-secrets negatives", ds_neg)):
        changed = sum(redact_text(t) != t for t in texts)
        print(f"  {label}: {changed}/{len(texts)} changed (upstream's own non-secrets)")


def large_message_seconds(lines: list[str]) -> tuple[float, int]:
    """CPU seconds to redact one message of :data:`LARGE_MESSAGE_BYTES` of ordinary lines."""
    parts: list[str] = []
    size = 0
    while size < LARGE_MESSAGE_BYTES:
        for line in lines:
            parts.append(line)
            size += len(line.encode()) + 1
            if size >= LARGE_MESSAGE_BYTES:
                break
    message = "\n".join(parts)
    started = time.process_time()
    redact_text(message)
    return time.process_time() - started, len(message.encode())


def openclaw_agreement() -> tuple[int, int, list[str]]:
    """The cases of tests/test_redact_openclaw.py (OpenClaw's redact.test.ts), one per text."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_redact_openclaw as oc

    agree = total = 0
    differ: list[str] = []
    for text, gone, kept in oc.MASKED:
        out = redact_text(text)
        total += 1
        ok = all(g not in out for g in gone) and all(k in out for k in kept)
        agree += ok
        if not ok:
            differ.append(text[:80])
    for token in oc.VENDOR_FIXTURES:
        total += 1
        ok = token not in redact_text(token)
        agree += ok
        if not ok:
            differ.append(token[:80])
    for text in oc.UNCHANGED:
        total += 1
        ok = redact_text(text) == text
        agree += ok
        if not ok:
            differ.append(text[:80])
    for text in oc.SOURCE_LITERALS:
        total += 1
        out = redact_text(text)
        ok = "fixture-only-not-a-real-secret" not in out and "987654321" not in out
        agree += ok
        if not ok:
            differ.append(text[:80])
    return agree, total, differ


# --------------------------------------------------------------------------- ordinary text


def _package_dirs() -> list[str]:
    dirs = {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    dirs |= set(glob.glob("/usr/lib/python3/dist-packages"))
    return sorted(d for d in dirs if Path(d).is_dir())


def _spread(paths: list[str]) -> list[str]:
    """The files in a fixed order that mixes folders (by a hash of the path), so that the first
    N lines come from many packages rather than the alphabetically first one."""
    return sorted(paths, key=lambda p: hashlib.sha1(p.encode()).hexdigest())


def _package(path: str) -> str:
    parts = Path(path).parts
    for i, part in enumerate(parts):
        if part in ("site-packages", "dist-packages") and i + 1 < len(parts):
            return parts[i + 1].split("-")[0]
    return parts[-2] if len(parts) > 1 else path


def _lines_of(paths: Iterator[str] | list[str], opener: Callable[[str], str]) -> Iterator[str]:
    taken: collections.Counter[str] = collections.Counter()
    for path in paths:
        package = _package(path)
        if taken[package] >= MAX_LINES_PER_PACKAGE:
            continue
        try:
            text = opener(path)
        except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
            continue
        for line in text.splitlines():
            if line.strip():
                taken[package] += 1
                yield line


def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


def _read_gz(path: str) -> str:
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def _code_files() -> list[str]:
    stdlib = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(f"{stdlib}/**/*.py", recursive=True))
    for d in _package_dirs():
        files += sorted(glob.glob(f"{d}/**/*.py", recursive=True))
    return list(dict.fromkeys(f for f in files if "/site-packages/openclaw_fts" not in f))


def _doc_files() -> list[str]:
    files: list[str] = []
    for d in [sysconfig.get_paths()["stdlib"], *_package_dirs()]:
        for ext in ("md", "rst", "txt"):
            files += sorted(glob.glob(f"{d}/**/*.{ext}", recursive=True))
    return [f for f in files if not f.endswith(("RECORD", "entry_points.txt", "top_level.txt"))]


def _lock_lines() -> Iterator[str]:
    for record in sorted(glob.glob(f"{d}/*.dist-info/RECORD") for d in _package_dirs()):
        yield from _lines_of(record, _read)
    hashed = 0
    for path in _code_files():
        if hashed >= LOCK_SOURCE_FILES:
            break
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        hashed += 1
        name = Path(path).stem.replace("_", "-")
        b64_256 = base64.b64encode(hashlib.sha256(data).digest()).decode()
        b64_512 = base64.b64encode(hashlib.sha512(data).digest()).decode()
        hex_256 = hashlib.sha256(data).hexdigest()
        yield f"github.com/example/{name} v1.{hashed % 20}.0 h1:{b64_256}"
        yield f"github.com/example/{name} v1.{hashed % 20}.0/go.mod h1:{b64_256[::-1]}"
        yield f'      "integrity": "sha512-{b64_512}",'
        yield f"{name}==1.{hashed % 20}.0 \\\n    --hash=sha256:{hex_256}"


def ordinary_sources() -> dict[str, Iterator[str]]:
    return {
        "code": _lines_of(_spread(_code_files()), _read),
        "docs": _lines_of(_spread(_doc_files()), _read),
        "changelogs": _lines_of(_spread(glob.glob("/usr/share/doc/*/changelog*.gz")), _read_gz),
        "lockfiles": _lock_lines(),
    }


def take_round_robin(sources: dict[str, Iterator[str]], total: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {name: [] for name in sources}
    live = dict(sources)
    taken = 0
    while live and taken < total:
        for name in list(live):
            try:
                out[name].append(next(live[name]))
                taken += 1
            except StopIteration:
                del live[name]
    return out


# --------------------------------------------------------------------------- detect-secrets


def detect_secrets_scanner() -> Callable[[str], bool] | None:
    """Whether detect-secrets flags a line (:func:`bench.redaction.detect_secrets_findings`);
    None when it is not installed."""
    try:
        findings = detect_secrets_findings()
    except ImportError:
        return None
    return lambda line: any(True for _ in findings(line))


#: Lines per message when our redaction is given whole messages (its unit: one message).
LINES_PER_MESSAGE = 20


def throughput(lines: list[str]) -> dict[str, list[float]]:
    """CPU seconds per round of each scanner on the same lines, rounds interleaved."""
    scan = detect_secrets_scanner()
    messages = [
        "\n".join(lines[i : i + LINES_PER_MESSAGE]) for i in range(0, len(lines), LINES_PER_MESSAGE)
    ]
    rounds: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(ROUNDS):
        started = time.process_time()
        for line in lines:
            redact_text(line)
        rounds["ours"].append(time.process_time() - started)
        started = time.process_time()
        for message in messages:
            redact_text(message)
        rounds["ours-messages"].append(time.process_time() - started)
        if scan is not None:
            started = time.process_time()
            for line in lines:
                scan(line)
            rounds["detect-secrets"].append(time.process_time() - started)
    return dict(rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=DEFAULT_LINES)
    parser.add_argument("--show", type=int, default=0, help="changed lines shown per source")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()

    verbatim_figures(args.show)

    print("\nrestated corpora (extra tests, not the figures):")
    agree, total, differ = openclaw_agreement()
    print(f"OpenClaw redact.test.ts cases (tests/test_redact_openclaw.py): {agree}/{total} agree")
    for text in differ:
        print(f"  differs: {text!r}")

    public = load_cases(PUBLIC_CORPUS)
    generated = [c for c in public if not c["family"].startswith("openclaw")]
    bad, n, fams = leak_rate(generated)
    print(f"public rule samples (gitleaks, detect-secrets): {bad}/{n} leak ({100 * bad / n:.2f} %)")
    if fams:
        print("  " + ", ".join(f"{f} {k}" for f, k in fams.most_common(12)))
    heldout = load_cases(HELDOUT_CORPUS)
    for split in ("tuned", "heldout", "heldout2", "heldout3", "heldout4", "heldout5"):
        cases = [c for c in heldout if c["split"] == split]
        bad, n, fams = leak_rate(cases)
        print(f"{split}: {bad}/{n} leak ({100 * bad / n:.2f} %)")
        if fams:
            print("  " + ", ".join(f"{f} {k}" for f, k in fams.most_common(20)))
        forms: collections.Counter[str] = collections.Counter(
            c["form"] for c in cases if leaked(c, redact_text(c["text"]))
        )
        if forms:
            print("  by form: " + ", ".join(f"{f} {k}" for f, k in forms.most_common()))

    lines = take_round_robin(ordinary_sources(), args.lines)
    total_lines = sum(len(v) for v in lines.values())
    changed_total = 0
    print(f"\nover-masking on {total_lines} ordinary lines discovered on this machine:")
    for name, group in lines.items():
        changed = [ln for ln in group if redact_text(ln) != ln]
        changed_total += len(changed)
        rate = 1e4 * len(changed) / max(1, len(group))
        print(f"  {name}: {len(changed)}/{len(group)} changed ({rate:.2f} per 10,000)")
        for ln in changed[: args.show]:
            print(f"    {ln.strip()[:140]!r}  ->  {redact_text(ln).strip()[:140]!r}")
    print(
        f"  all: {changed_total}/{total_lines} ({1e4 * changed_total / max(1, total_lines):.2f} "
        "per 10,000 lines; the changed lines are classified by eye in docs/redaction.md)"
    )

    everything = [ln for group in lines.values() for ln in group]
    seconds, size_bytes = large_message_seconds(everything)
    print(f"\none message of {size_bytes / 1e6:.1f} MB of those lines: {seconds:.2f} s CPU")

    if not args.skip_throughput:
        sample = everything[:THROUGHPUT_LINES]
        rounds = throughput(sample)
        size = sum(map(len, sample)) / 1e6
        print(f"\nthroughput on {len(sample)} lines ({size:.1f} MB), CPU, {ROUNDS} rounds:")
        for name, label in (
            ("ours", "openclaw-fts, line by line"),
            ("ours-messages", f"openclaw-fts, {LINES_PER_MESSAGE}-line messages"),
            ("detect-secrets", "detect-secrets, line by line"),
        ):
            if name in rounds:
                mid = statistics.median(rounds[name])
                print(f"  {label}: median {mid:.2f} s ({size / mid:.2f} MB/s)")
        if "detect-secrets" in rounds:
            for name, label in (("ours", "line by line"), ("ours-messages", "per message")):
                ratios = sorted(
                    ds / ours
                    for ds, ours in zip(rounds["detect-secrets"], rounds[name], strict=True)
                )
                print(
                    f"  detect-secrets / ours, {label}: median {statistics.median(ratios):.1f}x "
                    f"(rounds {ratios[0]:.1f}x-{ratios[-1]:.1f}x)"
                )
        else:
            print('  detect-secrets not installed (pip install -e ".[bench]")')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
