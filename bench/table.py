"""Print a benchmark result file as a Markdown table, or write docs/benchmarks.md.

Usage: ``python -m bench.table [--search [--cpu]] [bench/results/latest-1m.json]`` (a
PostgreSQL result, e.g. ``bench/results/latest-pg-100k.json``, prints the same way, titled and
footed with its engine; it has no sqlite-utils columns), or
``python -m bench.table --scaling FILE [FILE …]`` (one result file per corpus size, smallest
first: the scaling table and the search goals across sizes), or ``python -m bench.table
--docs`` (writes docs/benchmarks.md from the newest ``bench/results/latest-*.json`` files).
Reads only the JSON that ``bench.run`` wrote, so the published tables are regenerated, never
typed by hand. The
full table gains sqlite-utils columns when the run measured that second baseline; ``--search``
prints only the search rows, one line per query class and one column per visibility: p50 of
plugin / raw SQL / sqlite-utils and the two ratios, in wall time, or with ``--cpu`` in CPU time
of the same calls (steadier when the machine is loaded).
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
DEFAULT = RESULTS / "latest-1m.json"
#: The page ``--docs`` writes.
DOCS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
#: Corpus sizes, smallest first (``bench.run --size``).
SIZES = ("10k", "100k", "1m")


def number(value: float | None) -> str:
    """Three significant figures, thousands separated ("1,957", "249", "36.1", "8.90")."""
    if value is None:
        return "–"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def met(row: dict[str, Any]) -> str:
    if row["met"] is None:
        return ""
    return "yes" if row["met"] else "**no**"


def has_peer(result: dict[str, Any]) -> bool:
    """Whether the run measured sqlite-utils (results before it have no such keys)."""
    return any(row.get("sqlite_utils") is not None for row in result["rows"])


def is_postgresql(result: dict[str, Any]) -> bool:
    """Whether the run benched PostgreSQL (``python -m bench.run --backend postgresql``)."""
    return result.get("backend") == "pg"


def title(result: dict[str, Any], what: str) -> str:
    corpus = result["corpus"]
    engine = "PostgreSQL, " if is_postgresql(result) else ""
    return (
        f"{what} ({engine}{result['size']}, {corpus['events']:,} events, "
        f"{corpus['sessions']:,} sessions)"
    )


def footer(result: dict[str, Any]) -> str:
    meta = result["meta"]
    peer = f", sqlite-utils {meta['sqlite_utils']}" if meta.get("sqlite_utils") else ""
    load = meta.get("load1") or {}
    busy = ""
    if load:
        busy = f", load average {load['mean']:.1f} (max {load['max']:.1f}) during the run"
    engine = f"SQLite {meta['sqlite']}"
    if is_postgresql(result):
        engine = (
            f"PostgreSQL {meta.get('postgresql', '?')} (baseline: raw psycopg "
            f"{meta.get('psycopg', '?')})"
        )
        peer = ""
    return (
        f"Run {result['createdAt']} at commit {meta.get('commit', '?')}: Python {meta['python']}, "
        f"{engine}, SQLAlchemy {meta['sqlalchemy']}{peer}, "
        f"{meta['cpus']} CPUs{busy}."
    )


def _peers_cell(row: dict[str, Any]) -> str:
    """Every peer of a row but sqlite-utils (its own columns): p50 and plugin ÷ peer."""
    return "; ".join(
        f"{label} {number(v.get('p50'))}"
        + (f" ({ratio(v['ratio'])}×)" if v.get("ratio") is not None else "")
        for label, v in (row.get("peers") or {}).items()
        if label != "sqlite-utils"
    )


def has_peers(result: dict[str, Any]) -> bool:
    """Whether any row has a peer besides sqlite-utils (tantivy, SQLAlchemy-Searchable)."""
    return any(_peers_cell(row) for row in result["rows"])


def table(result: dict[str, Any]) -> str:
    peer = has_peer(result)
    others = has_peers(result)
    head = f"| {title(result, 'figure')} | unit | plugin | baseline | ratio p50 | ratio p95 |"
    rule = "|---|---|---|---|---|---|"
    if peer:
        head += " sqlite-utils | ratio s-u p50 | ratio s-u p95 |"
        rule += "---|---|---|"
    if others:
        head += " peers (p50, plugin ÷ peer) |"
        rule += "---|"
    lines = [head + " goal | met |", rule + "---|---|"]
    for row in result["rows"]:
        line = (
            f"| {row['figure']} | {row['unit']} | {number(row['plugin'])} | "
            f"{number(row['baseline'])} | {ratio(row['ratio'])} | {ratio(row['ratio_p95'])} |"
        )
        if peer:
            line += (
                f" {number(row.get('sqlite_utils'))} | {ratio(row.get('ratio_sqlite_utils'))} | "
                f"{ratio(row.get('ratio_sqlite_utils_p95'))} |"
            )
        if others:
            line += f" {_peers_cell(row) or '–'} |"
        lines.append(f"{line} {row['goal']} | {met(row)} |")
    lines += ["", footer(result)]
    return "\n".join(lines)


def search_table(result: dict[str, Any], *, cpu: bool = False) -> str:
    """The search rows as a class × visibility grid of p50s: ``plugin / raw / sqlite-utils``
    in ms, then ``(plugin ÷ raw, plugin ÷ sqlite-utils)``; wall time, or with ``cpu`` the CPU
    time of the same calls (``details.search.<vis>/<class>.cpuMs``)."""
    cells: dict[str, dict[str, str]] = {}
    visibilities: list[str] = []
    details = result.get("details", {}).get("search", {})
    for row in result["rows"]:
        words = row["figure"].split(maxsplit=2)
        if len(words) < 3 or words[0] != "search" or row.get("plugin_p95") is None:
            continue  # not a class × visibility row (isolation rows, CJK vs Latin)
        vis, klass = words[1], words[2]
        if vis not in visibilities:
            visibilities.append(vis)
        p50s = [row["plugin"], row["baseline"], row.get("sqlite_utils")]
        if cpu:
            spent = details.get(f"{vis}/{klass}", {}).get("cpuMs", {})
            p50s = [spent.get(k, {}).get("p50") for k in ("plugin", "raw", "sqliteUtils")]
        times = " / ".join(number(v) for v in p50s if v is not None)
        ratios = ", ".join(
            f"{ratio(p50s[0] / v)}×" if p50s[0] is not None and v else "–"
            for v in p50s[1:]
            if v is not None
        )
        cells.setdefault(klass, {})[vis] = f"{times} ({ratios})"
    clock = "CPU time" if cpu else "wall time"
    what = f"{clock} p50 ms: plugin / raw SQL / sqlite-utils (plugin ÷ raw, plugin ÷ sqlite-utils)"
    if not has_peer(result):
        what = f"{clock} p50 ms: plugin / raw SQL (plugin ÷ raw)"
    lines = [
        f"| {title(result, 'query class')} | " + " | ".join(f"`{v}`" for v in visibilities) + " |",
        "|---|" + "---|" * len(visibilities),
    ]
    for klass, by_vis in cells.items():
        lines.append(f"| {klass} | " + " | ".join(by_vis.get(v, "–") for v in visibilities) + " |")
    lines += ["", f"Cells: {what}.", "", footer(result)]
    return "\n".join(lines)


#: Issue #17's goals (also in bench/run.py): plugin ÷ raw SQL, plugin ÷ sqlite-utils (p50 and
#: p95), ms a search may add over raw SQL (rare words), and how much a narrow caller's p95 for a
#: very common word may grow from one size to the next (10× the events).
GOAL_RAW = 1.3
GOAL_PEER = 1.0
GOAL_FIXED_MS = 0.2
GOAL_FLAT = 1.5
NARROW = ("tree", "self")
FLAT_CLASS = "very common"


def _search_rows(result: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The class × visibility search rows, by (class, visibility)."""
    rows = {}
    for row in result["rows"]:
        words = row["figure"].split(maxsplit=2)
        if len(words) == 3 and words[0] == "search" and row.get("plugin_p95") is not None:
            rows[(words[2], words[1])] = row
    return rows


