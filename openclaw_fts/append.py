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
the flush back as SQLAlchemy's own would. The one exception to the locked read:
:func:`append_in_one_statement` numbers and indexes from what an :class:`AppendMemo`
remembers, in ONE statement (``Writer.append_guarded``) that takes the lock and writes only
if the session still is what was remembered — the same writes the locked read would have
led to, or none; an ORM flush does the same (:func:`append_known`, in ``before_flush``) for
a session its engine's :func:`engine_memo` knows.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from . import indexer, transcript
from .errors import DuplicateEventError, InvalidEventError, UnknownSessionError, quoted
from .index.base import Writer, backend, writer
from .rows import Extension, SessionContext, StateRow
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
    known: SessionContext | None = None,
) -> PlannedAppend:
    """Validate ``events`` (in append order; ``seqs[i]``: a seq the host gave, or None) and
    number them after the session's ``last_seq``; writes nothing. Takes the session's append
    lock and reads its ``last_seq`` on ``conn`` — unless ``created``: the session's row is
    written later in the same ORM flush, so it has no event yet and nobody else can see it.
    ``known``: the session as the caller expects it, used instead of the locked read (only
    for :func:`append_in_one_statement`, whose write checks it under the lock).
    Raises on bad input, an unknown session, two events with one id or a taken seq."""
    if not isinstance(session_id, str) or not is_valid_unicode(session_id):
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")
    dumped = [serialise_event(e) for e in events]
    backend = writer(conn)
    if backend.unstorable([session_id]) is not None:
        raise UnknownSessionError(f"unknown session {quoted(session_id)}")  # none can hold it
    context = known
    if not created and context is None:
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


def write_append(conn: Connection, plan: PlannedAppend, *, index: bool = True) -> Extension | None:
    """Insert a planned append's rows, raise the session's ``last_seq`` and (``index``) index
    them, in the transaction that planned it. A taken event id raises
    ``sqlalchemy.exc.IntegrityError``.

    A plain extension of a clean session, decided before the write without reading anything
    (``indexer.extension``), is written with its index rows by the backend's
    ``append_and_extend`` (one statement on PostgreSQL); anything else is written, then
    indexed by ``indexer.on_appended`` or repaired, as before. Returns the extension when it
    was one."""
    if not plan.rows:
        return None
    backend = writer(conn)
    last_seq = plan.appended[-1].seq
    found = (
        indexer.extension(None, plan.session_id, plan.appended, plan.context)
        if index and plan.context is not None
        else None
    )
    if isinstance(found, Extension):
        backend.append_and_extend(conn, plan.rows, last_seq, found)
        return found
    backend.insert_events(conn, plan.rows, last_seq)
    if isinstance(found, indexer.Repair):
        indexer.repair_or_mark(conn, plan.session_id, was_clean=found.was_clean)
    elif index:
        indexer.on_appended(conn, plan.session_id, plan.appended, plan.context)
    return None


def append_events(
    conn: Connection,
    session_id: str,
    events: Sequence[Mapping[str, Any]],
    memo: AppendMemo | None = None,
) -> list[int]:
    """Append ``events`` to a session on ``conn`` (:func:`plan_append`, then
    :func:`write_append`); returns their seqs. Raises on bad input. ``memo``: remembers the
    session as the append leaves it (a plain extension), or forgets it, on an engine that
    has one-statement appends (on another, it stays empty)."""
    plan = plan_append(conn, session_id, events)
    found = write_append(conn, plan)
    if memo is not None and writer(conn).one_statement_appends:
        memo.note(plan, found)
    return [a.seq for a in plan.appended]


def append_in_one_statement(
    engine: Engine, session_id: str, events: Sequence[Mapping[str, Any]], memo: AppendMemo
) -> list[int] | None:
    """Append ``events`` as ONE statement in autocommit, no transaction around it, when the
    engine allows it (``Writer.one_statement_appends``), ``memo`` knows the session and the
    append is a plain extension of it (:func:`append_known`). Returns the seqs, or None when
    nothing was written (the caller then appends in a transaction, :func:`append_events`).
    Raises on bad input, and ``sqlalchemy.exc.IntegrityError`` on a taken event id (nothing
    written)."""
    if memo.get(session_id) is None:
        return None
    with engine.connect() as base:
        found_backend = backend(base)
        if not found_backend.one_statement_appends:
            return None
        conn = base.execution_options(
            **found_backend.connections.snapshot_options(one_statement=True)
        )
        plan = append_known(conn, session_id, events, memo)
    return None if plan is None else [a.seq for a in plan.appended]


