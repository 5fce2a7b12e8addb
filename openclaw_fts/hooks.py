"""SQLAlchemy session hooks: mirror appended transcript events into the index on flush.

Invariant: whatever way a host adds :class:`TranscriptEvent` objects to an installed session
(``session.add``, a relationship append, ``TranscriptStore.append``), the flush that writes them
also writes their index rows — or repairs / marks the session — on the same connection, inside
the same transaction (and savepoint). A rollback therefore leaves neither event nor index row.
``seq`` and the derived columns are filled here, before the INSERTs are emitted. A flush that
touches the plugin's objects takes SQLite's write lock before its first read of the plugin's
tables (a transaction that has not written yet is deferred: the host's reads take no lock); a
flush without them does nothing here. With ``configure_engine`` (the default) every engine an
installed session runs on gets :func:`openclaw_fts.engine.configure`, bound or not.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from sqlalchemy import Connection, Engine, Result, event, false, inspect, literal, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction, scoped_session, sessionmaker

from . import indexer, transcript
from .append import TEXT_COLUMNS, append_events, check_storable, number_events
from .caller import agent_id_from_key
from .engine import BUSY_TIMEOUT_MS, configure, is_configured
from .errors import (
    DuplicateEventError,
    InvalidEventError,
    InvalidSessionError,
    UnknownSessionError,
    quoted,
)
from .index.base import backend
from .models import AgentSession, TranscriptEvent
from .rows import EVENT_COLUMNS
from .validation import MAX_EVENT_BYTES as MAX_EVENT_BYTES
from .validation import MAX_EVENT_DEPTH as MAX_EVENT_DEPTH
from .validation import MAX_SEQ as MAX_SEQ
from .validation import (
    SESSION_TEXT_FIELDS,
    distinct_event_ids,
    validate_event,
    validate_session_fields,
)

#: Key under which a flush's work travels from ``before_flush`` to ``after_flush``.
_INFO_KEY = "openclaw_fts.flush"
_INSTALLED_KEY = "_openclaw_fts_installed"
_creation_order = itertools.count()


@dataclass
class _FlushWork:
    new_sessions: list[str] = field(default_factory=list)
    appended: dict[str, list[indexer.Appended]] = field(default_factory=dict)
    rebuild: set[str] = field(default_factory=set)


@event.listens_for(TranscriptEvent, "init")
def _stamp_creation_order(target: TranscriptEvent, args: Any, kwargs: Any) -> None:
    # Append order is creation order: session.new is a set, and seq must follow the host's order.
    target.__dict__["_ocfts_order"] = next(_creation_order)


def fill_derived(obj: TranscriptEvent, seq: int) -> transcript.TreeNode:
    node = transcript.tree_node(seq, obj.event)
    for column, value in transcript.derived_columns(seq, obj.event, node).items():
        setattr(obj, column, value)
    return node


def _session_id_of(session: Session, obj: TranscriptEvent) -> str:
    if obj.session is not None:
        if obj.session.session_id is None:
            raise UnknownSessionError("the event's session has no session_id")
        obj.session_id = obj.session.session_id
    if obj.session_id is None:
        raise UnknownSessionError("a TranscriptEvent needs a session (or session_id)")
    return obj.session_id


_PLUGIN_MODELS = (AgentSession, TranscriptEvent)


def _touches_plugin(session: Session) -> bool:
    return any(
        isinstance(obj, _PLUGIN_MODELS)
        for objs in (session.new, session.dirty, session.deleted)
        for obj in objs
    )


def _before_flush(session: Session, flush_context: UOWTransaction, instances: Any) -> None:
    touched = _touches_plugin(session)
    found = backend(session.connection()) if touched else None
    if found is not None:
        found.begin_write(session.connection())  # before the flush's first read
    work = _FlushWork()
    session.info[_INFO_KEY] = work
    by_session: dict[str, list[TranscriptEvent]] = defaultdict(list)
    new_owners: dict[str, AgentSession] = {}
    with session.no_autoflush:
        for obj in session.new:
            if isinstance(obj, AgentSession):
                fields = {n: getattr(obj, n) for n in SESSION_TEXT_FIELDS}
                validate_session_fields(fields)
                reason = found.unstorable(fields.values()) if found is not None else None
                if reason is not None:
                    raise InvalidSessionError(
                        f"cannot store session {quoted(obj.session_id)}: {reason}"
                    )
                if not obj.agent_id:
                    obj.agent_id = agent_id_from_key(obj.session_key) or "main"
                if obj.last_seq is None:
                    obj.last_seq = -1
                work.new_sessions.append(obj.session_id)
                new_owners[obj.session_id] = obj
            elif isinstance(obj, TranscriptEvent):
                validate_event(obj.event)
                by_session[_session_id_of(session, obj)].append(obj)
        for obj in session.dirty:
            if isinstance(obj, AgentSession) and inspect(obj).attrs.incognito.history.has_changes():
                work.rebuild.add(obj.session_id)
            elif isinstance(obj, TranscriptEvent):
                _edited_event(obj, work)
        for sid, objs in by_session.items():
            owner = new_owners.get(sid) or session.get(AgentSession, sid)
            if owner is None:
                raise UnknownSessionError(f"unknown session {quoted(sid)}")
            _assign_seqs(session, owner, objs, work)
            if found is not None:
                check_storable(found, sid, (getattr(o, c) for o in objs for c in TEXT_COLUMNS))


def _edited_event(obj: TranscriptEvent, work: _FlushWork) -> None:
    """A stored event changed in the ORM (attribute, ``session.merge``): re-derive its columns
    and re-index its session in this flush. Its identity (session, seq) cannot change."""
    attrs = inspect(obj).attrs
    if attrs.session_id.history.has_changes() or attrs.seq.history.has_changes():
        raise InvalidEventError("a stored event's session_id and seq cannot change")
    if not attrs.event.history.has_changes():
        return
    validate_event(obj.event)
    fill_derived(obj, obj.seq)
    work.rebuild.add(obj.session_id)


def _assign_seqs(
    session: Session, owner: AgentSession, objs: list[TranscriptEvent], work: _FlushWork
) -> None:
    sid = owner.session_id
    if inspect(owner).pending:
        last = -1
    else:
        # Read on the flush's own (write-locked) transaction: a host's AgentSession object may
        # be stale (expire_on_commit=False) after another writer appended.
        # FOR UPDATE: serialises appends to one session on PostgreSQL (SQLite renders nothing;
        # its write lock is already held).
        stored = session.execute(
            select(AgentSession.last_seq).where(AgentSession.session_id == sid).with_for_update()
        ).scalar_one_or_none()
        last = stored if stored is not None else -1
    for obj in objs:
        seq = obj.seq
        if seq is not None and (
            isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ
        ):
            raise InvalidEventError(f"seq must be an integer from 0 to {MAX_SEQ}")
    objs.sort(key=lambda o: (o.seq is None, o.seq or 0, o.__dict__.get("_ocfts_order", 0)))
    ids = distinct_event_ids(sid, [o.event for o in objs])
    if ids and not inspect(owner).pending:
        clash = session.execute(
            select(TranscriptEvent.event_id).where(
                TranscriptEvent.session_id == sid, TranscriptEvent.event_id.in_(ids)
            )
        ).first()
        if clash is not None:
            raise DuplicateEventError(
                f"session {quoted(sid)} already has an event with id {quoted(clash[0])}"
            )
    numbered = number_events(sid, last, [o.event for o in objs], [o.seq for o in objs])
    for obj, (_, columns) in zip(objs, numbered, strict=True):
        for column, value in columns.items():  # seq among them
            setattr(obj, column, value)
    owner.last_seq = numbered[-1][0].seq if numbered else last
    work.appended[sid] = [item for item, _ in numbered]


def _after_flush(session: Session, flush_context: UOWTransaction) -> None:
    work = session.info.pop(_INFO_KEY, None)
    if not isinstance(work, _FlushWork):
        return
    if not (work.new_sessions or work.appended or work.rebuild):
        return
    conn = session.connection()
    for sid in work.new_sessions:
        context = indexer.read_context(conn, sid)
        if context is not None and context.state is None:
            indexer.start_empty(conn, sid)
    for sid, appended in work.appended.items():
        if sid not in work.rebuild:
            indexer.on_appended(conn, sid, appended)
    # A session whose incognito flag changed is diffed in full, appended to or not: what was
    # indexed followed the old flag, so no fast path may trust it.
    for sid in work.rebuild:
        indexer.repair_or_mark(conn, sid)


#: Columns a bulk ``insert(TranscriptEvent)`` row may carry (the derived ones are recomputed).
BULK_INSERT_COLUMNS = frozenset(EVENT_COLUMNS) - {"seq"}


def _on_orm_execute(state: ORMExecuteState) -> Result[Any] | None:
    """``session.execute(insert(TranscriptEvent), rows)``: appended like ``append_many`` (seq,
    derived columns, index rows in this transaction), one session's rows in their order."""
    if not state.is_insert:  # every ORM SELECT of an installed session passes here: cheap exit
        return None
    mapper = state.bind_mapper
    if mapper is None or mapper.class_ is not TranscriptEvent:
        return None
    params = state.parameters
    rows = [params] if isinstance(params, Mapping) else list(params or [])
    statement: Any = state.statement
    returning = bool(getattr(statement, "_returning", None))
    if not rows or returning or getattr(statement, "_values", None):
        raise InvalidEventError(
            "a bulk insert of TranscriptEvent takes a list of {'session_id', 'event'} rows "
            "(no .values(), no RETURNING); or add the objects with session.add_all()"
        )
    by_session: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        if row.get("seq") is not None:
            raise InvalidEventError("seq is assigned by the plugin: leave it out of bulk rows")
        unknown = set(row) - BULK_INSERT_COLUMNS - {"seq"}
        if unknown:
            raise InvalidEventError(f"unknown TranscriptEvent columns: {sorted(unknown)}")
        sid = row.get("session_id")
        if not isinstance(sid, str):
            raise UnknownSessionError("every bulk TranscriptEvent row needs a session_id")
        by_session[sid].append(row.get("event"))
    conn = state.session.connection()
    backend(conn).begin_write(conn)
    try:
        for sid, events in by_session.items():
            append_events(conn, sid, events)
    except IntegrityError as exc:
        raise DuplicateEventError(
            f"bulk insert conflicts with a stored event ({exc.orig})"
        ) from None
    return conn.execute(select(literal(1)).where(false()))


