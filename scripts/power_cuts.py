"""Soak: many power cuts under an SQLite store at both durabilities; prints the figures.

Usage (root, with fuse3 and the ``faults`` extra installed):

    .venv/bin/python scripts/power_cuts.py [--cuts 200] [--seed 1]

Each cut is tests/powercut.py's round (a writer of appends, host ORM commits and reconciles,
SIGKILLed after a random number of acknowledged commits, then everything not fsynced dropped
and the last unsynced write of each file torn); the line per durability gives the cuts, the
commits acknowledged, how many were lost (and the most in one cut), how many were half
applied, and how the integrity and index checks came out. Prints figures, never fails on them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lazyfs import unavailable_reason
from powercut import run_cuts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        sys.exit(f"power_cuts: {reason}")
    for durability in ("normal", "full"):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="openclaw-fts-powercut-") as root:
            figures = run_cuts(Path(root), durability, args.cuts, args.seed)
        print(f"{figures.line()} ({time.monotonic() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
