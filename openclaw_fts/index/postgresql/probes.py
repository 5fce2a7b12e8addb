"""PostgreSQL's revision probes (:class:`~openclaw_fts.index.probes.RevisionProbes`): revisions
0006, 0008, 0009, 0010 and 0012 change no table, only a statistics target, a trigger and
functions, 0011 adds an index, 0013 a column the models do not declare (the impact lists'
rows' time) and 0014 the pending marks (a table the ORM does not model, its triggers and an
index), read here from the catalogue; the ``tsvector`` column and its GIN index, that column,
the pending marks' table and the index state's version index are the engine's own.

Invariant: every probe only reads the system catalogue. Revision 0007's backfill runs its own
SQL function here, so these probes have no ``track_frequent`` (the one probe that writes).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from ...models import TIME_INDEX
from ..impact import IMPACT_TABLE
from ..pending import PENDING_TABLE
from . import impact, pending_marks
from .names import CONTENT_TABLE, TSVECTOR_COLUMN, TSVECTOR_STATISTICS_TARGET, is_search_object
from .partition import PARTITIONED_TABLE


class PostgresqlProbes:
    """What PostgreSQL's catalogue says about the plugin's revisions."""

    def unmodelled(self, type_: str, name: str, table: str | None) -> bool:
        """The generated ``tsvector`` column and its GIN index; the impact lists' rows' time
        (revision 0013: PostgreSQL's walk reads it, SQLite's lists have none); the pending
        marks' table and the index state's version index (revision 0014)."""
        if type_ == "column" and table == IMPACT_TABLE and name == impact.ROW_TIME_COLUMN:
            return True
        if type_ == "table" and name == PENDING_TABLE:
            return True
        if type_ == "index" and name == pending_marks.VERSION_INDEX:
            return True
        return is_search_object(type_, name, table)

    def tables_at_head(self, conn: Connection) -> bool:
        """Revision 0006 set the ``tsvector`` statistics target (0005 and 0006 have the same
        tables)."""
        return has_tsvector_statistics(conn)

    def triggers_at_head(self, conn: Connection) -> bool:
        """Revision 0008 made the ``last_seq`` trigger fire per statement (0007 and 0008 have
        the same tables)."""
        return last_seq_per_statement(conn)

    def lists_guarded(self, conn: Connection) -> bool:
        """Revision 0009 serialised promotions against the writers of index rows."""
        return impact.guarded(conn)

    def lists_self_promoting(self, conn: Connection) -> bool:
        """Revision 0010 promotes frequent words from the plugin's own counts."""
        return impact.self_promoting(conn)

    def rows_in_time_order(self, conn: Connection) -> bool:
        """Revision 0011 added the index rows' time index (on the partitioned table in that
        layout)."""
        return bool(
            conn.execute(
                text("SELECT to_regclass(:name) IS NOT NULL"), {"name": TIME_INDEX}
            ).scalar()
        )

    def promotion_bounded(self, conn: Connection) -> bool:
        """Revision 0012 made the promotion function take a bound on the words it tracks
        (``pg_proc``: its two-argument form)."""
        return impact.bounded(conn)

    def lists_timed(self, conn: Connection) -> bool:
        """Revision 0013 added the impact lists' rows' time (``pg_attribute``)."""
        return impact.has_row_time(conn)

    def pending_marked(self, conn: Connection) -> bool:
        """Revision 0014 added the pending marks' table."""
        return pending_marks.marked(conn)

    def vocabulary_kept(self, conn: Connection) -> bool:
        """Revision 0015 does nothing on PostgreSQL: a database with 0014 has it."""
        return True


#: The trigger that raises ``last_seq`` on raw event inserts, and its ``pg_trigger.tgtype``
#: bit for a row trigger (``TRIGGER_TYPE_ROW``): revision 0008 made it a statement trigger.
LAST_SEQ_TRIGGER = "transcript_events_last_seq"
TRIGGER_TYPE_ROW = 1


def last_seq_per_statement(conn: Connection) -> bool:
    """Whether :data:`LAST_SEQ_TRIGGER` fires once per statement (revision 0008) rather than
    per row (how a database whose version table does not name the plugin's revisions is told
    apart from one at 0007: the two have the same tables)."""
    tgtype = conn.execute(
        text(
            "SELECT tgtype FROM pg_trigger WHERE tgname = :name "
            "AND tgrelid = to_regclass('transcript_events')"
        ),
        {"name": LAST_SEQ_TRIGGER},
    ).scalar()
    return tgtype is not None and not int(tgtype) & TRIGGER_TYPE_ROW


def has_tsvector_statistics(conn: Connection) -> bool:
    """Whether :data:`TSVECTOR_COLUMN` has the statistics target revision 0006 sets (how a
    database whose version table does not name the plugin's revisions is told apart from one
    at 0005: the two have the same tables)."""
    target = conn.execute(
        text(
            "SELECT max(attstattarget) FROM pg_attribute WHERE attrelid IN "
            "(to_regclass(:table), to_regclass(:partitioned)) "
            "AND attname = :column AND NOT attisdropped"
        ),
        {"table": CONTENT_TABLE, "partitioned": PARTITIONED_TABLE, "column": TSVECTOR_COLUMN},
    ).scalar()
    return target == TSVECTOR_STATISTICS_TARGET
