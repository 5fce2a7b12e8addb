"""ORM models of the plugin, on the plugin's own :data:`metadata`.

Invariant: every plugin table hangs off ``openclaw_sessions`` through a foreign key with
``ON DELETE CASCADE``, so deleting a session by any path (ORM, ORM bulk delete, raw SQL with
``PRAGMA foreign_keys=ON``) removes its events, branches, index rows and index state in the same
transaction; the FTS5 entries follow ``message_index`` through its delete trigger, the impact
rows through their own foreign key to ``message_index`` (the list of tracked words,
``message_impact_terms``, and ``reconcile_lease`` belong to no session). The schema
here is the one the Alembic migrations create (autogenerate reports no difference). The models
are engine-neutral: an engine's own DDL (SQLite's FTS5 table and triggers) is attached to
``message_index`` by that engine's backend under ``openclaw_fts/index/``, so
``metadata.create_all()`` creates it too; this module imports no backend.

Table names are namespaced where a host is likely to have its own table of the same name
(``openclaw_sessions``, ``openclaw_branches``, ``openclaw_index_state``; revision 0005 renamed
them from ``sessions``, ``branches``, ``index_state``). ``transcript_events``,
``message_index``, ``message_fts*`` and ``reconcile_lease`` are specific enough to keep.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from .rows import INDEX_VERSION as INDEX_VERSION  # defined with the index rows; used below

#: The type of every ``seq`` column: 64-bit (seqs go up to ``hooks.MAX_SEQ`` = 2**53), which
#: SQLite's INTEGER already is; BIGINT elsewhere.
SEQ = BigInteger().with_variant(Integer(), "sqlite")

#: The column default of ``openclaw_index_state.index_version`` as migration 0002 created it.
#: Writers always give the version; a row inserted without one counts as an older version
#: (pending, so re-indexed), which is safe, and the schema stays the one the migrations create.
INDEX_VERSION_COLUMN_DEFAULT = 1
#: Longest session key / id / event id accepted (OpenClaw keys are short; this bounds abuse).
MAX_KEY_LENGTH = 512
#: Longest tracked word (``openclaw_fts.index.impact.MAX_TERM_CHARS``; models import no index
#: module).
MAX_TERM_CHARS = 64

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def dump_event(event: dict[str, Any]) -> str:
    """Serialise an event verbatim; lone surrogates fall back to ASCII escapes (still lossless).
    Strict JSON: a non-finite number (NaN, Infinity) raises ``ValueError``."""
    dumped = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        dumped.encode("utf-8")
    except UnicodeEncodeError:
        dumped = json.dumps(event, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return dumped


class EventJSON(TypeDecorator[dict[str, Any]]):
    """A JSON object stored as text, key order and unknown fields preserved."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: dict[str, Any] | None, dialect: Dialect) -> str | None:
        return None if value is None else dump_event(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> dict[str, Any] | None:
        if value is None:
            return None
        loaded = json.loads(value)
        assert isinstance(loaded, dict)
        return loaded


class Base(DeclarativeBase):
    metadata = metadata


class AgentSession(Base):
    """One transcript incarnation (``session_id``) under a routing key (``session_key``)."""

    __tablename__ = "openclaw_sessions"

    session_id: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH), primary_key=True)
    session_key: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH), index=True)
    agent_id: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH), index=True)
    spawned_by: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH), index=True)
    parent_session_key: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH), index=True)
    owner_session_key: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH), index=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    incognito: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: Highest ``seq`` stored for this session (-1: none). Kept by the session hooks.
    last_seq: Mapped[int] = mapped_column(SEQ, default=-1, server_default=text("-1"))
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, server_default=text("CURRENT_TIMESTAMP")
    )
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True),
        default=utcnow,
        onupdate=utcnow,
        server_default=text("CURRENT_TIMESTAMP"),
    )

    events: Mapped[list[TranscriptEvent]] = relationship(
        back_populates="session",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="TranscriptEvent.seq",
    )
    branches: Mapped[list[Branch]] = relationship(
        back_populates="session",
        cascade="all, delete-orphan",
        passive_deletes=True,
        viewonly=False,
    )

    def __repr__(self) -> str:
        return f"AgentSession({self.session_id!r}, {self.session_key!r})"


class TranscriptEvent(Base):
    """One transcript event, stored verbatim; ``seq`` and the derived columns are set on flush."""

    __tablename__ = "transcript_events"
    __table_args__ = (UniqueConstraint("session_id", "event_id"),)

    session_id: Mapped[str] = mapped_column(
        String(MAX_KEY_LENGTH),
        ForeignKey("openclaw_sessions.session_id", ondelete="CASCADE"),
        primary_key=True,
    )
    seq: Mapped[int] = mapped_column(SEQ, primary_key=True, autoincrement=False)
    event_id: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH))
    parent_id: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH))
    type: Mapped[str | None] = mapped_column(String(64))
    role: Mapped[str | None] = mapped_column(String(64))
    target_id: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH))
    side: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    timestamp_ms: Mapped[int | None] = mapped_column(BigInteger)
    event: Mapped[dict[str, Any]] = mapped_column(EventJSON)

    session: Mapped[AgentSession] = relationship(back_populates="events")

    def __repr__(self) -> str:
        return f"TranscriptEvent({self.session_id!r}, seq={self.seq!r}, id={self.event_id!r})"


