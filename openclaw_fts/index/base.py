"""What every index backend offers, and the registry that picks one per database dialect.

Invariant: the rest of the plugin reaches the database's engine-specific side only through
the :class:`Backend` registered for its dialect — one class per engine (``SqliteBackend``,
``PostgresqlBackend``), the way Alembic has one ``Impl`` per dialect — obtained with
:func:`backend_of` (an engine, a connection, an ORM session or a URL), :func:`backend_for`
(a dialect name, for the index's own modules) or, for one side only, :func:`reader` /
:func:`writer`; no module outside ``openclaw_fts.index`` reads a dialect name to pick what to
do (:func:`dialect_of` is only for messages and the supported-dialect checks). Reads and
writes are separate interfaces: :class:`Reader` never changes a row (search, the trees and
index rows the writers plan from, status and checks), :class:`Writer` holds every statement
that writes; a :class:`Backend` is both, plus the reconcile lease and the composable search's
match, with its components as objects: how its engines and connections are made and set up
(:class:`Connections`: settings, transaction starts, snapshot options) and the impact lists'
upkeep (:class:`ImpactLists`). What only some engines have hangs off the backend as an
optional object, None where the engine has none (:class:`Partitions`, :class:`Replicas`,
:class:`Pooler`, :class:`Segments`, :class:`Databases`), never as a stub or a flag; what only
the migrations ask (revision probes, Alembic's name filter) is :mod:`.probes`'s, off this
interface. An unregistered dialect is refused with
:class:`~openclaw_fts.errors.UnsupportedDatabaseError`. This module holds no SQL and imports
no backend (each registers itself when ``openclaw_fts.index`` is imported).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session

from ..errors import UnsupportedDatabaseError
from ..rows import (
    EarlierEvent,
    EventRow,
    Extension,
    Finish,
    Hit,
    LeaseWait,
    NewRow,
    SearchPage,
    SearchRequest,
    SessionContext,
    StateRow,
    StoredRow,
)

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection, Engine, FromClause

    from ..caller import Caller
    from ..query import CompiledQuery
    from ..transcript import Tree, TreeNode

#: Execution option of a connection whose transactions only read (SQLite: a deferred ``BEGIN``;
#: it wins over :data:`WRITE` on the same connection).
READ_ONLY = "openclaw_fts_read_only"
#: What a commit survives, ``TranscriptStore(url, durability=...)``: ``"normal"`` (SQLite's
#: WAL with ``synchronous=NORMAL``: consistent after a power cut, which may undo the last
#: commits) or ``"full"`` (``synchronous=FULL``: a commit that returned survives it too).
DURABILITIES = ("normal", "full")
#: Execution option of a connection whose transactions write (SQLite: ``BEGIN IMMEDIATE``).
WRITE = "openclaw_fts_write"


class SearchReads(Protocol):
    """The search reads of an index backend (the part of :class:`Reader` an engine's search
    class implements). Every method runs on the caller's connection and transaction; none
    changes a row."""

    #: Whether :meth:`any_pending` is cheap enough to ask before every search (SQLite: a memo
    #: keyed by ``PRAGMA data_version``); when not, search asks only :meth:`pending_visible`.
    GLOBAL_PENDING_PROBE: bool

    def search_page(
        self,
        conn: Connection,
        caller: Caller,
        reqs: Sequence[SearchRequest],
        *,
        per_session: bool = False,
        suggest: bool = True,
    ) -> SearchPage:
        """A search's one call: for ``caller`` (its explicit ``sessionKey``, shared by every
        request, already resolved), each request's hits up to its limit with their texts, in
        one snapshot, pending rows filtered only when something the caller may see is pending
        (the probes and the fast paths below are this call's own steps, shared by every
        engine: :meth:`~openclaw_fts.index.page.PagedSearch.search_page`). ``per_session``: one
        hit per session key (:meth:`session_hits`). ``suggest``: a query that found nothing
        gets near words and a prefix form the caller may search
        (:mod:`openclaw_fts.index.suggest`)."""
        ...

    def any_pending(self, conn: Connection) -> bool:
        """Whether any session at all is pending in this transaction's snapshot (read first: it
        may start the snapshot every later statement of the search sees)."""
        ...

    def pending_visible(self, conn: Connection, caller: Caller, session_key: str | None) -> bool:
        """Whether any session the caller may see (and, when given, keyed ``session_key``) is
        pending."""
        ...

    def pending_and_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest
    ) -> tuple[bool, list[Hit]] | None:
        """:meth:`pending_visible` (for ``req.session_key``) and :meth:`ranked_hits` in one
        statement, pending rows filtered only when something visible is pending; None when
        this engine (or this database) has no such statement, and the two are asked in
        turn."""
        ...

    def ranked_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[Hit]:
        """Up to ``req.limit + 1`` hits in result order, visibility and every filter applied in
        the ranking statement; ``exact`` (no session pending in this snapshot) lets the backend
        skip the per-row pending filter."""
        ...

    def session_hits(
        self, conn: Connection, caller: Caller, req: SearchRequest, *, exact: bool
    ) -> list[tuple[Hit, int]]:
        """One hit per session key: each key's best hit (in the request's order) with the
        number of its matching messages the caller may see, up to ``req.limit + 1`` keys in
        result order; visibility and every filter applied before grouping, so the limit counts
        visible sessions."""
        ...

    def hit_texts(self, conn: Connection, hits: list[Hit]) -> dict[int, str]:
        """Each hit's searchable text (masked, clean), by index row id."""
        ...

    def near_words(
        self,
        conn: Connection,
        caller: Caller,
        token: str,
        *,
        max_distance: int,
        want: int,
        exact: bool = False,
    ) -> list[tuple[str, int]]:
        """Up to ``want`` indexed words within ``max_distance`` edits of ``token`` (a folded
        index token) that occur in a message the caller may see, nearest and most frequent
        first, each with how many indexed messages the caller may see hold it (up to a
        backend's cap; it only orders suggestions and is never shown). Visibility is in the
        statements that prove and count each word: a word only in sessions the caller cannot
        see is never returned, and those sessions change neither the counts nor the order
        (except for a wide caller, ``agent`` or ``all``, whose count is over every session:
        FTS5's on SQLite, :meth:`~openclaw_fts.index.sqlite.read.SqliteSearch.near_words` says
        why; on PostgreSQL a tracked word's, or one counted up to a cap,
        :meth:`~openclaw_fts.index.postgresql.read.PostgresSearch._most_frequent_visible`). Only
        sessions search does not hide count: a pending one's rows may hold words its
        transcript no longer has (:data:`~openclaw_fts.index.pending.EXACT_SESSION` in those
        statements), unless ``exact`` -- the caller knows that none of the sessions it may
        see is pending (the search that just asked)."""
        ...

    def visible_words(
        self,
        conn: Connection,
        caller: Caller,
        words: Sequence[str],
        *,
        prefix: bool = False,
        want: int = 1,
        exact: bool = False,
        unmasked: bool = False,
        counted: bool = True,
    ) -> list[tuple[str, int]]:
        """Up to ``want`` of ``words`` (folded index tokens) that occur as a word (``prefix``:
        as the start of a word) in an indexed message the caller may see, with how many
        indexed messages the caller may see hold each (up to a backend's cap, or 0 from a
        backend that does not count them; it only orders suggestions and is never shown),
        most frequent first. Visibility is in the statements that prove and count each word:
        a word only in sessions the caller cannot see is never returned, and those sessions
        change neither the counts nor the order; nor do pending sessions, unless ``exact``
        (as for :meth:`near_words`). ``unmasked``: only words held by such a message whose
        text holds no credential mask at all (no
        :data:`~openclaw_fts.redact.engine.MASK_ELLIPSIS`), so each is said outside every
        mask (:func:`~openclaw_fts.index.suggest.said_outside_masks` then needs no read),
        in the order given, their counts not read (0). ``counted=False``: only which words
        are visible, in the order given, their counts not read (0): each word's proof may
        stop at its first visible message (what a search that found nothing asks of its
        words before it looks for near ones)."""
        ...


