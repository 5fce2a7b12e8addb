"""Transcript tables: sessions, transcript events, branches.

What a host stored before this plugin indexed anything. No index tables here. Runs on SQLite
and PostgreSQL: boolean defaults are ``sa.false()`` (``0`` on SQLite, as before; ``false`` on
PostgreSQL, which refuses an integer default for a boolean column).

Table names: a database made by this release gets the namespaced names from the start
(``openclaw_sessions``, ``openclaw_branches``, and the constraint and index names 0005 gives
them), so a host whose own ``sessions`` or ``branches`` table exists before — or is created
after — the plugin's revisions never collides with them. Earlier releases created
``sessions`` and ``branches`` here; their databases keep those names until 0005 renames them,
so 0002, 0004, 0005 and every downgrade look at which names the database has (``_names``).

Revision ID: 0001_transcripts
Revises:
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# seq columns: 64-bit on every engine (SQLite's INTEGER is; BIGINT elsewhere).
SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision: str = "0001_transcripts"
down_revision: str | None = None
branch_labels: tuple[str, ...] | None = ("openclaw_fts",)
depends_on: str | None = None

KEY = sa.String(512)

#: The names earlier releases gave the tables, and the namespaced names this release gives
#: them (frozen: keyed by the old name, like 0005's ``RENAMES``).
OLD = {"sessions": "sessions", "branches": "branches"}
NEW = {"sessions": "openclaw_sessions", "branches": "openclaw_branches"}


def _names() -> dict[str, str]:
    """The names of the database at hand: namespaced, or those of an earlier release."""
    if op.get_context().as_sql:
        return NEW
    return NEW if sa.inspect(op.get_bind()).has_table(NEW["sessions"]) else OLD


def upgrade() -> None:
    sessions, branches = NEW["sessions"], NEW["branches"]
    op.create_table(
        sessions,
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("session_key", KEY, nullable=False),
        sa.Column("agent_id", KEY, nullable=False),
        sa.Column("spawned_by", KEY, nullable=True),
        sa.Column("parent_session_key", KEY, nullable=True),
        sa.Column("owner_session_key", KEY, nullable=True),
        sa.Column("archived", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("incognito", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("last_seq", SEQ, server_default=sa.text("-1"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("CURRENT_TIMESTAMP"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("CURRENT_TIMESTAMP"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("session_id", name=op.f(f"pk_{sessions}")),
    )
    for column in (
        "session_key",
        "agent_id",
        "spawned_by",
        "parent_session_key",
        "owner_session_key",
    ):
        op.create_index(op.f(f"ix_{sessions}_{column}"), sessions, [column])
    op.create_table(
        "transcript_events",
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("seq", SEQ, autoincrement=False, nullable=False),
        sa.Column("event_id", KEY, nullable=True),
        sa.Column("parent_id", KEY, nullable=True),
        sa.Column("type", sa.String(64), nullable=True),
        sa.Column("role", sa.String(64), nullable=True),
        sa.Column("target_id", KEY, nullable=True),
        sa.Column("side", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("timestamp_ms", sa.BigInteger(), nullable=True),
        sa.Column("event", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            [f"{sessions}.session_id"],
            name=op.f(f"fk_transcript_events_session_id_{sessions}"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "seq", name=op.f("pk_transcript_events")),
        sa.UniqueConstraint(
            "session_id", "event_id", name=op.f("uq_transcript_events_session_id_event_id")
        ),
    )
    op.create_table(
        branches,
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("tip_id", KEY, nullable=True),
        sa.Column("tip_seq", SEQ, nullable=True),
        sa.Column("is_active", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            [f"{sessions}.session_id"],
            name=op.f(f"fk_{branches}_session_id_{sessions}"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{branches}")),
    )
    op.create_index(op.f(f"ix_{branches}_session_id"), branches, ["session_id"])


def downgrade() -> None:
    names = _names()
    sessions, branches = names["sessions"], names["branches"]
    op.drop_index(op.f(f"ix_{branches}_session_id"), table_name=branches)
    op.drop_table(branches)
    op.drop_table("transcript_events")
    for column in (
        "session_key",
        "agent_id",
        "spawned_by",
        "parent_session_key",
        "owner_session_key",
    ):
        op.drop_index(op.f(f"ix_{sessions}_{column}"), table_name=sessions)
    op.drop_table(sessions)