def append_known(
    conn: Connection,
    session_id: str,
    events: Sequence[Mapping[str, Any]],
    memo: AppendMemo,
    seqs: Sequence[int | None] | None = None,
) -> PlannedAppend | None:
    """Append ``events`` on ``conn`` (in autocommit, or in the caller's transaction: an ORM flush)
    WITHOUT the locked read, when ``memo`` knows the session and the append is a plain
    extension of it: planned from what ``memo`` knows, written by ``Writer.append_guarded``,
    which checks under the append lock that the session is still what ``memo`` says and
    writes nothing otherwise. Only on an engine with ``Writer.one_statement_appends``, and
    only for events numbered by the plugin (no seq in ``seqs``). Returns the written plan,
    or None when nothing was written (the caller then plans with the locked read,
    :func:`plan_append`). Raises on bad input, and ``sqlalchemy.exc.IntegrityError`` on a
    taken event id.
    """
    known = memo.get(session_id)
    found_backend = writer(conn)
    if (
        known is None
        or not events
        or not found_backend.one_statement_appends
        or any(given is not None for given in seqs or ())
    ):
        return None  # seqs the host gave are checked against the locked last_seq
    try:
        plan = plan_append(conn, session_id, events, known=known)
    except (DuplicateEventError, InvalidEventError):
        return None  # said again, or not, by the locked read's plan
    found = indexer.extension(None, session_id, plan.appended, known)
    if not isinstance(found, Extension):
        return None
    memo.forget(session_id)  # remembered again below, once written
    if not found_backend.append_guarded(conn, plan.rows, plan.appended[-1].seq, found, known):
        return None
    memo.note(plan, found)
    return plan


#: The memo of each engine's ORM appends (:func:`engine_memo`), forgotten with the engine.
_ENGINE_MEMOS: weakref.WeakKeyDictionary[Engine, AppendMemo] = weakref.WeakKeyDictionary()
_ENGINE_MEMOS_LOCK = threading.Lock()


def engine_memo(conn: Connection) -> AppendMemo | None:
    """What the installed ORM sessions on ``conn``'s engine know of the sessions they appended
    to or created (``hooks``: their next append skips the locked read, :func:`append_known`);
    None on an engine without one-statement appends (``Writer.one_statement_appends``), where
    there is nothing to skip. A hint like any :class:`AppendMemo`: a rolled-back flush or
    another writer leaves it stale, and the guarded write then writes nothing."""
    if not writer(conn).one_statement_appends:
        return None
    engine = conn.engine
    with _ENGINE_MEMOS_LOCK:
        memo = _ENGINE_MEMOS.get(engine)
        if memo is None:
            memo = _ENGINE_MEMOS[engine] = AppendMemo()
        return memo


#: Sessions an :class:`AppendMemo` remembers (the most recently appended to).
REMEMBERED_SESSIONS = 4096


class AppendMemo:
    """What one store knows of the sessions it appended to: each one's context as its last
    plain extension left it (``last_seq``, incognito, index state), so its next append can
    skip the locked read (:func:`append_in_one_statement`). Only a hint: the write checks it
    under the lock. Thread-safe; at most :data:`REMEMBERED_SESSIONS`, the least recent
    forgotten first."""

    def __init__(self, size: int = REMEMBERED_SESSIONS) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._known: OrderedDict[str, SessionContext] = OrderedDict()

    def get(self, session_id: str) -> SessionContext | None:
        """What is remembered of ``session_id`` (None: nothing, or not a session id at all —
        :func:`plan_append` refuses it in a transaction)."""
        if not isinstance(session_id, str):
            return None
        with self._lock:
            return self._known.get(session_id)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._known.pop(session_id, None)

    def put(self, session_id: str, context: SessionContext) -> None:
        """Remember ``session_id`` as ``context`` (the most recent)."""
        with self._lock:
            self._known[session_id] = context
            self._known.move_to_end(session_id)
            while len(self._known) > self._size:
                self._known.popitem(last=False)

    def note(self, plan: PlannedAppend, found: Extension | None) -> None:
        """Remember the session as ``plan`` written as ``found`` leaves it (None: not a plain
        extension, forgotten)."""
        context, state = plan.context, plan.context.state if plan.context else None
        if found is None or context is None or state is None or not plan.appended:
            self.forget(plan.session_id)
            return
        after = SessionContext(
            plan.appended[-1].seq,
            context.incognito,
            StateRow(
                state.id,
                found.indexed_seq,
                found.leaf,
                False,
                state.generation + 1,
                state.index_version,
            ),
        )
        self.put(plan.session_id, after)
