"""What every index backend offers, and the registry that picks one per database dialect.

Invariant: the rest of the plugin reaches the index only through the interfaces declared here
(:class:`Reader` for search-side reads, :class:`Writer` for everything that writes transcripts,
index rows, index state and branch records), obtained with :func:`reader` / :func:`writer` from
a connection; each
dialect's package under ``openclaw_fts/index/`` registers exactly one implementation, the way
Alembic registers one ``Impl`` per dialect. An unregistered dialect is refused with
:class:`~openclaw_fts.errors.UnsupportedDatabaseError`. This module holds no SQL and imports no
backend at module load (each backend registers itself when its package is imported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from ..errors import UnsupportedDatabaseError, shorten
from ..query import CompiledQuery

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..transcript import Tree, TreeNode
    from ..visibility import Caller

Order = Literal["relevance", "recent"]


@dataclass(frozen=True)
class SearchRequest:
    """Validated arguments of one search (built by ``search.build_request``)."""

    query: str
    compiled: CompiledQuery | None
    limit: int
    session_key: str | None
    role: str | None
    since: int | None
    until: int | None
    order: Order


#: A hit as a backend's ranking returns it: (index row id, session_id, seq, event_id, role,
#: timestamp_ms, session_key, rank). ``rank``: LOWER is better (results are in ascending rank;
#: ``score`` = ``-rank``), its scale backend-defined (docs/tools.md); None when not ranked.
Hit = tuple[int, str, int, str, str, int, str, float | None]


class Reader(Protocol):
    """The search side of an index backend. Every method runs on the caller's connection and
    transaction; none writes."""

    #: Whether :meth:`any_pending` is cheap enough to ask before every search (SQLite: a memo
    #: keyed by ``PRAGMA data_version``); when not, search asks only :meth:`pending_visible`.
    GLOBAL_PENDING_PROBE: bool

    def any_pending(self, conn: Connection) -> bool:
        """Whether any session at all is pending in this transaction's snapshot (read first: it
        may start the snapshot every later statement of the search sees)."""
        ...

    def pending_visible(self, conn: Connection, caller: Caller, session_key: str | None) -> bool:
        """Whether any session the caller may see (and, when given, keyed ``session_key``) is
        pending."""
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


# --------------------------------------------------------------------------- the write side


@dataclass(slots=True)
class StateRow:
    """A session's ``openclaw_index_state`` row."""

    id: int
    indexed_seq: int
    indexed_leaf: str | None
    needs_rebuild: bool
    generation: int
    index_version: int


@dataclass(slots=True)
class SessionContext:
    """A session's write-relevant columns and index state, read in one statement."""

    last_seq: int
    incognito: bool
    state: StateRow | None


@dataclass(frozen=True, slots=True)
class NewRow:
    """An index row to write (``body``: ``tokens.index_body`` of the masked text)."""

    session_id: str
    seq: int
    event_id: str
    role: str
    timestamp_ms: int
    body: str
    sess: str


@dataclass(frozen=True, slots=True)
class StoredRow:
    """An index row as stored (what the planner compares with the row it would write; the
    session token is derived from the session, so it is not read back)."""

    id: int
    seq: int
    event_id: str
    role: str
    timestamp_ms: int
    body: str


@dataclass(frozen=True, slots=True)
class EarlierEvent:
    """What the append fast path needs of an earlier event named as a parent: its derived
    columns, its JSON only when it is a leaf control, and (SQLite: ``json_type``) whether an
    empty ``parent_id`` column stands for an explicit null."""

    seq: int
    type: str | None
    side: bool
    parent_id: str | None
    leaf_json: str | None
    parent_json_type: str | None


#: One ``transcript_events`` row to insert, keyed by column name (``session_id``, ``seq``,
#: ``event_id``, ``parent_id``, ``type``, ``role``, ``target_id``, ``side``, ``timestamp_ms``,
#: ``event``).
EventRow = Mapping[str, Any]
#: Columns of :data:`EventRow`, in the order the backends insert them.
EVENT_COLUMNS = (
    "session_id",
    "seq",
    "event_id",
    "parent_id",
    "type",
    "role",
    "target_id",
    "side",
    "timestamp_ms",
    "event",
)


@dataclass(frozen=True, slots=True)
class Finish:
    """What marks a planned session clean: its watermark, the leaf the fast path may extend
    (None unless the branch is a rooted path) and its branch records."""

    session_id: str
    state_id: int
    last_seq: int
    leaf: str | None
    tree: Tree
    seq_of_tip: Mapping[str, int]