class Reader(SearchReads, Protocol):
    """The read side of an index backend. Every method runs on the caller's connection and
    transaction; none changes a row."""

    # sessions and their events
    def session_context(self, conn: Connection, session_id: str) -> SessionContext | None: ...
    def session_ids(self, conn: Connection, keys: Sequence[str] | None) -> list[str]: ...
    def last_seq(self, conn: Connection, session_id: str) -> int | None: ...
    def taken_event_ids(self, conn: Connection, session_id: str, ids: list[str]) -> set[str]: ...
    def unkeyed_events(self, conn: Connection, session_id: str) -> list[str]: ...
    def event_ids(self, conn: Connection, session_id: str) -> set[str]:
        """The ids of the session's stored events (those that have one)."""
        ...

    def session_owner(self, conn: Connection, session_id: str) -> tuple[str, str] | None:
        """``(agent_id, session_key)`` of a stored session (None: no such session)."""
        ...

    # a session's tree
    def load_tree(
        self, conn: Connection, session_id: str
    ) -> tuple[list[TreeNode], dict[int, dict[str, Any]]]: ...
    def branch_events(
        self,
        conn: Connection,
        session_id: str,
        seqs: Sequence[int],
        parsed: dict[int, dict[str, Any]],
    ) -> Iterator[tuple[int, dict[str, Any]]]: ...
    def earlier_event(
        self, conn: Connection, session_id: str, event_id: str, before_seq: int
    ) -> EarlierEvent | None: ...
    def event_seq_type(
        self, conn: Connection, session_id: str, event_id: str
    ) -> tuple[int, str | None] | None: ...
    def has_event_type(self, conn: Connection, session_id: str, type_: str) -> bool: ...

    # index rows and index state
    def index_rows(self, conn: Connection, session_id: str) -> list[StoredRow]: ...
    def index_row_sizes(self, conn: Connection, session_id: str) -> list[tuple[int, int, int]]: ...
    def snapshot(self, conn: Connection, session_id: str) -> tuple[int, int] | None: ...
    def status(self, conn: Connection) -> dict[str, int]: ...
    def pending_session_ids(self, conn: Connection) -> list[str]: ...
    def clean_session_ids(self, conn: Connection) -> list[str]: ...
    def orphan_index_rows(self, conn: Connection) -> int: ...

    # checks
    def integrity_check(self, conn: Connection) -> None:
        """The engine's own check of the full-text index; raises on corruption."""
        ...

    def check_skipped(self, error: BaseException) -> str | None:
        """Why :meth:`integrity_check` could not run, for a driver error that says nothing
        about the index (a read-only database, a lock held elsewhere); None otherwise."""
        ...


