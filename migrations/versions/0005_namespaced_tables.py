"""Namespaced tables: ``sessions``, ``branches``, ``index_state`` become ``openclaw_sessions``,
``openclaw_branches``, ``openclaw_index_state`` (a host with its own ``sessions`` table can
keep it beside the plugin's).

Two kinds of database reach this revision:

* Made by this release: 0001, 0002 and 0004 created the namespaced names from the start (so a
  host's own ``sessions`` table, made before or after them, never collides). Upgrade finds
  ``openclaw_sessions`` and does nothing.
* Made by an earlier release (0001–0004 then created ``sessions``, ``branches``,
  ``index_state``): upgrade renames them as described below, keeping every row. A database
  with some of the namespaced tables but not all of them is refused with an error naming them.

Downgrade renames back to the old names — what an earlier release's code expects — only when
none of ``sessions``, ``branches``, ``index_state`` is taken by another table. When one is (a
host's own ``sessions``), it never renames the plugin's table onto it: it keeps the namespaced
names, which 0001–0004 of this release accept (they look for ``openclaw_sessions``), so going
further down to base still works; only an earlier release's code cannot use that database.

Renames only: no row is copied, so it runs in milliseconds whatever the data size. The other
plugin tables (``transcript_events``, ``message_index``, ``message_fts*``, ``reconcile_lease``)
keep their names: none of them is a name a host is likely to use for something else.

Per dialect:

* SQLite (3.26+, ``legacy_alter_table`` off): ``ALTER TABLE … RENAME TO`` rewrites the foreign
  keys of the other tables and the bodies of the triggers that name the table. Index names
  cannot be renamed in SQLite, so the indexes whose names derive from the table name are
  dropped and created again under the new name (small: one per session/branch). Constraint
  names written inside ``CREATE TABLE`` (``pk_sessions``, ``uq_index_state_session_id``, …)
  stay as they were: SQLite cannot rename them without copying the table. Autogenerate
  compares only the unique one by name, so the models keep ``uq_index_state_session_id``.
* PostgreSQL: tables, their indexes and their constraints are renamed (``ALTER … RENAME``;
  ``uq_index_state_session_id`` keeps its name, as on SQLite);
  the plpgsql trigger functions of 0002 and 0004 name ``sessions`` and ``index_state`` in
  their bodies (resolved when they run, not when they are created), so they are replaced
  with bodies naming the new tables — and with the old bodies again on downgrade.

Revision ID: 0005_namespaced_tables
Revises: 0004_host_guest
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision: str = "0005_namespaced_tables"
down_revision: str | None = "0004_host_guest"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

#: (old name, new name) of each renamed table.
RENAMES = (
    ("sessions", "openclaw_sessions"),
    ("branches", "openclaw_branches"),
    ("index_state", "openclaw_index_state"),
)
#: Indexes named after their table: (table, column) as the metadata naming convention names
#: them (``ix_<table>_<column>``).
INDEXES = (
    ("sessions", "session_key"),
    ("sessions", "agent_id"),
    ("sessions", "spawned_by"),
    ("sessions", "parent_session_key"),
    ("sessions", "owner_session_key"),
    ("branches", "session_id"),
)
#: PostgreSQL constraints named after their table (old table, old name template).
_PG_CONSTRAINTS = (
    ("sessions", "pk_{sessions}"),
    ("branches", "pk_{branches}"),
    ("branches", "fk_{branches}_session_id_{sessions}"),
    ("index_state", "pk_{index_state}"),
    ("index_state", "fk_{index_state}_session_id_{sessions}"),
    ("transcript_events", "fk_transcript_events_session_id_{sessions}"),
    ("message_index", "fk_message_index_session_id_{sessions}"),
)

# Frozen plpgsql bodies (0002's two functions and 0004's one), parametrised by table names.
_PG_SEQ_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_events_last_seq() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ "
    "BEGIN UPDATE {sessions} SET last_seq = NEW.seq "
    "WHERE session_id = NEW.session_id AND last_seq < NEW.seq; RETURN NULL; END $$"
)
_PG_EVENT_DELETE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_events_deleted() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ "
    "BEGIN UPDATE {index_state} SET needs_rebuild = true, generation = generation + 1 "
    "WHERE session_id = OLD.session_id; RETURN NULL; END $$"
)
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
        "(NEW.event::jsonb #> '{{message,role}}') IS DISTINCT FROM "
        "(OLD.event::jsonb #> '{{message,role}}')"
    ]
)
_PG_COLUMNS_KEPT = " AND ".join(
    [f"NEW.{column} IS NOT DISTINCT FROM OLD.{column}" for _, column in _PG_PATHS]
    + ["NEW.role IS NOT DISTINCT FROM OLD.role"]
)
_PG_EDIT_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_events_edited() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ "
    "BEGIN IF NEW.event IS NOT DISTINCT FROM OLD.event THEN RETURN NEW; END IF; "
    f"IF ({_PG_INPUT_CHANGED}) AND ({_PG_COLUMNS_KEPT}) THEN "
    "RAISE EXCEPTION 'openclaw_fts: an UPDATE of transcript_events.event may change the "
    "content of an event, not its id, parentId, type, targetId, appendMode, timestamp or "
    "message.role, unless the derived columns change with it; edit the TranscriptEvent "
    "through an installed ORM session'; END IF; "
    "UPDATE {index_state} SET needs_rebuild = true, generation = generation + 1 "
    "WHERE session_id = NEW.session_id; RETURN NEW; END $$"
)
PG_FUNCTIONS = (_PG_SEQ_FUNCTION, _PG_EVENT_DELETE_FUNCTION, _PG_EDIT_FUNCTION)


OLD = {old: old for old, _ in RENAMES}
NEW = dict(RENAMES)


def _rename(src: dict[str, str], dst: dict[str, str]) -> None:
    """Rename the three tables, and what is named after them, from the names in ``src`` to
    those in ``dst`` (both keyed by the old name)."""
    dialect = op.get_context().dialect.name
    for key, _ in RENAMES:
        op.rename_table(src[key], dst[key])
    if dialect == "sqlite":
        for table, column in INDEXES:
            op.execute(f"DROP INDEX IF EXISTS ix_{src[table]}_{column}")
            op.execute(f"CREATE INDEX ix_{dst[table]}_{column} ON {dst[table]} ({column})")
    elif dialect == "postgresql":
        for table, column in INDEXES:
            op.execute(f"ALTER INDEX ix_{src[table]}_{column} RENAME TO ix_{dst[table]}_{column}")
        for table, template in _PG_CONSTRAINTS:
            op.execute(
                f"ALTER TABLE {dst.get(table, table)} RENAME CONSTRAINT "
                f"{template.format(**src)} TO {template.format(**dst)}"
            )
        for function in PG_FUNCTIONS:
            op.execute(function.format(**dst))


def _present(names: dict[str, str]) -> list[str]:
    """Which of ``names``' tables exist in the database at hand."""
    inspector = sa.inspect(op.get_bind())
    return [name for name in names.values() if inspector.has_table(name)]


def upgrade() -> None:
    if op.get_context().as_sql:  # offline SQL is for a database made by this release
        return
    namespaced = _present(NEW)
    if len(namespaced) == len(NEW):
        return  # made by this release: 0001-0004 created the namespaced names already
    if namespaced:
        raise CommandError(
            f"openclaw_fts 0005: found {', '.join(namespaced)} but not all of "
            f"{', '.join(NEW.values())}; the plugin's tables are half renamed, fix by hand"
        )
    _rename(OLD, NEW)


def downgrade() -> None:
    if op.get_context().as_sql:
        return
    if _present(OLD):
        return  # a host owns one of the old names: keep the namespaced ones (see above)
    _rename(NEW, OLD)
