"""Host guest: edits of a stored event re-index its session, or are refused.

An UPDATE of ``transcript_events.event`` marks its session for re-indexing (pending, hidden
from search until the reconciler or the flush's inline repair re-indexes it); an UPDATE that
changes what the derived columns are computed from without changing them (raw SQL) is aborted.
Triggers only: no table changes, nothing to backfill.

The trigger bodies name the index state table the database has: ``openclaw_index_state`` on
a database made by this release, ``index_state`` on one an earlier release took to 0002
(0005 renames it; SQLite rewrites the trigger, 0005 replaces the plpgsql body).

Revision ID: 0004_host_guest
Revises: 0002_index
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004_host_guest"
down_revision: str | None = "0002_index"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None


def _index_state() -> str:
    """The index state table of the database at hand: namespaced (0001 of this release made
    ``openclaw_sessions``), or the name of an earlier release."""
    if op.get_context().as_sql or sa.inspect(op.get_bind()).has_table("openclaw_sessions"):
        return "openclaw_index_state"
    return "index_state"


# Frozen copies of openclaw_fts.index.edit_triggers at this revision (a migration must not
# change when the package does).
CREATE_GUARD_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS transcript_events_edit_guard BEFORE UPDATE OF event ON "
    "transcript_events WHEN (json_extract(new.event, '$.id') IS NOT json_extract(old.event, "
    "'$.id') OR json_extract(new.event, '$.parentId') IS NOT json_extract(old.event, "
    "'$.parentId') OR json_extract(new.event, '$.type') IS NOT json_extract(old.event, "
    "'$.type') OR json_extract(new.event, '$.targetId') IS NOT json_extract(old.event, "
    "'$.targetId') OR json_extract(new.event, '$.appendMode') IS NOT json_extract(old.event, "
    "'$.appendMode') OR json_extract(new.event, '$.timestamp') IS NOT json_extract(old.event, "
    "'$.timestamp') OR json_extract(new.event, '$.message.role') IS NOT "
    "json_extract(old.event, '$.message.role')) AND (new.event_id IS old.event_id AND "
    "new.parent_id IS old.parent_id AND new.type IS old.type AND new.target_id IS "
    "old.target_id AND new.side IS old.side AND new.timestamp_ms IS old.timestamp_ms AND "
    "new.role IS old.role) BEGIN SELECT RAISE(ABORT, 'openclaw_fts: an UPDATE of "
    "transcript_events.event may change the content of an event, not its id, parentId, type, "
    "targetId, appendMode, timestamp or message.role, unless the derived columns change with "
    "it; edit the TranscriptEvent through an installed ORM session'); END"
)
CREATE_EDITED_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS transcript_events_edited AFTER UPDATE OF event ON "
    "transcript_events WHEN new.event IS NOT old.event BEGIN UPDATE {index_state} SET "
    "needs_rebuild = 1, generation = generation + 1 WHERE session_id = new.session_id; END"
)

# The same two rules in plpgsql: ``event`` is TEXT there, read as jsonb; IS DISTINCT FROM is
# SQLite's IS NOT. One row-level BEFORE trigger both refuses and marks (a refused UPDATE raises
# before anything is marked; a marked one is rolled back with its statement).
_PG_PATHS = (
    ("'id'", "event_id"),
    ("'parentId'", "parent_id"),
    ("'type'", "type"),
    ("'targetId'", "target_id"),
    ("'appendMode'", "side"),
    ("'timestamp'", "timestamp_ms"),
)
_PG_INPUT_CHANGED = " OR ".join(
    [
        f"(NEW.event::jsonb -> {key}) IS DISTINCT FROM (OLD.event::jsonb -> {key})"
        for key, _ in _PG_PATHS
    ]
    + [
        "(NEW.event::jsonb #> '{message,role}') IS DISTINCT FROM "
        "(OLD.event::jsonb #> '{message,role}')"
    ]
)
_PG_COLUMNS_KEPT = " AND ".join(
    [f"NEW.{column} IS NOT DISTINCT FROM OLD.{column}" for _, column in _PG_PATHS]
    + ["NEW.role IS NOT DISTINCT FROM OLD.role"]
)
# A template: ``{index_state}`` is the one placeholder (the JSON paths are already inside).
PG_CREATE_EDIT_FUNCTION = (
    "CREATE FUNCTION openclaw_fts_events_edited() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN IF NEW.event IS NOT DISTINCT FROM OLD.event THEN RETURN NEW; END IF; "
    f"IF ({_PG_INPUT_CHANGED}) AND ({_PG_COLUMNS_KEPT}) THEN "
    "RAISE EXCEPTION 'openclaw_fts: an UPDATE of transcript_events.event may change the "
    "content of an event, not its id, parentId, type, targetId, appendMode, timestamp or "
    "message.role, unless the derived columns change with it; edit the TranscriptEvent "
    "through an installed ORM session'; END IF; "
    "UPDATE {index_state} SET needs_rebuild = true, generation = generation + 1 "
    "WHERE session_id = NEW.session_id; RETURN NEW; END $$"
)
PG_CREATE_EDIT_TRIGGER = (
    "CREATE TRIGGER transcript_events_edited BEFORE UPDATE OF event ON transcript_events "
    "FOR EACH ROW EXECUTE FUNCTION openclaw_fts_events_edited()"
)


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    if dialect == "sqlite":
        op.execute(CREATE_GUARD_TRIGGER)
        op.execute(CREATE_EDITED_TRIGGER.format(index_state=_index_state()))
    elif dialect == "postgresql":
        op.execute(PG_CREATE_EDIT_FUNCTION.replace("{index_state}", _index_state()))
        op.execute(PG_CREATE_EDIT_TRIGGER)


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    if dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS transcript_events_edited")
        op.execute("DROP TRIGGER IF EXISTS transcript_events_edit_guard")
    elif dialect == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS transcript_events_edited ON transcript_events")
        op.execute("DROP FUNCTION IF EXISTS openclaw_fts_events_edited()")
