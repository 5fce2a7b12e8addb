"""Power cuts under a PostgreSQL server whose whole data directory is on a FUSE file system
that drops what was not fsynced (tests/lazyfs.py; the harness is tests/pgpowercut.py, its
soak is ``scripts/power_cuts.py --engine postgresql``).

A seeded few cuts, each under a writer of store appends, host ORM commits, ``import_dir``,
reconciles and ``optimize()``, every server process killed at a random moment: the server
recovers, with ``fsync=on`` and ``synchronous_commit=on`` no acknowledged commit is lost, none
is half there, a session the cut left pending says ``indexing: true``, and ``check`` is clean
(at once or after one ``reconcile()``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest_pg import REQUIRE_ENV, postgresql_required
from lazyfs import unavailable_reason
from pgserver import unavailable_reason as pg_unavailable_reason
from smallfs import skip_or_fail

#: Cuts in the suite (the soak runs hundreds).
CUTS = 3
SEED = 40


@pytest.fixture(scope="module", autouse=True)
def _fuse_and_server() -> None:
    reason = unavailable_reason()
    if reason is not None:
        skip_or_fail(reason)
    reason = pg_unavailable_reason()
    if reason is not None:
        if postgresql_required():
            pytest.fail(f"PostgreSQL tests not run: {reason} (required here: {REQUIRE_ENV})")
        pytest.skip(f"PostgreSQL tests not run: {reason}")


@pytest.fixture(scope="module")
def made(_fuse_and_server: None) -> Iterator[Path]:
    """The data directory both tests copy onto their file system (made once: ~10 s)."""
    from pgpowercut import made_cluster

    with made_cluster() as folder:
        yield folder


def test_power_cuts_lose_no_acknowledged_commit(made: Path) -> None:
    from pgpowercut import run_cuts

    figures = run_cuts(CUTS, SEED, made=made)
    print(figures.line())
    assert figures.cuts == CUTS and figures.acknowledged > 0
    assert figures.recovery_failures == 0
    assert figures.lost == 0, figures.line()
    assert not figures.half, sorted(figures.half)
    assert figures.indexing_missing == 0
    assert figures.unclean_after_reconcile == 0
    assert not figures.writer_errors, figures.writer_errors


def test_the_cut_drops_what_no_fsync_made_durable(made: Path) -> None:
    """The same round with ``fsync=off`` (no ``fsync`` reaches the file system): the cut takes
    every commit back, acknowledged or not — so the test above could see a loss."""
    from pgpowercut import run_cuts

    figures = run_cuts(1, SEED, settings={"fsync": "off"}, made=made)
    print(figures.line())
    assert figures.acknowledged > 0
    assert figures.lost == figures.acknowledged, figures.line()
