"""Take the reconcile lease and keep it without renewing (a stuck or a soon-killed reconciler).

Usage: hold_lease.py DB_URL LEASE_SECONDS HOLD_SECONDS

Prints ``{"held": holder}`` once the lease is taken, then sleeps HOLD_SECONDS and exits
without releasing it.
"""

from __future__ import annotations

import sys
import time

from _common import emit

from openclaw_fts.engine import make_engine
from openclaw_fts.reconcile import Reconciler


def main() -> None:
    engine = make_engine(sys.argv[1])
    reconciler = Reconciler(engine, lease_seconds=float(sys.argv[2]))
    assert reconciler.lease.try_acquire()
    emit(held=reconciler.lease.holder)
    time.sleep(float(sys.argv[3]))


if __name__ == "__main__":
    main()
