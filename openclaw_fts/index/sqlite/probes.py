"""SQLite's revision probes (:class:`~openclaw_fts.index.probes.RevisionProbes`): the revisions
that change only PostgreSQL objects do nothing here, and FTS5's tables are its own.

Invariant: every probe but :meth:`SqliteProbes.track_frequent` (revision 0007's backfill,
which writes the impact lists) reads only ``sqlite_master``: SQLite's revisions 0005–0010 are
told apart by their tables alone, 0011 by its index, 0015 by its vocabulary table; 0012, 0013
and 0014 do nothing here.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from ...models import TIME_INDEX
from . import impact
from .fts import cursor, is_fts_table
from .vocabulary import VOCABULARY_TABLE


class SqliteProbes:
    """What SQLite's schema says about the plugin's revisions."""

    def unmodelled(self, type_: str, name: str, table: str | None) -> bool:
        """The FTS5 virtual table and its shadow tables, and the writer-kept vocabulary."""
        return type_ == "table" and (is_fts_table(name) or name == VOCABULARY_TABLE)

    def tables_at_head(self, conn: Connection) -> bool:
        """Revision 0006 does nothing on SQLite: a database with 0005's tables has it."""
        return True

    def triggers_at_head(self, conn: Connection) -> bool:
        """Revision 0008 does nothing on SQLite: a database with 0007's tables has it."""
        return True

    def lists_guarded(self, conn: Connection) -> bool:
        """Revision 0009 does nothing on SQLite: a database with 0008 has it."""
        return True

    def track_frequent(self, conn: Connection, min_docs: int) -> int:
        """The full vocabulary scan of :func:`.impact.promote`."""
        return len(impact.promote(cursor(conn), min_docs))

    def lists_self_promoting(self, conn: Connection) -> bool:
        """Revision 0010 does nothing on SQLite: a database with 0009 has it."""
        return True

    def rows_in_time_order(self, conn: Connection) -> bool:
        """Revision 0011 added the index rows' time index."""
        found = conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = :name"),
            {"name": TIME_INDEX},
        ).first()
        return found is not None

    def promotion_bounded(self, conn: Connection) -> bool:
        """Revision 0012 does nothing on SQLite: a database with 0011 has it."""
        return True

    def lists_timed(self, conn: Connection) -> bool:
        """Revision 0013 does nothing on SQLite: a database with 0012 has it."""
        return True

    def pending_marked(self, conn: Connection) -> bool:
        """Revision 0014 does nothing on SQLite (its one pending probe is memoised by
        ``PRAGMA data_version``): a database with 0013 has it."""
        return True

    def vocabulary_kept(self, conn: Connection) -> bool:
        """Revision 0015 added the writer-kept vocabulary's table."""
        found = conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
            {"name": VOCABULARY_TABLE},
        ).first()
        return found is not None
