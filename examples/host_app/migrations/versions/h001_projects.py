"""Projects and web-login sessions: the host's own tables, from before it stored transcripts.

The host's table is named ``sessions``, as the plugin's transcript sessions were before its
revision 0005; the plugin's revisions create ``openclaw_sessions`` instead, so Alembic may run
this revision before or after them.

Revision ID: h001_projects
Revises:
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "h001_projects"
down_revision: str | None = None
#: The host's branch: `alembic revision --head host_app@head` writes the next one here.
branch_labels: tuple[str, ...] | None = ("host_app",)
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
    )
    op.create_table(
        "sessions",
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("user_name", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("token", name=op.f("pk_sessions")),
    )


def downgrade() -> None:
    op.drop_table("sessions")
    op.drop_table("projects")
