"""PostgreSQL: keep statistics for ten times more words of ``message_index.body_tsv``.

With the default statistics target (100) ``ANALYZE`` keeps the 1,000 most common lexemes of the
column, and the planner estimates every other word at half the least common one's frequency:
about 0.2 % of the rows, ~210 matches at 100,000 messages even for a word in 8 of them. For a
caller who sees every session it then hashes the whole session table instead of looking up the
sessions of the few matches (measured on the benchmark's 100k corpus with 12,000 sessions: 4.0-4.5
ms per rare word; with 10,000 lexemes kept, the estimate is 17 rows, a nested loop, 0.1-0.6 ms).
The cost is a longer ``ANALYZE`` (0.9 s at 94,000 rows, in autovacuum's background), a larger
``pg_statistic`` row, and a few more microseconds of planning.

No table is rewritten and no statistic is computed here: the new target applies from the next
``ANALYZE`` (autovacuum's, or ``openclaw-fts optimize``). Nothing to do on SQLite (FTS5 ranks
from its own index). Downgrade returns the column to the server's default target.

Revision ID: 0006_tsvector_statistics
Revises: 0005_namespaced_tables
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision: str = "0006_tsvector_statistics"
down_revision: str | None = "0005_namespaced_tables"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

#: Frozen at this revision: the column's statistics target (PostgreSQL keeps ten times this
#: many most-common lexemes of a tsvector column; -1 is the server's default, 100).
STATISTICS_TARGET = 1000
DEFAULT_TARGET = -1


def _set_target(target: int) -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute(f"ALTER TABLE message_index ALTER COLUMN body_tsv SET STATISTICS {int(target)}")


def upgrade() -> None:
    _set_target(STATISTICS_TARGET)


def downgrade() -> None:
    _set_target(DEFAULT_TARGET)
