"""The exceptions the plugin raises on bad input, all exported from ``openclaw_fts``.

Invariant: every error a caller can cause with bad arguments or bad data is one of these
(all ``ValueError``s, so generic handlers keep working) and carries a one-line message that
names what was wrong; nothing deeper (SQL, JSON, Unicode) escapes the public API for bad input.

    OpenClawFtsError (ValueError)
    ├── ToolInputError          sessions_search / sessions_history arguments
    ├── InvalidEventError       an event that cannot be stored or edited that way
    ├── DuplicateEventError     an event id or seq already taken in the session
    ├── InvalidSessionError     session fields that cannot be stored
    ├── UnknownSessionError     a session id that does not exist
    ├── SessionExistsError      create_session with a taken id
    ├── ImportFormatError       a file that is not an OpenClaw transcript
    └── HostManagedSchemaError  a migration asked of a database the host's Alembic owns

Database errors (``sqlalchemy.exc.OperationalError`` such as *database is locked*, or an
``IntegrityError`` carrying ``openclaw_fts.index.edit_triggers.EDIT_REFUSED``) pass through as
SQLAlchemy raises them.
"""

from __future__ import annotations


class OpenClawFtsError(ValueError):
    """Base class of the plugin's input errors."""


class ToolInputError(OpenClawFtsError):
    """Invalid arguments of ``sessions_search`` / ``sessions_history`` (OpenClaw's messages)."""


class InvalidEventError(OpenClawFtsError):
    """An event that cannot be stored (not an object, too large, not serialisable)."""


class DuplicateEventError(OpenClawFtsError):
    """An event id or ``seq`` already taken in that session."""


class InvalidSessionError(OpenClawFtsError):
    """Session fields that cannot be stored (not strings, too long, not valid Unicode)."""


class UnknownSessionError(OpenClawFtsError):
    """A session id that does not exist."""


class SessionExistsError(OpenClawFtsError):
    """``create_session`` with a session id that is taken."""


class ImportFormatError(OpenClawFtsError):
    """A file that is not an OpenClaw transcript (or sessions folder)."""


class HostManagedSchemaError(OpenClawFtsError):
    """A migration asked of a database whose plugin revisions the host's Alembic runs."""
