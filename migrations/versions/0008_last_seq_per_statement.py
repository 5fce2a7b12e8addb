"""PostgreSQL: ``last_seq`` follows raw inserts once per statement, not once per event row.

Revision 0002's ``transcript_events_last_seq`` trigger raises ``openclaw_sessions.last_seq``
when a host inserts event rows by hand (the plugin's own appends raise it in the statement
that writes the events). On PostgreSQL it was a ``FOR EACH ROW`` plpgsql trigger: one
``UPDATE`` per inserted event, which on the plugin's appends finds ``last_seq`` already raised
and changes nothing — about a fifth of a 100-event append's server time (bench/NOTES.md,
"Writes"). Here it becomes a ``FOR EACH STATEMENT`` trigger over the statement's transition
table: one ``UPDATE`` per statement, raising each session's ``last_seq`` to the highest seq the
statement inserted for it. The rule is the same (``last_seq`` only rises, to the highest seq
stored); a row trigger fired at the end of the statement too, so nothing sees a different
``last_seq`` at any point. SQLite has no statement triggers: its row trigger stays.

Downgrade puts the row trigger back with 0005's function body. Both directions take the
trigger's table lock only (no row is read or written).

Revision ID: 0008_last_seq_per_statement
Revises: 0007_impact_lists
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision: str = "0008_last_seq_per_statement"
down_revision: str | None = "0007_impact_lists"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision (the table names are 0005's).
TRIGGER = "transcript_events_last_seq"
NEW_EVENTS = "openclaw_fts_new_events"
STATEMENT_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_events_last_seq() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN UPDATE openclaw_sessions AS s SET last_seq = n.seq "
    f"FROM (SELECT session_id, max(seq) AS seq FROM {NEW_EVENTS} GROUP BY session_id) AS n "
    "WHERE s.session_id = n.session_id AND s.last_seq < n.seq; RETURN NULL; END $$"
)
STATEMENT_TRIGGER = (
    f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON transcript_events "
    f"REFERENCING NEW TABLE AS {NEW_EVENTS} "
    "FOR EACH STATEMENT EXECUTE FUNCTION openclaw_fts_events_last_seq()"
)
# 0005's row function and 0002's row trigger.
ROW_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_events_last_seq() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ "
    "BEGIN UPDATE openclaw_sessions SET last_seq = NEW.seq "
    "WHERE session_id = NEW.session_id AND last_seq < NEW.seq; RETURN NULL; END $$"
)
ROW_TRIGGER = (
    f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON transcript_events "
    "FOR EACH ROW EXECUTE FUNCTION openclaw_fts_events_last_seq()"
)


def _replace(function: str, trigger: str) -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON transcript_events")
    op.execute(function)
    op.execute(trigger)


def upgrade() -> None:
    _replace(STATEMENT_FUNCTION, STATEMENT_TRIGGER)


def downgrade() -> None:
    _replace(ROW_FUNCTION, ROW_TRIGGER)
