"""Agent token: a change of a session's agent makes its index dirty.

From ``INDEX_VERSION`` 4 every index row of a session carries, in the FTS5 ``sess`` column, its
agent's token beside the session's own (``s<state id> a<hash of the agent id>``), so an
agent-scoped search lets FTS5 intersect the query's doclist with the agent's instead of joining
every match to ``openclaw_sessions``. The rows of a session whose ``agent_id`` changes must then
be rewritten: this trigger marks the session for a rebuild (as deleting one of its events does,
revision 0002), and the reconciler rewrites its rows under the new token. The FTS5 table's
columns do not change; rows indexed before this revision are re-indexed because of the
``INDEX_VERSION`` bump, not by this revision.

Per dialect: SQLite only. The PostgreSQL index keeps no agent token (its ``sess`` column is
not searched), so nothing changes there.

Revision ID: 0006_agent_token
Revises: 0005_namespaced_tables
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision: str = "0006_agent_token"
down_revision: str | None = "0005_namespaced_tables"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen copy of openclaw_fts.index.sqlite.CREATE_AGENT_CHANGE_TRIGGER at this revision.
CREATE_AGENT_CHANGE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS openclaw_sessions_agent_changed AFTER UPDATE OF agent_id ON "
    "openclaw_sessions WHEN old.agent_id IS NOT new.agent_id BEGIN UPDATE openclaw_index_state "
    "SET needs_rebuild = 1, generation = generation + 1 WHERE session_id = new.session_id; END"
)
DROP_AGENT_CHANGE_TRIGGER = "DROP TRIGGER IF EXISTS openclaw_sessions_agent_changed"


def upgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute(CREATE_AGENT_CHANGE_TRIGGER)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute(DROP_AGENT_CHANGE_TRIGGER)
