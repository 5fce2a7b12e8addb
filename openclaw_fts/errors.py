"""The exceptions the plugin raises on bad input, and how their messages quote that input.

Invariant: every error a caller can cause with bad arguments or bad data is one of these
(all ``ValueError``s, so generic handlers keep working) and carries a one-line message that
names what was wrong; nothing deeper (SQL, JSON, Unicode) escapes the public API for bad input.
A message quotes caller input through :func:`quoted` / :func:`shorten`, cut to
:data:`MAX_QUOTED_CHARS`, and no message is longer than :data:`MAX_ERROR_CHARS`.

    OpenClawFtsError (ValueError)
    ├── ToolInputError          sessions_search / sessions_history arguments
    ├── InvalidEventError       an event that cannot be stored or edited that way
    ├── DuplicateEventError     an event id or seq already taken in the session
    ├── InvalidSessionError     session fields that cannot be stored
    ├── UnknownSessionError     a session id that does not exist
    ├── SessionExistsError      create_session with a taken id
    ├── ImportFormatError       a file that is not an OpenClaw transcript
    ├── HostManagedSchemaError  a migration asked of a database the host's Alembic owns
    ├── MissingExtraError       an optional feature whose extra is not installed (also an
    │                           ImportError); its message names the pip command
    └── UnsupportedDatabaseError a dialect (or server) the plugin cannot run on
        └── MissingDriverError  a URL whose driver is not installed (also an ImportError);
                                its message names the extra to install
    StorageFullError (OSError)  no space left for the database: the write was rolled back

One error is not about input: :class:`StorageFullError` (an ``OSError`` with ``errno``
``ENOSPC``), raised by any write — the store's, a host's flush or commit, the reconciler's — that
could not complete because the storage under the database has no space left (SQLite
``SQLITE_FULL``, PostgreSQL SQLSTATE 53100). Its transaction was rolled back.

Other database errors (``sqlalchemy.exc.OperationalError`` such as *database is locked*, or an
``IntegrityError`` carrying ``index.sqlite.edit_triggers.EDIT_REFUSED``) pass through as
SQLAlchemy raises them.
"""

from __future__ import annotations

import errno

#: Most characters of caller input an error message quotes; longer input is cut with a note of
#: its length, so a 100,000-character key cannot come back as a 100 KB error.
MAX_QUOTED_CHARS = 120
#: Longest message any of the plugin's errors carries (paths and reasons included).
MAX_ERROR_CHARS = 2000


def shorten(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """``value`` as text, cut to ``limit`` characters plus a note of how much was left out."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def quoted(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """``repr(value)`` of a string cut like :func:`shorten` (for ``'…'``-quoted messages)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    return shorten(repr(value), limit + 2)


class OpenClawFtsError(ValueError):
    """Base class of the plugin's input errors (message cut to :data:`MAX_ERROR_CHARS`)."""

    def __init__(self, message: object = "", *args: object) -> None:
        if isinstance(message, str) and len(message) > MAX_ERROR_CHARS:
            message = shorten(message, MAX_ERROR_CHARS)
        super().__init__(message, *args)


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


class MissingExtraError(OpenClawFtsError, ImportError):
    """An optional feature whose extra is not installed (the MCP server without ``mcp``): the
    message names the ``pip install 'openclaw-fts[...]'`` that installs it."""


class UnsupportedDatabaseError(OpenClawFtsError):
    """A database the plugin cannot run on: a dialect it does not support, one whose index
    backend does not exist yet, or a server missing an extension the schema needs."""


class MissingDriverError(UnsupportedDatabaseError, ImportError):
    """A database URL whose driver is not installed (``postgresql+psycopg://`` without psycopg):
    the message names the extra that installs it. Also an :class:`ImportError`, what SQLAlchemy
    raises for it."""


class StorageFullError(OSError):
    """A write could not complete: the storage under the database has no space left (SQLite's
    ``SQLITE_FULL`` *database or disk is full*, PostgreSQL's SQLSTATE 53100 ``disk_full``).
    The transaction was rolled back: nothing of it is stored, and everything committed before
    is intact. Once space is freed the same store accepts writes again (docs/reliability.md).
    ``errno`` is ``ENOSPC``; ``storage`` names the database (its URL, password hidden); the
    driver's error is the ``__cause__``."""

    def __init__(self, storage: str, reason: str) -> None:
        message = shorten(
            f"openclaw-fts: no space left for the database {storage} ({reason}); the write "
            "was rolled back — free space and retry",
            MAX_ERROR_CHARS,
        )
        super().__init__(errno.ENOSPC, message)
        self.storage = storage
        self.reason = reason

    def __str__(self) -> str:
        return str(self.strerror)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.storage, self.reason))
