"""Shared fixtures: a real database per test, migrated to head — an SQLite file, and for the
modules marked ``both_engines`` also a fresh database on the session's PostgreSQL server (the
same test runs once per engine; ``sqlite_only`` marks the few tests of such a module that
inspect SQLite itself)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from jsonschema import Draft202012Validator
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import TranscriptStore, tools
from openclaw_fts.engine import make_engine
from openclaw_fts.index.postgresql.read import PostgresSearch
from openclaw_fts.index.sqlite import read as sqlite_read

FIXTURES = Path(__file__).parent / "fixtures"

# pg_server / pg_url: the PostgreSQL half of the suite (a throwaway server per test session).
pytest_plugins = ["conftest_pg"]

# CI (CI=true) runs the same Hypothesis examples every time: a red build is reproducible and
# never a roll of the dice; local runs keep exploring new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


ENGINES = ("sqlite", "postgresql")
#: The PostgreSQL layout partitioned by agent (docs/scale.md): a third engine for the modules of
#: :data:`PARTITIONED_MODULES` (the search, history, edit and reconcile behaviour), not for the
#: whole suite (its PostgreSQL half already takes most of the run).
PARTITIONED = "postgresql-partitioned"
PARTITIONED_MODULES = frozenset(
    {
        "test_search",
        "test_history",
        "test_edits",
        "test_reconcile",
        "test_impact_lists",
        "test_impact_self_maintained",
    }
)
#: Set (to anything but "" or "0") to run EVERY ``both_engines`` module on the partitioned
#: layout as well (``bash scripts/test.sh -m both_engines -k partitioned``): the whole suite's
#: check that the layout changes no behaviour, longer than CI's default run.
PARTITIONED_ALL_ENV = "OPENCLAW_FTS_PARTITIONED_ALL"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "both_engines: run each test of the module on SQLite and on PostgreSQL"
    )
    config.addinivalue_line(
        "markers", "sqlite_only(reason): a test of a both_engines module that needs SQLite"
    )
    config.addinivalue_line(
        "markers",
        "fresh_database(reason): a both_engines test that starts from a database without the "
        "plugin's schema, so not one in the partitioned layout (a conversion of a migrated one)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    names = metafunc.fixturenames
    wants_db = "db_url" in names or "module_db_url" in names
    if wants_db and metafunc.definition.get_closest_marker("both_engines"):
        only = metafunc.definition.get_closest_marker("sqlite_only")
        engines = ENGINES[:1] if only else ENGINES
        fresh = metafunc.definition.get_closest_marker("fresh_database")
        if not only and not fresh and _partitioned(metafunc.module.__name__.rpartition(".")[2]):
            engines = (*engines, PARTITIONED)
        # A module's shared database (module_db_url) needs the engine fixed for the module: the
        # tests are then grouped by engine, each group on its own database.
        scope = "module" if "module_db_url" in names else "function"
        metafunc.parametrize("db_engine", engines, scope=scope)


def _partitioned(module: str) -> bool:
    """Whether a ``both_engines`` module also runs on the layout partitioned by agent."""
    return module in PARTITIONED_MODULES or os.environ.get(PARTITIONED_ALL_ENV, "") not in ("", "0")


@pytest.fixture
def db_engine() -> str:
    """The engine of this test's database (parametrized in ``both_engines`` modules)."""
    return "sqlite"


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path, db_engine: str) -> str:
    if db_engine == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    if db_engine == PARTITIONED:
        return str(request.getfixturevalue("pg_partitioned_url"))
    return f"sqlite:///{tmp_path / 'test.sqlite'}"


@pytest.fixture(scope="module")
def module_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, db_engine: str
) -> str:
    """Like :func:`db_url`, one database for all the tests of a ``both_engines`` module on an
    engine (for modules whose tests read what one costly setup wrote, e.g. CLI runs)."""
    if db_engine == "postgresql":
        return str(request.getfixturevalue("pg_module_url"))
    if db_engine == PARTITIONED:
        return str(request.getfixturevalue("pg_partitioned_module_url"))
    if db_engine != "sqlite":
        pytest.fail(f"module_db_url has no shared database for {db_engine}")
    return f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.sqlite'}"


