"""Full-text index: index state, content table, FTS5 table, reconcile lease.

Creates empty tables only — never a backfill — so it runs in milliseconds whatever the data
size. Sessions stored before it have no index state, which makes them pending: the reconciler
indexes them in the background.

Revision ID: 0002_index
Revises: 0001_transcripts
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002_index"
down_revision: str | None = "0001_transcripts"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

KEY = sa.String(512)

# Frozen copies of openclaw_fts.index.sqlite's DDL at this revision (a migration must not
# change when the package does).
CREATE_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS message_fts USING fts5("
    "body, sess, content='message_index', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')"
)
CREATE_DELETE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS message_index_fts_delete AFTER DELETE ON message_index BEGIN "
    "INSERT INTO message_fts(message_fts, rowid, body, sess) "
    "VALUES ('delete', old.id, old.body, old.sess); END"
)

CREATE_SEQ_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS transcript_events_last_seq AFTER INSERT ON transcript_events "
    "BEGIN UPDATE sessions SET last_seq = new.seq "
    "WHERE session_id = new.session_id AND last_seq < new.seq; END"
)

CREATE_EVENT_DELETE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS transcript_events_deleted AFTER DELETE ON transcript_events "
    "BEGIN UPDATE index_state SET needs_rebuild = 1, generation = generation + 1 "
    "WHERE session_id = old.session_id; END"
)


def upgrade() -> None:
    op.create_table(
        "index_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("indexed_seq", sa.Integer(), server_default=sa.text("-1"), nullable=False),
        sa.Column("indexed_leaf", KEY, nullable=True),
        sa.Column("needs_rebuild", sa.Boolean(), server_default=sa.text("0"), nullable=False),
        sa.Column("generation", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("index_version", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name=op.f("fk_index_state_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_index_state")),
        sa.UniqueConstraint("session_id", name=op.f("uq_index_state_session_id")),
    )
    op.create_table(
        "message_index",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("event_id", KEY, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("sess", sa.String(32), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            name=op.f("fk_message_index_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_message_index")),
        sa.UniqueConstraint(
            "session_id", "event_id", name=op.f("uq_message_index_session_id_event_id")
        ),
    )
    op.create_table(
        "reconcile_lease",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_reconcile_lease")),
    )
    if op.get_context().dialect.name == "sqlite":
        op.execute(CREATE_FTS)
        op.execute(CREATE_DELETE_TRIGGER)
        op.execute(CREATE_SEQ_TRIGGER)
        op.execute(CREATE_EVENT_DELETE_TRIGGER)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS transcript_events_deleted")
        op.execute("DROP TRIGGER IF EXISTS transcript_events_last_seq")
        op.execute("DROP TRIGGER IF EXISTS message_index_fts_delete")
        op.execute("DROP TABLE IF EXISTS message_fts")
    op.drop_table("reconcile_lease")
    op.drop_table("message_index")
    op.drop_table("index_state")
