"""What every index backend offers, and the registry that picks one per database dialect.

Invariant: the rest of the plugin reaches the index only through the interfaces declared here
(:class:`Reader` for search-side reads), obtained with :func:`reader` from a connection; each
dialect's package under ``openclaw_fts/index/`` registers exactly one implementation, the way
Alembic registers one ``Impl`` per dialect. An unregistered dialect is refused with
:class:`~openclaw_fts.errors.UnsupportedDatabaseError`. This module holds no SQL and imports no
backend at module load (each backend registers itself when its package is imported).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from ..errors import UnsupportedDatabaseError
from ..query import CompiledQuery

if TYPE_CHECKING:
    from sqlalchemy import Connection

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

    def hit_texts(self, conn: Connection, hits: list[Hit]) -> dict[int, str]:
        """Each hit's searchable text (masked, clean), by index row id."""
        ...


_READERS: dict[str, Callable[[], Reader]] = {}


def register_reader(dialect: str, factory: Callable[[], Reader]) -> None:
    """Called once by a backend package at import."""
    _READERS[dialect] = factory


def reader(conn: Connection) -> Reader:
    """The read backend for ``conn``'s dialect."""
    name = conn.dialect.name
    if name not in _READERS:
        _load(name)
    try:
        return _READERS[name]()
    except KeyError:
        raise UnsupportedDatabaseError(
            f"openclaw-fts has no index backend for {name!r} databases"
        ) from None


def _load(name: str) -> None:
    """Import the backend package of a known dialect (it registers itself)."""
    if name == "sqlite":
        from . import sqlite  # noqa: F401
    elif name == "postgresql":
        from . import postgresql  # noqa: F401
