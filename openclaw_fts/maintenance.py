"""Forced re-indexing and index optimisation (``store.rebuild()``, ``store.optimize()``, the
``rebuild`` / ``optimize`` commands).

Invariant: :func:`mark_for_rebuild` leaves every chosen session pending (hidden from search,
never stale) with its derived columns recomputed from its stored JSON, so the reconciler that
runs next re-indexes it from the transcript alone — whatever was written behind the plugin's
back. Both functions run in one write transaction each; neither deletes a transcript row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy import Engine

from .engine import write_engine
from .index.base import backend

log = logging.getLogger(__name__)


def mark_for_rebuild(engine: Engine, keys: Iterable[str] | None = None) -> list[str]:
    """Recompute the derived columns of the sessions named by ``keys`` (session keys or ids;
    None: every session, and the backend also rebuilds its whole index from the content table)
    and mark them for re-indexing. Returns their session ids."""
    with write_engine(engine).begin() as conn:
        found = backend(conn)
        if keys is None:
            # First, before this transaction locks any row: on PostgreSQL it waits for the
            # writers of index rows to finish (the impact lists' lock), and a writer waiting
            # for a row this transaction had locked would never finish.
            found.rebuild_all(conn)
        sids = found.session_ids(conn, None if keys is None else list(keys))
        rederived = sum(found.rederive(conn, sid) for sid in sids)
        found.mark_dirty(conn, sids)
    log.info("rebuild: %d sessions marked, %d event rows re-derived", len(sids), rederived)
    return sids


def optimize(engine: Engine) -> None:
    """Merge the index's segments (FTS5) or vacuum it (faster queries after many small
    writes)."""
    with write_engine(engine).begin() as conn:
        backend(conn).optimize(conn)
    log.info("optimize: index merged")
