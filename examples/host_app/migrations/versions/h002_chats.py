"""Chats: a project's agent sessions, with a foreign key to the plugin's ``openclaw_sessions``.

``depends_on`` names the plugin revision after which the table has that name in every
database (a fresh one has it from 0001 on; one an earlier release made is named ``sessions``
until 0005 renames it): Alembic runs it first on upgrade, and unapplies this revision before
it on downgrade. Depending on an earlier plugin revision would let Alembic run this one before
0005 on an upgraded database, where ``openclaw_sessions`` does not exist yet.

Revision ID: h002_chats
Revises: h001_projects
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "h002_chats"
down_revision: str | None = "h001_projects"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = "0005_namespaced_tables"


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(512), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_chats_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["openclaw_sessions.session_id"],
            name=op.f("fk_chats_session_id_openclaw_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chats")),
        sa.UniqueConstraint("session_id", name=op.f("uq_chats_session_id")),
    )
    op.create_index(op.f("ix_chats_project_id"), "chats", ["project_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_chats_project_id"), table_name="chats")
    op.drop_table("chats")
