"""Triggers that keep the index honest when a stored event's JSON is UPDATEd.

Invariant: an UPDATE of ``transcript_events.event`` by any path (ORM flush, ``session.merge``,
bulk or raw SQL) either makes the event's session pending — hidden from search until it is
re-indexed — or is refused: an UPDATE that changes what the derived columns are computed from
(``id``, ``parentId``, ``type``, ``targetId``, ``appendMode``, ``timestamp``, ``message.role``)
while leaving every derived column as it was (raw SQL: the columns would lie about the tree) is
aborted with :data:`EDIT_REFUSED`. The ORM path re-derives those columns on flush, so it is
never refused for a change that moves one of them. Frozen copies live in revision 0004.
"""

from __future__ import annotations

#: The error text of a refused UPDATE (SQLite's RAISE message).
EDIT_REFUSED = (
    "openclaw_fts: an UPDATE of transcript_events.event may change the content of an event, not "
    "its id, parentId, type, targetId, appendMode, timestamp or message.role, unless the "
    "derived columns change with it; edit the TranscriptEvent through an installed ORM session"
)
GUARD_TRIGGER = "transcript_events_edit_guard"
EDITED_TRIGGER = "transcript_events_edited"

#: (JSON path, derived column) pairs: the inputs of ``transcript.derived_columns``.
_DERIVED_FROM = (
    ("$.id", "event_id"),
    ("$.parentId", "parent_id"),
    ("$.type", "type"),
    ("$.targetId", "target_id"),
    ("$.appendMode", "side"),
    ("$.timestamp", "timestamp_ms"),
    ("$.message.role", "role"),
)
_INPUT_CHANGED = " OR ".join(
    f"json_extract(new.event, '{path}') IS NOT json_extract(old.event, '{path}')"
    for path, _ in _DERIVED_FROM
)
_COLUMNS_KEPT = " AND ".join(f"new.{column} IS old.{column}" for _, column in _DERIVED_FROM)

CREATE_GUARD_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {GUARD_TRIGGER} BEFORE UPDATE OF event ON transcript_events "
    f"WHEN ({_INPUT_CHANGED}) AND ({_COLUMNS_KEPT}) "
    f"BEGIN SELECT RAISE(ABORT, '{EDIT_REFUSED}'); END"
)
CREATE_EDITED_TRIGGER = (
    f"CREATE TRIGGER IF NOT EXISTS {EDITED_TRIGGER} AFTER UPDATE OF event ON transcript_events "
    "WHEN new.event IS NOT old.event "
    "BEGIN UPDATE openclaw_index_state SET needs_rebuild = 1, generation = generation + 1 "
    "WHERE session_id = new.session_id; END"
)
CREATE_STATEMENTS = (CREATE_GUARD_TRIGGER, CREATE_EDITED_TRIGGER)
DROP_STATEMENTS = (
    f"DROP TRIGGER IF EXISTS {EDITED_TRIGGER}",
    f"DROP TRIGGER IF EXISTS {GUARD_TRIGGER}",
)