@pytest.fixture
def store(db_url: str) -> Iterator[TranscriptStore]:
    """A store on a fresh database file; no background thread (reconcile() is explicit)."""
    s = TranscriptStore(db_url, background=False)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def fresh(db_url: str) -> Iterator[Engine]:
    """An engine on this test's database before anything migrated it (no store opened): what
    the migration tests start from."""
    e = make_engine(db_url)
    try:
        yield e
    finally:
        e.dispose()


@pytest.fixture
def engine(store: TranscriptStore, fresh: Engine) -> Engine:
    """A second engine on the store's database (another connection pool, like another process),
    opened after the store migrated it."""
    return fresh


@pytest.fixture
def host(db_url: str, store: TranscriptStore) -> Iterator[sessionmaker[Session]]:
    """The host application's own engine and sessionmaker, with the plugin installed."""
    engine = make_engine(db_url)
    factory = sessionmaker(engine)
    openclaw_fts.install(factory)
    try:
        yield factory
    finally:
        engine.dispose()


# Every sessions_search / sessions_history result any test produces -- through the store, the
# tool adapters or the command line -- is checked against the output schemas written from
# OpenClaw's tool definitions (openclaw_fts.tools): a field OpenClaw's schema does not allow
# fails the test that produced it.
SEARCH_OUTPUT = Draft202012Validator(tools.SESSIONS_SEARCH_OUTPUT_SCHEMA)
HISTORY_OUTPUT = Draft202012Validator(tools.SESSIONS_HISTORY_OUTPUT_SCHEMA)


def check_search_output(out: Any) -> Any:
    SEARCH_OUTPUT.validate(out)
    return out


def check_history_output(out: Any) -> Any:
    HISTORY_OUTPUT.validate(out)
    for message in out.get("messages", ()):
        seq = message.get("__openclaw", {}).get("seq") if isinstance(message, dict) else None
        assert isinstance(seq, int) and seq >= 1, message  # 1-based transcript position
    return out


@pytest.fixture(autouse=True)
def _outputs_follow_openclaws_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    search, history = TranscriptStore.search, TranscriptStore.history

    @functools.wraps(search)  # keeps the signature tests/test_async.py compares
    def checked_search(self: TranscriptStore, *args: Any, **kwargs: Any) -> Any:
        return check_search_output(search(self, *args, **kwargs))

    @functools.wraps(history)
    def checked_history(self: TranscriptStore, *args: Any, **kwargs: Any) -> Any:
        return check_history_output(history(self, *args, **kwargs))

    monkeypatch.setattr(TranscriptStore, "search", checked_search)
    monkeypatch.setattr(TranscriptStore, "history", checked_history)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the searches answered from an impact list (either engine)."""
    used: list[int] = []
    sqlite_top = sqlite_read.impact.top_hits
    pg_rows = PostgresSearch._impact_rows
    pg_folded = PostgresSearch._folded_rows

    def top_hits(*args: Any, **kwargs: Any) -> Any:
        found = sqlite_top(*args, **kwargs)
        used.extend([1] if found is not None else [])
        return found

    def impact_rows(self: PostgresSearch, *args: Any, **kwargs: Any) -> Any:
        found = pg_rows(self, *args, **kwargs)
        used.extend([1] if found is not None else [])
        return found

    def folded_rows(self: PostgresSearch, *args: Any, **kwargs: Any) -> Any:
        found = pg_folded(self, *args, **kwargs)
        used.extend([1] if found[0][3] else [])  # the one statement's ``listed``
        return found

    monkeypatch.setattr(sqlite_read.impact, "top_hits", top_hits)
    monkeypatch.setattr(PostgresSearch, "_folded_rows", folded_rows)
    monkeypatch.setattr(PostgresSearch, "_impact_rows", impact_rows)
    yield used