class Writer(Protocol):
    """The write side of an index backend: every statement that writes transcripts, index rows,
    index state and branch records. Every method runs on the caller's connection and
    transaction."""

    # sessions, their events and index state
    def create_state(self, conn: Connection, session_id: str, *, clean: bool) -> StateRow: ...
    def mark_dirty(self, conn: Connection, session_ids: Sequence[str]) -> None: ...
    def insert_events(self, conn: Connection, rows: Sequence[EventRow], last_seq: int) -> None:
        """Insert one session's rows and raise its ``last_seq``; a taken event id or seq raises
        ``sqlalchemy.exc.IntegrityError`` (whatever the driver)."""
        ...

    def append_and_extend(
        self, conn: Connection, rows: Sequence[EventRow], last_seq: int, extension: Extension
    ) -> None:
        """:meth:`insert_events`, then what they add to the clean session's index
        (:meth:`extend_index` and :meth:`add_side_tips`), in as few round trips as the engine
        allows; the same ``IntegrityError`` as :meth:`insert_events` when an id is taken."""
        ...

    #: Whether :meth:`append_guarded` can write an append (else it always answers False).
    one_statement_appends: bool

    def append_guarded(
        self,
        conn: Connection,
        rows: Sequence[EventRow],
        last_seq: int,
        extension: Extension,
        known: SessionContext,
    ) -> bool:
        """:meth:`lock_session` and :meth:`append_and_extend` in one statement that writes only
        while the session's :meth:`locked_context` would still read ``known``; True when it
        wrote, False when it wrote nothing (the guard failed, or the engine or the append
        does not allow it: the caller appends in a transaction instead)."""
        ...

    def unstorable(self, values: Iterable[object]) -> str | None:
        """Why one of these text values cannot be stored on this engine (None: all can)."""
        ...

    def lock_session(self, conn: Connection, session_id: str) -> None:
        """Serialise appends to one session until the transaction ends (before its
        ``last_seq`` is read)."""
        ...

    def locked_context(self, conn: Connection, session_id: str) -> SessionContext | None:
        """:meth:`lock_session`, then the session's :meth:`Reader.session_context` (None: no
        such session), in as few round trips as the engine allows."""
        ...

    def ensure_session(
        self, conn: Connection, fields: Mapping[str, Any], *, rekey: bool
    ) -> int | None: ...

    # index rows and branch records
    def apply_changes(
        self, conn: Connection, deletes: Sequence[int], inserts: Sequence[NewRow]
    ) -> None: ...
    def extend_index(
        self,
        conn: Connection,
        state_id: int,
        rows: Sequence[NewRow],
        indexed_seq: int,
        leaf: str | None,
        *,
        tip: tuple[str, int | None] | None = None,
    ) -> None:
        """Add ``rows`` and advance the state to ``indexed_seq`` / ``leaf``; with ``tip``
        (``session_id``, the tip's seq), also :meth:`advance_active_branch` to ``leaf``."""
        ...

    def finish(self, conn: Connection, finish: Finish) -> None: ...
    def write_branches(
        self, conn: Connection, session_id: str, tree: Tree, seq_of_tip: Mapping[str, int]
    ) -> None: ...
    def bump_generation(self, conn: Connection, state_id: int) -> None: ...
    def advance_active_branch(
        self, conn: Connection, session_id: str, tip: str | None, tip_seq: int | None
    ) -> None: ...
    def add_side_tips(
        self, conn: Connection, session_id: str, tips: Sequence[tuple[str, int, str | None]]
    ) -> None: ...

    # maintenance
    def sweep_orphans(self, conn: Connection) -> None: ...
    def rederive(self, conn: Connection, session_id: str) -> int: ...
    def rebuild_all(self, conn: Connection) -> None: ...
    def optimize(self, conn: Connection) -> None: ...