def _discard_work(session: Session, *args: Any) -> None:
    session.info.pop(_INFO_KEY, None)


def _configure_on_begin(session: Session, transaction: Any, connection: Connection) -> None:
    """Configure the engine a session runs on (an unbound sessionmaker's too) the first time."""
    engine = connection.engine
    if is_configured(engine):
        return
    configure(engine)  # every later checkout of every connection
    driver = connection.connection.dbapi_connection
    if driver is not None and not getattr(driver, "in_transaction", True):
        # This connection, now: no statement has run in its transaction yet, so what can
        # still change does (SQLite: foreign keys and the busy timeout). Its BEGIN mode is left
        # as it is until the next checkout applies every setting.
        backend(connection).settle_connection(driver, busy_timeout_ms=BUSY_TIMEOUT_MS)


if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import async_sessionmaker

# A string: SQLAlchemy's asyncio module imports only where greenlet is installed.
SessionTarget: TypeAlias = (
    "sessionmaker[Any] | scoped_session[Any] | type[Session] | Session | async_sessionmaker[Any]"
)
#: Whatever :func:`install` was given, returned with its own type.
T = TypeVar("T", bound=SessionTarget)


def install(target: T, *, configure_engine: bool = True) -> T:
    """Install the index hooks on a ``sessionmaker``, ``scoped_session``, ``Session`` subclass,
    a single ``Session`` or an ``async_sessionmaker`` (its sessions' ``sync_session_class``;
    plain ``Session`` is replaced by a subclass for this factory). Idempotent.

    With ``configure_engine`` (default), the engine each session uses — bound now, bound per
    session, or found at the first transaction — gets the plugin's connection settings
    (:func:`openclaw_fts.engine.configure`: foreign keys, busy timeout, WAL; deferred ``BEGIN``).
    ``configure_engine=False`` leaves the engine alone: the host then owns those settings."""
    listen_target: Any = target
    if isinstance(target, scoped_session):
        listen_target = target.session_factory
    is_async = _is_async_sessionmaker(target)
    if is_async:
        listen_target = _async_sync_class(target)  # type: ignore[arg-type]
    if (
        getattr(listen_target, _INSTALLED_KEY, False)
        if not isinstance(listen_target, Session)
        else listen_target.info.get(_INSTALLED_KEY)
    ):
        return target
    event.listen(listen_target, "before_flush", _before_flush)
    event.listen(listen_target, "after_flush", _after_flush)
    event.listen(listen_target, "after_rollback", _discard_work)
    event.listen(listen_target, "do_orm_execute", _on_orm_execute, retval=True)
    if configure_engine:
        event.listen(listen_target, "after_begin", _configure_on_begin)
    if isinstance(listen_target, Session):
        listen_target.info[_INSTALLED_KEY] = True
    else:
        setattr(listen_target, _INSTALLED_KEY, True)
    bind = (
        target.kw.get("bind")  # type: ignore[union-attr]
        if is_async
        else listen_target.kw.get("bind")
        if isinstance(listen_target, sessionmaker)
        else None
    )
    bind = getattr(bind, "sync_engine", bind)  # an AsyncEngine's synchronous engine
    if isinstance(bind, Engine) and configure_engine:
        configure(bind)
    return target


