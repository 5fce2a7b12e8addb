"""Print a benchmark result file as the Markdown table the README carries.

Usage: ``python -m bench.table [bench/results/latest-1m.json]``. Reads only the JSON that
``bench.run`` wrote, so the README table is regenerated, never typed by hand.
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


def table(result: dict[str, Any]) -> str:
    corpus = result["corpus"]
    title = (
        f"figure ({result['size']}, {corpus['events']:,} events, {corpus['sessions']:,} sessions)"
    )
    lines = [
        f"| {title} | unit | plugin | baseline | ratio p50 | ratio p95 | goal | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['figure']} | {row['unit']} | {number(row['plugin'])} | "
            f"{number(row['baseline'])} | {ratio(row['ratio'])} | {ratio(row['ratio_p95'])} | "
            f"{row['goal']} | {met(row)} |"
        )
    meta = result["meta"]
    lines.append("")
    lines.append(
        f"Run {result['createdAt']} at commit {meta.get('commit', '?')}: Python {meta['python']}, "
        f"SQLite {meta['sqlite']}, SQLAlchemy {meta['sqlalchemy']}, {meta['cpus']} CPUs."
    )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT
    print(table(json.loads(path.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
