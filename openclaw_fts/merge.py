"""The segment merge that runs in the background (SQLite FTS5; nothing to do on PostgreSQL).

Invariant: :func:`merge_index` runs bounded steps (:data:`~openclaw_fts.index.sqlite.fts.
MERGE_STEP_PAGES` pages each), each its own short write transaction, so a writer waits for one
step at most and a stop or a crash loses at most the step in flight. Given its store's last
append, it takes a step only after :data:`MERGE_IDLE_SECONDS` without one, so a burst of
appends never shares the write lock or the CPU with it. A step rewrites segments of FTS5's
index and nothing else: what a search finds, and every table the plugin reads, stay the same
(bench/NOTES.md, "FTS5's segments").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine

from .engine import write_engine
from .index.base import READ_ONLY, backend_of

log = logging.getLogger(__name__)

#: A store looks at its index's segments after this many of its appends (one read of FTS5's
#: structure record) and starts the background merge when :func:`needs_merge` says so.
MERGE_CHECK_WRITES = 16
#: Seconds without an append of its store after which the background merge takes its next
#: step: an agent host writes in bursts (a turn's messages) with pauses between them, and the
#: merge runs in the pauses.
MERGE_IDLE_SECONDS = 0.5


def needs_merge(engine: Engine) -> bool:
    """Whether the index is split into enough segments (SQLite FTS5) that merging them would
    speed search up; never on PostgreSQL, which is answered without a connection."""
    segments = backend_of(engine).segments
    if segments is None:
        return False
    with engine.connect().execution_options(**{READ_ONLY: True}) as conn:
        return segments.needs_merge(conn)  # a read: never the write lock


def merge_index(
    engine: Engine,
    stop: threading.Event | None = None,
    last_write: Callable[[], float] | None = None,
) -> int:
    """Merge the index's segments step by step until nothing is left to merge or ``stop`` is
    set; returns the steps that merged something. With ``last_write`` (the
    :func:`time.monotonic` of the store's latest append), each step waits until that is
    :data:`MERGE_IDLE_SECONDS` old."""
    segments = backend_of(engine).segments
    if segments is None:
        return 0
    engine = write_engine(engine)
    pause = stop or threading.Event()
    steps = 0
    while not pause.is_set():
        quiet = MERGE_IDLE_SECONDS if last_write is None else time.monotonic() - last_write()
        if quiet < MERGE_IDLE_SECONDS:
            pause.wait(MERGE_IDLE_SECONDS - quiet)
            continue
        with engine.begin() as conn:
            if not segments.merge_step(conn):
                break
        steps += 1
    if steps:
        log.info("merge: %d steps", steps)
    return steps


def merge_if_needed(
    engine: Engine,
    stop: threading.Event | None = None,
    last_write: Callable[[], float] | None = None,
) -> int:
    """:func:`merge_index` when :func:`needs_merge` says so (a read, without the write lock),
    else nothing: what a job that has just split the index runs after it."""
    return merge_index(engine, stop, last_write) if needs_merge(engine) else 0
