"""Host guest: edits of a stored event re-index its session, or are refused.

An UPDATE of ``transcript_events.event`` marks its session for re-indexing (pending, hidden
from search until the reconciler or the flush's inline repair re-indexes it); an UPDATE that
changes what the derived columns are computed from without changing them (raw SQL) is aborted.
Triggers only: no table changes, nothing to backfill.

Revision ID: 0004_host_guest
Revises: 0002_index
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision: str = "0004_host_guest"
down_revision: str | None = "0002_index"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

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
    "transcript_events WHEN new.event IS NOT old.event BEGIN UPDATE index_state SET "
    "needs_rebuild = 1, generation = generation + 1 WHERE session_id = new.session_id; END"
)


def upgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute(CREATE_GUARD_TRIGGER)
        op.execute(CREATE_EDITED_TRIGGER)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS transcript_events_edited")
        op.execute("DROP TRIGGER IF EXISTS transcript_events_edit_guard")
