"""The index rows in time order: an index on ``message_index (timestamp_ms)``.

A search ordered ``recent`` (newest first) had nothing in the index ordered by time: it joined
every match to its index row, scored it and sorted (bench/NOTES.md, "Filters on the fast
paths": 9-150x the same search by relevance on SQLite, 6-25x on PostgreSQL, at 100k events, for
common words). With this index SQLite proves that a walk of FTS5's matches newest row id first
holds the newest matches (no visible match newer than the last row kept has a lower id), and
PostgreSQL walks the index rows newest first with the full-text match as a filter, bounded
(``openclaw_fts/index/sqlite/read.py``, ``openclaw_fts/index/postgresql/read.py``).

On PostgreSQL's partitioned layout (``message_index`` a view over ``message_index_by_agent``)
the index is made on the partitioned table, so every partition has one. No data changes.
Downgrade drops the index.

Revision ID: 0011_index_rows_by_time
Revises: 0010_impact_own_counts
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011_index_rows_by_time"
down_revision: str | None = "0010_impact_own_counts"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
INDEX = "ix_message_index_timestamp_ms"


def _table() -> str:
    """The table holding the index rows: the partitioned one when the layout has it."""
    if op.get_context().dialect.name != "postgresql" or op.get_context().as_sql:
        return "message_index"
    found = op.get_bind().execute(sa.text("SELECT to_regclass('message_index_by_agent')"))
    return "message_index_by_agent" if found.scalar() is not None else "message_index"


def upgrade() -> None:
    op.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON {_table()} (timestamp_ms)")


def downgrade() -> None:
    op.execute(f"DROP INDEX IF EXISTS {INDEX}")
