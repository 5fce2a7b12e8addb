"""Which databases the plugin accepts (issue #15, groundwork): a dialect it does not support is
refused where an engine enters the plugin — TranscriptStore, install(), make_engine — with an
error naming the supported dialects, before anything connects; PostgreSQL, whose schema
migrates but whose index backend does not exist yet, is refused by the store with an error
saying exactly that (tests/test_migrations.py shows the migrations running there)."""

from __future__ import annotations

import ast
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import sessionmaker
from test_cli import run

import openclaw_fts
from openclaw_fts import TranscriptStore
from openclaw_fts.dialects import INDEX_DIALECTS, SCHEMA_DIALECTS
from openclaw_fts.engine import make_engine
from openclaw_fts.errors import OpenClawFtsError, UnsupportedDatabaseError

SUPPORTED = "supported: sqlite, postgresql"
#: URLs of dialects the plugin does not support. No server behind them and no driver installed:
#: the refusal must come before SQLAlchemy looks for either.
UNSUPPORTED_URLS = (
    "mysql://user@localhost/app",
    "mysql+pymysql://user@localhost/app",
    "mariadb://user@localhost/app",
    "mssql+pyodbc://user@localhost/app",
    "oracle://user@localhost/app",
)
#: A PostgreSQL URL nobody serves: the store must refuse it without connecting.


@pytest.fixture
def mysql_engine() -> Iterator[Engine]:
    """A real SQLAlchemy engine with the MySQL dialect, never connected. No MySQL driver is
    installed here, so the stdlib sqlite3 module stands in as its DBAPI; the plugin must refuse
    the engine from its dialect alone, before any connection is attempted."""
    engine = create_engine("mysql://user@localhost/app", module=sqlite3)
    try:
        yield engine
    finally:
        engine.dispose()


def test_supported_lists_agree() -> None:
    assert SCHEMA_DIALECTS == ("sqlite", "postgresql")
    assert INDEX_DIALECTS == ("sqlite", "postgresql")


@pytest.mark.parametrize("url", UNSUPPORTED_URLS)
def test_store_refuses_an_unsupported_url(url: str) -> None:
    with pytest.raises(UnsupportedDatabaseError, match=SUPPORTED) as info:
        TranscriptStore(url, background=False)
    assert isinstance(info.value, OpenClawFtsError)
    assert "does not support" in str(info.value)


def test_store_refuses_a_bare_file_path_naming_the_url_to_use(tmp_path: Path) -> None:
    path = str(tmp_path / "agent.sqlite")
    with pytest.raises(UnsupportedDatabaseError, match="not a database URL") as info:
        TranscriptStore(path, background=False)
    assert f"sqlite:///{path}" in str(info.value)
    assert not Path(path).exists()


@pytest.mark.parametrize("url", UNSUPPORTED_URLS)
def test_make_engine_refuses_an_unsupported_url(url: str) -> None:
    with pytest.raises(UnsupportedDatabaseError, match=SUPPORTED):
        make_engine(url)


def test_store_refuses_an_unsupported_engine(mysql_engine: Engine) -> None:
    with pytest.raises(UnsupportedDatabaseError, match="'mysql'.*" + SUPPORTED):
        TranscriptStore(mysql_engine, background=False)


def test_install_refuses_a_sessionmaker_bound_to_an_unsupported_engine(
    mysql_engine: Engine,
) -> None:
    factory = sessionmaker(mysql_engine)
    with pytest.raises(UnsupportedDatabaseError, match=SUPPORTED):
        openclaw_fts.install(factory)


def test_sqlite_is_still_accepted(db_url: str) -> None:
    store = TranscriptStore(db_url, background=False)
    try:
        store.create_session("s1", "agent:main:main")
    finally:
        store.close()


def test_cli_refuses_an_unsupported_database_in_one_line(tmp_path: Path) -> None:
    proc = run(tmp_path, "--db", "mysql://user@localhost/app", "status")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "Error: openclaw-fts does not support 'mysql' databases; supported: sqlite, postgresql"
    ]


#: A database URL's driver name, ``dialect+driver`` (``postgresql+asyncpg``).
DRIVER_NAME = re.compile(r"^[a-z][a-z0-9]*\+[a-z][a-z0-9_]*$")


def _names_a_driver(node: ast.expr) -> bool:
    """Whether ``node`` is a URL's driver name: ``<x>.drivername``, ``<x>.get_driver_name()``
    or a ``dialect+driver`` string (alone or in a tuple, list or set)."""
    if isinstance(node, ast.Attribute) and node.attr == "drivername":
        return True
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get_driver_name":
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(DRIVER_NAME.match(node.value))
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_a_driver(element) for element in node.elts)
    return False


def _dialect_name_reads(source: str) -> list[int]:
    """Lines of ``source`` that read ``<x>.dialect.name``, call ``get_backend_name()``, look a
    backend up by name (``backend_for``), or compare a URL's driver name (``url.drivername ==
    "postgresql+asyncpg"``, ``get_driver_name() in (...)``, a lookup keyed by ``drivername``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            (
                isinstance(node, ast.Attribute)
                and node.attr == "name"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "dialect"
            )
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and getattr(node.func, "attr", getattr(node.func, "id", None))
                in ("get_backend_name", "backend_for")
            )
            or (
                isinstance(node, ast.Compare)
                and any(_names_a_driver(side) for side in (node.left, *node.comparators))
            )
            or (
                isinstance(node, ast.Call)
                and any(
                    isinstance(arg, ast.Attribute | ast.Call) and _names_a_driver(arg)
                    for arg in node.args
                )
            )
        ):
            found.append(node.lineno)
    return found


def test_only_the_index_reads_a_dialect_name() -> None:
    """Every engine-specific choice is a backend's: outside ``openclaw_fts/index/`` no module
    reads a bind's or a URL's dialect name or looks a backend up by name (they ask
    ``index.base.backend_of`` for the backend, ``dialect_of`` for a message)."""
    package = Path(openclaw_fts.__file__).parent
    index = package / "index"
    readers = [
        f"{path.relative_to(package)}:{line}"
        for path in sorted(package.rglob("*.py"))
        if index not in path.parents and "migrations" not in path.parts
        for line in _dialect_name_reads(path.read_text(encoding="utf-8"))
    ]
    assert readers == []
    # The check itself sees them: the index reads dialect names, PostgreSQL's connections
    # compare driver names.
    assert _dialect_name_reads((index / "base.py").read_text(encoding="utf-8"))
    assert _dialect_name_reads((index / "postgresql" / "connect.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "source",
    [
        'if url.drivername == "postgresql+asyncpg":\n    pass',
        'if "sqlite+aiosqlite" != url.drivername:\n    pass',
        'if url.get_driver_name() == "asyncpg":\n    pass',
        'if name in ("postgresql+asyncpg", "sqlite+aiosqlite"):\n    pass',
        "driver = SYNC_DRIVERS.get(url.drivername)",
    ],
)
def test_the_check_sees_a_driver_name_comparison(source: str) -> None:
    assert _dialect_name_reads(source) == [1]


def test_the_check_lets_driver_free_code_pass() -> None:
    source = 'if mode == "r+" or path.name == "x":\n    url.set(drivername=driver)'
    assert _dialect_name_reads(source) == []