def _label(result: dict[str, Any]) -> str:
    return f"{result['size']} ({result['meta'].get('commit', '?')})"


def scaling_table(results: list[dict[str, Any]]) -> str:
    """Plugin p50 / p95 per query class × visibility at each size (with plugin ÷ raw SQL and
    plugin ÷ sqlite-utils p50), then each goal of issue #17 per size: met or not."""
    by_size = [_search_rows(r) for r in results]
    visibilities: list[str] = []
    classes: list[str] = []
    for rows in by_size:
        for klass, vis in rows:
            if vis not in visibilities:
                visibilities.append(vis)
            if klass not in classes:
                classes.append(klass)
    lines = [
        "| query class | size (commit) | " + " | ".join(f"`{v}`" for v in visibilities) + " |",
        "|---|---|" + "---|" * len(visibilities),
    ]
    for klass in classes:
        for result, rows in zip(results, by_size, strict=True):
            cells = []
            for vis in visibilities:
                row = rows.get((klass, vis))
                if row is None:
                    cells.append("–")
                    continue
                ratios = [f"{ratio(row['ratio'])}×"]
                if row.get("ratio_sqlite_utils") is not None:
                    ratios.append(f"{ratio(row['ratio_sqlite_utils'])}×")
                cells.append(
                    f"{number(row['plugin'])} / {number(row['plugin_p95'])} ({', '.join(ratios)})"
                )
            lines.append(f"| {klass} | {_label(result)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Cells: plugin wall time p50 / p95 ms (plugin p50 ÷ raw SQL p50, plugin p50 ÷ "
        "sqlite-utils p50; same run).",
        "",
        "| goal (issue #17) | " + " | ".join(_label(r) for r in results) + " |",
        "|---|" + "---|" * len(results),
    ]
    lines += _goal_lines(results, by_size, visibilities)
    lines += [""] + [footer(r) for r in results]
    return "\n".join(lines)


