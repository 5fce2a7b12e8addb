"""The test session's PostgreSQL server (tests/pgserver.py): reachable only through its own
socket folder, one empty database per test, unaccent available, and gone after stop()."""

from __future__ import annotations

from pathlib import Path

import psycopg
from pgserver import PgServer, find_bindir
from sqlalchemy import create_engine, text


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
