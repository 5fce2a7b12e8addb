"""Print a benchmark result file as a Markdown table, or write bench/RESULTS.md.

Usage: ``python -m bench.table [--search [--cpu]] [bench/results/latest-1m.json]`` (a
PostgreSQL result, e.g. ``bench/results/latest-pg-100k.json``, prints the same way, titled and
footed with its engine; it has no sqlite-utils columns), or
``python -m bench.table --scaling FILE [FILE …]`` (one result file per corpus size, smallest
first: the scaling table and the search goals across sizes), or ``python -m bench.table
--docs`` (writes bench/RESULTS.md and docs/benchmarks.md, the filter grids, from the newest
``bench/results/latest-*.json`` files).
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
DOCS_PAGE = Path(__file__).resolve().parent / "RESULTS.md"
#: ... and the filters page of the docs.
FILTERS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
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


#: The ``filters`` figure's filters (``bench.core.FILTERS``), in column order.
FILTER_NAMES = ("role", "7 days", "recent")


def filters_table(result: dict[str, Any]) -> str:
    """The ``filters`` figure (``bench.run --only filters``) as a visibility × query class grid:
    the unfiltered p50, then per filter its p50 and filtered ÷ unfiltered at p50 / p95 (goal
    ≤ 1.5× both), and how many cells meet it."""
    cells: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for row in result["rows"]:
        figure = str(row["figure"])
        if not figure.startswith("filter "):
            continue
        vis, rest = figure[len("filter ") :].split(maxsplit=1)
        name = next((n for n in FILTER_NAMES if rest.endswith(f" {n}")), None)
        if name is None:
            continue
        cells.setdefault((vis, rest[: -len(name) - 1]), {})[name] = row
    head = (
        f"| {title(result, 'visibility')} | class | unfiltered p50 ms | "
        + " | ".join(f"{n} p50 ms (× p50 / p95)" for n in FILTER_NAMES)
        + " |"
    )
    lines = [head, "|---|---|---|" + "---|" * len(FILTER_NAMES)]
    met_count = total = 0
    for (vis, klass), by_name in cells.items():
        first = next(iter(by_name.values()))
        line = f"| {vis} | {klass} | {number(first['baseline'])} |"
        for name in FILTER_NAMES:
            row = by_name.get(name)
            if row is None:
                line += " – |"
                continue
            total += 1
            met_count += bool(row["met"])
            mark = "" if row["met"] else " **no**"
            line += (
                f" {number(row['plugin'])} ({ratio(row['ratio'])} / "
                f"{ratio(row['ratio_p95'])}){mark} |"
            )
        lines.append(line)
    lines.append("")
    lines.append(f"Within 1.5× at p50 and p95: {met_count} of {total} cells. {footer(result)}")
    return "\n".join(lines)


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
    details = result.get("details", {})
    # The live-ingest row, whichever way the run wrote (bench.core.LIVE_ROWS).
    live = next((row for name, row in by_name.items() if name.startswith("live ingest")), None)
    how = {"orm": "a host's ORM, 100 events a transaction", "import": "import_dir + reconcile"}
    written = how.get(details.get("live", {}).get("ingest", "append"), "append_many ×100")
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
            f"plugin: events and index rows of {written}; SQLAlchemy-Searchable: its "
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


def match_lines(result: dict[str, Any]) -> list[str]:
    """How the peers' match sets compared with raw SQL's (checked before any timing)."""
    details = result.get("details", {})
    counts = dict(details.get("peerCounts") or {})
    if not counts and details.get("sqliteUtilsCounts"):
        counts = {"sqlite-utils": details["sqliteUtilsCounts"]}
    out = []
    for label, check in counts.items():
        bad = check.get("mismatches") or []
        what = f"{label}: {check.get('checked', 0)} query × visibility pairs, "
        if not bad:
            what += "every match set the same size as raw SQL's"
        else:
            shown = "; ".join(
                f"{m['query']!r} `{m['visibility']}` raw {m['raw']:,}, {label} {m[label]:,}"
                for m in bad[:3]
            )
            what += f"{len(bad)} differ ({shown})"
        if check.get("differentExpression"):
            what += (
                f"; {check['differentExpression']} compared with the raw expression of what the "
                "peer matches (every word a prefix)"
            )
        out.append(f"* {what}")
    return out


#: Tables of the plugin that hold what a peer holds (the index rows and their full-text
#: index, the impact lists): the rest (events, sessions, the tree) a peer has no counterpart of.
INDEX_TABLES = ("message_",)


def size_lines(result: dict[str, Any]) -> list[str]:
    """The plugin's database and its index tables on disk next to each peer's."""
    details = result.get("details", {})
    size = details.get("size")
    out = []
    if size:
        plugin = size["plugin"]
        total = sum(plugin.values())
        names = sorted(k for k in plugin if k.startswith(INDEX_TABLES))
        index = sum(plugin[k] for k in names)
        text = size.get("rawTextBytes") or 0
        out.append(
            f"* plugin: {total / 1e6:,.1f} MB in all, of which {index / 1e6:,.1f} MB the index "
            f"rows with their full-text index ({', '.join(names)}); "
            f"raw SQL baseline {sum(size['baseline'].values()) / 1e6:,.1f} MB; raw indexed text "
            f"{text / 1e6:,.1f} MB"
        )
    for key, label in (
        ("sqliteUtils", "sqlite-utils (its database file)"),
        ("sqlalchemySearchable", "SQLAlchemy-Searchable (its tables, indexes, TOAST)"),
        ("tantivy", "tantivy (its index folder, bodies not stored)"),
    ):
        peer = details.get(key)
        if peer is None:
            continue
        if peer.get("sizeBytes") is None:
            out.append(f"* {label}: not measured in this run")
        else:
            out.append(f"* {label}: {peer['sizeBytes'] / 1e6:,.1f} MB")
    return out


#: How a run's plugin database was written (``details.live.ingest``; older runs: append_many).
_INGESTS = {
    "orm": "through a host's ORM ×100",
    "import": "`import_dir` + `reconcile()`",
    "append": "`append_many` ×100",
}


def ingest_lines(result: dict[str, Any]) -> list[str]:
    """Bulk ingest of the plugin and the raw baseline, and each peer's load, in rows a second."""
    details = result.get("details", {})
    out = []
    live = details.get("live")
    if live:
        rows = live["indexRows"]
        out.append(
            f"* plugin {_INGESTS.get(live.get('ingest', 'append'), 'append_many ×100')}: "
            f"{live['events'] / live['pluginSeconds']:,.0f} events/s "
            f"({rows / live['pluginSeconds']:,.0f} messages/s); raw SQL baseline "
            f"{live['events'] / live['baselineSeconds']:,.0f} events/s, plugin ÷ raw "
            f"{live['baselineSeconds'] / live['pluginSeconds']:.2f}× (CPU time "
            f"{live['baselineCpuSeconds'] / live['pluginCpuSeconds']:.2f}×)"
        )
    su = details.get("sqliteUtils")
    if su:
        spent = su["insertAllSeconds"] + su["enableFtsSeconds"]
        out.append(
            f"* sqlite-utils `insert_all` + `enable_fts`: {su['rows'] / spent:,.0f} messages/s "
            "(index rows only, loaded at once, the full-text index built after)"
        )
    sa = details.get("sqlalchemySearchable")
    if sa:
        out.append(
            f"* SQLAlchemy-Searchable, ORM objects, 100 a transaction: "
            f"{sa['rows'] / sa['loadSeconds']:,.0f} messages/s"
        )
    tv = details.get("tantivy")
    if tv:
        out.append(
            f"* tantivy, one writer, one commit: {tv['rows'] / tv['loadSeconds']:,.0f} messages/s"
        )
    return out


