"""Power cuts under a PostgreSQL server: the harness the fast test and the soak run share.

The whole data directory (``pg_wal``, the data files, ``pg_xact``...) lives on
:class:`lazyfs.LazyFS`, mounted for the ``postgres`` user; the server runs with ``fsync=on``,
``synchronous_commit=on`` and ``full_page_writes=on`` (its defaults). Made once: ``initdb`` and
the plugin's schema, with enough messages holding :data:`~workers.pg_power_writer.COMMON_WORD`
that ``optimize()`` tracks it with an impact list (so every later write writes list rows too),
on an ordinary disk, then copied onto the file system as synced bytes.

Each cut: start ``workers/pg_power_writer.py``'s loop in a fork (appends, host ORM commits,
``import_dir``, reconciles, ``optimize()``), wait a seeded random time, stop every server
process at once (SIGSTOP, then SIGKILL: nothing is written after the moment of the cut), kill
the writer, unmount, cut the power (everything not fsynced dropped, the last unsynced write of
each file torn at a seeded random point), mount again and start the server: it must recover.
Then, through the plugin, on the recovered server: every commit the writer saw return is there
(a pair, an imported file), none is there in part (one event of a pair, part of a file), a
session left pending says ``indexing: true`` to a search, and ``check`` is clean — at once, or
after one ``reconcile()``. The next cut writes on top of what survived.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import random
import select as io_select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from lazyfs import LazyFS, mounted
from pgserver import PORT, SERVER_USER, SUPERUSER, find_bindir, initdb_command
from sqlalchemy import select
from workers import pg_power_writer

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.models import TranscriptEvent

#: The database the plugin writes in.
DATABASE = "powercut"
#: Messages holding the common word before the cuts: above ``FREQUENT_TERM_MIN_DOCS`` (2,000).
SEED_MESSAGES = 2100
#: The server's settings on the file system: durable commits (the defaults, spelt out), a small
#: WAL (1 MB segments, set by initdb) and frequent checkpoints, so cuts also land in those.
DURABLE_SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "max_wal_size": "32MB",
    "min_wal_size": "4MB",
    "checkpoint_timeout": "30s",
    "max_connections": "20",
    "shared_buffers": "16MB",
}
#: WAL segment size in MB (initdb ``--wal-segsize``): the file system holds every byte twice.
WAL_SEGMENT_MB = 1
#: Longest time a cut waits after the writer's first commit (seconds, drawn uniformly).
MAX_CUT_DELAY = 1.5
#: With cuts timed by writes: longest time after a write began (seconds, drawn uniformly): most
#: writes take longer, so most such cuts land inside the write.
MAX_WRITE_CUT_DELAY = 0.05
#: Seconds the server may take to start (crash recovery included) or stop.
SERVER_TIMEOUT = 120.0
#: Seconds the writer may take to start (its store opened) before the cut is made anyway.
WRITER_START_TIMEOUT = 60.0
#: What the writer may raise when the server goes (anything else is counted and shown).
EXPECTED_ERRORS = frozenset(
    {"sqlalchemy.exc.OperationalError", "psycopg.OperationalError", "sqlalchemy.exc.InterfaceError"}
)
#: Caller who sees every session.
CALLER = Caller("agent:main:main", visibility="all")


@dataclass
class Figures:
    #: The server settings that differ from :data:`DURABLE_SETTINGS` ("" when none).
    settings: str = ""
    cuts: int = 0
    acknowledged: int = 0
    lost: int = 0
    #: What was found in part (a pair's one event, part of an imported file), once each.
    half: set[str] = field(default_factory=set)
    recovery_failures: int = 0
    clean_at_once: int = 0
    unclean_after_reconcile: int = 0
    pending_after_cut: int = 0
    indexing_missing: int = 0
    cut_in: dict[str, int] = field(default_factory=dict)
    writer_errors: dict[str, int] = field(default_factory=dict)
    #: ``check``'s reports that were not clean at once (before the reconcile).
    unclean_at_once: list[str] = field(default_factory=list)
    recovery_seconds: list[float] = field(default_factory=list)
    lost_per_cut: list[int] = field(default_factory=list)

    def line(self) -> str:
        worst = max(self.lost_per_cut, default=0)
        slowest = max(self.recovery_seconds, default=0.0)
        moments = ", ".join(f"{k} {v}" for k, v in sorted(self.cut_in.items()))
        return (
            f"postgresql ({self.settings or 'fsync=on, synchronous_commit=on'}): {self.cuts} cuts, "
            f"{self.acknowledged} commits acknowledged, {self.lost} lost (at most {worst} in "
            f"one cut), {len(self.half)} half-applied, server recovered "
            f"{self.cuts - self.recovery_failures}/{self.cuts} (slowest {slowest:.1f} s), "
            f"check clean at once {self.clean_at_once}, not clean after reconcile "
            f"{self.unclean_after_reconcile}, sessions pending after a cut "
            f"{self.pending_after_cut} (search without indexing: true {self.indexing_missing})"
            f"; cut during: {moments}; other writer errors: {self.writer_errors or 'none'}"
        )


class CutServer:
    """A PostgreSQL server on a data directory at :attr:`data`, run as the ``postgres`` user,
    a direct child of this process (so that a cut can stop it and all its children)."""

    def __init__(self, root: Path, data: Path) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError("no PostgreSQL server binaries")
        self.bindir = bindir
        self.data = data
        self.socket = root / "socket"
        self.log = root / "server.log"
        self.user = pwd.getpwnam(SERVER_USER)
        self.process: subprocess.Popen[bytes] | None = None

    def url(self) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@/{DATABASE}?host={self.socket}&port={PORT}"

    def _as_postgres(self) -> dict[str, object]:
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def _own(self, folder: Path) -> None:
        folder.mkdir(exist_ok=True)
        shutil.chown(folder, SERVER_USER, SERVER_USER)

    def initdb(self) -> None:
        self._own(self.data)
        made = subprocess.run(
            initdb_command(self.bindir, self.data, f"--wal-segsize={WAL_SEGMENT_MB}"),
            capture_output=True,
            text=True,
            cwd=self.data,
            **self._as_postgres(),  # type: ignore[arg-type]
        )
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{made.stdout}\n{made.stderr}")

    def start(self, **settings: str) -> float:
        """Start the server and wait until it accepts connections; the seconds it took."""
        started = time.monotonic()
        self._own(self.socket)
        options = {"listen_addresses": "", **DURABLE_SETTINGS, **settings}
        command = [str(self.bindir / "postgres"), "-D", str(self.data)]
        command += ["-k", str(self.socket), "-p", str(PORT)]
        for key, value in options.items():
            command += ["-c", f"{key}={value}"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=self.socket,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                **self._as_postgres(),  # type: ignore[arg-type]
            )
        dsn = f"host={self.socket} port={PORT} user={SUPERUSER} dbname=postgres"
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited {self.process.returncode}{self.tail()}")
            try:
                with psycopg.connect(dsn, connect_timeout=5):
                    return time.monotonic() - started
            except psycopg.OperationalError:
                if time.monotonic() - started > SERVER_TIMEOUT:
                    raise RuntimeError(f"the server did not start{self.tail()}") from None
                time.sleep(0.05)

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\nserver log:\n" + "\n".join(text)

    def stop_clean(self) -> None:
        """A fast shutdown (a checkpoint first)."""
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(SERVER_TIMEOUT)
            self.process = None

    def kill(self) -> None:
        """The power goes: the postmaster and every child stopped at the same moment
        (SIGSTOP: none writes another byte, the postmaster forks no other), then killed."""
        if self.process is None:
            return
        postmaster = self.process.pid
        os.kill(postmaster, signal.SIGSTOP)
        children = _children(postmaster)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        for pid in [postmaster, *children]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(SERVER_TIMEOUT)
        self.process = None
        deadline = time.monotonic() + SERVER_TIMEOUT
        while any(_alive(pid) for pid in children):
            if time.monotonic() > deadline:
                raise RuntimeError(f"server processes {children} did not die")
            time.sleep(0.01)


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == parent:
                    found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie has closed its files: it counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _seed(server: CutServer) -> None:
    """The plugin's schema and :data:`SEED_MESSAGES` messages holding the common word, which
    ``optimize()`` then tracks."""
    admin = f"host={server.socket} port={PORT} user={SUPERUSER} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    store = TranscriptStore(server.url(), background=False)
    try:
        store.create_session("seed", "agent:main:seed")
        events = [  # one chain: the active branch holds them all
            pg_power_writer.event(
                f"s{j}", f"s{j - 1}" if j else None, f"{pg_power_writer.COMMON_WORD} seed {j}"
            )
            for j in range(SEED_MESSAGES)
        ]
        for start in range(0, len(events), 500):
            store.append_many("seed", events[start : start + 500])
        store.optimize()
        with store.engine.connect() as conn:
            tracked = conn.exec_driver_sql("SELECT term FROM message_impact_terms").scalars()
            if pg_power_writer.COMMON_WORD not in set(tracked):
                raise RuntimeError("optimize() did not track the common word")
    finally:
        store.close()


@contextlib.contextmanager
def _workspace() -> Iterator[Path]:
    """A folder the ``postgres`` user can reach (pytest's ``tmp_path`` is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="openclaw-fts-pgcut-"))
    try:
        root.chmod(0o755)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _write_until_cut(
    server: CutServer, root: Path, n: int, delay: float, begins: int = 0
) -> tuple[list[str], str]:
    """Fork the writer, cut the server ``delay`` seconds after its ``begins``-th write began
    (0: after it created its session); the lines it printed (what it saw acknowledged) and the
    write it was doing at the cut."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer
        os.close(read_end)
        code = 0
        try:
            sys.stdout = os.fdopen(write_end, "w", buffering=1)
            pg_power_writer.write(server.url(), f"c{n}", root / "imports", n)
        except BaseException as exc:  # the server went, or something else: say which
            print(f"error {type(exc).__module__}.{type(exc).__name__}", flush=True)
            code = 1
        os._exit(code)
    os.close(write_end)
    output = b""
    deadline = time.monotonic() + WRITER_START_TIMEOUT
    cut_at: float | None = None
    open_pipe = True
    while open_pipe:
        now = time.monotonic()
        if (cut_at is not None and now >= cut_at) or now > deadline:
            break
        timeout = (cut_at if cut_at is not None else deadline) - now
        ready, _, _ = io_select.select([read_end], [], [], timeout)
        if ready:
            chunk = os.read(read_end, 65536)
            output += chunk
            open_pipe = bool(chunk)
            if cut_at is None and (
                output.count(b"begin ") >= begins if begins else b"\n" in output
            ):
                cut_at = time.monotonic() + delay
    server.kill()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    while chunk := os.read(read_end, 65536):  # what it printed before it was killed
        output += chunk
    os.close(read_end)
    lines = output.decode().splitlines()
    begun = [line.split(" ", 1)[1] for line in lines if line.startswith("begin ")]
    last = lines[-1] if lines else ""
    step = begun[-1] if begun and last.startswith(("begin", "error")) else "between writes"
    return lines, step


def _verify(server: CutServer, figures: Figures, pairs: set[str], imports: set[str]) -> None:
    """What the recovered server holds, against what was acknowledged (see the module's
    docstring)."""
    store = TranscriptStore(server.url(), background=False)
    try:
        with store.read_session() as db:
            rows = db.execute(select(TranscriptEvent.session_id, TranscriptEvent.event_id))
            held: dict[str, list[str]] = {}
            for session_id, event_id in rows:
                held.setdefault(session_id, []).append(event_id)
        stored_pairs: dict[str, set[str]] = {}
        whole_file = pg_power_writer.import_ids()
        for session_id, ids in held.items():
            if "-imp" in session_id:
                ids = [i for i in ids if i != session_id]  # the header entry's own row
                if sorted(ids) != sorted(whole_file):
                    figures.half.add(f"{session_id}: {len(ids)} of {len(whole_file)} events")
            elif session_id != "seed":
                for event_id in ids:
                    stored_pairs.setdefault(event_id[:-1], set()).add(event_id[-1])
        figures.half.update(
            f"pair {p}: only {''.join(sorted(parts))}"
            for p, parts in stored_pairs.items()
            if parts != {"a", "b"}
        )
        lost = sum(1 for p in pairs if p not in stored_pairs)
        lost += sum(1 for s in imports if s not in held)
        figures.lost_per_cut.append(lost - figures.lost)
        figures.lost = lost
        pending = store.index_status()["pending"]
        if pending:
            figures.pending_after_cut += pending
            found = store.search(CALLER, pg_power_writer.COMMON_WORD)
            if not found.get("indexing"):
                figures.indexing_missing += 1
        report = check(store.engine)
        if report.ok:
            figures.clean_at_once += 1
        else:
            figures.unclean_at_once.append(json.dumps(report.as_dict(), sort_keys=True))
            store.reconcile()
            if not check(store.engine).ok:
                figures.unclean_after_reconcile += 1
        # The sessions the cut left pending are indexed before the next cut, whose first
        # check covers them (and the last round's, :func:`run_cuts`).
        store.reconcile()
        if store.index_status()["pending"]:
            figures.unclean_after_reconcile += 1
    finally:
        store.close()


@contextlib.contextmanager
def made_cluster() -> Iterator[Path]:
    """A data directory made once on an ordinary disk (``initdb``, the plugin's schema, the
    seeded messages, the common word tracked), shut down cleanly: what a run copies onto its
    file system (several runs may share it)."""
    with _workspace() as root:
        made = CutServer(root, root / "made")
        made.initdb()
        made.start(fsync="off", synchronous_commit="off")
        try:
            _seed(made)
        finally:
            made.stop_clean()
        yield made.data


def run_cuts(
    cuts: int,
    seed: int,
    progress: bool = False,
    settings: dict[str, str] | None = None,
    made: Path | None = None,
    moment: str = "time",
) -> Figures:
    """``cuts`` power cuts under the writer; the figures. ``settings``: server settings over
    :data:`DURABLE_SETTINGS` (``fsync=off``: the check that a cut loses what was not synced);
    ``made``: :func:`made_cluster`'s folder (None: made for this run). ``moment``: ``"time"``,
    a cut up to :data:`MAX_CUT_DELAY` after the writer created its session (the long writes
    take most cuts); ``"writes"``, up to :data:`MAX_WRITE_CUT_DELAY` after the k-th write began,
    k drawn from one cycle of writes (every kind of write about as often)."""
    if moment not in ("time", "writes"):
        raise ValueError(f"moment must be 'time' or 'writes', not {moment!r}")
    if made is None:
        with made_cluster() as made_now:
            return run_cuts(cuts, seed, progress, settings, made_now, moment)
    rng = random.Random(seed)
    settings = settings or {}
    figures = Figures(", ".join(f"{k}={v}" for k, v in settings.items()))
    user = pwd.getpwnam(SERVER_USER)
    fs = LazyFS(owner=(user.pw_uid, user.pw_gid))
    fs.load(made, "/pgdata")
    pairs: set[str] = set()
    imports: set[str] = set()
    with _workspace() as root:
        (root / "imports").mkdir()
        mnt = root / "mnt"
        server = CutServer(root, mnt / "pgdata")
        for n in range(cuts + 1):
            with mounted(fs, mnt, allow_other=True):
                try:
                    took = server.start(**settings)
                except RuntimeError:
                    figures.recovery_failures += 1
                    raise
                if n:  # a recovery from the cut before
                    figures.recovery_seconds.append(took)
                    _verify(server, figures, pairs, imports)
                    if progress:  # the figures so far, this cut's checks included
                        print(f"after cut {n}: {figures.line()}", flush=True)
                if n == cuts:
                    store = TranscriptStore(server.url(), background=False)
                    try:
                        figures.unclean_after_reconcile += not check(store.engine).ok
                    finally:
                        store.close()
                    server.stop_clean()
                    break
                if moment == "time":
                    lines, step = _write_until_cut(server, root, n, rng.uniform(0, MAX_CUT_DELAY))
                else:
                    begins = rng.randint(1, len(pg_power_writer.STEPS))
                    delay = rng.uniform(0, MAX_WRITE_CUT_DELAY)
                    lines, step = _write_until_cut(server, root, n, delay, begins)
            for line in lines:
                kind, _, name = line.partition(" ")
                if kind == "pair":
                    pairs.add(name)
                elif kind == "import":
                    imports.add(name)
                elif kind == "error" and name not in EXPECTED_ERRORS:
                    figures.writer_errors[name] = figures.writer_errors.get(name, 0) + 1
            figures.acknowledged = len(pairs) + len(imports)
            figures.cut_in[step] = figures.cut_in.get(step, 0) + 1
            fs.cut(rng)
            figures.cuts += 1
    return figures
