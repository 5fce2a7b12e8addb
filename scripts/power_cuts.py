"""Soak: many power cuts under an SQLite store at both durabilities, or under a PostgreSQL
server; prints the figures.

Usage (root, with fuse3 and the ``faults`` extra installed; PostgreSQL's server binaries and
a ``postgres`` system user for the second):

    .venv/bin/python scripts/power_cuts.py [--cuts 200] [--seed 1]
    .venv/bin/python scripts/power_cuts.py --engine postgresql [--cuts 200] [--seed 1]

Each cut is tests/powercut.py's round (a writer of appends, host ORM commits and reconciles,
SIGKILLed after a random number of acknowledged commits, then everything not fsynced dropped
and the last unsynced write of each file torn); the line per durability gives the cuts, the
commits acknowledged, how many were lost (and the most in one cut), how many were half
applied, and how the integrity and index checks came out. With ``--engine postgresql`` each
cut is tests/pgpowercut.py's round (the server's whole data directory on the file system, a
writer of appends, host ORM commits, ``import_dir``, reconciles and ``optimize()``, every
server process killed at a random moment, the power cut, the server restarted): one line per
cut with the running figures (``--progress``) and the final line. Prints figures, never fails
on them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lazyfs import unavailable_reason
from pgpowercut import run_cuts as run_pg_cuts
from pgserver import unavailable_reason as pg_unavailable_reason
from powercut import run_cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--progress", action="store_true", help="a line after every cut")
    parser.add_argument(
        "--moment",
        choices=("time", "writes"),
        default="time",
        help="postgresql: cut at a random time, or shortly after a random write began",
    )
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is None and args.engine == "postgresql":
        reason = pg_unavailable_reason()
    if reason is not None:
        sys.exit(f"power_cuts: {reason}")
    if args.engine == "postgresql":
        started = time.monotonic()
        figures = run_pg_cuts(args.cuts, args.seed, progress=args.progress, moment=args.moment)
        print(f"{figures.line()} ({time.monotonic() - started:.0f} s)", flush=True)
        for report in figures.unclean_at_once:
            print(f"check not clean at once: {report}")
        for half in sorted(figures.half):
            print(f"half-applied: {half}")
        return
    for durability in ("normal", "full"):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="openclaw-fts-powercut-") as root:
            figures = run_cuts(Path(root), durability, args.cuts, args.seed)
        print(f"{figures.line()} ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