class Writer(Protocol):
    """The write side of an index backend: every statement that writes, and the reads the
    writers plan from. Every method runs on the caller's connection and transaction."""

    # sessions and index state
    def session_context(self, conn: Connection, session_id: str) -> SessionContext | None: ...
    def create_state(self, conn: Connection, session_id: str, *, clean: bool) -> StateRow: ...
    def mark_dirty(self, conn: Connection, session_ids: Sequence[str]) -> None: ...
    def session_token(self, state_id: int) -> str:
        """What the session's index rows carry beside their text (``sess``)."""
        ...

    def session_ids(self, conn: Connection, keys: Sequence[str] | None) -> list[str]: ...

    # transcript events: the one write path of the store, the importer and bulk ORM inserts
    def insert_events(self, conn: Connection, rows: Sequence[EventRow], last_seq: int) -> None:
        """Insert one session's rows and raise its ``last_seq``; a taken event id or seq raises
        ``sqlalchemy.exc.IntegrityError`` (whatever the driver)."""
        ...

    def unstorable(self, values: Iterable[object]) -> str | None:
        """Why one of these text values cannot be stored on this engine (None: all can)."""
        ...

    def lock_session(self, conn: Connection, session_id: str) -> None:
        """Serialise appends to one session until the transaction ends (before its
        ``last_seq`` is read)."""
        ...

    def last_seq(self, conn: Connection, session_id: str) -> int | None: ...
    def taken_event_ids(self, conn: Connection, session_id: str, ids: list[str]) -> set[str]: ...
    def unkeyed_events(self, conn: Connection, session_id: str) -> list[str]: ...
    def ensure_session(
        self, conn: Connection, fields: Mapping[str, Any], *, rekey: bool
    ) -> int | None: ...

    # reading a session's tree
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

    # index rows
    def index_rows(self, conn: Connection, session_id: str) -> list[StoredRow]: ...
    def index_row_sizes(self, conn: Connection, session_id: str) -> list[tuple[int, int, int]]: ...
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
    ) -> None: ...
    def finish(self, conn: Connection, finish: Finish) -> None: ...
    def write_branches(
        self, conn: Connection, session_id: str, tree: Tree, seq_of_tip: Mapping[str, int]
    ) -> None: ...
    def bump_generation(self, conn: Connection, state_id: int) -> None: ...
    def snapshot(self, conn: Connection, session_id: str) -> tuple[int, int] | None: ...

    # branch records
    def advance_active_branch(
        self, conn: Connection, session_id: str, tip: str | None, tip_seq: int | None
    ) -> None: ...
    def add_side_tips(
        self, conn: Connection, session_id: str, tips: Sequence[tuple[str, int, str | None]]
    ) -> None: ...

    # the reconciler's view
    def status(self, conn: Connection) -> dict[str, int]: ...
    def pending_session_ids(self, conn: Connection) -> list[str]: ...
    def sweep_orphans(self, conn: Connection) -> None: ...

    # maintenance and checks
    def rederive(self, conn: Connection, session_id: str) -> int: ...
    def rebuild_all(self, conn: Connection) -> None: ...
    def optimize(self, conn: Connection) -> None: ...
    def integrity_check(self, conn: Connection) -> None: ...
    def orphan_index_rows(self, conn: Connection) -> int: ...
    def clean_session_ids(self, conn: Connection) -> list[str]: ...


@dataclass(frozen=True)
class LeaseWait:
    """Why a reconciler is waiting: who holds the lease and for how much longer (0: until it
    lets go; a PostgreSQL advisory lock does not expire)."""

    holder: str
    expires_in: float

    @property
    def reason(self) -> str:
        return (
            f"another reconciler ({shorten(self.holder)}) holds the lease; waiting until it "
            f"finishes or its lease expires in {max(0.0, self.expires_in):.0f} s"
        )


_FACTORIES: dict[tuple[str, str], Callable[[], object]] = {}
_INSTANCES: dict[tuple[str, str], object] = {}


def register_reader(dialect: str, factory: Callable[[], Reader]) -> None:
    """Called once by a backend package at import."""
    _FACTORIES["read", dialect] = factory


def register_writer(dialect: str, factory: Callable[[], Writer]) -> None:
    """Called once by a backend package at import."""
    _FACTORIES["write", dialect] = factory


def _backend(side: str, conn: Connection) -> object:
    """One instance per (side, dialect), made on first use."""
    key = (side, conn.dialect.name)
    found = _INSTANCES.get(key)
    if found is None:
        if key not in _FACTORIES:
            _load(key[1])
        if key not in _FACTORIES:
            raise UnsupportedDatabaseError(
                f"openclaw-fts has no index backend for {key[1]!r} databases"
            )
        found = _INSTANCES[key] = _FACTORIES[key]()
    return found


def reader(conn: Connection) -> Reader:
    """The read backend for ``conn``'s dialect."""
    return cast("Reader", _backend("read", conn))


def writer(conn: Connection) -> Writer:
    """The write backend for ``conn``'s dialect."""
    return cast("Writer", _backend("write", conn))


def _load(name: str) -> None:
    """Import the backend package of a known dialect (it registers itself)."""
    if name == "sqlite":
        from . import sqlite  # noqa: F401
    elif name == "postgresql":
        from . import postgresql  # noqa: F401
