"""WAL positions on PostgreSQL: how far a primary has written and a hot standby has replayed.

Invariant: every statement here only reads (a hot standby runs all of them), and none opens a
write transaction. A WAL position (an LSN, ``'16/B374D848'``) is compared as the integer it
writes in hex (:func:`parse_lsn`), never as text. ``pg_current_wal_insert_lsn()`` read AFTER a
commit returned is at or past that commit's record, so a standby whose replay position reached
it shows that commit to every snapshot it takes afterwards; a position just past a page header
is taken back to the page boundary (:func:`records_end`), which is where the standby's replay
position stops when no record follows.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

#: A primary's current WAL insert and flush positions (both fail on a standby), its
#: ``synchronous_commit`` setting, and the WAL page and segment sizes (:func:`records_end`).
_CURRENT_LSN_SQL = (
    "SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text, "
    "current_setting('synchronous_commit'), current_setting('wal_block_size')::int, "
    "pg_size_bytes(current_setting('wal_segment_size'))"
)
#: Bytes of a WAL page's header: the short one, and the long one that opens a segment.
SHORT_PAGE_HEADER = 24
LONG_PAGE_HEADER = 40
#: Whether the server is replaying WAL (a hot standby), and up to where it replayed.
_REPLAY_SQL = "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"


def parse_lsn(lsn: str) -> int:
    """``'16/B374D848'`` as an integer (``ValueError`` for anything that is not an LSN)."""
    high, sep, low = lsn.strip().partition("/")
    if not sep or not high or not low:
        raise ValueError(f"not a WAL position: {lsn!r}")
    return (int(high, 16) << 32) | int(low, 16)


def in_recovery(conn: Connection) -> bool:
    """True on a hot standby (a server replaying WAL: it refuses every write)."""
    return bool(conn.execute(text("SELECT pg_is_in_recovery()")).scalar())


def records_end(lsn: int, page: int, segment: int) -> int:
    """The end of the last WAL record before insert position ``lsn``. When the insert position
    sits just after a page header (the previous record ended at the page boundary), it is past
    anything a standby will ever report as replayed until more WAL is written; the boundary
    itself is what the standby reaches."""
    offset = lsn % page
    if offset == SHORT_PAGE_HEADER and lsn % segment != SHORT_PAGE_HEADER:
        return lsn - offset
    if offset == LONG_PAGE_HEADER and lsn % segment == LONG_PAGE_HEADER:
        return lsn - offset
    return lsn


def current_lsn(conn: Connection) -> int | None:
    """A WAL position at or past the commit record of every transaction that committed before
    this call; None on a standby. With ``synchronous_commit`` on (any value but ``off``) a
    commit returns only once its record is flushed, so the flush position is enough, and it is
    what a standby receives: the insert position can run ahead of it with records no commit
    waits for (``RUNNING_XACTS``), which a standby gets only at the next flush. With it off, a
    commit may return before its record is flushed: the insert position
    (:func:`records_end`)."""
    if in_recovery(conn):
        return None
    insert, flush, synchronous, page, segment = conn.execute(text(_CURRENT_LSN_SQL)).one()
    if str(synchronous) != "off":
        return parse_lsn(str(flush))
    return records_end(parse_lsn(str(insert)), int(page), int(segment))


def replayed_lsn(conn: Connection) -> int | None:
    """How far a standby replayed; None on a server that is not replaying (a primary, or a
    promoted standby): it has everything it will ever show."""
    recovering, lsn = conn.execute(text(_REPLAY_SQL)).one()
    if not recovering:
        return None
    return 0 if lsn is None else parse_lsn(str(lsn))  # None: nothing replayed yet


class StandbyReplicas:
    """:class:`~openclaw_fts.index.base.Replicas` of PostgreSQL: this module's functions."""

    def in_recovery(self, conn: Connection) -> bool:
        return in_recovery(conn)

    def current_lsn(self, conn: Connection) -> int | None:
        return current_lsn(conn)

    def replayed_lsn(self, conn: Connection) -> int | None:
        return replayed_lsn(conn)

    def parse_lsn(self, lsn: str) -> int:
        return parse_lsn(lsn)
