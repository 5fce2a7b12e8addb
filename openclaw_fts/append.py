"""The one append path: numbering, deriving and writing appended events, then indexing them.

Invariant: every event appended to a stored session — through an ORM flush (``hooks``),
``TranscriptStore.append`` / ``append_many`` or a bulk ORM insert — is numbered by
:func:`number_events` (the ``seq`` rule: next after ``openclaw_sessions.last_seq`` unless the
host gave one that is higher; ids distinct within the append; at most
:data:`~openclaw_fts.validation.MAX_SEQ`) with the derived columns of
``transcript.derived_columns``, checked against what the engine can store
(:func:`check_storable`), and indexed by ``indexer.on_appended`` in the same transaction. The
ORM flush lets SQLAlchemy's unit of work emit the INSERTs of the objects it numbered here;
:func:`append_events` writes rows with Core statements (a handful per append, however many
events), raising ``openclaw_sessions.last_seq`` in the same call. Everything runs on the
caller's connection and transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from . import indexer, transcript
from .errors import DuplicateEventError, InvalidEventError, UnknownSessionError, quoted
from .index.base import Writer, writer
from .tokens import is_valid_unicode
from .validation import EVENT_TEXT_COLUMNS, MAX_SEQ, distinct_event_ids, serialise_event

#: The text columns of an event row besides its JSON (which escapes every control character).
TEXT_COLUMNS = ("session_id", *EVENT_TEXT_COLUMNS)


def number_events(
    session_id: str,
    last_seq: int,
    events: Sequence[Mapping[str, Any]],
    seqs: Sequence[int | None] | None = None,
) -> list[tuple[indexer.Appended, dict[str, Any]]]:
    """Number ``events`` (already validated, in append order) after ``last_seq``: each gets
    ``seqs[i]`` when the host gave one (it must be above the previous seq) or the next seq;
    returns each as :class:`indexer.Appended` with its derived columns. Raises on two events
    with one id, a seq already taken, or a seq past :data:`MAX_SEQ`."""
    distinct_event_ids(session_id, events)
    numbered = []
    seq = last_seq
    for i, event in enumerate(events):
        given = seqs[i] if seqs is not None else None
        if given is None:
            seq += 1
        elif given <= seq:
            raise DuplicateEventError(
                f"seq {given} of session {quoted(session_id)} is already taken"
            )
        else:
            seq = given
        if seq > MAX_SEQ:
            raise InvalidEventError(f"seq would pass {MAX_SEQ}, the largest accepted")
        node = transcript.tree_node(seq, event)
        columns = transcript.derived_columns(seq, event, node)
        numbered.append((indexer.Appended(seq, event, node), columns))
    return numbered


def check_storable(backend: Writer, session_id: str, values: Iterable[object]) -> None:
    """Raise :class:`InvalidEventError` when the engine cannot store one of an append's text
    values (``TEXT_COLUMNS`` of its rows)."""
    reason = backend.unstorable(values)
    if reason is not None:
        raise InvalidEventError(f"cannot store an event of {quoted(session_id)}: {reason}")


def append_events(
    conn: Connection, session_id: str, events: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Append ``events`` to a session on ``conn``; returns their seqs. Raises on bad input."""
    if not isinstance(session_id, str) or not is_valid_unicode(session_id):
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    dumped = [serialise_event(e) for e in events]
    if not dumped:
        return []
    backend = writer(conn)
    if backend.unstorable([session_id]) is not None:
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")  # none can hold it
    context = backend.locked_context(conn, session_id)
    if context is None:
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    numbered = number_events(session_id, context.last_seq, events)
    rows = [
        dict(columns, session_id=session_id, seq=item.seq, event=text)
        for (item, columns), text in zip(numbered, dumped, strict=True)
    ]
    check_storable(backend, session_id, (row[c] for row in rows for c in TEXT_COLUMNS))
    appended = [item for item, _ in numbered]
    backend.insert_events(conn, rows, appended[-1].seq)  # a taken event id: IntegrityError
    indexer.on_appended(conn, session_id, appended, context)
    return [a.seq for a in appended]