#: The narrow and the wide caller of the scaling table, and the goal that a narrow caller's
#: p50 stays flat from 100k to 1m (within ±20 %).
SCALING_CALLERS = ("self", "all")
FLAT_CALLERS = ("self", "tree")
GOAL_FLAT_P50 = 0.2


def _cell(p50: float | None, p95: float | None, peer: float | None = None) -> str:
    if p50 is None:
        return "–"
    cell = f"{number(p50)} / {number(p95)} ms"
    return cell + (f" ({ratio(peer)}×)" if peer is not None else "")


def _scale_search(run: dict[str, Any], vis: str, klass: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = run.get("flat", {}).get(f"{vis}|{klass}")
    return found


def caller_scaling(
    results: dict[str, dict[str, Any]],
    scale: dict[str, Any] | None = None,
    *,
    main: str,
) -> str:
    """p50 / p95 of the narrow (``self``) and the wide (``all``) caller per class at 10k, 100k
    and 1m, with plugin ÷ the engine's peer (p50); a size missing from ``results`` comes from
    ``scale`` (a ``bench.pg_scale`` run of that many messages, flat layout) when it has one."""
    by_size = {size: _search_rows(r) for size, r in results.items()}
    classes = list(dict.fromkeys(k for rows in by_size.values() for k, _ in rows))
    sizes = [s for s in SIZES if s in results or (scale and _scale_run(scale, s))]
    lines = [
        "| caller | class | " + " | ".join(sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for vis in SCALING_CALLERS:
        for klass in classes:
            cells = []
            for size in sizes:
                row = by_size.get(size, {}).get((klass, vis))
                if row is not None:
                    peer = _row_peers(row).get(main, {}).get("ratio")
                    cells.append(_cell(row["plugin"], row["plugin_p95"], peer))
                    continue
                run = _scale_run(scale, size) if scale else None
                found = _scale_search(run, vis, klass) if run else None
                cells.append(_cell(found["p50"], found["p95"]) + " ‡" if found is not None else "–")
            lines.append(f"| `{vis}` | {klass} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: ``bench.run`` size labels as ``bench.pg_scale`` message counts.
SCALE_MESSAGES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}


def _scale_run(scale: dict[str, Any] | None, size: str) -> dict[str, Any] | None:
    if scale is None:
        return None
    runs = [r for r in scale["runs"] if r["messages"] == SCALE_MESSAGES.get(size)]
    return runs[0] if runs else None


def flat_goal(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> tuple[bool | None, str]:
    """``self`` / ``tree`` p50 at 1m ÷ at 100k, per class, within ±20 %: (met, figure); the
    two are ``bench.run`` results, or ``bench.pg_scale`` runs (their ``flat`` layout)."""
    if before is None or after is None:
        return None, "not measured"
    pairs = []
    alone = "flat" not in before
    for vis in FLAT_CALLERS:
        if "flat" in before:
            keys = [k.split("|", 1)[1] for k in before["flat"] if k.startswith(f"{vis}|")]
            for klass in keys:
                a, b = _scale_search(before, vis, klass), _scale_search(after, vis, klass)
                if a and b and a["p50"]:
                    pairs.append((b["p50"] / a["p50"], vis, klass))
        else:
            rows_a, rows_b = _search_rows(before), _search_rows(after)
            for (klass, v), row in rows_a.items():
                other = rows_b.get((klass, v))
                if v != vis or other is None:
                    continue
                # The plugin alone when both runs timed it so (bench.core.Bench.measure_alone).
                both = bool(row.get("plugin_alone") and other.get("plugin_alone"))
                key = "plugin_alone" if both else "plugin"
                alone = alone and key == "plugin_alone"
                if row[key]:
                    pairs.append((other[key] / row[key], vis, klass))
    if not pairs:
        return None, "not measured"
    runs = ""
    if "createdAt" in before and "createdAt" in after:
        runs = f"; runs {before['createdAt']} and {after['createdAt']}"
    good = [r for r, _, _ in pairs if abs(r - 1.0) <= GOAL_FLAT_P50]
    worst = max(pairs, key=lambda p: abs(p[0] - 1.0))
    return len(good) == len(pairs), (
        f"{len(good)} of {len(pairs)} class × caller pairs within ±{GOAL_FLAT_P50:.0%} "
        f"(worst `{worst[1]}` {worst[2]}: 1m ÷ 100k p50 {worst[0]:.2f}×{runs}"
        + ("; the plugin's searches timed alone, no peer's call between them)" if alone else ")")
    )


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


#: Which sections of the notes profile the gap of a goal, by (goal key, engine): (page under
#: bench/, heading). A goal's cell links those whose heading exists when the page is written.
_FIXED = ("NOTES.md", "A search's fixed cost")
_SQLITE_PEER = ("NOTES.md", "SQLite search against sqlite-utils at 100k")
_PG_WIDE = ("NOTES.md", "A search's fixed cost on PostgreSQL, for wide callers")
_PG_NARROW = ("NOTES.md", "PostgreSQL searches that find nothing, for a narrow caller")
_SQLITE_NARROW = ("NOTES.md", "SQLite searches that find nothing, for a narrow caller")
_PG_NARROW_PLAN = ("NOTES.md", "A narrow caller's statement on PostgreSQL")
_TOPK = ("NOTES.md", "Top-k for common words")
_LISTS = ("NOTES.md", "Impact lists")
_WRITES = ("NOTES.md", "Writes")
_SQLITE_INGEST = ("NOTES.md", "Where SQLite live ingest's time goes")
_PG_INGEST = ("NOTES.md", "Where bulk ingest's time goes on PostgreSQL")
_ORM = ("NOTES.md", "What the ORM path costs beyond SQLAlchemy's own")
_SQLITE_FLAT = ("NOTES.md", "SQLite `self` and `tree` searches from 100k to 1m events")
_SCALE = (
    "NOTES.md",
    "Measured: 100k, 1m and 10m messages on one server, a standby, and the partitioned layout",
)
GAP_SECTIONS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("peer", "sqlite"): (_SQLITE_PEER, _SQLITE_NARROW),
    ("peer", "pg"): (_FIXED, _PG_WIDE, _PG_NARROW, _PG_NARROW_PLAN),
    ("tantivy", "sqlite"): (_SQLITE_PEER, _SQLITE_NARROW, _TOPK),
    ("tantivy", "pg"): (_PG_WIDE, _PG_NARROW, _PG_NARROW_PLAN, _TOPK),
    ("very common", "sqlite"): (_TOPK, _LISTS),
    ("very common", "pg"): (_PG_WIDE, _LISTS),
    ("overlap", "sqlite"): (_LISTS,),
    ("overlap", "pg"): (_LISTS,),
    ("ingest", "sqlite"): (_SQLITE_INGEST,),
    ("ingest", "pg"): (_PG_INGEST,),
    ("orm peer", "pg"): (_WRITES, _ORM),
    ("orm store", "sqlite"): (_ORM,),
    ("orm store", "pg"): (_ORM,),
    ("flat", "sqlite"): (_SQLITE_FLAT, _SQLITE_NARROW),
    ("flat", "pg"): (_SCALE,),
}


def _headings(page: str) -> set[str]:
    path = DOCS_PAGE.parent / page
    if not path.is_file():
        return set()
    text = path.read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _links(key: str, engine: str) -> str:
    found = [(p, h) for p, h in GAP_SECTIONS.get((key, engine), ()) if h in _headings(p)]
    return ", ".join(f"[{h}]({p}#{_slug(h)})" for p, h in found)


def _verdict(met_: bool | None, figure: str, key: str, engine: str) -> str:
    if met_ is None:
        return figure
    if met_:
        return f"met: {figure}"
    links = _links(key, engine)
    return f"**not met**: {figure}" + (f"; why: {links}" if links else "")


def _search_verdicts(
    result: dict[str, Any] | None, engine: str
) -> dict[str, tuple[bool | None, str]]:
    out: dict[str, tuple[bool | None, str]] = {}
    if result is None:
        return out
    rows = _search_rows(result)
    for key, label, limit in (
        ("peer", MAIN_PEER[engine], GOAL_PEER),
        ("tantivy", "tantivy", GOAL_TANTIVY),
    ):
        ratios = [
            (p[label]["ratio"], p[label].get("ratio_p95") or 0.0, k, v)
            for (k, v), row in rows.items()
            if (p := _row_peers(row)).get(label, {}).get("ratio") is not None
        ]
        if not ratios:
            out[key] = (None, "not measured")
            continue
        good = sum(max(r50, r95) <= limit for r50, r95, _, _ in ratios)
        p50 = max(ratios)
        p95 = max(ratios, key=lambda r: r[1])
        out[key] = (
            good == len(ratios),
            f"{good} of {len(ratios)} cells; worst p50 {ratio(p50[0])}× (`{p50[3]}` {p50[2]}), "
            f"worst p95 {ratio(p95[1])}× (`{p95[3]}` {p95[2]})",
        )
    row = rows.get(("very common", "all"))
    if row is not None:
        out["very common"] = (
            row["plugin"] <= GOAL_VERY_COMMON_ALL_MS,
            f"p50 {number(row['plugin'])} ms",
        )
    overlaps = [
        (min(d["top10Overlap"]), key)
        for key, d in result.get("details", {}).get("search", {}).items()
        if d.get("top10Overlap")
    ]
    if overlaps:
        low, cell = min(overlaps)
        where = f" (`{cell}`)" if low < 1.0 else ""
        out["overlap"] = (
            low >= GOAL_TOP10_OVERLAP,
            f"worst {low:.2f}{where} over the {len(overlaps)} `all` / `agent` cells",
        )
    return out


#: Approximate top-k must keep this share of the exact top 10 (bench.core GOAL_TOP10_OVERLAP).
GOAL_TOP10_OVERLAP = 0.95


def _write_verdicts(result: dict[str, Any] | None) -> dict[str, tuple[bool | None, str]]:
    out: dict[str, tuple[bool | None, str]] = {}
    if result is None:
        return out
    details = result.get("details", {})
    by_name = {row["figure"]: row for row in result["rows"]}
    live = details.get("live")
    searchable = details.get("sqlalchemySearchable")
    if live and is_postgresql(result):
        if searchable:
            mine = live["indexRows"] / live["pluginSeconds"]
            theirs = searchable["rows"] / searchable["loadSeconds"]
            out["ingest"] = (
                mine >= theirs,
                f"{mine:,.0f} vs {theirs:,.0f} messages/s (the plugin takes {theirs / mine:.2f}× "
                "its time)",
            )
    elif live:
        r = live["baselineSeconds"] / live["pluginSeconds"]
        out["ingest"] = (r >= 0.8, f"{r:.3f}× raw FTS5's rate")
    orm = by_name.get("single append through the host's ORM (install)")
    if orm is None:  # SQLite runs show the ORM path as a peer of the store's append
        row = by_name.get("single append (own transaction)")
        mine = ((row or {}).get("peers") or {}).get("plugin ORM")
        if row is not None and mine:
            orm = {"plugin": mine["p50"], "baseline": row["plugin"]}
    if orm is not None and orm.get("baseline"):
        r = orm["plugin"] / orm["baseline"]
        out["orm store"] = (
            r <= 1.0,
            f"{number(orm['plugin'])} vs {number(orm['baseline'])} ms p50, {r:.2f}×",
        )
        peer = (orm.get("peers") or {}).get("sqlalchemy-searchable")
        if peer and peer.get("ratio") is not None:
            out["orm peer"] = (
                peer["ratio"] <= 1.0,
                f"{number(orm['plugin'])} vs {number(peer['p50'])} ms p50, {ratio(peer['ratio'])}×",
            )
    return out


GOALS = (
    ("peer", "every search class × visibility ≤ 1.0× the engine's peer (p50 and p95; "
     "sqlite-utils, SQLAlchemy-Searchable)"),
    ("tantivy", f"every search class × visibility within {GOAL_TANTIVY:g}× tantivy (p50 and p95)"),
    ("very common", f"very common words for `all` ≤ {GOAL_VERY_COMMON_ALL_MS:g} ms (p50)"),
    ("overlap", f"approximate top-k: top-10 overlap with exact ranking ≥ {GOAL_TOP10_OVERLAP}"),
    ("ingest", "bulk ingest: SQLite ≥ 0.8× raw FTS5; PostgreSQL ≤ 1.0× SQLAlchemy-Searchable's "
     "time"),
    ("orm peer", "one message appended through the ORM ≤ 1.0× SQLAlchemy-Searchable (p50)"),
    ("orm store", "the ORM append ≤ `TranscriptStore.append` (p50)"),
    ("flat", "`self` / `tree` p50 flat from 100k to 1m (±20 %)"),
)  # fmt: skip


def goals_table(
    engines: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]],
    flat: dict[str, tuple[bool | None, str]],
) -> str:
    """Each goal × engine at 100k: met or not, the figure, and where the gap is profiled.
    ``engines`` maps ``sqlite`` / ``pg`` to (its 100k search result, its 100k full result)."""
    verdicts = {
        engine: {
            **_search_verdicts(searched, engine),
            **_write_verdicts(full),
            "flat": flat[engine],
        }
        for engine, (searched, full) in engines.items()
    }
    lines = ["| goal | SQLite | PostgreSQL |", "|---|---|---|"]
    for key, goal in GOALS:
        cells = []
        for engine in ("sqlite", "pg"):
            got = verdicts.get(engine, {}).get(key)
            if got is None:
                cells.append("–")
            else:
                cells.append(_verdict(got[0], got[1], key, engine))
        lines.append(f"| {goal} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- bench/RESULTS.md

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


def _newest_search(prefix: str, size: str, results_dir: Path) -> dict[str, Any] | None:
    """The newer of a size's full run and its ``--only search`` run (for the search rows)."""
    full = _latest(f"latest-{prefix}{size}.json", results_dir)
    searched = _latest(f"latest-{prefix}{size}-search.json", results_dir)
    if searched is None or (full is not None and searched["createdAt"] < full["createdAt"]):
        return full
    return searched


def _scale_results(results_dir: Path) -> list[dict[str, Any]]:
    """Every ``bench.pg_scale`` result, smallest sizes first."""
    scale = [json.loads(f.read_text(encoding="utf-8")) for f in results_dir.glob("pg-scale-*.json")]
    scale.sort(key=lambda r: (min(run["messages"] for run in r["runs"]), r["createdAt"]))
    return scale


def _scale_with(scale: list[dict[str, Any]], *sizes: str) -> dict[str, Any] | None:
    """The newest ``bench.pg_scale`` result that measured every one of ``sizes``."""
    found = [r for r in scale if all(_scale_run(r, size) for size in sizes)]
    return max(found, key=lambda r: str(r["createdAt"])) if found else None


ENGINES = (("SQLite", "", "sqlite"), ("PostgreSQL", "pg-", "pg"))


def docs_page(results_dir: Path = RESULTS) -> str:
    """bench/RESULTS.md: the goals, the newest tables of each engine and size, and how to
    rerun them."""
    parts = [DOCS_INTRO]
    scale = _scale_results(results_dir)
    scale_1m = _scale_with(scale, "100k", "1m")
    newest = {
        key: {s: r for s in SIZES if (r := _newest_search(prefix, s, results_dir))}
        for _, prefix, key in ENGINES
    }
    fulls_100k = {
        key: _latest(f"latest-{prefix}100k.json", results_dir) for _, prefix, key in ENGINES
    }
    flat = {
        "sqlite": flat_goal(newest["sqlite"].get("100k"), newest["sqlite"].get("1m")),
        "pg": (
            flat_goal(newest["pg"].get("100k"), newest["pg"].get("1m"))
            if "1m" in newest["pg"]
            else flat_goal(_scale_run(scale_1m, "100k"), _scale_run(scale_1m, "1m"))
        ),
    }
    if "1m" not in newest["pg"] and scale_1m is not None:
        met_, figure = flat["pg"]
        flat["pg"] = (met_, f"{figure}; `bench.pg_scale` run {scale_1m['createdAt']}")
    parts.append(
        "## Goals and their gaps\n\nAt 100k events on each engine (the newest run of each: "
        "below), every goal met or not, with its figure and, where it is not met, the "
        "sections that profile where the time goes ([NOTES.md](NOTES.md) "
        "mostly). A gap with no link has no profile yet.\n\n"
        + goals_table(
            {key: (newest[key].get("100k"), fulls_100k[key]) for _, _, key in ENGINES}, flat
        )
        + "\n"
    )
    sqlite_1m, sqlite_100k = newest["sqlite"].get("1m"), newest["sqlite"].get("100k")
    if sqlite_1m is not None and sqlite_100k is not None:
        small, big = sqlite_100k["corpus"]["sessions"], sqlite_1m["corpus"]["sessions"]
        parts[-1] += (
            f"\nFlatness on SQLite compares `bench.run` at 100k ({small:,} sessions) and 1m "
            f"({big:,} sessions): "
            + (
                "a narrow caller's sessions hold ten times the messages at 1m (a caller whose "
                "own transcript grows tenfold, not one among ten times more sessions).\n"
                if big == small
                else "the sessions keep their size, and a narrow caller is one among "
                f"{big / small:.0f} times more.\n"
            )
        )
    if "1m" not in newest["pg"] and scale_1m is not None:
        parts[-1] += (
            "\nOn PostgreSQL it is measured by `python -m bench.pg_scale` (100,000 and "
            "1,000,000 messages in one command, 2,000 and 20,000 sessions: the same sessions' "
            "size at both), not by `bench.run`.\n"
        )
    parts.append("## Narrow and wide callers across sizes\n")
    for engine, _, key in ENGINES:
        results = newest[key]
        if not results:
            continue
        caption = (
            f"### {engine}\n\nPlugin p50 / p95 (plugin p50 ÷ {MAIN_PEER[key]} p50, same run), "
            "`self` (the narrow caller: one session tree) and `all` (the wide caller: every "
            "session). Each size picks its own words by document frequency, so a class is the "
            "same share of messages at every size."
        )
        use_scale = key == "pg" and "1m" not in results and scale_1m is not None
        if use_scale:
            caption += (
                " ‡: `bench.run` on PostgreSQL at 1m takes longer than a working session, so "
                "this column is `python -m bench.pg_scale --sizes 100k,1m` (1,000,000 messages "
                "in 20,000 sessions, flat layout, its own words of the same classes, no peer "
                "in that run)."
            )
        parts.append(
            caption
            + "\n\n"
            + caller_scaling(results, scale_1m if use_scale else None, main=MAIN_PEER[key])
            + "\n"
        )
    searches = list(newest["sqlite"].values())
    if searches:
        parts.append("## SQLite: search\n")
        for result in searches:
            parts.append(f"### {result['size']}\n\n{search_table(result)}\n")
        parts.append(
            "### Across sizes\n\nEach size picks its own words by document frequency, so a "
            "query class is the same share of messages at every size.\n\n"
            f"{scaling_table(searches)}\n"
        )
    parts.extend(_filters_sections(results_dir, "##"))
    for engine, prefix, _ in ENGINES:
        for size in SIZES:
            full = _latest(f"latest-{prefix}{size}.json", results_dir)
            if full is None or not any(_row_peers(r) for r in full["rows"]):
                continue
            result = full
            # The search rows of the newer run (a `--only search` run may follow the full one).
            searched = _newest_search(prefix, size, results_dir) or result
            goals = peer_goals(searched) + write_goals(result)
            block = f"## {engine} {size}: against the peers\n\n{peer_table(searched)}\n\n"
            block += "Goals:\n\n" + "\n".join(goals) + "\n"
            matched = match_lines(searched)
            if matched:
                block += (
                    "\nMatch sets, checked before any timing (each peer's count of matching "
                    "rows against raw SQL's, every query at every visibility):\n\n"
                    + "\n".join(matched)
                    + "\n"
                )
            ingest = ingest_lines(result)
            if ingest:
                block += f"\nIngest (run {result['createdAt']}):\n\n" + "\n".join(ingest) + "\n"
            sizes = size_lines(result)
            if sizes:
                block += "\nOn disk:\n\n" + "\n".join(sizes) + "\n"
            if searched is not result:
                block += (
                    f"\nSearch rows: run {searched['createdAt']}; the rest: run "
                    f"{result['createdAt']}.\n"
                )
            parts.append(block)
    for engine, prefix, _ in ENGINES:
        fulls = [r for s in SIZES if (r := _latest(f"latest-{prefix}{s}.json", results_dir))]
        if fulls:
            parts.append(f"## {engine}: every figure\n")
            for result in fulls:
                parts.append(f"### {result['size']}\n\n{table(result)}\n")
    if scale:
        from bench.pg_scale import table as scale_table

        # Every run, smallest sizes first (one file per command: 100k and 1m in one, 10m in
        # another), so `self` / `tree` can be followed from 100k to 10m.
        parts.append(
            "## PostgreSQL past one server: a standby, the partitioned layout\n\n"
            + "\n\n".join(scale_table(result) for result in scale)
            + "\n\nWhat these figures predict at 100m and 1b messages: "
            "[NOTES.md](NOTES.md#what-this-predicts-at-100m-and-1b-messages).\n"
        )
    return _without_history("\n".join(parts))


def _filters_sections(results_dir: Path, level: str) -> list[str]:
    """The newest ``filters`` grid of each engine and size, under a ``level`` heading."""
    filtered = [
        (engine, result)
        for engine, prefix, _ in ENGINES
        for size in SIZES
        if (result := _latest(f"latest-{prefix}{size}-filters.json", results_dir))
    ]
    if not filtered:
        return []
    parts = [
        f'{level} Filters\n\nA filtered search (`role: "user"`, a 7-day `since` span, '
        '`order: "recent"`) against the same search unfiltered, interleaved query by '
        "query (`bench.run --only filters`): p50 ms, and filtered ÷ unfiltered at p50 / "
        "p95, goal ≤ 1.5× both.\n"
    ]
    for engine, result in filtered:
        parts.append(f"{level}# {engine} {result['size']}\n\n{filters_table(result)}\n")
    return parts


FILTERS_INTRO = """# Benchmarks: what a filter costs

<!-- Generated by `python -m bench.table --docs` from bench/results/latest-*.json: do not edit. -->

`sessions_search` takes filters (`role`, `since` / `until`, `order: "recent"`, see
[tools.md](tools.md)). A filter must not turn a fast search into a slow one: the goal is that a
filtered search costs at most 1.5× the same search without the filter, at the 50th and the
95th percentile, for every caller's visibility and every query class, on both engines. Each
grid below comes from `python -m bench.run --size 100k --only filters` (add `--backend
postgresql` for PostgreSQL): the filtered and the unfiltered search are interleaved query by
query on the same store, so a busy machine slows both alike; the load average is under each
grid. Cells over the goal are marked **no**; [performance.md](performance.md) explains the
paths a filter takes, and every other figure (peers, writes, sizes, scale) is in
[bench/RESULTS.md](../bench/RESULTS.md).
"""


def filters_page(results_dir: Path = RESULTS) -> str:
    """docs/benchmarks.md: the filter grids of both engines."""
    sections = _filters_sections(results_dir, "##") or ["No filters run yet.\n"]
    return _without_history("\n".join([FILTERS_INTRO, *sections]))


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
        filters_out = Path(args[1]) if len(args) > 1 else FILTERS_PAGE
        out.write_text(docs_page(), encoding="utf-8")
        filters_out.write_text(filters_page(), encoding="utf-8")
        print(f"wrote {out} and {filters_out}", file=sys.stderr)
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
