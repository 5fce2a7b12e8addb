"""Shared fixtures: a real SQLite database file per test, migrated to head."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import TranscriptStore
from openclaw_fts.engine import make_engine

FIXTURES = Path(__file__).parent / "fixtures"

# pg_server / pg_url: the PostgreSQL half of the suite (a throwaway server per test session).
pytest_plugins = ["conftest_pg"]

# CI (CI=true) runs the same Hypothesis examples every time: a red build is reproducible and
# never a roll of the dice; local runs keep exploring new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'test.sqlite'}"


@pytest.fixture
def store(db_url: str) -> Iterator[TranscriptStore]:
    """A store on a fresh database file; no background thread (reconcile() is explicit)."""
    s = TranscriptStore(db_url, background=False)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def engine(db_url: str, store: TranscriptStore) -> Iterator[Engine]:
    """A second engine on the store's database (another connection pool, like another process)."""
    e = make_engine(db_url)
    try:
        yield e
    finally:
        e.dispose()


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
