"""The one append path: validating, numbering, deriving and writing appended events, then
indexing them.

Invariant: every event appended to a stored session — through an ORM flush (``hooks``),
``TranscriptStore.append`` / ``append_many`` or a bulk ORM insert — goes through
:func:`plan_append` (validated; numbered by :func:`number_events`: next after
``openclaw_sessions.last_seq``, read under the session's append lock, unless the host gave a
higher seq; ids distinct within the append; at most :data:`~openclaw_fts.validation.MAX_SEQ`;
the derived columns of ``transcript.derived_columns``; checked against what the engine can
store) and then :func:`write_append` (the backend's ``Writer.insert_events``, which raises
``last_seq`` in the same call, then ``indexer.on_appended``; or, for a plain extension of a
clean session, ``Writer.append_and_extend``, which writes both), in one transaction on the
caller's connection. :func:`append_events` runs the two back to back; an ORM flush plans in
``before_flush`` (the objects become persistent there, so SQLAlchemy's unit of work emits no
INSERT of its own) and writes in ``after_flush``, inside the flush, so a failed write rolls
the flush back as SQLAlchemy's own would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from . import indexer, transcript
from .errors import DuplicateEventError, InvalidEventError, UnknownSessionError, quoted
from .index.base import Writer, writer
from .rows import Extension, SessionContext
from .tokens import is_valid_unicode
from .validation import EVENT_TEXT_COLUMNS, MAX_SEQ, distinct_event_ids, serialise_event

#: The text columns of an event row besides its JSON (which escapes every control character).
TEXT_COLUMNS = ("session_id", *EVENT_TEXT_COLUMNS)


def check_seqs(seqs: Iterable[object]) -> None:
    """Raise :class:`InvalidEventError` unless every seq a host gave (None: not given) is an
    integer from 0 to :data:`MAX_SEQ`."""
    for given in seqs:
        if given is not None and (
            isinstance(given, bool) or not isinstance(given, int) or not 0 <= given <= MAX_SEQ
        ):
            raise InvalidEventError(f"seq must be an integer from 0 to {MAX_SEQ}")


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
    check_seqs(seqs or ())
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


@dataclass(slots=True)
class PlannedAppend:
    """One session's append, validated and numbered, not written yet (:func:`plan_append`)."""

    session_id: str
    #: The ``transcript_events`` rows to insert, in seq order (``event`` as its stored JSON).
    rows: list[dict[str, Any]]
    #: The same events as the indexer takes them.
    appended: list[indexer.Appended]
    #: The session as read under its append lock; None for a session whose row the same ORM
    #: flush writes (read when the append is written, after it).
    context: SessionContext | None


def plan_append(
    conn: Connection,
    session_id: str,
    events: Sequence[Mapping[str, Any]],
    seqs: Sequence[int | None] | None = None,
    *,
    created: bool = False,
) -> PlannedAppend:
    """Validate ``events`` (in append order; ``seqs[i]``: a seq the host gave, or None) and
    number them after the session's ``last_seq``; writes nothing. Takes the session's append
    lock and reads its ``last_seq`` on ``conn`` — unless ``created``: the session's row is
    written later in the same ORM flush, so it has no event yet and nobody else can see it.
    Raises on bad input, an unknown session, two events with one id or a taken seq."""
    if not isinstance(session_id, str) or not is_valid_unicode(session_id):
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    dumped = [serialise_event(e) for e in events]
    backend = writer(conn)
    if backend.unstorable([session_id]) is not None:
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")  # none can hold it
    context: SessionContext | None = None
    if not created:
        context = backend.locked_context(conn, session_id)
        if context is None:
            raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    numbered = number_events(session_id, context.last_seq if context else -1, events, seqs)
    rows = [
        dict(columns, session_id=session_id, seq=item.seq, event=text)
        for (item, columns), text in zip(numbered, dumped, strict=True)
    ]
    check_storable(backend, session_id, (row[c] for row in rows for c in TEXT_COLUMNS))
    return PlannedAppend(session_id, rows, [item for item, _ in numbered], context)


def write_append(conn: Connection, plan: PlannedAppend, *, index: bool = True) -> None:
    """Insert a planned append's rows, raise the session's ``last_seq`` and (``index``) index
    them, in the transaction that planned it. A taken event id raises
    ``sqlalchemy.exc.IntegrityError``.

    A plain extension of a clean session, decided before the write without reading anything
    (``indexer.extension``), is written with its index rows by the backend's
    ``append_and_extend`` (one statement on PostgreSQL); anything else is written, then
    indexed by ``indexer.on_appended`` or repaired, as before."""
    if not plan.rows:
        return
    backend = writer(conn)
    last_seq = plan.appended[-1].seq
    found = (
        indexer.extension(None, plan.session_id, plan.appended, plan.context)
        if index and plan.context is not None
        else None
    )
    if isinstance(found, Extension):
        backend.append_and_extend(conn, plan.rows, last_seq, found)
        return
    backend.insert_events(conn, plan.rows, last_seq)
    if isinstance(found, indexer.Repair):
        indexer.repair_or_mark(conn, plan.session_id, was_clean=found.was_clean)
    elif index:
        indexer.on_appended(conn, plan.session_id, plan.appended, plan.context)


def append_events(
    conn: Connection, session_id: str, events: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Append ``events`` to a session on ``conn`` (:func:`plan_append`, then
    :func:`write_append`); returns their seqs. Raises on bad input."""
    plan = plan_append(conn, session_id, events)
    write_append(conn, plan)
    return [a.seq for a in plan.appended]
