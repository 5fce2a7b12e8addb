"""What an engine without per-connection needs does with its SQLAlchemy engines and
connections: :class:`DefaultConnections`, the :class:`~.base.Connections` an engine's own
class (``index/<engine>/connect.py``) overrides where the engine does otherwise, the way
Alembic's ``DefaultImpl`` holds what its dialects share.

Invariant: nothing here runs a statement or touches the plugin's tables; a server's database
is never a file nor in this process's memory, and its server's defaults are what the plugin
relies on (no per-connection setting, no lock before a flush, no snapshot option).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL

from .base import with_sync_driver


class DefaultConnections:
    """:class:`~.base.Connections` of a server engine that needs nothing of its connections."""

    #: ``{async driver: synchronous driver}`` (:meth:`sync_url`).
    sync_drivers: Mapping[str, str] = {}

    def engine_url(self, url: URL, *, read_only: bool | None, kwargs: dict[str, Any]) -> URL:
        """The URL as it is, with no ``create_engine`` argument added."""
        return url

    def database_file(self, url: URL) -> Path | None:
        """No file: the database is a server's."""
        return None

    def in_memory(self, url: URL) -> bool:
        """A server's database never lives on one connection in this process."""
        return False

    def sync_url(self, url: URL) -> URL:
        """Only the driver changes (:attr:`sync_drivers`)."""
        return with_sync_driver(url, self.sync_drivers)

    def configure_engine(
        self, engine: Engine, *, busy_timeout_ms: int, wal: bool, durability: str
    ) -> None:
        """Nothing per connection: the server's defaults are what the plugin relies on (on
        PostgreSQL a commit that returned survives a power cut under ``fsync=on`` and
        ``synchronous_commit=on``, the server's defaults, at either ``durability``)."""

    def own_engine(self, engine: Engine) -> None:
        """Nothing beyond :meth:`configure_engine`."""

    def settle_connection(self, dbapi_connection: Any, *, busy_timeout_ms: int) -> None:
        """Nothing to settle."""

    def begin_write(self, conn: Connection) -> None:
        """Nothing: appends lock their session's row (``Backend.lock_session``)."""

    def snapshot_options(
        self, *, read_only: bool = False, one_statement: bool = False
    ) -> dict[str, Any]:
        """None needed: a transaction reads one snapshot from its first read."""
        return {}