def _goal_lines(
    results: list[dict[str, Any]],
    by_size: list[dict[tuple[str, str], dict[str, Any]]],
    visibilities: list[str],
) -> list[str]:
    lines = []
    for vis in visibilities:
        cells = []
        for rows in by_size:
            mine = [r for (_, v), r in rows.items() if v == vis]
            if not mine:
                cells.append("–")
                continue
            raw = [
                max(r["ratio"] or 0.0, r["ratio_p95"] or 0.0)
                for r in mine
                if r["ratio"] is not None
            ]
            peer = [
                max(r["ratio_sqlite_utils"] or 0.0, r["ratio_sqlite_utils_p95"] or 0.0)
                for r in mine
                if r.get("ratio_sqlite_utils") is not None
            ]
            raw_met = sum(x <= GOAL_RAW for x in raw)
            cell = f"raw: {raw_met}/{len(raw)} classes (worst {ratio(max(raw, default=None))}×)"
            if peer:
                peer_met = sum(x <= GOAL_PEER for x in peer)
                cell += f"; s-u: {peer_met}/{len(peer)} (worst {ratio(max(peer, default=None))}×)"
            cells.append(cell)
        lines.append(
            f"| `{vis}`: ≤ {GOAL_RAW}× raw, ≤ {GOAL_PEER}× sqlite-utils (p50 and p95) | "
            + " | ".join(cells)
            + " |"
        )
    for vis in visibilities:
        cells = []
        for rows in by_size:
            row = rows.get(("rare", vis))
            if row is None or row["baseline"] is None:
                cells.append("–")
                continue
            extra = row["plugin"] - row["baseline"]
            cells.append(f"{extra:+.2f} ms ({'yes' if extra <= GOAL_FIXED_MS else '**no**'})")
        lines.append(
            f"| `{vis}` fixed cost: rare p50 − raw p50 ≤ {GOAL_FIXED_MS} ms | "
            + " | ".join(cells)
            + " |"
        )
    for vis in NARROW:
        cells = ["–"]
        for before, after in itertools.pairwise(by_size):
            a, b = before.get((FLAT_CLASS, vis)), after.get((FLAT_CLASS, vis))
            if a is None or b is None or not a["plugin_p95"]:
                cells.append("–")
                continue
            grow = b["plugin_p95"] / a["plugin_p95"]
            cells.append(f"{grow:.2f}× ({'yes' if grow <= GOAL_FLAT else '**no**'})")
        lines.append(
            f"| `{vis}` {FLAT_CLASS} p95 ÷ previous size ≤ {GOAL_FLAT}× | "
            + " | ".join(cells)
            + " |"
        )
    return lines


