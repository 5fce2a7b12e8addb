"""Take the PostgreSQL reconcile lease (advisory lock) and keep it (a stuck or soon-killed
reconciler).

Usage: hold_pg_lease.py DB_URL HOLD_SECONDS

Prints ``{"held": holder}`` once the lease is taken (or ``{"held": null}`` when another process
holds it), then sleeps HOLD_SECONDS and exits without releasing it.
"""

from __future__ import annotations

import sys
import time

from _common import emit

from openclaw_fts.engine import make_engine
from openclaw_fts.index.postgresql.lease import AdvisoryLease
from openclaw_fts.reconcile import new_holder_name


def main() -> None:
    lease = AdvisoryLease(make_engine(sys.argv[1]), new_holder_name())
    emit(held=lease.holder if lease.try_acquire() else None)
    time.sleep(float(sys.argv[2]))


if __name__ == "__main__":
    main()
