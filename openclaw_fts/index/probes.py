"""What a database's own schema says about the plugin revisions it holds: the migration side of
each engine, kept off the runtime backend (:mod:`.base`).

Invariant: only the migration code (``openclaw_fts.migrate``, ``openclaw_fts.alembic`` and
revision 0007's backfill, :func:`backfill_probes_of`) asks these questions; each engine package
registers one :class:`RevisionProbes` under its dialect name when ``openclaw_fts.index`` is
imported, beside its backend, and an unregistered dialect is refused with
:class:`~openclaw_fts.errors.UnsupportedDatabaseError`. This module holds no SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import UnsupportedDatabaseError

if TYPE_CHECKING:
    from sqlalchemy import Connection


class RevisionProbes(Protocol):
    """One engine's answers to what a host's version table may not say (a host revision that
    ``depends_on`` the plugin's hides it), and to what Alembic's autogenerate must leave alone."""

    def unmodelled(self, type_: str, name: str, table: str | None) -> bool:
        """Whether an object Alembic reflects (``type_``: ``table``, ``column``, ``index``…;
        ``table``: a column's or an index's table) is this engine's own, which the ORM
        metadata does not model, so autogenerate must not propose dropping it."""
        ...

    def tables_at_head(self, conn: Connection) -> bool:
        """On a database holding every plugin table of revision 0005 (and not 0007's): whether
        it also has what revision 0006 adds."""
        ...

    def triggers_at_head(self, conn: Connection) -> bool:
        """On a database holding every plugin table (revision 0007's included): whether it
        also has what revision 0008 changes."""
        ...

    def lists_guarded(self, conn: Connection) -> bool:
        """On a database at revision 0008 by its tables and triggers: whether it also has
        what revision 0009 changes."""
        ...

    def lists_self_promoting(self, conn: Connection) -> bool:
        """On a database at revision 0009 by its tables and triggers: whether it also has
        what revision 0010 changes."""
        ...

    def rows_in_time_order(self, conn: Connection) -> bool:
        """On a database at revision 0010 by its tables, triggers and functions: whether it
        also has what revision 0011 adds (the index rows' time index)."""
        ...

    def promotion_bounded(self, conn: Connection) -> bool:
        """On a database at revision 0011 by its tables, triggers, functions and indexes:
        whether it also has what revision 0012 changes (a promotion tracks a bounded number
        of words)."""
        ...

    def lists_timed(self, conn: Connection) -> bool:
        """On a database at revision 0012 by its tables, triggers, functions and indexes:
        whether it also has what revision 0013 adds (the impact lists' rows carry their index
        row's time)."""
        ...

    def pending_marked(self, conn: Connection) -> bool:
        """On a database at revision 0013 by its tables, triggers, functions and indexes:
        whether it also has what revision 0014 adds (the pending marks)."""
        ...

    def vocabulary_kept(self, conn: Connection) -> bool:
        """On a database at revision 0014 by its tables, triggers, functions and indexes:
        whether it also has what revision 0015 adds (SQLite's writer-kept vocabulary)."""
        ...


@runtime_checkable
class BackfillProbes(RevisionProbes, Protocol):
    """The probes of an engine whose revision 0007 fills the impact lists through the plugin's
    code (SQLite); PostgreSQL's 0007 runs its own SQL function, so its probes have none."""

    def track_frequent(self, conn: Connection, min_docs: int) -> int:
        """Revision 0007's backfill: track every word held by at least ``min_docs`` indexed
        messages, each with its whole impact list; returns how many were tracked. The one
        probe that writes."""
        ...


_PROBES: dict[str, RevisionProbes] = {}


def register_probes(dialect: str, probes: RevisionProbes) -> None:
    """Called once by each engine package at import, with its one instance."""
    _PROBES[dialect] = probes


def probes_of(conn: Connection) -> RevisionProbes:
    """The revision probes of ``conn``'s dialect."""
    found = _PROBES.get(conn.dialect.name)
    if found is None:
        raise UnsupportedDatabaseError(
            f"openclaw-fts has no index backend for {conn.dialect.name!r} databases"
        )
    return found


def backfill_probes_of(conn: Connection) -> BackfillProbes:
    """The probes of ``conn``'s dialect that run revision 0007's backfill; refuses an engine
    whose revision 0007 fills its lists itself."""
    found = probes_of(conn)
    if not isinstance(found, BackfillProbes):
        raise UnsupportedDatabaseError(
            f"openclaw-fts backfills no impact lists through its code on {conn.dialect.name!r}"
        )
    return found


def all_probes() -> tuple[RevisionProbes, ...]:
    """Every registered engine's probes (Alembic's name filter does not know the engine)."""
    return tuple(_PROBES.values())
