"""``python -m bench.pg_append_lock``: what the impact lists' promotion lock (revision 0009,
``openclaw_fts/index/postgresql/impact.py``) costs an append on PostgreSQL.

Two databases on one throwaway server (``tests/pgserver.py``): the baseline at revision 0008
(its insert trigger takes no lock), the other at the head (the trigger takes the promotion
lock in share mode first). The same appends run on both, alternating in rounds so the
machine's drift falls on both alike: ``TranscriptStore.append`` of one message, a host's ORM
commit of one message, ``append_many`` of :data:`MANY` messages. Prints milliseconds per call
(median and mean) and the ratio head / baseline, then the server's own time in the list
trigger per statement on each side (``track_functions``). Numbers only, never a verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable

import psycopg
from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import AgentSession, TranscriptEvent, TranscriptStore, migrate
from openclaw_fts.engine import make_engine

from .pg_run import _load_pgserver

#: The revision without the lock.
BASELINE_REVISION = "0008_last_seq_per_statement"
#: Messages of one ``append_many``.
MANY = 100
#: Sessions the appends rotate over.
SESSIONS = 10
TEXT = "the deploy of the billing database failed again on friday, rollback planned"


def _database(admin_url: str, name: str) -> str:
    with contextlib.closing(
        psycopg.connect(admin_url.replace("+psycopg", ""), autocommit=True)
    ) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        c.execute(f'ALTER DATABASE "{name}" SET track_functions = pl')
    base, _, query = admin_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


class Side:
    """One database and the writers timed on it."""

    def __init__(self, url: str, revision: str) -> None:
        engine = make_engine(url)
        migrate.upgrade(engine, revision)
        engine.dispose()
        self.store = TranscriptStore(url, upgrade=False, background=False)
        self.host = sessionmaker(make_engine(url))
        openclaw_fts.install(self.host)
        for s in range(SESSIONS):
            self.store.create_session(f"s{s}", f"agent:main:s{s}", agent_id="main")
        self.n = 0

    def append(self) -> None:
        self.n += 1
        event = {
            "type": "message",
            "id": f"a{self.n}",
            "timestamp": self.n,
            "message": {"role": "user", "content": f"{TEXT} {self.n}"},
        }
        self.store.append(f"s{self.n % SESSIONS}", event)

    def orm(self) -> None:
        self.n += 1
        with self.host.begin() as db:
            s = db.get(AgentSession, f"s{self.n % SESSIONS}")
            db.add(
                TranscriptEvent(
                    session=s,
                    event={
                        "type": "message",
                        "id": f"o{self.n}",
                        "timestamp": self.n,
                        "message": {"role": "user", "content": f"{TEXT} {self.n}"},
                    },
                )
            )

    def many(self) -> None:
        self.n += 1
        events = [
            {
                "type": "message",
                "id": f"m{self.n}-{k}",
                "timestamp": k,
                "message": {"role": "user", "content": f"{TEXT} {k}"},
            }
            for k in range(MANY)
        ]
        self.store.append_many(f"s{self.n % SESSIONS}", events)


def _time(call: Callable[[], None], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--per-round", type=int, default=5)
    args = parser.parse_args()
    pgserver = _load_pgserver()
    server = pgserver.PgServer(pgserver.find_bindir()).start()
    try:
        admin = server.url()
        sides = {
            "0008": Side(_database(admin, "lock_base"), BASELINE_REVISION),
            "head": Side(_database(admin, "lock_head"), "head"),
        }
        for label, what in (
            ("append", "append"),
            ("orm commit", "orm"),
            (f"append_many({MANY})", "many"),
        ):
            times: dict[str, list[float]] = {k: [] for k in sides}
            reps = args.per_round if what != "many" else max(1, args.per_round // 5)
            for side in sides.values():  # warm up
                _time(getattr(side, what), reps)
            for r in range(args.rounds):
                order = list(sides) if r % 2 == 0 else list(reversed(sides))
                for key in order:
                    times[key] += _time(getattr(sides[key], what), reps)
            med = {k: statistics.median(v) for k, v in times.items()}
            mean = {k: statistics.fmean(v) for k, v in times.items()}
            print(
                f"{label:>18}: 0008 {med['0008']:.3f} ms (mean {mean['0008']:.3f}), "
                f"head {med['head']:.3f} ms (mean {mean['head']:.3f}), "
                f"median ratio {med['head'] / med['0008']:.3f}, n={len(times['head'])}"
            )
        for key, side in sides.items():
            side.store.close()
            with side.host.kw["bind"].connect() as conn:
                calls, total = conn.exec_driver_sql(
                    "SELECT calls, total_time FROM pg_stat_user_functions "
                    "WHERE funcname = 'openclaw_fts_impact_insert'"
                ).one()
            print(f"{key}: list trigger {total / calls * 1000:.1f} us a statement ({calls} calls)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
