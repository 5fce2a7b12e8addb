"""Power cuts under an SQLite store, on a FUSE file system that drops what was not fsynced
(tests/lazyfs.py; the harness is tests/powercut.py, its soak is scripts/power_cuts.py).

A seeded few cuts per durability, each under a writer of store appends, host ORM commits and
reconciles: SQLite's integrity check passes after every cut, no commit is half there, the
plugin's ``check`` is clean (at once or after one ``reconcile()``), and with
``durability="full"`` no acknowledged commit is lost; ``"normal"``'s losses are printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lazyfs import unavailable_reason
from smallfs import skip_or_fail

#: Cuts per durability in the suite (the soak runs hundreds).
CUTS = 4
SEED = 40


@pytest.fixture(autouse=True)
def _fuse() -> None:
    reason = unavailable_reason()
    if reason is not None:
        skip_or_fail(reason)


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_power_cuts_leave_a_consistent_exact_index(tmp_path: Path, durability: str) -> None:
    from powercut import run_cuts

    figures = run_cuts(tmp_path, durability, CUTS, SEED)
    print(figures.line())
    assert figures.cuts == CUTS and figures.acknowledged > 0
    assert figures.integrity_failures == 0
    assert figures.half_applied == 0
    assert figures.unclean_after_reconcile == 0
    if durability == "full":
        assert figures.lost == 0, figures.line()
