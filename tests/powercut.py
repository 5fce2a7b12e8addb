"""Power cuts under an SQLite store: the harness the fast test and the soak run share.

Each cut: mount :class:`lazyfs.LazyFS` (its state kept from the cut before), start
``workers/power_writer.py`` on it (store appends and host ORM commits of event pairs, a
reconcile every few commits), let it acknowledge a seeded random number of commits, SIGKILL
it, unmount, cut the power (drop everything not fsynced, tearing the last unsynced write of
each file at a seeded random point), and examine a copy of what survived: SQLite's
``integrity_check``, no pair half there, every acknowledged pair there (or counted lost), and
the plugin's ``check`` clean — at once, or after one ``reconcile()``.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

from lazyfs import LazyFS, mounted
from workers import power_writer

from openclaw_fts import TranscriptStore
from openclaw_fts.check import check

#: Most commits a round lets the writer acknowledge before the cut.
MAX_ACKS = 6
#: Seconds a round waits for the writer (a stuck writer fails the run).
ROUND_TIMEOUT = 120.0


@dataclass
class Figures:
    durability: str
    cuts: int = 0
    acknowledged: int = 0
    lost: int = 0
    half_applied: int = 0
    integrity_failures: int = 0
    unclean_after_reconcile: int = 0
    clean_at_once: int = 0
    lost_per_cut: list[int] = field(default_factory=list)

    def line(self) -> str:
        worst = max(self.lost_per_cut, default=0)
        return (
            f"durability={self.durability}: {self.cuts} cuts, {self.acknowledged} commits "
            f"acknowledged, {self.lost} lost (at most {worst} in one cut), "
            f"{self.half_applied} half-applied, integrity_check failed {self.integrity_failures}"
            f", check clean at once {self.clean_at_once}, not clean after reconcile "
            f"{self.unclean_after_reconcile}"
        )


def _pairs(conn: sqlite3.Connection) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    tables = conn.execute("SELECT name FROM sqlite_master WHERE name = 'transcript_events'")
    if tables.fetchone() is None:  # the cut undid the migrations themselves (NORMAL may)
        return found
    for (event_id,) in conn.execute("SELECT event_id FROM transcript_events"):
        if event_id and event_id[-1] in "ab":
            found.setdefault(event_id[:-1], set()).add(event_id[-1])
    return found


def _write_until_killed(database: Path, durability: str, session: str, target: int) -> list[int]:
    """Fork a writer (``workers/power_writer.py``'s loop; a fork, not a new interpreter: a
    round costs the writes, not Python's start-up), SIGKILL it once it has acknowledged
    commit ``target``; the commits it acknowledged."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer
        os.close(read_end)
        code = 0
        try:
            sys.stdout = os.fdopen(write_end, "w", buffering=1)
            power_writer.write(str(database), durability, session)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write_end)
    done: list[int] = []
    with os.fdopen(read_end) as lines:
        for line in lines:
            done.append(int(line.split()[1]))
            if done[-1] >= target:
                os.kill(pid, signal.SIGKILL)
                break
        done.extend(int(line.split()[1]) for line in lines)  # printed before the kill
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        raise RuntimeError("the writer failed")
    return done


def run_cuts(root: Path, durability: str, cuts: int, seed: int) -> Figures:
    """``cuts`` power cuts under a writer at ``durability``; the figures."""
    rng = random.Random(seed)
    fs = LazyFS()
    figures = Figures(durability)
    acked: set[str] = set()
    for n in range(cuts):
        target = rng.randint(0, MAX_ACKS)
        session = f"c{n}"
        with mounted(fs, root / "mnt") as mnt:
            for done in _write_until_killed(mnt / "db.sqlite", durability, session, target):
                if done >= 0:
                    acked.add(f"{session}-{done}")
        fs.cut(rng)
        snapshot = root / f"after-{n}"
        fs.copy_to(snapshot)
        (snapshot / "db.sqlite-shm").unlink(missing_ok=True)  # memory, never durable
        figures.cuts += 1
        database = snapshot / "db.sqlite"
        if not database.exists():
            continue
        with sqlite3.connect(database) as conn:
            if conn.execute("PRAGMA integrity_check").fetchone() != ("ok",):
                figures.integrity_failures += 1
                continue
            pairs = _pairs(conn)
        figures.half_applied += sum(1 for parts in pairs.values() if parts != {"a", "b"})
        lost_now = {p for p in acked if p not in pairs}
        figures.lost_per_cut.append(len(lost_now) - figures.lost)
        figures.lost = len(lost_now)
        store = TranscriptStore(f"sqlite:///{database}", background=False)
        try:
            if check(store.engine).ok:
                figures.clean_at_once += 1
            else:
                store.reconcile()
                if not check(store.engine).ok:
                    figures.unclean_after_reconcile += 1
        finally:
            store.close()
    figures.acknowledged = len(acked)
    return figures
