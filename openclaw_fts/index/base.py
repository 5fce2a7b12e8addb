"""What every index backend offers, and the registry that picks one per database dialect.

Invariant: the rest of the plugin reaches the index only through the interfaces declared here
(:class:`Reader` for search-side reads, :class:`Writer` for everything that writes transcripts,
index rows, index state and branch records), obtained with :func:`reader` / :func:`writer` from
a connection; each
dialect's package under ``openclaw_fts/index/`` registers exactly one implementation, the way
Alembic registers one ``Impl`` per dialect. An unregistered dialect is refused with
:class:`~openclaw_fts.errors.UnsupportedDatabaseError`. This module holds no SQL and imports no
backend (each registers itself when ``openclaw_fts.index`` is imported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import UnsupportedDatabaseError
from ..rows import (
    EarlierEvent,
    EventRow,
    Finish,
    Hit,
    NewRow,
    SearchRequest,
    SessionContext,
    StateRow,
    StoredRow,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..caller import Caller
    from ..transcript import Tree, TreeNode


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

    def near_words(
        self, conn: Connection, caller: Caller, token: str, *, max_distance: int, want: int
    ) -> list[tuple[str, int]]:
        """Up to ``want`` indexed words within ``max_distance`` edits of ``token`` (a folded
        index token) that occur in a message the caller may see, nearest and most frequent
        first, each with how many indexed messages hold it (of any session: it only orders
        suggestions and is never shown). Visibility is in the statement that proves each
        word: a word only in sessions the caller cannot see is never returned."""
        ...

    def visible_words(
        self,
        conn: Connection,
        caller: Caller,
        words: Sequence[str],
        *,
        prefix: bool = False,
        want: int = 1,
    ) -> list[tuple[str, int]]:
        """Up to ``want`` of ``words`` (folded index tokens) that occur as a word (``prefix``:
        as the start of a word) in an indexed message the caller may see, with how many
        indexed messages hold each (of any session: it only orders suggestions and is never
        shown), most frequent first. Visibility is in the statement that proves each word: a
        word only in sessions the caller cannot see is never returned."""
        ...


# --------------------------------------------------------------------------- the write side


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
    def event_ids(self, conn: Connection, session_id: str) -> set[str]:
        """The ids of the session's stored events (those that have one)."""
        ...

    def session_owner(self, conn: Connection, session_id: str) -> tuple[str, str] | None:
        """``(agent_id, session_key)`` of a stored session (None: no such session)."""
        ...

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
