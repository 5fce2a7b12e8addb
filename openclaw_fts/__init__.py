"""openclaw-fts: exact session recall for AI agents.

Transcripts (a tree of events per session, one active branch) stored through SQLAlchemy, with
their user/assistant text mirrored into a full-text index in the same transaction (SQLite
FTS5, the embedded default, or PostgreSQL's ``tsvector`` and GIN), a reconciler for everything
that is not a plain append, and OpenClaw's ``sessions_search`` / ``sessions_history`` on top.
See docs/architecture.md and docs/python.md.
"""

from __future__ import annotations

from . import results, tools
from .caller import AgentToAgent, Caller
from .errors import (
    DuplicateEventError,
    HostManagedSchemaError,
    ImportFormatError,
    InvalidEventError,
    InvalidSessionError,
    MissingDriverError,
    MissingExtraError,
    OpenClawFtsError,
    SessionExistsError,
    StorageFullError,
    ToolInputError,
    UnknownSessionError,
    UnsupportedDatabaseError,
)
from .hooks import install, uninstall
from .models import AgentSession, Branch, TranscriptEvent, metadata
from .results import (
    BatchSearchHit,
    BatchSearchResult,
    HistoryAnswer,
    HistoryResult,
    ImportResult,
    IndexStatus,
    RebuildResult,
    ReconcileResult,
    SearchAnswer,
    SearchHit,
    SearchResult,
    SessionsListResult,
    StatusResult,
)
from .store import TranscriptStore

__version__ = "0.1.0"

__all__ = [
    "AgentSession",
    "AgentToAgent",
    "BatchSearchHit",
    "BatchSearchResult",
    "Branch",
    "Caller",
    "DuplicateEventError",
    "HistoryAnswer",
    "HistoryResult",
    "HostManagedSchemaError",
    "ImportFormatError",
    "ImportResult",
    "IndexStatus",
    "InvalidEventError",
    "InvalidSessionError",
    "MissingDriverError",
    "MissingExtraError",
    "OpenClawFtsError",
    "RebuildResult",
    "ReconcileResult",
    "SearchAnswer",
    "SearchHit",
    "SearchResult",
    "SessionExistsError",
    "SessionsListResult",
    "StatusResult",
    "StorageFullError",
    "ToolInputError",
    "TranscriptEvent",
    "TranscriptStore",
    "UnknownSessionError",
    "UnsupportedDatabaseError",
    "install",
    "metadata",
    "results",
    "tools",
    "uninstall",
]
