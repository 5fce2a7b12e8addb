"""The engine seam's width (issue #39 item 1): how many methods each engine's own classes define
beside the SQL both engines share (``index/sql.py``'s ``SqlBackend``), and where the code reads a
dialect name to branch on it.

Alembic's ``DefaultImpl`` is the shape aimed at: the shared behaviour in one concrete class, a
short list of hooks per engine (:data:`HOOK_TARGET`). The figures below are ceilings
within that target that may only come down (lower them when a change narrows the seam), and no
file outside the engine folders branches on a dialect. A dialect branch anywhere else,
or one engine method more, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import openclaw_fts
from openclaw_fts.index.base import backend_for, backends
from openclaw_fts.index.sql import SqlBackend

#: The target of issue #39: at most this many hooks per engine class.
HOOK_TARGET = 20
#: Public methods each engine's own classes define today (its backend class and the search
#: class it mixes in, above ``SqlBackend``): ceilings, never to rise, and within
#: :data:`HOOK_TARGET`.
#: The impact lists' upkeep (drift, distrust, repair, promotion) is one object,
#: ``Backend.impact_lists``, no longer four methods; how engines and connections are made and set
#: up (URL, settings, transaction starts, snapshot options) is ``Backend.connections``; the
#: SQL both engines share asks each engine for its spellings (``SqlBackend.spelt``: IN-lists,
#: timestamps, the parent probe, byte lengths, row locks, unstorable text) and its runner
#: (``SqlBackend.statements``).
HOOK_CEILINGS = {"sqlite": 18, "postgresql": 19}
#: The folders of the per-engine classes, inside the package: branching on the dialect is
#: theirs alone.
ENGINE_FOLDERS = ("index/sqlite/", "index/postgresql/")
#: Dialect names a branch compares with.
DIALECT_NAMES = frozenset({"sqlite", "postgresql"})

PACKAGE = Path(openclaw_fts.__file__).resolve().parent


def engine_methods(found: object) -> set[str]:
    """The public methods the engine's own classes define (before ``SqlBackend`` in its MRO)."""
    names: set[str] = set()
    for klass in type(found).__mro__:
        if klass is SqlBackend or klass is object:
            break
        names.update(
            name
            for name, value in vars(klass).items()
            if not name.startswith("_")
            and (callable(value) or isinstance(value, (staticmethod, classmethod)))
        )
    return names


@pytest.mark.parametrize("name", sorted(HOOK_CEILINGS))
def test_engine_classes_define_no_more_methods_than_their_ceiling(name: str) -> None:
    found = backend_for(name)
    defined = engine_methods(found)
    assert len(defined) <= HOOK_CEILINGS[name] <= HOOK_TARGET, sorted(defined)


def test_every_backend_has_a_ceiling() -> None:
    assert {found.name for found in backends()} == set(HOOK_CEILINGS)


def _reads_dialect(node: ast.expr) -> bool:
    """``<x>.dialect.name``, a variable named ``dialect``, ``dialect_of(...)`` or
    ``<url>.get_backend_name()``."""
    if isinstance(node, ast.Attribute) and node.attr == "name":
        return isinstance(node.value, ast.Attribute) and node.value.attr == "dialect"
    if isinstance(node, ast.Name):
        return node.id in ("dialect", "dialect_name")
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id == "dialect_of"
        if isinstance(func, ast.Attribute):
            return func.attr == "get_backend_name"
    return False


def _names_a_dialect(node: ast.expr) -> bool:
    return any(isinstance(c, ast.Constant) and c.value in DIALECT_NAMES for c in ast.walk(node))


def dialect_branches(source: str) -> list[int]:
    """The lines of every comparison of a dialect read with a dialect's name
    (``conn.dialect.name == "postgresql"``, ``dialect in ("sqlite", ...)``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_reads_dialect(s) for s in sides) and any(_names_a_dialect(s) for s in sides):
                lines.append(node.lineno)
    return lines


def test_the_branch_finder_sees_a_branch() -> None:
    assert dialect_branches('if conn.dialect.name == "postgresql":\n    pass\n') == [1]
    assert dialect_branches('x = 1 if dialect in ("sqlite",) else 2\n') == [1]
    assert dialect_branches('x = dialect_of(url) != "sqlite"\n') == [1]
    assert dialect_branches('if backend.name == "postgresql":\n    pass\n') == []


def test_no_dialect_branch_outside_the_engine_folders() -> None:
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(ENGINE_FOLDERS):
            continue
        lines = dialect_branches(path.read_text(encoding="utf-8"))
        if lines:
            found[rel] = len(lines)
    assert found == {}


def test_what_only_postgresql_has_is_absent_on_sqlite_not_stubbed() -> None:
    sqlite, postgresql = backend_for("sqlite"), backend_for("postgresql")
    assert (sqlite.partitions, sqlite.replicas, sqlite.pooler) == (None, None, None)
    assert None not in (postgresql.partitions, postgresql.replicas, postgresql.pooler)
    assert sqlite.segments is not None  # FTS5's segments; a GIN index merges itself
    assert postgresql.segments is None
