"""SQLAlchemy session hooks: mirror appended transcript events into the index on flush.

Invariant: whatever way a host adds :class:`TranscriptEvent` objects to an installed session
(``session.add``, a relationship append, a bulk ``insert``), the flush that writes them also
writes their index rows — or repairs / marks the session — on the same connection, inside the
same transaction (and savepoint). A rollback therefore leaves neither event nor index row. New
events are appended through :mod:`openclaw_fts.append`, the function ``TranscriptStore.append``
uses: planned (validated, numbered) in ``before_flush``, where the objects become persistent so
the unit of work emits no INSERT of its own, and written in ``after_flush``, inside the flush; a
rollback sends them back to transient. On PostgreSQL an append to a session the engine's
installed sessions created or appended to last (``append.engine_memo``) is planned from what
they remember and written right there, in ``before_flush``, as one guarded statement
(``append.append_known``) — still inside the flush and its transaction — and planned with the
locked read only when that statement wrote nothing. A flush that touches the plugin's objects
takes SQLite's write lock before its first read of the plugin's tables (a transaction that has
not written yet is deferred: the host's reads take no lock); a flush without them does nothing
here. With ``configure_engine`` (the default) every engine an installed session runs on gets
:func:`openclaw_fts.engine.configure`, bound or not. A flush or commit that finds no space
left for the database raises :class:`~openclaw_fts.errors.StorageFullError` (:mod:`.faults`).
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from sqlalchemy import Connection, Engine, Result, event, false, inspect, literal, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import (
    ORMExecuteState,
    Session,
    SessionTransaction,
    UOWTransaction,
    make_transient,
    make_transient_to_detached,
    scoped_session,
    sessionmaker,
)
from sqlalchemy.orm.attributes import set_committed_value

from . import indexer, transcript
from .append import (
    AppendMemo,
    PlannedAppend,
    append_events,
    append_known,
    check_seqs,
    engine_memo,
    plan_append,
    write_append,
)
from .caller import agent_id_from_key
from .engine import BUSY_TIMEOUT_MS, configure, is_configured
from .errors import (
    DuplicateEventError,
    InvalidEventError,
    InvalidSessionError,
    UnknownSessionError,
    quoted,
)
from .faults import storage_full_error
from .index.base import backend, reader
from .models import AgentSession, TranscriptEvent
from .rows import EVENT_COLUMNS, SessionContext
from .validation import MAX_EVENT_BYTES as MAX_EVENT_BYTES
from .validation import MAX_EVENT_DEPTH as MAX_EVENT_DEPTH
from .validation import MAX_SEQ as MAX_SEQ
from .validation import (
    SESSION_TEXT_FIELDS,
    validate_event,
    validate_session_fields,
)

#: Key under which a flush's work travels from ``before_flush`` to ``after_flush``.
_INFO_KEY = "openclaw_fts.flush"
#: ``Session.info`` key: the sessions the session's flushes created, each as its context
#: (``SessionContext``) right after, by id (``TranscriptStore.create_session`` remembers it).
CREATED_KEY = "openclaw_fts.created"
#: Key of the appended objects made persistent in ``before_flush``, each with the transaction
#: (the innermost savepoint, else the root) whose rollback sends them back to transient.
_PERSISTED_KEY = "openclaw_fts.persisted"
_INSTALLED_KEY = "_openclaw_fts_installed"
_creation_order = itertools.count()


@dataclass
class _FlushWork:
    conn: Connection
    new_sessions: list[str] = field(default_factory=list)
    appends: list[PlannedAppend] = field(default_factory=list)
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


def _storage_faults(listener: Callable[..., None]) -> Callable[..., None]:
    """A flush listener whose "no space left" driver error (raised by the statements it runs
    straight on the driver's cursor) reaches the host as
    :class:`~openclaw_fts.errors.StorageFullError`."""

    @functools.wraps(listener)
    def wrapped(session: Session, *args: Any) -> None:
        try:
            listener(session, *args)
        except Exception as exc:
            bind = session.bind
            full = storage_full_error(exc, bind if isinstance(bind, (Engine, Connection)) else None)
            if full is None or full is exc:
                raise
            raise full from exc

    return wrapped


@_storage_faults
def _before_flush(session: Session, flush_context: UOWTransaction, instances: Any) -> None:
    if not _touches_plugin(session):
        session.info.pop(_INFO_KEY, None)
        return
    conn = session.connection()
    found = backend(conn)
    found.connections.begin_write(conn)  # before the flush's first read
    work = _FlushWork(conn)
    session.info[_INFO_KEY] = work
    by_session: dict[str, list[TranscriptEvent]] = defaultdict(list)
    new_owners: dict[str, AgentSession] = {}
    with session.no_autoflush:
        for obj in list(session.new):
            if isinstance(obj, AgentSession):
                fields = {n: getattr(obj, n) for n in SESSION_TEXT_FIELDS}
                validate_session_fields(fields)
                reason = found.unstorable(fields.values())
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
                by_session[_session_id_of(session, obj)].append(obj)
        for obj in session.dirty:
            if isinstance(obj, AgentSession) and inspect(obj).attrs.incognito.history.has_changes():
                work.rebuild.add(obj.session_id)
            elif isinstance(obj, TranscriptEvent):
                _edited_event(obj, work)
        if by_session:
            # Only appends: a flush that also deletes the plugin's objects plans every append
            # with the locked read, after the deletions it may depend on.
            deletes = any(isinstance(obj, _PLUGIN_MODELS) for obj in session.deleted)
            memo = None if deletes else engine_memo(conn)
            planned = []
            for sid, objs in by_session.items():
                owner = new_owners.get(sid)
                plan = None
                if memo is not None and owner is None and sid not in work.rebuild:
                    plan = _append_known(conn, sid, objs, memo)
                if plan is None:
                    plan = _plan(conn, sid, objs, owner)
                    work.appends.append(plan)
                planned.append((plan, objs))
            for plan, objs in planned:
                _persist(session, flush_context, plan, objs, new_owners.get(plan.session_id))


def _append_order(objs: list[TranscriptEvent]) -> None:
    """Sort one session's ORM-added events into append order: the seqs the host gave, then
    creation order."""
    check_seqs(o.seq for o in objs)
    objs.sort(key=lambda o: (o.seq is None, o.seq or 0, o.__dict__.get("_ocfts_order", 0)))


def _append_known(
    conn: Connection, sid: str, objs: list[TranscriptEvent], memo: AppendMemo
) -> PlannedAppend | None:
    """Append one session's ORM-added events NOW, in one guarded statement, when the engine's
    memo knows the session (:func:`~openclaw_fts.append.append_known`): the flush then has
    nothing left to write for it. None: nothing written (planned with the locked read)."""
    _append_order(objs)
    with _conflicts(sid):
        return append_known(conn, sid, [o.event for o in objs], memo, [o.seq for o in objs])


@contextmanager
def _conflicts(sid: str) -> Iterator[None]:
    """A taken event id or seq in an append to ``sid``, as the plugin's own error."""
    try:
        yield
    except IntegrityError as exc:
        raise DuplicateEventError(
            f"append to {quoted(sid)} conflicts with a stored event ({exc.orig})"
        ) from None


def _plan(
    conn: Connection, sid: str, objs: list[TranscriptEvent], created: AgentSession | None
) -> PlannedAppend:
    """Plan one session's ORM-added events (``objs``, sorted here into append order,
    :func:`_append_order`) on the flush's connection: the same
    :func:`~openclaw_fts.append.plan_append` as ``TranscriptStore.append``."""
    _append_order(objs)
    return plan_append(
        conn, sid, [o.event for o in objs], [o.seq for o in objs], created=created is not None
    )


def _persist(
    session: Session,
    flush_context: UOWTransaction,
    plan: PlannedAppend,
    objs: list[TranscriptEvent],
    created: AgentSession | None,
) -> None:
    """Make a planned append's objects persistent (identity ``(session_id, seq)``, every column
    filled, no pending change) before the unit of work runs, so it emits no INSERT of its own:
    ``after_flush`` writes the rows through :func:`~openclaw_fts.append.write_append`. The
    flush keeps them in its work (so it runs, and ``after_flush`` with it), and a rollback of
    their transaction sends them back to transient (:func:`_after_rollback`), as it does an
    INSERT of SQLAlchemy's own. The owner's ``last_seq`` follows without a change to flush."""
    for obj, row in zip(objs, plan.rows, strict=True):
        session.expunge(obj)
        for column in EVENT_COLUMNS:
            if column != "event":
                setattr(obj, column, row[column])
        make_transient_to_detached(obj)
        session.add(obj)
        flush_context.register_object(inspect(obj), listonly=True)
    txn = session.get_nested_transaction() or session.get_transaction()
    session.info.setdefault(_PERSISTED_KEY, []).append((txn, objs))
    last = plan.appended[-1].seq if plan.appended else None
    if last is None:
        return
    if created is not None:
        created.last_seq = last  # its INSERT is the unit of work's
        return
    owner = session.identity_map.get(session.identity_key(AgentSession, plan.session_id))
    if owner is not None:
        set_committed_value(owner, "last_seq", last)
        if "updated_at" in owner.__dict__:
            session.expire(owner, ["updated_at"])  # the append's UPDATE set it


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


@_storage_faults
def _after_flush(session: Session, flush_context: UOWTransaction) -> None:
    work = session.info.pop(_INFO_KEY, None)
    if not isinstance(work, _FlushWork):
        return
    if not (work.new_sessions or work.appends or work.rebuild):
        return
    conn = work.conn
    memo = engine_memo(conn)
    for sid in work.new_sessions:
        context = reader(conn).session_context(conn, sid)
        if context is not None and context.state is None:
            state = indexer.start_empty(conn, sid)
            created = session.info.setdefault(CREATED_KEY, {})
            created[sid] = SessionContext(context.last_seq, context.incognito, state)
            if memo is not None:
                memo.put(sid, created[sid])
    for plan in work.appends:
        with _conflicts(plan.session_id):
            found = write_append(conn, plan, index=plan.session_id not in work.rebuild)
        if memo is not None:
            memo.note(plan, found)
    # A session whose incognito flag changed is diffed in full, appended to or not: what was
    # indexed followed the old flag, so no fast path may trust it.
    for sid in work.rebuild:
        if memo is not None:
            memo.forget(sid)
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
    backend(conn).connections.begin_write(conn)
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


def _after_rollback(session: Session) -> None:
    """Before the rolled-back transaction's objects are expired: the appended objects made
    persistent in it become transient again (their seq and columns kept), as SQLAlchemy does
    with the objects it inserted."""
    _discard_work(session)
    tracked = session.info.get(_PERSISTED_KEY)
    if not tracked:
        return
    kept = []
    for txn, objs in tracked:
        if txn is not None and txn.is_active:
            kept.append((txn, objs))
            continue
        for obj in objs:
            if inspect(obj).session is session:
                make_transient(obj)
    session.info[_PERSISTED_KEY] = kept


def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    """A savepoint released: what was appended in it is its parent's to roll back; the root
    ended: nothing is left to track."""
    tracked = session.info.get(_PERSISTED_KEY)
    if not tracked:
        return
    parent = transaction.parent if transaction.nested else None
    session.info[_PERSISTED_KEY] = [
        (parent if txn is transaction else txn, objs)
        for txn, objs in tracked
        if txn is not transaction or parent is not None
    ]


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
        backend(connection).connections.settle_connection(driver, busy_timeout_ms=BUSY_TIMEOUT_MS)


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
    event.listen(listen_target, "after_rollback", _after_rollback)
    event.listen(listen_target, "after_transaction_end", _after_transaction_end)
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
        ("after_rollback", _after_rollback),
        ("after_transaction_end", _after_transaction_end),
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
