"""The pytest plugin of the testing kit (registered through the ``pytest11`` entry point, so
installing openclaw-fts is enough): fixtures for a host's integration tests (docs/testing.md).

Invariant: each test gets a database nobody else sees — a new SQLite file in its ``tmp_path``,
or, when ``--openclaw-fts-url`` / ``OPENCLAW_FTS_TEST_URL`` names a PostgreSQL server, a new
database created on it for the test and dropped after it (also when the test fails). Without
either the plugin touches no server. It imports the plugin's store only when a fixture runs,
so a pytest run that uses none of them pays nothing but the option.
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .store import TranscriptStore

#: The command-line option naming a PostgreSQL server for the fixtures.
URL_OPTION = "--openclaw-fts-url"
#: The environment variable read when the option is not given.
URL_ENV = "OPENCLAW_FTS_TEST_URL"
#: Prefix of the databases the fixtures create (then the process id, a random tag, a counter).
DATABASE_PREFIX = "openclaw_fts_test"
#: The SQLite file of a test's database, in its ``tmp_path``.
SQLITE_FILE = "transcripts.sqlite"

_numbers = itertools.count(1)
_tag = secrets.token_hex(3)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("openclaw-fts", "openclaw-fts testing kit")
    group.addoption(
        URL_OPTION,
        dest="openclaw_fts_url",
        default=None,
        metavar="URL",
        help=(
            "PostgreSQL server for the transcript_store fixtures: a new database on it per "
            f"test, dropped after it (default: ${URL_ENV}, else a temporary SQLite file)"
        ),
    )


def server_url(config: pytest.Config) -> str | None:
    """The PostgreSQL server the fixtures use, or ``None`` (SQLite)."""
    given = config.getoption("openclaw_fts_url", default=None) or os.environ.get(URL_ENV)
    return str(given) if given else None


@contextmanager
def fresh_postgresql_database(server: str) -> Iterator[str]:
    """A new, empty database on the PostgreSQL server of URL ``server`` (any database on it
    serves to connect), dropped on exit; yields its URL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    from .engine import make_engine
    from .index.base import known_backend

    url = make_url(server)
    found = known_backend(url)
    databases = found.databases if found is not None else None
    if databases is None:  # a database of its own per test is made on a server only
        raise pytest.UsageError(
            f"{URL_OPTION} / {URL_ENV} must name a PostgreSQL server (postgresql://...); "
            f"leave it out for SQLite, got {url.drivername}://"
        )
    name = f"{DATABASE_PREFIX}_{os.getpid()}_{_tag}_{next(_numbers)}"
    admin = make_engine(url, poolclass=NullPool).execution_options(isolation_level="AUTOCOMMIT")
    try:
        databases.create(admin, name)
        try:
            yield url.set(database=name).render_as_string(hide_password=False)
        finally:
            databases.drop(admin, name)
    finally:
        admin.dispose()


@pytest.fixture
def transcript_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a new, empty database for this test (not migrated: the host's own migrations,
    or a store opened on it, create the tables)."""
    server = server_url(request.config)
    if server is None:
        yield f"sqlite:///{tmp_path / SQLITE_FILE}"
        return
    with fresh_postgresql_database(server) as url:
        yield url


@pytest.fixture
def transcript_store(transcript_store_url: str) -> Iterator[TranscriptStore]:
    """A :class:`~openclaw_fts.TranscriptStore` on this test's new database, migrated to head,
    without the background reconciler (``reconcile()`` is explicit); closed after the test."""
    from .store import TranscriptStore

    store = TranscriptStore(transcript_store_url, background=False)
    try:
        yield store
    finally:
        store.close()
