"""``TranscriptStore``: the facade — engine set-up, schema upgrade, writes, imports, reads.

Invariant: every write goes through an installed ORM session (so the index hooks run in the
writing transaction) or through the importer (which leaves sessions pending), on a transaction
that begins with ``BEGIN IMMEDIATE`` (:func:`openclaw_fts.engine.write_engine`); every read
runs on a deferred read transaction, which takes no lock and works on a read-only database. With a
``read_url`` (a PostgreSQL hot standby), ``search``, ``history``, ``branches`` and
``index_status`` read there once it has replayed every write the store finished (else on the
primary: :mod:`openclaw_fts.replica`), while writes, reconciles and the lease stay on the
primary. The store never reads environment variables or files beyond those it is handed.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from sqlalchemy import Connection, Engine, delete, event, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from . import importer, migrate
from .append import AppendMemo, append_events, append_in_one_statement
from .background import BackgroundJob
from .caller import Caller
from .check import CheckReport
from .check import check as check_index
from .dialects import require_index_dialect
from .engine import (
    BUSY_TIMEOUT_MS,
    DEFAULT_DURABILITY,
    READ_ONLY,
    canonical_url,
    configure,
    database_file,
    is_memory_url,
    make_engine,
    write_engine,
)
from .errors import (
    DuplicateEventError,
    InvalidSessionError,
    SessionExistsError,
    UnknownSessionError,
    UnsupportedDatabaseError,
    quoted,
)
from .faults import is_transient, storage_full_error
from .hooks import CREATED_KEY, install
from .index.base import backend, backend_of, dialect_of, known_backend, reader, writer
from .indexer import INLINE_REPAIR_MAX_EVENTS, INLINE_REPAIR_MAX_TEXT_BYTES, INLINE_REPAIR_OPTION
from .merge import MERGE_CHECK_WRITES, merge_if_needed, merge_index, needs_merge
from .models import AgentSession, Branch, TranscriptEvent
from .reconcile import RECONCILE_BATCH_ROWS, LeaseLost, Reconciler
from .redact import Redactor
from .replica import REPLICA_WAIT_MS, ReadRouter
from .results import (
    BatchSearchResult,
    HistoryAnswer,
    ImportResult,
    IndexStatus,
    RebuildResult,
    ReconcileResult,
    SearchAnswer,
    SearchResult,
    SessionsListResult,
    StatusResult,
)
from .search import batch_queries, build_request, run_searches
from .tokens import is_valid_unicode
from .transcript import LEAF_TYPE
from .validation import validate_session_fields

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

log = logging.getLogger(__name__)

#: Runs of a read whose connection was lost (the first, and one on a fresh connection).
READ_ATTEMPTS = 2
#: Seconds :meth:`TranscriptStore.close` waits for a background job's step beyond the busy
#: timeout (a step may first wait that long for SQLite's write lock): one bounded batch.
CLOSE_GRACE_SECONDS = 30.0


def _primary_write(method: F) -> F:
    """A store method that writes on the primary: once it returns (or fails: it may have
    committed part), reads from a standby wait for the primary's position after it. A write
    that found no space left raises :class:`~openclaw_fts.errors.StorageFullError`."""

    @functools.wraps(method)
    def wrapped(self: TranscriptStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            full = storage_full_error(exc, self.engine)
            if full is None or full is exc:
                raise
            raise full from exc
        finally:
            if self._router is not None:
                self._router.note_write()

    return cast(F, wrapped)


class TranscriptStore:
    """Sessions, transcripts and their full-text index in one database (docs/python.md)."""

    def __init__(
        self,
        url: str | URL | Engine,
        *,
        upgrade: bool = True,
        background: bool = True,
        redactor: Redactor | None = None,
        lease_seconds: float | None = None,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        reconcile_batch_rows: int = RECONCILE_BATCH_ROWS,
        inline_repair_max_events: int | None = None,
        inline_repair_max_text_bytes: int | None = None,
        read_url: str | URL | Engine | None = None,
        replica_wait_ms: int = REPLICA_WAIT_MS,
        transaction_pooler: bool = False,
        durability: str | None = None,
    ) -> None:
        """``busy_timeout_ms``: how long a write waits for SQLite's lock (applied when the
        store configures the engine: a URL, or an engine not configured yet).
        ``reconcile_batch_rows``: index rows the reconciler writes per transaction.
        ``inline_repair_max_events`` / ``inline_repair_max_text_bytes``: the largest session a
        non-append write of this store repairs inline (larger: left to the reconciler); None:
        ``indexer.INLINE_REPAIR_MAX_EVENTS`` / ``INLINE_REPAIR_MAX_TEXT_BYTES``.
        ``read_url``: a URL or engine of a hot standby of ``url``'s PostgreSQL server, for
        searches, history, branches and status (never migrated or written); a read waits up
        to ``replica_wait_ms`` for it to replay the store's last write, else reads from the
        primary (docs/scale.md).
        ``transaction_pooler``: ``url`` (and ``read_url``) reach PostgreSQL through a pooler in
        transaction mode (PgBouncer ``pool_mode = transaction``): no prepared statements, and
        the reconciler's lease is a ``reconcile_lease`` row instead of a session-level advisory
        lock (docs/scale.md).
        ``durability``: ``"normal"`` (the default: SQLite ``synchronous=NORMAL``, a power cut
        may undo the last commits, never half of one) or ``"full"`` (``synchronous=FULL``: a
        commit that returned survives a power cut); PostgreSQL's is the server's
        (docs/reliability.md). Applied when the store configures the engine; an engine
        configured before with another durability is refused."""
        # Refused before anything connects or migrates.
        for given in (url, read_url):
            if isinstance(given, str) and "://" not in given:
                raise UnsupportedDatabaseError(
                    f"openclaw-fts: {given!r} is not a database URL; the store takes a "
                    f"SQLAlchemy URL (a SQLite file: 'sqlite:///{given}') or an Engine"
                )
        url = _spelt_out(url)  # postgres:// is postgresql:// (engine.DIALECT_ALIASES)
        read_url = None if read_url is None else _spelt_out(read_url)
        require_index_dialect(dialect_of(url))
        pooler = backend_of(url).pooler if transaction_pooler else None
        if transaction_pooler and pooler is None:
            raise UnsupportedDatabaseError(
                "openclaw-fts: transaction_pooler=True is for PostgreSQL behind a pooler in "
                f"transaction mode (here: {dialect_of(url)})"
            )
        self._busy_timeout_ms = busy_timeout_ms
        if isinstance(url, Engine):
            self.engine = configure(url, busy_timeout_ms=busy_timeout_ms, durability=durability)
            self._owns_engine = False
        else:
            self.engine = make_engine(
                url, busy_timeout_ms=busy_timeout_ms, durability=durability or DEFAULT_DURABILITY
            )
            self._owns_engine = True
        if pooler is not None:
            pooler.use(self.engine)
        #: The same engine, for the store's own writes: they begin with BEGIN IMMEDIATE.
        self.write_engine = write_engine(self.engine)
        #: The sessions this store appended to, as its appends left them.
        self._appended = AppendMemo()
        if inline_repair_max_events is not None or inline_repair_max_text_bytes is not None:
            bounds = (
                INLINE_REPAIR_MAX_EVENTS
                if inline_repair_max_events is None
                else inline_repair_max_events,
                INLINE_REPAIR_MAX_TEXT_BYTES
                if inline_repair_max_text_bytes is None
                else inline_repair_max_text_bytes,
            )
            self.write_engine = self.write_engine.execution_options(
                **{INLINE_REPAIR_OPTION: bounds}
            )
        self._batch_rows = reconcile_batch_rows
        #: The engine reads go to (the standby's with a ``read_url``; else :attr:`engine`).
        self.read_engine = self.engine
        self._owns_read_engine = False
        self._router: ReadRouter | None = None
        if read_url is not None:
            try:
                self.read_engine, self._owns_read_engine = _standby_engine(read_url, self.engine)
                if pooler is not None:
                    pooler.use(self.read_engine)
                self._router = ReadRouter(self.engine, self.read_engine, wait_ms=replica_wait_ms)
            except BaseException:
                self._dispose_engines()
                raise
        if upgrade:
            migrate.upgrade(self.write_engine)
        self.sessions: sessionmaker[Session] = sessionmaker(
            self.write_engine, expire_on_commit=False
        )
        install(self.sessions)
        if self._router is not None:
            event.listen(self.sessions, "after_commit", self._note_session_commit)
        self.redactor = redactor
        self._lease_seconds = lease_seconds
        # An in-memory database lives on one shared connection: no second thread on it.
        self.background = background and not is_memory_url(self.engine.url)
        self._background = BackgroundJob(
            "openclaw-fts-reconcile", self._reconcile_in_background, retry_on=_retry_reconcile
        )
        self._merger = BackgroundJob(
            "openclaw-fts-merge", self._merge_in_background, retry_on=is_transient
        )
        self._appends = 0
        self._last_append = 0.0
        self._closed = False
        self._lock = threading.Lock()

    # -- writes -------------------------------------------------------------------------------

    @_primary_write
    def create_session(
        self,
        session_id: str,
        session_key: str,
        *,
        agent_id: str | None = None,
        spawned_by: str | None = None,
        parent_session_key: str | None = None,
        owner_session_key: str | None = None,
        archived: bool = False,
        incognito: bool = False,
    ) -> AgentSession:
        """Create a session (a new transcript incarnation under ``session_key``)."""
        validate_session_fields(
            {
                "session_id": session_id,
                "session_key": session_key,
                "agent_id": agent_id,
                "spawned_by": spawned_by,
                "parent_session_key": parent_session_key,
                "owner_session_key": owner_session_key,
                "archived": archived,
                "incognito": incognito,
            }
        )
        obj = AgentSession(
            session_id=session_id,
            session_key=session_key,
            agent_id=agent_id,
            spawned_by=spawned_by,
            parent_session_key=parent_session_key,
            owner_session_key=owner_session_key,
            archived=archived,
            incognito=incognito,
        )
        try:
            with self.sessions.begin() as db:
                reason = writer(db.connection()).unstorable(
                    [session_id, session_key, spawned_by, parent_session_key, owner_session_key]
                )
                if reason is not None:
                    raise InvalidSessionError(
                        f"cannot store session {quoted(session_id)}: {reason}"
                    )
                if db.get(AgentSession, session_id) is not None:
                    raise SessionExistsError(f"session {quoted(session_id)} already exists")
                db.add(obj)
                one_statement_appends = writer(db.connection()).one_statement_appends
        except IntegrityError:
            raise SessionExistsError(f"session {quoted(session_id)} already exists") from None
        created = db.info.get(CREATED_KEY, {}).get(session_id)
        if one_statement_appends and created is not None:
            self._appended.put(session_id, created)  # its first append: one statement
        return obj

    def append(self, session_id: str, event: Mapping[str, Any]) -> int:
        """Append one event in its own transaction; returns its ``seq``."""
        return self.append_many(session_id, [event])[0]

    @_primary_write
    def append_many(self, session_id: str, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """Append several events in one transaction; returns their ``seq``s. On PostgreSQL, a
        plain extension of a session this store appended to last is one statement
        (:func:`~openclaw_fts.append.append_in_one_statement`)."""
        batch = list(events)
        if not batch:
            return []
        try:
            seqs = append_in_one_statement(self.write_engine, session_id, batch, self._appended)
            if seqs is None:
                with self.write_engine.begin() as conn:
                    seqs = append_events(conn, session_id, batch, self._appended)
        except IntegrityError as exc:
            raise DuplicateEventError(
                f"append to {quoted(session_id)} conflicts with a stored event ({exc.orig})"
            ) from None
        self._after_append()
        return seqs

    @_primary_write
    def rewind(self, session_id: str, target_id: str | None) -> int:
        """Make ``target_id`` the active leaf (None: empty branch) by appending a leaf control."""
        if not _valid_key(session_id):
            raise UnknownSessionError(f"unknown session {quoted(session_id)}")
        if target_id is not None and not _valid_key(target_id):
            raise UnknownSessionError(
                f"session {quoted(session_id)} has no event {quoted(target_id)}"
            )
        with self.sessions.begin() as db:
            if db.get(AgentSession, session_id) is None:
                raise UnknownSessionError(f"unknown session {quoted(session_id)}")
            if target_id is not None:
                found = db.execute(
                    select(TranscriptEvent.seq).where(
                        TranscriptEvent.session_id == session_id,
                        TranscriptEvent.event_id == target_id,
                        TranscriptEvent.type.is_distinct_from(LEAF_TYPE),
                    )
                ).first()
                if found is None:
                    raise UnknownSessionError(
                        f"session {quoted(session_id)} has no event {quoted(target_id)} "
                        "to rewind to"
                    )
            leaf = db.execute(
                select(Branch.tip_id).where(Branch.session_id == session_id, Branch.is_active)
            ).scalar()
        event: dict[str, Any] = {
            "type": "leaf",
            "id": f"leaf-{uuid.uuid4().hex[:12]}",
            "parentId": leaf,
            "targetId": target_id,
            "timestamp": int(time.time() * 1000),
        }
        return self.append(session_id, event)

    @_primary_write
    def delete_session(self, session_id: str) -> bool:
        """Delete a session with its events, branches and index rows. True if it existed."""
        if not _valid_key(session_id):
            return False
        with self.sessions.begin() as db:
            result = db.execute(delete(AgentSession).where(AgentSession.session_id == session_id))
            return bool(getattr(result, "rowcount", 0))

    @_primary_write
    def import_jsonl(
        self, path: str | Path, session_key: str | None = None, **kwargs: Any
    ) -> ImportResult:
        """Import one transcript like ``openclaw doctor``: stored, not indexed (pending)."""
        report = importer.import_jsonl(self.write_engine, path, session_key=session_key, **kwargs)
        return cast(ImportResult, report.as_dict())

    @_primary_write
    def import_paths(
        self,
        paths: Iterable[str | Path],
        *,
        session_key: str | None = None,
        rekey: bool = False,
        progress: Callable[[int], None] | None = None,
        on_file: Callable[[Path], None] | None = None,
    ) -> ImportResult:
        """Import .jsonl files and OpenClaw folders into one report (what ``openclaw-fts
        import`` does): folders as :meth:`import_dir`, files as :meth:`import_jsonl` under
        ``session_key``; a path that cannot be imported at all is in ``failedFiles``.
        ``on_file``: told each file before it is read; ``progress``: lines read."""
        report = importer.import_paths(
            self.write_engine,
            paths,
            session_key=session_key,
            rekey=rekey,
            progress=progress,
            on_file=on_file,
        )
        return cast(ImportResult, report.as_dict())

    @_primary_write
    def import_item(self, item: importer.ImportItem, **kwargs: Any) -> ImportResult:
        """Import one planned file of a folder (``importer.folder_items``)."""
        return cast(ImportResult, importer.import_item(self.write_engine, item, **kwargs).as_dict())

    @_primary_write
    def import_dir(self, sessions_dir: str | Path, **kwargs: Any) -> ImportResult:
        """Import an OpenClaw folder — a state folder (``~/.openclaw``), its ``agents/`` folder
        or a sessions folder — mapped as docs/import.md says; ``rekey=True`` corrects the key
        and agent of sessions imported before. The report lists what each file became."""
        return cast(
            ImportResult, importer.import_dir(self.write_engine, sessions_dir, **kwargs).as_dict()
        )

    # -- reads --------------------------------------------------------------------------------

    def read_session(self) -> Session:
        """A session whose transactions are deferred (read-only use)."""
        return Session(self.engine.execution_options(**{READ_ONLY: True}))

    @overload
    def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: None = None,
    ) -> SearchResult | StatusResult: ...

    @overload
    def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: Sequence[str],
    ) -> BatchSearchResult | StatusResult: ...

    @overload
    def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: Sequence[str] | None = None,
    ) -> SearchAnswer: ...

    def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: Sequence[str] | None = None,
    ) -> SearchAnswer:
        """``sessions_search`` (docs/tools.md); with ``queries`` (1-8 strings, alongside or
        instead of ``query``: pass ``query=None``) a batch, each hit tagged ``queryIndex``.
        ``since`` / ``until`` also take spans (``"7d"``) counted back from ``now_ms`` (epoch ms;
        None: the clock, read once for the whole call)."""
        now = _clock_ms() if now_ms is None else now_ms
        texts = [query] if queries is None else batch_queries(query, queries)
        reqs = [
            build_request(
                q,
                limit=limit,
                session_key=session_key,
                role=role,
                since=since,
                until=until,
                order=order,
                now_ms=now,
            )
            for q in texts
        ]
        result = self._reading(
            lambda conn: run_searches(
                conn,
                caller,
                reqs,
                batch=queries is not None,
                redactor=self.redactor,
                on_pending=self._on_pending,
            ),
            one_statement=len(reqs) == 1,
        )
        return cast(SearchAnswer, result)

    def search_by_session(
        self,
        caller: Caller,
        query: str,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
    ) -> dict[str, Any]:
        """``search`` with one hit per session key: each key's best hit, with
        ``sessionHits`` (the key's matching messages the caller may see); ``limit`` counts
        sessions. The shape is the plugin's own (docs/tools.md, "One hit per session"); the
        ``sessions_search`` tool's ``group: "session"`` returns it in OpenClaw's shape.
        ``now_ms``: what spans in ``since`` / ``until`` count back from, as in :meth:`search`."""
        req = build_request(
            query,
            limit=limit,
            session_key=session_key,
            role=role,
            since=since,
            until=until,
            order=order,
            now_ms=_clock_ms() if now_ms is None else now_ms,
        )
        return self._reading(
            lambda conn: run_searches(
                conn,
                caller,
                [req],
                batch=False,
                redactor=self.redactor,
                on_pending=self._on_pending,
                per_session=True,
            )
        )

    def suggest(self, caller: Caller, query: str) -> list[str]:
        """For a query that finds nothing: near words and a prefix form (``word*``) the
        caller may search (what ``search`` puts in ``warning``; docs/cli.md, "No matches")."""
        from .suggest import suggestions

        req = build_request(query)
        return self._reading(lambda conn: suggestions(conn, caller, req.compiled))

    def history(self, caller: Caller, session_key: str, **kwargs: Any) -> HistoryAnswer:
        """``sessions_history`` (docs/tools.md)."""
        from .history import run_history

        result = self._reading(
            lambda conn: run_history(conn, caller, session_key, redactor=self.redactor, **kwargs)
        )
        return cast(HistoryAnswer, result)

    def list_sessions(self, caller: Caller, **kwargs: Any) -> SessionsListResult:
        """``sessions_list`` (docs/tools.md): the session keys ``caller`` may see, newest
        activity first. Keyword arguments: ``limit``, ``kinds``, ``agent_id``, ``search``,
        ``label``, ``active_minutes``, ``message_limit``, and ``details=True`` for the
        store's own columns (message count, indexing state) that ``openclaw-fts sessions``
        shows."""
        from .listing import run_list

        result = self._reading(
            lambda conn: run_list(conn, caller, redactor=self.redactor, **kwargs)
        )
        return cast(SessionsListResult, result)

    def branches(self, session_id: str) -> list[dict[str, Any]]:
        """The session's branch tips, the active one flagged."""
        rows = self._reading(
            lambda conn: conn.execute(
                select(Branch.tip_id, Branch.tip_seq, Branch.is_active)
                .where(Branch.session_id == session_id)
                .order_by(Branch.tip_seq)
            ).all()
        )
        return [{"tipId": r[0], "tipSeq": r[1], "active": bool(r[2])} for r in rows]

    # -- the index ----------------------------------------------------------------------------

    def _make_reconciler(self) -> Reconciler:
        if self._lease_seconds is None:
            return Reconciler(self.write_engine, batch_rows=self._batch_rows)
        return Reconciler(
            self.write_engine, lease_seconds=self._lease_seconds, batch_rows=self._batch_rows
        )

    def _reconcile_in_background(self, stop: threading.Event) -> None:
        self._make_reconciler().run(wait=False, stop=stop, merge_after=False)
        self._start_merge_if_needed()  # the merge job waits for this store's pauses

    def _on_pending(self) -> None:
        if self.background and not self._closed:
            self._background.trigger()

    def _merge_in_background(self, stop: threading.Event) -> None:
        merge_index(self.write_engine, stop, lambda: self._last_append)

    def _after_append(self) -> None:
        """Every :data:`~.merge.MERGE_CHECK_WRITES` appends, start the background segment
        merge if the index needs it (SQLite: it is in many FTS5 segments); it merges while
        this store does not append (:func:`~.merge.merge_index`)."""
        self._last_append = time.monotonic()
        self._appends += 1
        if self._appends % MERGE_CHECK_WRITES == 0:
            self._start_merge_if_needed()

    def _start_merge_if_needed(self) -> None:
        """Start the background merge job if the index needs a merge. It runs after a write
        has committed, so it never raises: a failed check is logged and the next one tries
        again."""
        if not self.background or self._closed or self._merger.running:
            return
        try:
            if needs_merge(self.write_engine):
                self._merger.trigger()
        except Exception:
            log.warning("openclaw-fts: segment check failed; no merge started", exc_info=True)

    @_primary_write
    def reconcile(self, progress: Any = None, on_wait: Any = None) -> ReconcileResult:
        """Index every pending session now. Waits for a live reconciler's lease (``on_wait`` is
        told why, with a :class:`~openclaw_fts.reconcile.LeaseWait`); a dead one's is taken."""
        result = self._make_reconciler().run(
            wait=True, progress=progress, on_wait=on_wait, merge_after=False
        )
        # Its batches split the index: merge it now, yielding to this store's appends.
        merge_if_needed(self.write_engine, last_write=lambda: self._last_append)
        return cast(ReconcileResult, result)

    @_primary_write
    def rebuild(
        self, keys: Iterable[str] | None = None, progress: Any = None, on_wait: Any = None
    ) -> RebuildResult:
        """Force a re-index of the sessions named by ``keys`` (session keys or session ids;
        None: every session): their derived columns are recomputed from the stored JSON, they
        turn pending, and the reconciler re-indexes them now. ``"rebuilt"`` lists their ids."""
        from .maintenance import mark_for_rebuild

        marked = mark_for_rebuild(self.write_engine, keys)
        return {"rebuilt": marked, **self.reconcile(progress=progress, on_wait=on_wait)}

    @_primary_write
    def optimize(self) -> None:
        """Merge the full-text index's segments (after large imports or many edits)."""
        from .maintenance import optimize

        optimize(self.write_engine)

    # -- the schema, and the whole index ----------------------------------------------------

    #: The file of a URL naming a SQLite database file (None: a server, memory, a URI name).
    database_file = staticmethod(database_file)

    def schema_revisions(self) -> list[str]:
        """The plugin's schema revisions the database is at (empty: no plugin schema)."""
        return list(migrate.current_revisions(self.engine))

    def schema_at_head(self) -> bool:
        """Whether the database is at the plugin's newest schema revision(s)."""
        return set(self.schema_revisions()) == set(migrate.head_revisions())

    @_primary_write
    def upgrade_schema(self) -> list[str]:
        """Migrate the schema to the newest revision (creating it in an empty database; a
        database whose plugin revisions a host's Alembic runs is refused); the revisions
        after. What ``TranscriptStore(url)`` does on open unless ``upgrade=False``."""
        migrate.upgrade(self.engine)
        return self.schema_revisions()

    def check(self) -> CheckReport:
        """Verify the full-text index: its own integrity, and that it holds exactly the active
        branches of every indexed session (pending sessions are not checked)."""
        return check_index(self.engine)

    @_primary_write
    def partition_by_agent(self, partitions: int | None = None) -> int:
        """PostgreSQL: move the index rows into hash partitions by agent, in one transaction
        (docs/scale.md); the rows moved. Stop the writers first."""
        return migrate.partition_by_agent(self.engine, partitions)

    @_primary_write
    def unpartition_by_agent(self) -> int:
        """PostgreSQL: move the index rows back into the plain table; the rows moved."""
        return migrate.unpartition_by_agent(self.engine)

    def index_status(self) -> IndexStatus:
        """``{"pending", "indexed", "total"}`` in sessions."""
        return cast(IndexStatus, self._reading(lambda conn: reader(conn).status(conn)))

    def wait_for_index(self, timeout: float | None = None) -> None:
        """Wait for the background reconciler started by a search and the background
        segment merge started by appends (tests, scripts, benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for job in (self._background, self._merger):  # the reconciler may start the merge
            job.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def read_after(self, lsn: str | None = None) -> None:
        """With a ``read_url``: reads from now on see every commit up to the primary's WAL
        position ``lsn`` (``SELECT pg_current_wal_insert_lsn()`` after the commit); None: every
        commit that returned before this call, whoever made it (a host's own session
        included). The store's own writes need no call. Without a ``read_url``: nothing to
        do."""
        if self._router is not None:
            self._router.read_after(lsn)

    def _note_session_commit(self, session: Session) -> None:
        if self._router is not None:
            self._router.note_write()

    def _read(self, *, one_statement: bool = False) -> Any:
        base = self.engine.connect() if self._router is None else self._router.connect()
        conn = base.execution_options(**{READ_ONLY: True})
        # One snapshot for every statement of a search or a history read.
        return conn.execution_options(
            **backend(conn).connections.snapshot_options(one_statement=one_statement)
        )

    def _reading(self, read: Callable[[Connection], T], *, one_statement: bool = False) -> T:
        """``read`` on a read connection (:meth:`_read`), run again on a fresh one when the
        first lost its connection (a server restart or failover cut it: the pool has then
        dropped it and reconnects). A read changes nothing, so running it twice is safe; at
        most :data:`READ_ATTEMPTS` runs."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                with self._read(one_statement=one_statement) as conn:
                    return read(conn)
            except DBAPIError as exc:
                if not exc.connection_invalidated or attempt == READ_ATTEMPTS:
                    raise
            except Exception as exc:  # a read's temporary files found no space: say so
                full = storage_full_error(exc, self.engine)
                if full is None or full is exc:
                    raise
                raise full from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the background jobs (waiting for the step in flight: at most the busy
        timeout a step may wait for the write lock, plus :data:`CLOSE_GRACE_SECONDS`) and
        release the engine (if the store made it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        jobs = (self._background, self._merger)
        for job in jobs:
            job.stop()
        deadline = time.monotonic() + self._busy_timeout_ms / 1000 + CLOSE_GRACE_SECONDS
        for job in jobs:
            job.wait(max(0.0, deadline - time.monotonic()))
            if job.running:
                log.warning("openclaw-fts: a background job did not stop; closing anyway")
        self._dispose_engines()

    def _dispose_engines(self) -> None:
        if self._owns_engine:
            self.engine.dispose()
        if self._owns_read_engine:
            self.read_engine.dispose()

    def __enter__(self) -> TranscriptStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clock_ms() -> int:
    """The wall clock in epoch ms: what relative ``since`` / ``until`` spans count back from."""
    return int(time.time() * 1000)


def _spelt_out(url: str | URL | Engine) -> URL | Engine:
    """A URL with a dialect alias spelt out (:func:`~openclaw_fts.engine.canonical_url`); an
    engine as it is."""
    if isinstance(url, Engine):
        return url
    return canonical_url(make_url(url))


def _standby_engine(read_url: str | URL | Engine, primary: Engine) -> tuple[Engine, bool]:
    """The engine of ``read_url`` and whether the store made it (so disposes of it)."""
    serving = backend_of(primary)
    if known_backend(read_url) is not serving or serving.replicas is None:
        raise UnsupportedDatabaseError(
            "openclaw-fts: read_url names a PostgreSQL hot standby of a PostgreSQL primary "
            f"(here: {serving.name} primary, {dialect_of(read_url)} read_url)"
        )
    if isinstance(read_url, Engine):
        return read_url, False
    return make_engine(read_url), True


def _retry_reconcile(exc: BaseException) -> bool:
    """Whether the background reconciler runs again after ``exc``: a transient fault
    (:func:`~openclaw_fts.faults.is_transient`), or its lease lost with the lease's connection
    (the next run takes the lease anew, or finds another reconciler holding it and stops)."""
    return is_transient(exc) or isinstance(exc, LeaseLost)


def _valid_key(value: object) -> bool:
    """A value that could be a stored id or key (anything else matches nothing)."""
    return isinstance(value, str) and is_valid_unicode(value)