def _is_async_sessionmaker(target: object) -> bool:
    try:
        from sqlalchemy.ext.asyncio import async_sessionmaker
    except ImportError:  # no greenlet: there can be no async_sessionmaker either
        return False
    return isinstance(target, async_sessionmaker)


def _async_sync_class(target: async_sessionmaker[Any]) -> type[Session]:
    """The ``Session`` class an ``async_sessionmaker``'s sessions run on; when it is plain
    ``Session``, a subclass made for this factory (events on ``Session`` itself would reach
    every session of the process)."""
    sync_class: type[Session] = target.kw.get("sync_session_class") or Session
    if sync_class is Session:
        sync_class = type("OpenClawFtsSyncSession", (Session,), {})
        target.kw["sync_session_class"] = sync_class
    return sync_class


def uninstall(target: SessionTarget) -> None:
    """Remove what :func:`install` added."""
    listen_target: Any = target.session_factory if isinstance(target, scoped_session) else target
    if _is_async_sessionmaker(target):
        listen_target = target.kw.get("sync_session_class") or Session  # type: ignore[union-attr]
    for name, fn in (
        ("before_flush", _before_flush),
        ("after_flush", _after_flush),
        ("after_rollback", _discard_work),
        ("do_orm_execute", _on_orm_execute),
        ("after_begin", _configure_on_begin),
    ):
        if event.contains(listen_target, name, fn):
            event.remove(listen_target, name, fn)
    if isinstance(listen_target, Session):
        listen_target.info.pop(_INSTALLED_KEY, None)
    elif hasattr(listen_target, _INSTALLED_KEY):
        delattr(listen_target, _INSTALLED_KEY)


__all__ = ["MAX_EVENT_BYTES", "install", "uninstall"]
