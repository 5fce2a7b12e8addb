"""The test session's PostgreSQL server (tests/pgserver.py): reachable only through its own
socket folder, one empty database per test, unaccent available, and gone after stop()."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from conftest_pg import REQUIRE_ENV
from pgserver import BINDIR_ENV, PgServer, find_bindir
from sqlalchemy import create_engine, text

#: Seconds a child pytest run may take (it starts no server).
CHILD_TIMEOUT_S = 120


def test_each_test_gets_an_empty_database_on_the_socket(pg_url: str, pg_server: PgServer) -> None:
    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT current_database()")).scalar_one() in pg_url
            tables = conn.execute(
                text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            ).scalar_one()
            assert tables == 0
            assert conn.execute(text("SHOW listen_addresses")).scalar_one() == ""
            assert conn.execute(text("SHOW server_encoding")).scalar_one() == "UTF8"
            available = conn.execute(
                text("SELECT count(*) FROM pg_available_extensions WHERE name = 'unaccent'")
            ).scalar_one()
            assert available == 1
    finally:
        engine.dispose()
    assert str(pg_server.socket_dir) in pg_url


def test_a_second_server_starts_and_stop_removes_everything(pg_server: PgServer) -> None:
    bindir = find_bindir()
    assert bindir is not None  # pg_server skips or fails first when there is none
    server = PgServer(bindir).start()
    root = server.root
    try:
        url = server.url().replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert not Path(root).exists()


def _pytest_without_binaries(require: bool) -> subprocess.CompletedProcess[str]:
    """This file's first test in a child pytest whose PostgreSQL binaries are 'missing'."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", REQUIRE_ENV)}
    env[BINDIR_ENV] = "/nonexistent/postgresql/bin"
    if require:
        env[REQUIRE_ENV] = "1"
    test = f"{Path(__file__)}::test_each_test_gets_an_empty_database_on_the_socket"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", test],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).parent.parent,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )


def test_without_binaries_the_postgresql_half_is_skipped_with_the_reason() -> None:
    result = _pytest_without_binaries(require=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "no PostgreSQL server binaries" in result.stdout
    assert "PostgreSQL half: skipped" in result.stdout


def test_without_binaries_the_postgresql_half_fails_where_required() -> None:
    result = _pytest_without_binaries(require=True)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "1 error" in result.stdout
    assert "no PostgreSQL server binaries" in result.stdout
    assert "PostgreSQL half: FAILED" in result.stdout