class Branch(Base):
    """A root-to-tip path of a session's tree; exactly one per session is active."""

    __tablename__ = "openclaw_branches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(MAX_KEY_LENGTH),
        ForeignKey("openclaw_sessions.session_id", ondelete="CASCADE"),
        index=True,
    )
    #: Id of the branch's last event; None for an active branch rewound to empty.
    tip_id: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH))
    tip_seq: Mapped[int | None] = mapped_column(SEQ)
    is_active: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    session: Mapped[AgentSession] = relationship(back_populates="branches")

    def __repr__(self) -> str:
        flag = " active" if self.is_active else ""
        return f"Branch({self.session_id!r}, tip={self.tip_id!r}{flag})"


class IndexState(Base):
    """Per-session watermark of the full-text index (revision 2). No row = never indexed."""

    __tablename__ = "openclaw_index_state"
    #: The name revision 0002 gave it: SQLite cannot rename a constraint without copying the
    #: table, so revision 0005 keeps it on both engines (autogenerate compares it by name).
    __table_args__ = (UniqueConstraint("session_id", name="uq_index_state_session_id"),)

    #: Also the session's token in the FTS ``sess`` column (``s<id>``).
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(MAX_KEY_LENGTH),
        ForeignKey("openclaw_sessions.session_id", ondelete="CASCADE"),
    )
    indexed_seq: Mapped[int] = mapped_column(SEQ, default=-1, server_default=text("-1"))
    indexed_leaf: Mapped[str | None] = mapped_column(String(MAX_KEY_LENGTH))
    needs_rebuild: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: Bumped by every write to this session's index rows (the reconciler's optimistic check).
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    #: The server default stays what migration 0002 created (1): every writer sets the column
    #: to INDEX_VERSION explicitly, and a row that did not would be re-indexed (older version),
    #: never trusted. Bumping INDEX_VERSION therefore needs no migration.
    index_version: Mapped[int] = mapped_column(
        Integer, default=INDEX_VERSION, server_default=text(str(INDEX_VERSION_COLUMN_DEFAULT))
    )


#: The index rows in time order (revision 11): what a search ordered ``recent`` walks.
TIME_INDEX = "ix_message_index_timestamp_ms"


class MessageIndex(Base):
    """Content table of the FTS5 index: one row per indexed message (revision 2), in time
    order by ``ix_message_index_timestamp_ms`` (revision 11: the ``recent`` order's walks)."""

    __tablename__ = "message_index"
    __table_args__ = (
        UniqueConstraint("session_id", "event_id"),
        Index(TIME_INDEX, "timestamp_ms"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(
        String(MAX_KEY_LENGTH), ForeignKey("openclaw_sessions.session_id", ondelete="CASCADE")
    )
    seq: Mapped[int] = mapped_column(SEQ)
    event_id: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH))
    role: Mapped[str] = mapped_column(String(16))
    timestamp_ms: Mapped[int] = mapped_column(BigInteger)
    #: The text as indexed (``tokens.index_body``: CJK characters spaced). Read by FTS5.
    body: Mapped[str] = mapped_column(Text)
    #: The session token FTS5 indexes beside the text, for narrow visibility filters.
    sess: Mapped[str] = mapped_column(String(32))


class MessageImpact(Base):
    """One row per (tracked frequent word, index row holding it), in the word's list order
    (``openclaw_fts.index.impact``; revision 7). Deleted with its index row."""

    __tablename__ = "message_impact"
    __table_args__ = (
        Index("ix_message_impact_walk", "term", "impact"),
        {"sqlite_with_rowid": False},
    )

    row_id: Mapped[int] = mapped_column(
        Integer,
        ForeignKey("message_index.id", ondelete="CASCADE", name="fk_message_impact_row_id"),
        primary_key=True,
    )
    term: Mapped[str] = mapped_column(String(MAX_TERM_CHARS), primary_key=True)
    #: The word's score factor in the row: higher ranks first.
    impact: Mapped[float] = mapped_column(Float)
    #: Occurrences of the word in the row.
    tf: Mapped[int] = mapped_column(Integer)
    #: The row's length as the engine's score counts it.
    doc_len: Mapped[int] = mapped_column(Integer)


class ImpactTerm(Base):
    """A tracked frequent word: ``message_impact`` holds every row of it whose impact reaches
    ``min_impact`` (revision 7)."""

    __tablename__ = "message_impact_terms"

    term: Mapped[str] = mapped_column(String(MAX_TERM_CHARS), primary_key=True)
    #: Messages holding the word when it became tracked.
    docs: Mapped[int] = mapped_column(Integer)
    #: SQLite: the average row length its impacts were computed with (unused on PostgreSQL).
    avg_len: Mapped[float] = mapped_column(Float)
    #: The list holds the rows whose impact reaches this.
    min_impact: Mapped[float] = mapped_column(Float)


class ReconcileLease(Base):
    """At most one reconciler per database holds the lease until ``expires_at`` (revision 2)."""

    __tablename__ = "reconcile_lease"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[float] = mapped_column(Float)


#: Tables of revision 1 (what a host stored before anything was indexed).
TRANSCRIPT_TABLES = ("openclaw_sessions", "transcript_events", "openclaw_branches")
#: Tables revision 2 adds (the FTS5 virtual table is created beside them by DDL).
INDEX_TABLES = ("openclaw_index_state", "message_index", "reconcile_lease")
#: Tables revision 7 adds (the impact lists of frequent words).
IMPACT_TABLES = ("message_impact", "message_impact_terms")
