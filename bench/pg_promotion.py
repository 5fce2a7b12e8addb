"""What a commit across a promotion boundary costs a writer, before and after revision 0012.

``python -m bench.pg_promotion --reuse DIR`` on a folder ``bench.pg_scale --keep DIR`` left
(its flat database). Revision 0012 bounds the words one commit at a ``PROMOTE_EVERY_ROWS``
boundary tracks (``PROMOTE_MAX_WORDS``, the most frequent first); before it, the commit
tracked every candidate. A host meets many candidates at once after an autovacuum
``ANALYZE`` of a big store (bench/NOTES.md); here they are made by untracking the
``--untrack`` tracked words with the fewest messages (words near the threshold, what such an
``ANALYZE`` names; their lists deleted), the same words in every round.

Each round, at revision 0011 (the database downgraded) and then at the head (upgraded again),
in the same process: the words untracked, then ``append_many`` of 100 events (a new session)
whose index rows cross a boundary, timed around the call, repeated until a commit tracks
nothing (at most ``--commits``), then one more that crosses none. Each line printed: the
revision, the commit's number, its seconds and the words it tracked; a summary per revision
at the end (the longest commit, the commits until every word was tracked, the steady commit
with nothing left to track). Prints numbers, judges nothing.

Invariant: the timed call is the plugin's ``TranscriptStore.append_many`` (opened with
``upgrade=False``: the revision is this script's); the words are untracked with plain SQL
between the timed calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from bench.pg_run import _load_pgserver
from bench.pg_scale import FLAT_DB, KEPT_FILE, LOAD_SETTINGS, Corpus
from openclaw_fts import TranscriptStore, migrate
from openclaw_fts.engine import make_engine
from openclaw_fts.index.impact import IMPACT_TABLE, PROMOTE_EVERY_ROWS, TERMS_TABLE

#: Events of each timed ``append_many`` (as ``bench.pg_scale``'s live ingest).
BATCH_EVENTS = 100
#: The revision before the bound, and the head.
BEFORE = migrate.TIME_ORDER_REVISION


def untrack(engine: Engine, words: list[str]) -> None:
    """Forget ``words``' lists (they become candidates again)."""
    with engine.begin() as conn:
        conn.execute(text(f"DELETE FROM {IMPACT_TABLE} WHERE term = ANY(:w)"), {"w": words})
        conn.execute(text(f"DELETE FROM {TERMS_TABLE} WHERE term = ANY(:w)"), {"w": words})


def tracked(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {TERMS_TABLE}")).scalar_one())


def next_id_below(engine: Engine, cross: bool) -> None:
    """The next ``BATCH_EVENTS`` index rows cross a boundary (``cross``) or none."""
    with engine.begin() as conn:
        last = int(conn.execute(text("SELECT max(id) FROM message_index")).scalar_one())
        boundary = (last // PROMOTE_EVERY_ROWS + 1) * PROMOTE_EVERY_ROWS
        start = boundary - BATCH_EVENTS // 2 if cross else boundary + 1
        conn.execute(text("SELECT setval('message_index_id_seq', :v)"), {"v": start - 1})


def timed_commit(
    url: str, engine: Engine, corpus: Corpus, label: str, cross: bool
) -> tuple[float, int]:
    """Seconds of one ``append_many`` and the words its commit tracked."""
    next_id_below(engine, cross)
    before = tracked(engine)
    with TranscriptStore(url, upgrade=False, background=False) as store:
        store.create_session(label, f"agent:agent0:{label}")
        events = corpus.events(BATCH_EVENTS, prefix="p")
        started = time.perf_counter()
        store.append_many(label, events)
        took = time.perf_counter() - started
    return took, tracked(engine) - before


def one_revision(
    url: str, engine: Engine, corpus: Corpus, words: list[str], revision: str, args: Any
) -> dict[str, Any]:
    untrack(engine, words)
    commits = []
    for n in range(args.commits):
        took, added = timed_commit(url, engine, corpus, f"promo-{revision[:4]}-{time.time()}", True)
        commits.append({"seconds": took, "tracked": added})
        print(json.dumps({"revision": revision, "commit": n + 1, **commits[-1]}), flush=True)
        if not added:
            break
    steady, _ = timed_commit(url, engine, corpus, f"steady-{revision[:4]}-{time.time()}", True)
    plain, _ = timed_commit(url, engine, corpus, f"plain-{revision[:4]}-{time.time()}", False)
    print(json.dumps({"revision": revision, "steady": steady, "noBoundary": plain}), flush=True)
    return {"commits": commits, "steadySeconds": steady, "noBoundarySeconds": plain}


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pg_promotion", description=__doc__)
    parser.add_argument("--reuse", required=True, help="a folder bench.pg_scale --keep left")
    parser.add_argument("--untrack", type=int, default=40, help="tracked words made candidates")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--commits", type=int, default=10, help="most boundary commits a round")
    args = parser.parse_args(argv)
    root = Path(args.reuse).resolve()
    kept = json.loads((root / KEPT_FILE).read_text())
    pgserver = _load_pgserver()
    pgserver.SERVER_SETTINGS.update(LOAD_SETTINGS)
    server = pgserver.PgServer(pgserver.find_bindir())
    server.root = root
    server.start_again()
    runs: dict[str, list[dict[str, Any]]] = {BEFORE: [], "head": []}
    loads = [load()]
    try:
        url = server.url(FLAT_DB)
        engine = make_engine(url)
        corpus = Corpus(int(kept["messages"]), int(kept["seed"]) + 1)
        with engine.connect() as conn:
            words = [
                str(r[0])
                for r in conn.execute(
                    text(f"SELECT term FROM {TERMS_TABLE} ORDER BY docs, term LIMIT :n"),
                    {"n": args.untrack},
                )
            ]
        for _ in range(args.rounds):
            migrate.downgrade(engine, BEFORE)
            runs[BEFORE].append(one_revision(url, engine, corpus, words, BEFORE, args))
            migrate.upgrade(engine)
            runs["head"].append(one_revision(url, engine, corpus, words, "head", args))
            loads.append(load())
        engine.dispose()
    finally:
        server.shutdown("fast")
    print(f"messages {kept['messages']:,}; {len(words)} words untracked each round")
    for name, rounds in runs.items():
        longest = [max(c["seconds"] for c in r["commits"]) for r in rounds]
        needed = [sum(1 for c in r["commits"] if c["tracked"]) for r in rounds]
        print(
            f"{name}: longest commit {statistics.median(longest):.2f}s (each round "
            f"{', '.join(f'{s:.2f}' for s in longest)}), commits tracking words "
            f"{needed}, steady boundary commit "
            f"{statistics.median(r['steadySeconds'] for r in rounds) * 1000:.0f} ms, "
            f"no boundary {statistics.median(r['noBoundarySeconds'] for r in rounds) * 1000:.0f} ms"
        )
    for line in loads:
        print(f"load: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
