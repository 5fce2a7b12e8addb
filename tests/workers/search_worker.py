"""Concurrency reader: run searches in a loop until STOP_FILE exists (or MAX_SECONDS pass).

Usage: search_worker.py DB_PATH STOP_FILE MAX_SECONDS [BACKGROUND]

``TranscriptStore(url)`` with default settings; BACKGROUND=0 turns off the background
reconciler a search starts when it sees pending sessions (default 1: on).
Every answer must be a result dict (never an error). Prints one JSON line at the end:
``{"searches", "hits", "indexing"}``.
"""

from __future__ import annotations

import os
import sys
import time

from _common import WORDS

from openclaw_fts import Caller, TranscriptStore

QUERIES = (*WORDS, "tok1x5", "tok2x*", '"deploy staging"', "deploy OR invoice", "明天", "x:y (")


def main() -> None:
    db, stop_file, max_seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    background = sys.argv[4] != "0" if len(sys.argv) > 4 else True
    store = TranscriptStore(f"sqlite:///{db}", background=background)
    callers = (
        Caller("agent:main:main", visibility="all"),
        Caller("agent:main:shared-0", visibility="tree"),
    )
    searches = hits = indexing = 0
    deadline = time.monotonic() + max_seconds
    try:
        while not os.path.exists(stop_file) and time.monotonic() < deadline:
            caller = callers[searches % len(callers)]
            query = QUERIES[searches % len(QUERIES)]
            out = store.search(caller, query, limit=25)
            if "results" not in out:
                raise AssertionError(f"search {query!r} answered {out!r}")
            for hit in out["results"]:
                if not hit["messageId"]:
                    raise AssertionError(f"hit without a message id: {hit!r}")
            hits += len(out["results"])
            indexing += bool(out.get("indexing"))
            searches += 1
            store.index_status()
    finally:
        store.close()
    print(f'{{"searches": {searches}, "hits": {hits}, "indexing": {indexing}}}', flush=True)


if __name__ == "__main__":
    main()
