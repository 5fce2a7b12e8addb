"""The PostgreSQL half of the suite: one throwaway server per test session, one database per test.

Invariant: the server is started only when a test asks for :func:`pg_url` (a SQLite-only run
starts nothing) and is stopped when the session ends, also after failures or Ctrl-C (fixture
finaliser, and ``atexit`` behind it). Each test gets a database of its own, created empty from
``template1`` and dropped afterwards. Without server binaries the PostgreSQL tests are skipped
with the reason — except where PostgreSQL is required (``CI`` or
:data:`REQUIRE_ENV` set), where they fail instead, so CI can never go green on the SQLite half
alone. The terminal summary says which halves ran.
"""

from __future__ import annotations

import atexit
import itertools
import os
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pgserver import PgServer, find_bindir, unavailable_reason
from sqlalchemy import Engine

#: Set (to anything but "" or "0") to fail, not skip, when no PostgreSQL server can be started.
REQUIRE_ENV = "OPENCLAW_FTS_REQUIRE_POSTGRESQL"
#: Prefix of the per-test databases.
DATABASE_PREFIX = "t"
#: Hash partitions of the partitioned test databases (few: most tests have one or two agents,
#: and several partitions still let a misrouted row go unseen).
PARTITIONS = 4

_state: dict[str, object] = {"server": None, "reason": None, "tests": 0, "start_s": 0.0}
_counter = itertools.count(1)


def postgresql_required() -> bool:
    return any(os.environ.get(name, "") not in ("", "0") for name in (REQUIRE_ENV, "CI"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL server (skips, or fails where required, when there is none)."""
    reason = unavailable_reason()
    bindir = find_bindir()
    if reason is not None or bindir is None:
        _state["reason"] = reason
        message = f"PostgreSQL tests not run: {reason}"
        if postgresql_required():
            pytest.fail(f"{message} (required here: CI or {REQUIRE_ENV} is set)")
        pytest.skip(message)
    started = time.perf_counter()
    server = PgServer(bindir).start()
    atexit.register(server.stop)  # behind the finaliser: an interpreter exit mid-session
    _state["server"] = server
    _state["start_s"] = time.perf_counter() - started
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_partitioned_template(pg_server: PgServer) -> str:
    """A database at the plugin's head in the layout partitioned by agent (docs/scale.md), made
    once per session: the template of :func:`pg_partitioned_url`'s databases."""
    from openclaw_fts import migrate
    from openclaw_fts.engine import make_engine

    name = f"{DATABASE_PREFIX}{os.getpid()}_partitioned_template"
    admin = pg_server.url().replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template1')
    engine = make_engine(pg_server.url(name))
    try:
        migrate.upgrade(engine)
        migrate.partition_by_agent(engine, PARTITIONS)
    finally:
        engine.dispose()  # a template must have no connection when it is copied
    return name


@pytest.fixture
def pg_partitioned_url(pg_server: PgServer, pg_partitioned_template: str) -> Iterator[str]:
    """Like :func:`pg_url`, on a copy of :func:`pg_partitioned_template`."""
    yield from _database(pg_server, pg_partitioned_template)


@pytest.fixture(scope="module")
def pg_partitioned_module_url(pg_server: PgServer, pg_partitioned_template: str) -> Iterator[str]:
    """Like :func:`pg_module_url`, on a copy of :func:`pg_partitioned_template`."""
    yield from _database(pg_server, pg_partitioned_template)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """SQLAlchemy URL of a fresh, empty database on the session's server (dropped afterwards)."""
    yield from _database(pg_server, "template1")


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    """An engine on :func:`pg_url`'s fresh database (nothing migrated): the tests of
    PostgreSQL's own objects."""
    from openclaw_fts.engine import make_engine

    engine = make_engine(pg_url)
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def pg_module_url(pg_server: PgServer) -> Iterator[str]:
    """Like :func:`pg_url`, one database for a whole test module (dropped after it)."""
    yield from _database(pg_server, "template1")


def _database(pg_server: PgServer, template: str) -> Iterator[str]:
    name = f"{DATABASE_PREFIX}{os.getpid()}_{next(_counter)}"
    admin = pg_server.url().replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    _state["tests"] = int(str(_state["tests"])) + 1
    try:
        yield pg_server.url(name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _summary_state() -> dict[str, object]:
    """This process's account of the PostgreSQL half, as plain data (sent by xdist workers)."""
    server = _state["server"]
    return {
        "version": server.version if isinstance(server, PgServer) else None,
        "reason": _state["reason"],
        "tests": _state["tests"],
        "start_s": _state["start_s"],
    }


class _WorkerSummaries:
    """Under pytest-xdist (CI runs ``-n auto``) each worker starts its own server: the workers
    send their accounts to the controller, whose summary line adds them up."""

    def __init__(self) -> None:
        self.accounts: list[dict[str, object]] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        account = getattr(node, "workeroutput", {}).get("openclaw_fts_pg")
        if isinstance(account, dict):
            self.accounts.append(account)


_workers = _WorkerSummaries()


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_workers, "openclaw_fts_pg_workers")


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if isinstance(output, dict):  # an xdist worker: the controller writes the summary
        output["openclaw_fts_pg"] = _summary_state()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    accounts = [_summary_state(), *_workers.accounts]
    ran = [a for a in accounts if a["version"] is not None]
    reasons = [a["reason"] for a in accounts if a["reason"] is not None]
    if ran:
        databases = sum(int(str(a["tests"])) for a in ran)
        start = max(float(str(a["start_s"])) for a in ran)
        servers = f", {len(ran)} servers" if len(ran) > 1 else ""
        terminalreporter.write_line(
            f"PostgreSQL half: ran ({databases} databases on {ran[0]['version']}{servers}, "
            f"server start {start:.1f}s)"
        )
    if reasons:
        verb = "FAILED" if postgresql_required() else "skipped"
        terminalreporter.write_line(f"PostgreSQL half: {verb} — {reasons[0]}")
    elif not ran:
        terminalreporter.write_line("PostgreSQL half: not selected in this run")
