"""Forced re-indexing and index optimisation (``store.rebuild()``, ``store.optimize()``, the
``rebuild`` / ``optimize`` commands).

Invariant: :func:`mark_for_rebuild` leaves every chosen session pending (hidden from search,
never stale) with its derived columns recomputed from its stored JSON, so the reconciler that
runs next re-indexes it from the transcript alone — whatever was written behind the plugin's
back. Both functions run in one write transaction each; neither deletes a transcript row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence

from sqlalchemy import Engine, text

from . import transcript
from .engine import writer
from .index import sqlite as fts

log = logging.getLogger(__name__)

#: Event rows read per fetch while recomputing derived columns (bounds memory per session).
REDERIVE_FETCH_ROWS = 1_000
_DERIVED = ("event_id", "parent_id", "type", "role", "target_id", "side", "timestamp_ms")


def _session_ids(engine: Engine, keys: Sequence[str] | None) -> list[str]:
    with engine.connect() as conn:
        if keys is None:
            return [r[0] for r in conn.execute(text("SELECT session_id FROM openclaw_sessions"))]
        found: list[str] = []
        for chunk, marks in fts.in_lists(list(keys)):
            found.extend(
                r[0]
                for r in fts.cursor(conn).execute(
                    f"SELECT session_id FROM openclaw_sessions WHERE session_key IN ({marks}) "
                    f"OR session_id IN ({marks}) ORDER BY session_id",
                    [*chunk, *chunk],
                )
            )
        return sorted(set(found))


def mark_for_rebuild(engine: Engine, keys: Iterable[str] | None = None) -> list[str]:
    """Recompute the derived columns of the sessions named by ``keys`` (session keys or ids;
    None: every session, and FTS5 rebuilds its index from the content table) and mark them for
    re-indexing. Returns their session ids."""
    sids = _session_ids(engine, None if keys is None else list(keys))
    rederived = 0
    with writer(engine).begin() as conn:
        cur = fts.cursor(conn)
        for sid in sids:
            updates = []
            rows = cur.execute(
                f"SELECT seq, event, {', '.join(_DERIVED)} FROM transcript_events "
                "WHERE session_id = ? ORDER BY seq",
                (sid,),
            )
            while batch := rows.fetchmany(REDERIVE_FETCH_ROWS):
                for seq, raw, *stored in batch:
                    derived = transcript.derived_columns(seq, json.loads(raw))
                    fresh = [derived[c] for c in _DERIVED]
                    fresh[_DERIVED.index("side")] = int(bool(fresh[_DERIVED.index("side")]))
                    if fresh != [*stored[:5], int(bool(stored[5])), stored[6]]:
                        updates.append((*fresh, sid, seq))
            if updates:
                fts.cursor(conn).executemany(
                    f"UPDATE transcript_events SET {', '.join(f'{c} = ?' for c in _DERIVED)} "
                    "WHERE session_id = ? AND seq = ?",
                    updates,
                )
                rederived += len(updates)
            cur.execute(
                "UPDATE openclaw_index_state SET needs_rebuild = 1, generation = generation + 1 "
                "WHERE session_id = ?",
                (sid,),
            )
        if keys is None:
            # Every session: FTS5 also re-reads its whole index from the content table.
            cur.execute(f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}) VALUES ('rebuild')")
    log.info("rebuild: %d sessions marked, %d event rows re-derived", len(sids), rederived)
    return sids


def optimize(engine: Engine) -> None:
    """Merge the FTS5 index's segments into one (faster queries after many small writes)."""
    with writer(engine).begin() as conn:
        fts.cursor(conn).execute(
            f"INSERT INTO {fts.FTS_TABLE}({fts.FTS_TABLE}) VALUES ('optimize')"
        )
    log.info("optimize: FTS5 segments merged")