#: Goals against the peers (bench.core: GOAL_SEARCH_SU, GOAL_SEARCH_TANTIVY) and the ms a very
#: common word may take for the ``all`` caller.
GOAL_TANTIVY = 10.0
GOAL_VERY_COMMON_ALL_MS = 5.0
#: The peer each engine's search goals compare with.
MAIN_PEER = {"pg": "sqlalchemy-searchable", "sqlite": "sqlite-utils"}


def _main_peer(result: dict[str, Any]) -> str:
    return MAIN_PEER["pg" if is_postgresql(result) else "sqlite"]


def _row_peers(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    peers = dict(row.get("peers") or {})
    if "sqlite-utils" not in peers and row.get("sqlite_utils") is not None:
        peers["sqlite-utils"] = {
            "p50": row["sqlite_utils"],
            "ratio": row.get("ratio_sqlite_utils"),
            "ratio_p95": row.get("ratio_sqlite_utils_p95"),
        }
    return peers


def peer_table(result: dict[str, Any]) -> str:
    """Plugin ÷ each peer (p50) per query class × visibility: the engine's own peer
    (sqlite-utils, SQLAlchemy-Searchable), then tantivy."""
    rows = _search_rows(result)
    visibilities = list(dict.fromkeys(v for _, v in rows))
    classes = list(dict.fromkeys(k for k, _ in rows))
    main = _main_peer(result)
    lines = [
        f"| {title(result, 'query class')} | " + " | ".join(f"`{v}`" for v in visibilities) + " |",
        "|---|" + "---|" * len(visibilities),
    ]
    for klass in classes:
        cells = []
        for vis in visibilities:
            row = rows.get((klass, vis))
            peers = _row_peers(row) if row else {}
            if not row:
                cells.append("–")
                continue
            parts = [number(row["plugin"])]
            for label in (main, "tantivy"):
                if peers.get(label, {}).get("ratio") is not None:
                    parts.append(f"{ratio(peers[label]['ratio'])}×")
                else:
                    parts.append("–")
            cells.append(f"{parts[0]} ms ({parts[1]}, {parts[2]})")
        lines.append(f"| {klass} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Cells: plugin p50 (plugin ÷ {main} p50, plugin ÷ tantivy p50), wall time, same run.",
    ]
    return "\n".join(lines)


def peer_goals(result: dict[str, Any]) -> list[str]:
    """One line per search goal against the peers: met or not, with the worst figure."""
    rows = _search_rows(result)
    main = _main_peer(result)
    out = []
    for label, limit in ((main, 1.0), ("tantivy", GOAL_TANTIVY)):
        ratios = [
            (max(p[label]["ratio"], p[label].get("ratio_p95") or 0.0), k, v)
            for (k, v), row in rows.items()
            if (p := _row_peers(row)).get(label, {}).get("ratio") is not None
        ]
        if not ratios:
            out.append(f"* every class × visibility ≤ {limit:g}× {label}: not measured")
            continue
        good = sum(r <= limit for r, _, _ in ratios)
        worst = max(ratios)
        out.append(
            f"* every class × visibility ≤ {limit:g}× {label} (p50 and p95): {good} of "
            f"{len(ratios)} cells ({'met' if good == len(ratios) else '**not met**'}; worst "
            f"{ratio(worst[0])}× `{worst[2]}` {worst[1]})"
        )
    row = rows.get(("very common", "all"))
    if row is not None:
        ok = row["plugin"] <= GOAL_VERY_COMMON_ALL_MS
        out.append(
            f"* very common words for `all` ≤ {GOAL_VERY_COMMON_ALL_MS:g} ms: p50 "
            f"{number(row['plugin'])} ms ({'met' if ok else '**not met**'})"
        )
    return out


def write_goals(result: dict[str, Any]) -> list[str]:
    """Ingest and append against the raw baseline and SQLAlchemy-Searchable."""
    out = []
    by_name = {row["figure"]: row for row in result["rows"]}
    live = by_name.get("live ingest (append_many ×100)")
    details = result.get("details", {})
    if live is not None and not is_postgresql(result):
        ok = live["ratio"] is not None and live["ratio"] >= 0.8
        out.append(
            f"* SQLite ingest ≥ 0.8× raw FTS5: {live['ratio']:.3f}× "
            f"({'met' if ok else '**not met**'})"
        )
    searchable = details.get("sqlalchemySearchable")
    if live is not None and searchable and details.get("live"):
        mine = details["live"]["indexRows"] / details["live"]["pluginSeconds"]
        theirs = searchable["rows"] / searchable["loadSeconds"]
        out.append(
            f"* PostgreSQL bulk ingest ≥ SQLAlchemy-Searchable: {mine:,.0f} vs {theirs:,.0f} "
            f"messages/s, {mine / theirs:.2f}× ({'met' if mine >= theirs else '**not met**'}; "
            "plugin: events and index rows of append_many ×100; SQLAlchemy-Searchable: its "
            "messages, 100 per ORM transaction)"
        )
    for name in (
        "single append (own transaction)",
        "single append through the host's ORM (install)",
    ):
        row = by_name.get(name)
        peer = (row or {}).get("peers", {}).get("sqlalchemy-searchable")
        if row is not None and peer and peer.get("ratio") is not None:
            ok = peer["ratio"] <= 1.0
            out.append(
                f"* {name} ≤ 1.0× SQLAlchemy-Searchable: {number(row['plugin'])} vs "
                f"{number(peer['p50'])} ms p50, {ratio(peer['ratio'])}× "
                f"({'met' if ok else '**not met**'})"
            )
    orm = by_name.get("single append through the host's ORM (install)")
    if orm is not None:
        out.append(
            f"* ORM append ≤ TranscriptStore.append: {number(orm['plugin'])} vs "
            f"{number(orm['baseline'])} ms p50, {ratio(orm['ratio'])}× "
            f"({'met' if orm['met'] else '**not met**'})"
        )
    return out


# --------------------------------------------------------------------------- docs/benchmarks.md

DOCS_INTRO = """# Benchmarks

<!-- Generated by `python -m bench.table --docs` from bench/results/latest-*.json: do not edit. -->

Every figure is measured next to a **baseline in the same run**: plain `sqlite3` (or, on
PostgreSQL, raw psycopg) doing the same logical work on the same data, with the same schema
and settings. Plugin and baseline calls are interleaved, so each result is a ratio that stays
meaningful on a slow or busy machine; absolute times mean little. The search rows also have
**peers**, measured in the same run on the same rows and queries, with their match sets checked
against raw SQL: [sqlite-utils](https://sqlite-utils.datasette.io/) on SQLite (what a Python
user would pick to put FTS5 over SQLite),
[SQLAlchemy-Searchable](https://sqlalchemy-searchable.readthedocs.io/) on PostgreSQL (what a
SQLAlchemy user picks there: a `TSVectorType` column kept by its trigger), and
[tantivy](https://github.com/quickwit-oss/tantivy-py) on both (a search engine's BM25 top-k:
the limit). The write figures compare with SQLAlchemy-Searchable's ORM writes too. A
benchmark reports and never fails on timing: "met" is information. The runs below shared 2 CPU
cores with other work (the load average is under each table): read the ratios.

## Reproducing

```sh
pip install -e ".[dev,bench]"
python -m bench.run --size 10k                          # also 100k, 1m
python -m bench.run --size 100k --only search           # the search rows only
python -m bench.run --backend postgresql --size 100k    # a throwaway PostgreSQL server
python -m bench.table --docs                            # rewrite this page from the results
```

Each run writes `bench/results/latest-<size>.json` (`latest-<size>-search.json` for `--only
search`, `latest-pg-<size>.json` on PostgreSQL) with every distribution, the chosen queries,
the corpus and the environment; `python -m bench.table FILE` prints one of them. What each row
compares is described in `bench/README.md`.
"""


def _latest(pattern: str, results_dir: Path) -> dict[str, Any] | None:
    path = results_dir / pattern
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _without_history(text: str) -> str:
    """A published table names runs by their date, not by commit or issue."""
    text = re.sub(r" at commit [0-9a-f]{7,40}", "", text)
    text = re.sub(r" \([0-9a-f]{7,40}\)", "", text)
    text = text.replace(" (commit)", "").replace(" (issue #17)", "")
    return text


def docs_page(results_dir: Path = RESULTS) -> str:
    """docs/benchmarks.md: the newest tables of each engine and size, and how to rerun them."""
    parts = [DOCS_INTRO]
    searches = [r for s in SIZES if (r := _latest(f"latest-{s}-search.json", results_dir))]
    if searches:
        parts.append("## SQLite: search\n")
        for result in searches:
            parts.append(f"### {result['size']}\n\n{search_table(result)}\n")
        parts.append(
            "### Across sizes\n\nEach size picks its own words by document frequency, so a "
            "query class is the same share of messages at every size.\n\n"
            f"{scaling_table(searches)}\n"
        )
    for engine, prefix in (("SQLite", ""), ("PostgreSQL", "pg-")):
        for size in SIZES:
            result = _latest(f"latest-{prefix}{size}.json", results_dir)
            if result is None or not any(_row_peers(r) for r in result["rows"]):
                continue
            # The search rows of the newer run (a `--only search` run may follow the full one).
            searched = _latest(f"latest-{prefix}{size}-search.json", results_dir)
            if searched is None or searched["createdAt"] < result["createdAt"]:
                searched = result
            goals = peer_goals(searched) + write_goals(result)
            parts.append(
                f"## {engine} {size}: against the peers\n\n{peer_table(searched)}\n\n"
                + "Goals:\n\n"
                + "\n".join(goals)
                + "\n"
            )
    for engine, prefix in (("SQLite", ""), ("PostgreSQL", "pg-")):
        fulls = [r for s in SIZES if (r := _latest(f"latest-{prefix}{s}.json", results_dir))]
        if fulls:
            parts.append(f"## {engine}: every figure\n")
            for result in fulls:
                parts.append(f"### {result['size']}\n\n{table(result)}\n")
    scale = [json.loads(f.read_text(encoding="utf-8")) for f in results_dir.glob("pg-scale-*.json")]
    if scale:
        from bench.pg_scale import table as scale_table

        # Every run, smallest sizes first (one file per command: 100k and 1m in one, 10m in
        # another), so `self` / `tree` can be followed from 100k to 10m.
        scale.sort(
            key=lambda result: (
                min(run["messages"] for run in result["runs"]),
                result["createdAt"],
            )
        )
        parts.append(
            "## PostgreSQL past one server: a standby, the partitioned layout\n\n"
            + "\n\n".join(scale_table(result) for result in scale)
            + "\n\nWhat these figures predict at 100m and 1b messages: [scale.md](scale.md).\n"
        )
    return _without_history("\n".join(parts))


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--search", "--cpu", "--scaling", "--docs"}
    if unknown:
        print(f"unknown option(s) {', '.join(sorted(unknown))}", file=sys.stderr)
        print(__doc__, file=sys.stderr)
        return 2
    args = [a for a in argv if a not in flags]
    if "--docs" in flags:
        out = Path(args[0]) if args else DOCS_PAGE
        out.write_text(docs_page(), encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
        return 0
    if "--scaling" in flags:
        if not args:
            print("--scaling needs one result file per size", file=sys.stderr)
            return 2
        files = [json.loads(Path(a).read_text(encoding="utf-8")) for a in args]
        print(scaling_table(files))
        return 0
    path = Path(args[0]) if args else DEFAULT
    result = json.loads(path.read_text(encoding="utf-8"))
    if "--search" in flags or "--cpu" in flags:
        print(search_table(result, cpu="--cpu" in flags))
    else:
        print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
