"""The host's own models, on the host's own metadata, linked to the plugin's sessions.

Invariant: the schema here is what the host's revisions (``migrations/versions``) create on top
of the plugin's, so ``alembic check`` reports nothing.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, MetaData, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from openclaw_fts.models import AgentSession

#: Longest project name.
MAX_NAME_LENGTH = 200
#: Length of a web-login token and of a user name.
TOKEN_LENGTH = 64

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class Base(DeclarativeBase):
    metadata = metadata


class Project(Base):
    """Revision h001: a table of the host's own, from before it used the plugin."""

    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH))


class WebSession(Base):
    """Revision h001: the host's web-login sessions, a table named ``sessions`` like so many
    hosts have, from before it used the plugin (whose transcript sessions are
    ``openclaw_sessions``, so the two never collide)."""

    __tablename__ = "sessions"

    token: Mapped[str] = mapped_column(String(TOKEN_LENGTH), primary_key=True)
    user_name: Mapped[str] = mapped_column(String(TOKEN_LENGTH))


class Chat(Base):
    """Revision h002: one agent session of a project. The foreign key points at the plugin's
    table (a Column object, so it resolves across the two MetaData collections); deleting the
    plugin's session deletes the chat."""

    __tablename__ = "chats"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey(Project.id, ondelete="CASCADE"), index=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey(AgentSession.session_id, ondelete="CASCADE"), unique=True
    )
