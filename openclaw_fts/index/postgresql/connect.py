"""How the plugin makes and sets up PostgreSQL engines and connections:
:class:`PostgresqlConnections`, the :class:`~..base.Connections` of ``PostgresqlBackend``.

Invariant: a pooled connection the server closed is never handed out (tested on checkout:
without a round trip on psycopg 3, :func:`_alive_or_discard`; with the pool's pre-ping on any
other driver); every connection of an engine the plugin made on psycopg 3 has custom plans
(and no JIT) for its whole session (set once, outside any transaction), unless it reaches its
server through a transaction pooler (:mod:`.pooling`); a read that must see one snapshot runs
under REPEATABLE READ, or in autocommit when it is one statement. An asyncpg URL opens psycopg
3 on the same server.
"""

from __future__ import annotations

import select
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DisconnectionError

from ..base import with_sync_driver
from ..connections import DefaultConnections
from .pooling import is_transaction_pooled
from .read import ONE_STATEMENT, SESSION_CUSTOM_PLANS, SNAPSHOT_ISOLATION

#: The driver whose connections :meth:`PostgresqlConnections.own_engine` can test without a
#: round trip (and sets up per session).
PSYCOPG = "psycopg"
#: The async driver a host's ``AsyncEngine`` may use (its URL maps to :data:`PSYCOPG`'s).
ASYNCPG = "asyncpg"
#: Query parameters of an asyncpg URL that only asyncpg's dialect reads (libpq, under psycopg,
#: would refuse them): dropped from the synchronous URL.
ASYNCPG_ONLY_PARAMS = ("prepared_statement_cache_size",)
#: asyncpg's ``ssl=<mode>`` is libpq's ``sslmode=<mode>`` for these modes.
LIBPQ_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
#: What each new connection of an engine the plugin made runs once: custom plans, and no JIT
#: compilation (:data:`.read.NO_JIT`: a search is one statement in autocommit, with no
#: transaction to set it in), for the connection's whole session.
_SESSION_SETTINGS = (
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', false), "
    "set_config('jit', 'off', false)"
)
#: libpq's ``CONNECTION_OK`` (``PQstatus``).
_CONNECTION_OK = 0


def _session_settings(dbapi_connection: Any, record: Any) -> None:
    """:data:`_SESSION_SETTINGS` on a new connection, outside any transaction (a ``SET`` in one
    that is rolled back would be undone), marked on its pool record for the reader."""
    before = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(_SESSION_SETTINGS)
        finally:
            cursor.close()
    finally:
        dbapi_connection.autocommit = before
    record.info[SESSION_CUSTOM_PLANS] = True


def _ping(dbapi_connection: Any) -> None:
    """One ``SELECT 1`` outside any transaction (raises on a closed connection)."""
    before = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    try:
        dbapi_connection.execute("SELECT 1")
    finally:
        if not dbapi_connection.closed:
            dbapi_connection.autocommit = before


def _alive_or_discard(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    """Raise ``DisconnectionError`` (the pool then connects afresh) for a pooled psycopg 3
    connection the server has closed. An idle connection receives nothing unless the server
    is saying goodbye (a restart, an administrator's ``pg_terminate_backend``, an idle
    timeout) or sends a notice: libpq's status and a zero-timeout ``select`` on its socket
    tell without a round trip, and only when something did arrive is the connection pinged."""
    try:
        pgconn = dbapi_connection.pgconn
        if pgconn.status != _CONNECTION_OK:
            raise DisconnectionError("the connection is closed")
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
        if readable:
            _ping(dbapi_connection)
    except DisconnectionError:
        raise
    except Exception as exc:  # a closed socket, a failed ping: whatever the driver raised
        raise DisconnectionError(str(exc)) from exc


class PostgresqlConnections(DefaultConnections):
    """:class:`~..base.Connections` of ``postgresql`` databases."""

    sync_drivers: Mapping[str, str] = {ASYNCPG: PSYCOPG}

    def sync_url(self, url: URL) -> URL:
        """An asyncpg URL opens psycopg 3 on the same server: asyncpg-only parameters
        (:data:`ASYNCPG_ONLY_PARAMS`) are dropped and ``ssl=<mode>`` becomes libpq's
        ``sslmode=<mode>`` (:data:`LIBPQ_SSL_MODES`; an explicit ``sslmode`` wins)."""
        if url.get_driver_name() == ASYNCPG:
            query = {k: v for k, v in url.query.items() if k not in ASYNCPG_ONLY_PARAMS}
            ssl = query.get("ssl")
            if isinstance(ssl, str) and ssl in LIBPQ_SSL_MODES and "sslmode" not in query:
                query["sslmode"] = query.pop("ssl")
            url = url.set(query=query)
        return with_sync_driver(url, self.sync_drivers)

    def engine_url(self, url: URL, *, read_only: bool | None, kwargs: dict[str, Any]) -> URL:
        """A server restart (or an idle timeout) closes pooled connections under the pool:
        each is tested on checkout, so the first call after a restart reconnects instead of
        failing. With psycopg 3 the test costs no round trip (:meth:`own_engine`); with
        another driver it is the pool's pre-ping (a ``SELECT 1`` per checkout)."""
        if url.get_driver_name() != PSYCOPG:
            kwargs.setdefault("pool_pre_ping", True)
        return url

    def own_engine(self, engine: Engine) -> None:
        """On psycopg 3: custom plans and no JIT for each connection's whole session (set once
        when it connects, instead of in every search's transaction:
        :data:`.read.FORCE_CUSTOM_PLAN`),
        and a checkout that discards a connection the server has closed without a round trip
        (:func:`_alive_or_discard`)."""
        if engine.dialect.driver != PSYCOPG:
            return

        def session_settings(dbapi_connection: Any, record: Any) -> None:
            # Behind a transaction pooler a SET would stay in a server session other clients
            # get; nothing is prepared there, so every plan is custom anyway.
            if not is_transaction_pooled(engine):
                _session_settings(dbapi_connection, record)

        event.listen(engine, "connect", session_settings)
        event.listen(engine, "checkout", _alive_or_discard)

    def snapshot_options(
        self, *, read_only: bool = False, one_statement: bool = False
    ) -> dict[str, Any]:
        """REPEATABLE READ: one snapshot for every statement (READ COMMITTED takes one per
        statement: a session could turn pending between the probe and the ranked statement,
        and a batch's queries, or a check's reads, would not agree). ``one_statement``:
        autocommit, so a search that is one statement (:func:`.read.folded_sql`) sends no
        ``BEGIN`` and no ``ROLLBACK``; the search moves the connection to REPEATABLE READ
        itself before a second statement that must share the snapshot."""
        if one_statement and not read_only:
            return {"isolation_level": ONE_STATEMENT}
        options: dict[str, Any] = {"isolation_level": SNAPSHOT_ISOLATION}
        if read_only:
            options["postgresql_readonly"] = True
        return options