class Connections(Protocol):
    """How one engine's SQLAlchemy engines are made and what their connections and
    transactions are set to (``Backend.connections``): the URL an engine is created from (and
    the synchronous URL of a host's async one), the settings each connection gets, how a
    transaction starts, and the execution options of a read that must see one snapshot.
    Nothing here reads or writes the plugin's tables."""

    def engine_url(self, url: URL, *, read_only: bool | None, kwargs: dict[str, Any]) -> URL:
        """The URL to create an engine from (``kwargs``: ``create_engine`` arguments, completed
        in place); ``read_only`` opens a database read-only where the engine can, ``None``
        when it cannot be written."""
        ...

    def database_file(self, url: URL) -> Path | None:
        """The database file of a URL naming a plain file (None: a server, memory, URIs)."""
        ...

    def in_memory(self, url: URL) -> bool:
        """Whether the URL names a database that lives on one connection in this process."""
        ...

    #: ``{async driver: synchronous driver}`` of this engine (driver names, without the
    #: dialect): a host's async URL opens the plugin's own, synchronous, engine on the same
    #: database (:meth:`sync_url`).
    sync_drivers: Mapping[str, str]

    def sync_url(self, url: URL) -> URL:
        """``url`` with an async driver (:attr:`sync_drivers`) replaced by the synchronous
        driver of the same database, its query carrying only what that driver reads; any
        other URL as it is."""
        ...

    def configure_engine(
        self, engine: Engine, *, busy_timeout_ms: int, wal: bool, durability: str
    ) -> None:
        """Attach the engine's per-connection settings and transaction starts (once);
        ``durability`` is one of :data:`DURABILITIES`."""
        ...

    def settle_connection(self, dbapi_connection: Any, *, busy_timeout_ms: int) -> None:
        """The settings that can still change on a connection whose transaction has begun but
        run no statement (a host session met before its engine was configured)."""
        ...

    def begin_write(self, conn: Connection) -> None:
        """Before a flush's first read of the plugin's tables: take whatever lock makes the
        read-then-write safe (SQLite: the write lock)."""
        ...

    def snapshot_options(
        self, *, read_only: bool = False, one_statement: bool = False
    ) -> dict[str, Any]:
        """Execution options of a connection whose statements must all read one snapshot (a
        search, a history read, a check); ``read_only``: and that may not write;
        ``one_statement``: a read that is usually one statement (a single search), which the
        backend moves to one snapshot itself should it need more."""
        ...

    def own_engine(self, engine: Engine) -> None:
        """Settings of an engine the plugin made itself from a URL (its connections are the
        plugin's alone), before any connection is made."""
        ...


