"""Print a benchmark result file as the Markdown table the README carries.

Usage: ``python -m bench.table [--search [--cpu]] [bench/results/latest-1m.json]``. Reads only
the JSON that ``bench.run`` wrote, so the README tables are regenerated, never typed by hand. The
full table gains sqlite-utils columns when the run measured that second baseline; ``--search``
prints only the search rows, one line per query class and one column per visibility: p50 of
plugin / raw SQL / sqlite-utils and the two ratios, in wall time, or with ``--cpu`` in CPU time
of the same calls (steadier when the machine is loaded).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).parent / "results" / "latest-1m.json"


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


def title(result: dict[str, Any], what: str) -> str:
    corpus = result["corpus"]
    return (
        f"{what} ({result['size']}, {corpus['events']:,} events, {corpus['sessions']:,} sessions)"
    )


def footer(result: dict[str, Any]) -> str:
    meta = result["meta"]
    peer = f", sqlite-utils {meta['sqlite_utils']}" if meta.get("sqlite_utils") else ""
    load = meta.get("load1") or {}
    busy = ""
    if load:
        busy = f", load average {load['mean']:.1f} (max {load['max']:.1f}) during the run"
    return (
        f"Run {result['createdAt']} at commit {meta.get('commit', '?')}: Python {meta['python']}, "
        f"SQLite {meta['sqlite']}, SQLAlchemy {meta['sqlalchemy']}{peer}, "
        f"{meta['cpus']} CPUs{busy}."
    )


def table(result: dict[str, Any]) -> str:
    peer = has_peer(result)
    head = f"| {title(result, 'figure')} | unit | plugin | baseline | ratio p50 | ratio p95 |"
    rule = "|---|---|---|---|---|---|"
    if peer:
        head += " sqlite-utils | ratio s-u p50 | ratio s-u p95 |"
        rule += "---|---|---|"
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


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--search", "--cpu"}
    if unknown:
        print(f"unknown option(s) {', '.join(sorted(unknown))}", file=sys.stderr)
        print(__doc__, file=sys.stderr)
        return 2
    args = [a for a in argv if a not in flags]
    path = Path(args[0]) if args else DEFAULT
    result = json.loads(path.read_text(encoding="utf-8"))
    if "--search" in flags or "--cpu" in flags:
        print(search_table(result, cpu="--cpu" in flags))
    else:
        print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
