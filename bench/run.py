"""The benchmark command: every figure of the plugin next to a raw baseline in the same run.

``python -m bench.run --size 10k`` (or ``python bench/run.py --size 10k``); ``--only search`` (or
a comma-separated list) runs some figures; ``--backend postgresql`` runs them on PostgreSQL.
Prints a table (figure / plugin / baseline / ratio / peer / ratio / goal / met?; the peer
columns are the search rows' other baselines) and writes
``bench/results/<size>-<timestamp>.json`` and ``bench/results/latest-<size>.json``. The plugin's
database is written as a host writes it (``--ingest orm``, the default; ``import``: ``import_dir``,
``append``: ``append_many``) and searched as written; ``--settle`` is the run that calls
``optimize()`` first, labelled ``-settled``. A benchmark
reports; it never fails on timing (exit 0 unless something crashes). See ``bench/README.md``
for what each figure means.

Invariant: the command only parses arguments and picks the backend's class
(:class:`bench.core.Bench` or :class:`bench.pg_run.PgBench`); nothing imports it back.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # ``python bench/run.py``: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.core import FIGURES, INGESTS, Bench
from bench.corpus import ID_SHARE, parse_size


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="10k", help="10k (CI), 100k, 1m, or a number of events")
    parser.add_argument(
        "--only",
        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
        default=None,
        help=f"comma-separated figures: {', '.join(FIGURES)}",
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="sqlite (default: the plugin vs plain sqlite3) or postgresql (the plugin vs raw "
        "psycopg; bench/pg_run.py)",
    )
    parser.add_argument(
        "--pg-url",
        default=None,
        help="postgresql+psycopg:// URL of a server to bench on (a database the bench may "
        "create databases from); default: a throwaway server (tests/pgserver.py)",
    )
    parser.add_argument(
        "--ingest",
        choices=INGESTS,
        default="orm",
        help="how the plugin's database is written: orm (default: a host's ORM session with "
        "the plugin's hooks), import (import_dir + reconcile), append (append_many)",
    )
    parser.add_argument(
        "--settle",
        action="store_true",
        help="the settled run: optimize() after the ingest, before any search (results "
        "labelled -settled); default: searched as written, as a host gets it",
    )
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--sessions", type=int, default=None, help="override the session count")
    parser.add_argument(
        "--id-share",
        type=float,
        default=ID_SHARE,
        help=f"share of user messages carrying an identifier (default {ID_SHARE}; 0: the "
        "corpus without identifiers of earlier runs)",
    )
    parser.add_argument("--tmpdir", default=None, help="where the databases go (default: system)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary databases")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the plugin calls into bench/results/"
    )
    args = parser.parse_args(argv)
    figures = FIGURES
    if args.backend == "postgresql":
        from bench.pg_run import PG_FIGURES

        figures = PG_FIGURES
    if args.only:
        unknown = [f for f in args.only if f not in figures]
        if unknown:
            parser.error(
                f"unknown figure(s) {', '.join(unknown)}; choose from {', '.join(figures)}"
            )
    return args


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # run the finally blocks: partial results, temp dir removed


#: Events above which a PostgreSQL run is the scale benchmark (``bench.pg_scale``: rows
#: computed by the plugin's functions and bulk-loaded with COPY, then one server, the
#: partitioned layout and a standby searched side by side): a live ingest of 10m events
#: through the plugin alone, as this benchmark does, would take hours on a 2-core machine.
PG_SCALE_ABOVE_EVENTS = 1_000_000


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.backend == "postgresql" and parse_size(args.size) > PG_SCALE_ABOVE_EVENTS:
        from bench import pg_scale

        print(
            f"--size {args.size} on PostgreSQL is the scale benchmark: "
            f"python -m bench.pg_scale --sizes {args.size} (bench/README.md)",
            flush=True,
        )
        return pg_scale.main(["--sizes", args.size])
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    tmp = Path(tempfile.mkdtemp(prefix=f"openclaw-bench-{args.size}-", dir=args.tmpdir))
    bench: Bench
    if args.backend == "postgresql":
        from bench.pg_run import PgBench

        bench = PgBench(args, tmp)
    else:
        bench = Bench(args, tmp)
    bench.log(
        f"size {args.size}: {bench.corpus.n_events:,} events in {len(bench.corpus.sessions):,} "
        f"sessions; databases in {tmp}"
    )
    try:
        bench.run()
    finally:
        bench.cleanup()
        if bench.rows:
            path = bench.write()
            print(bench.table())
            if bench.warnings:
                print("\nwarnings:\n" + "\n".join(f"  {w}" for w in bench.warnings))
            print(f"\nresults: {path}")
        if args.keep:
            bench.log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