class ImpactLists(Protocol):
    """The upkeep of the impact lists (:mod:`.impact`: a frequent word's index rows in score
    order, which search walks instead of ranking every match), as ``check`` and the
    reconciler ask it (``Backend.impact_lists``): finding a list that drifted from the index,
    and, on an engine whose lists can drift under concurrent writers, marking it untrusted,
    rebuilding it and tracking newly frequent words without waiting for a writer. Each method
    runs in the caller's transaction."""

    def drift(self, conn: Connection) -> dict[str, dict[str, int]]:
        """Each tracked word whose list differs from the rows the index says it should hold:
        ``{"missing": n, "extra": n}``."""
        ...

    def distrust(self, conn: Connection, words: Sequence[str]) -> None:
        """Stop trusting the lists of ``words`` (found drifted): their searches take the exact
        path until :meth:`repair` rebuilds them."""
        ...

    def repair(self, conn: Connection, *, verify: bool) -> list[str]:
        """Rebuild the untrusted lists and, with ``verify``, every one that differs from the
        index; returns the words rebuilt."""
        ...

    def promote_if_free(self, conn: Connection) -> None:
        """Track the words that became frequent when that needs no wait for a writer (the
        reconciler's pass, in a transaction of its own so that nothing else rolls back with
        it)."""
        ...


class Lease(Protocol):
    """The database-wide reconcile lease (one holder at a time)."""

    #: Why the last :meth:`try_acquire` failed (None after a success).
    blocked_by: LeaseWait | None

    def try_acquire(self) -> bool: ...
    def renew(self, conn: Connection) -> bool:
        """Inside a write transaction: whether this lease still holds it."""
        ...

    def release(self) -> None: ...


class Partitions(Protocol):
    """The index rows partitioned by agent (``Backend.partitions``; PostgreSQL's opt-in
    layout). Each method runs in the caller's transaction."""

    #: Partitions :meth:`partition` makes when not told how many.
    default_count: int
    #: Most partitions :meth:`partition` accepts.
    max_count: int

    def partition(self, conn: Connection, partitions: int | None) -> int:
        """Move the index rows into ``partitions`` partitions by agent (None:
        :attr:`default_count`); returns the rows moved."""
        ...

    def unpartition(self, conn: Connection) -> int:
        """Move the partitioned index rows back into the plain table; returns the rows moved."""
        ...

    def partitioned(self, conn: Connection) -> bool:
        """Whether the database has the layout partitioned by agent."""
        ...


class Replicas(Protocol):
    """Hot standbys a store may read from (``Backend.replicas``; ``TranscriptStore(read_url=)``):
    where a server is in its primary's history. Every method only reads."""

    def in_recovery(self, conn: Connection) -> bool:
        """Whether ``conn`` is on a hot standby (it replays its primary and refuses writes)."""
        ...

    def current_lsn(self, conn: Connection) -> int | None:
        """A log position at or past the commit of every transaction that committed before the
        call (None: ``conn`` is on a standby)."""
        ...

    def replayed_lsn(self, conn: Connection) -> int | None:
        """How far a standby replayed (None: the server is not replaying)."""
        ...

    def parse_lsn(self, lsn: str) -> int:
        """A log position written as text, as the integer positions compare as (``ValueError``
        for anything else)."""
        ...


class Pooler(Protocol):
    """A connection pooler in transaction mode in front of the server (``Backend.pooler``;
    ``TranscriptStore(transaction_pooler=True)``)."""

    def use(self, engine: Engine) -> Engine:
        """Mark ``engine`` as reaching its server through such a pooler (idempotent): nothing
        it does may outlive one transaction on a server connection."""
        ...


class Databases(Protocol):
    """Whole databases on a server, created and dropped by name (``Backend.databases``; the
    testing kit's per-test databases). Each method runs through ``server``, an engine in
    autocommit mode connected to another database of the same server."""

    def create(self, server: Engine, name: str) -> None:
        """Create the empty database ``name`` (letters, digits and ``_`` only)."""
        ...

    def drop(self, server: Engine, name: str) -> None:
        """Drop ``name`` if it exists, ending the connections still open on it where the
        server can."""
        ...


class Segments(Protocol):
    """An index kept in segments a background merge joins (``Backend.segments``; SQLite's
    FTS5). Without it there is nothing to merge and no connection is needed to say so."""

    def needs_merge(self, conn: Connection) -> bool:
        """Whether the index is split enough that a background merge would speed search."""
        ...

    def merge_step(self, conn: Connection) -> bool:
        """One bounded step of that merge, in the caller's write transaction; whether it
        merged anything (False: nothing left to merge)."""
        ...


