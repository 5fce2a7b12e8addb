"""The store's write path: append events with Core statements, index them in the same transaction.

Invariant: does exactly what the flush hooks do for ORM writes — the same validation
(``hooks.validate_event``), the same ``seq`` rule (next after ``openclaw_sessions.last_seq``), the
same derived columns (``transcript.derived_columns``) and the same indexing step
(``indexer.on_appended``) — without building ORM objects, so a facade append costs a handful of
statements however many events it carries. Everything runs on the caller's connection and
transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from . import indexer, transcript
from .errors import InvalidEventError, UnknownSessionError, quoted
from .hooks import EVENT_TEXT_COLUMNS, MAX_SEQ, distinct_event_ids, serialise_event
from .index.base import writer as index_writer
from .tokens import is_valid_unicode

#: The text columns of an event row besides its JSON (which escapes every control character).
TEXT_COLUMNS = ("session_id", *EVENT_TEXT_COLUMNS)


def append_events(
    conn: Connection, session_id: str, events: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Append ``events`` to a session on ``conn``; returns their seqs. Raises on bad input."""
    if not isinstance(session_id, str) or not is_valid_unicode(session_id):
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    checked = [(e, serialise_event(e)) for e in events]
    if not checked:
        return []
    backend = index_writer(conn)
    if backend.unstorable([session_id]) is not None:
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")  # none can hold it
    backend.lock_session(conn, session_id)
    context = indexer.read_context(conn, session_id)
    if context is None:
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    distinct_event_ids(session_id, [e for e, _ in checked])
    seq = context.last_seq
    if seq + len(checked) > MAX_SEQ:
        raise InvalidEventError(f"seq would pass {MAX_SEQ}, the largest accepted")
    rows = []
    appended = []
    for event, dumped in checked:
        seq += 1
        node = transcript.tree_node(seq, event)
        columns = transcript.derived_columns(seq, event, node)
        rows.append(dict(columns, session_id=session_id, seq=seq, event=dumped))
        appended.append(indexer.Appended(seq, event, node))
    reason = backend.unstorable(row[c] for row in rows for c in TEXT_COLUMNS)
    if reason is not None:
        raise InvalidEventError(f"cannot store an event of {quoted(session_id)}: {reason}")
    backend.insert_events(conn, rows, seq)  # a taken event id: IntegrityError
    indexer.on_appended(conn, session_id, appended, context)
    return [a.seq for a in appended]