class Backend(Reader, Writer, Protocol):
    """One database engine: its reads and writes, and what it needs of engines, connections
    and transactions."""

    #: The SQLAlchemy dialect name it serves.
    name: str

    def attach_ddl(self) -> None:
        """Attach the engine's own DDL to the plugin's tables, so ``metadata.create_all()``
        creates it (called once, when the backend is registered)."""
        ...

    def storage_full(self, error: BaseException) -> bool:
        """Whether ``error``, raised by this engine's driver, says the storage under the
        database has no space left for the write (SQLite ``SQLITE_FULL``, PostgreSQL
        SQLSTATE 53100 ``disk_full``)."""
        ...

    #: ``(driver module, package extra)``: the driver the plugin works with on this engine and
    #: the extra of ``pip install 'openclaw-fts[<extra>]'`` that installs it; None when the
    #: engine's driver ships with Python.
    packaged_driver: tuple[str, str] | None

    #: The column weights of the engine's rank (SQLite's bm25; empty: its rank takes none).
    rank_weights: tuple[float, ...]

    #: How its engines and connections are made and set up.
    connections: Connections
    #: The upkeep of the impact lists (every engine has them).
    impact_lists: ImpactLists

    #: What only some engines have, as optional objects (None: this engine has none): the
    #: layout partitioned by agent, hot standbys to read from, a pooler in transaction mode,
    #: an index kept in segments a background merge joins, whole databases made on a server.
    partitions: Partitions | None
    replicas: Replicas | None
    pooler: Pooler | None
    segments: Segments | None
    databases: Databases | None

    def lease(self, engine: Engine, holder: str, seconds: float) -> Lease:
        """The reconcile lease of this engine, held as ``holder``."""
        ...

    def match_parts(
        self, mi: Any, compiled: CompiledQuery
    ) -> tuple[FromClause | None, ColumnElement[bool], ColumnElement[bool], ColumnElement[float]]:
        """The composable search's ``(extra table, join condition to index rows mi, match,
        rank)`` as SQLAlchemy Core."""
        ...


_BACKENDS: dict[str, Backend] = {}


def register(found: Backend) -> None:
    """Called once by each backend package at import, with its one instance."""
    found.attach_ddl()
    _BACKENDS[found.name] = found


def backend_for(dialect: str) -> Backend:
    """The backend of a dialect name (``engine.dialect.name``)."""
    found = _BACKENDS.get(dialect)
    if found is None:
        raise UnsupportedDatabaseError(
            f"openclaw-fts has no index backend for {dialect!r} databases"
        )
    return found


def backends() -> tuple[Backend, ...]:
    """Every registered backend."""
    return tuple(_BACKENDS.values())


def partition_counts() -> tuple[int, int]:
    """``(default, most)`` partitions of the layout partitioned by agent, from the engine that
    has one (:class:`Partitions`): the command line's bounds, known before any database is."""
    for found in _BACKENDS.values():
        if found.partitions is not None:
            return found.partitions.default_count, found.partitions.max_count
    raise UnsupportedDatabaseError("openclaw-fts has no backend with a partitioned layout")


def with_sync_driver(url: URL, drivers: Mapping[str, str]) -> URL:
    """``url`` with its driver replaced by ``drivers[driver]`` (as it is when the driver is not
    a key): the driver swap of :meth:`Backend.sync_url`."""
    driver = drivers.get(url.get_driver_name())
    return url if driver is None else url.set(drivername=f"{url.get_backend_name()}+{driver}")


def dialect_of(target: Engine | Connection | Session | URL | str) -> str:
    """The SQLAlchemy dialect name of an engine, a connection, an ORM session's bind or a URL
    (for messages and the supported-dialect checks; to act on it, use :func:`backend_of`)."""
    if isinstance(target, (str, URL)):
        return make_url(target).get_backend_name()
    if isinstance(target, Session):
        return target.get_bind().dialect.name
    return target.dialect.name


def backend_of(target: Engine | Connection | Session | URL | str) -> Backend:
    """The backend of an engine's, a connection's, an ORM session's or a URL's dialect."""
    return backend_for(dialect_of(target))


def known_backend(target: Engine | Connection | Session | URL | str) -> Backend | None:
    """:func:`backend_of`, or None for a dialect without a backend."""
    return _BACKENDS.get(dialect_of(target))


def backend(conn: Connection) -> Backend:
    """The backend of ``conn``'s dialect."""
    return backend_for(conn.dialect.name)


def reader(conn: Connection) -> Reader:
    """The read side of ``conn``'s backend."""
    return backend_for(conn.dialect.name)


def writer(conn: Connection) -> Writer:
    """The write side of ``conn``'s backend."""
    return backend_for(conn.dialect.name)
