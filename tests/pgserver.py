"""A throwaway PostgreSQL server for the test session: initdb + pg_ctl into a temporary folder.

Invariant: a :class:`PgServer` that :meth:`~PgServer.start` returned is listening on a Unix
socket inside its own temporary folder only (``listen_addresses=''``: no TCP port, nothing
another process on the machine can collide with), and :meth:`~PgServer.stop` stops it and
removes the folder whatever state the start reached. When the process runs as root (initdb
and pg_ctl refuse root), every server command runs as the ``postgres`` system user through
``runuser``, in a folder that user owns; otherwise they run directly. A server started with a
``primary`` is a hot standby of it: ``pg_basebackup -R`` over the primary's socket (streaming
replication, the primary's default ``wal_level=replica`` and the ``local replication`` trust
line initdb writes), started in a folder of its own; :meth:`~PgServer.promote` makes it a
primary.

:func:`find_bindir` says where the binaries are, or :func:`unavailable_reason` why the
PostgreSQL half of the suite cannot run here.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: Where distributions install versioned server binaries (Debian/Ubuntu layout).
DEBIAN_BINDIR_GLOB = "/usr/lib/postgresql/*/bin"
#: Environment variable naming the folder of initdb/pg_ctl; when set, no other is looked at.
BINDIR_ENV = "OPENCLAW_FTS_PG_BINDIR"
#: The system user that runs the server when the tests run as root.
SERVER_USER = "postgres"
#: The database superuser initdb creates (trust authentication on the socket: no password).
SUPERUSER = "postgres"
#: The socket's port number: only names the socket file, the folder is private.
PORT = 5432
#: Seconds pg_ctl waits for the server to start or stop before giving up.
PG_CTL_TIMEOUT_S = 60
#: Seconds any one server command (initdb included) may take.
COMMAND_TIMEOUT_S = 120
#: Server settings for a disposable cluster: no durability, small footprint.
SERVER_SETTINGS = {
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "50",
    "shared_buffers": "32MB",
}
#: Lines of the server log quoted in a start failure.
LOG_TAIL_LINES = 30


class PgServerError(RuntimeError):
    """The server could not be started (the message carries the command's output)."""


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))


def _has_binaries(bindir: Path) -> bool:
    return (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file()


def initdb_command(bindir: Path, data: Path, *extra: str) -> list[str]:
    """``initdb`` for a throwaway cluster in ``data``: the superuser, trust, UTF-8, no locale,
    no sync (the tests' servers never need a crash-safe catalogue); ``extra`` options after."""
    return [
        str(bindir / "initdb"),
        "-D",
        str(data),
        "-U",
        SUPERUSER,
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--no-locale",
        "--no-sync",
        *extra,
    ]


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: :data:`BINDIR_ENV` when set, else the newest
    Debian-style versioned folder, else the one on ``PATH``; None when there is none."""
    chosen = os.environ.get(BINDIR_ENV)
    if chosen:
        return Path(chosen) if _has_binaries(Path(chosen)) else None
    candidates = sorted(Path("/").glob(DEBIAN_BINDIR_GLOB.lstrip("/")), key=_version_key)
    for bindir in reversed(candidates):
        if _has_binaries(bindir):
            return bindir
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    return None


def _runs_as_root() -> bool:
    return os.geteuid() == 0


def unavailable_reason() -> str | None:
    """Why no server can be started here (None: it can)."""
    if find_bindir() is None:
        return f"no PostgreSQL server binaries (initdb, pg_ctl) in {DEBIAN_BINDIR_GLOB} or on PATH"
    if _runs_as_root():
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root and there is no {SERVER_USER!r} user to run initdb as"
        if shutil.which("runuser") is None:
            return "running as root and `runuser` is missing (initdb refuses root)"
    return None


@dataclass
class PgServer:
    """One cluster in a temporary folder; use :meth:`start` / :meth:`stop` (or ``with``)."""

    bindir: Path
    #: When set, this server is a hot standby of ``primary`` (which must be running).
    primary: PgServer | None = None
    root: Path = field(init=False)
    version: str = field(default="", init=False)
    _started: bool = field(default=False, init=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL (psycopg 3) of ``database`` on this server's socket."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.socket_dir}&port={PORT}"

    def _command(self, *args: str) -> list[str]:
        if _runs_as_root():
            return ["runuser", "-u", SERVER_USER, "--", *args]
        return list(args)

    def _run(self, *args: str) -> str:
        result = subprocess.run(
            self._command(*args),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            raise PgServerError(
                f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
                f"{self._log_tail()}"
            )
        return result.stdout

    def _log_tail(self) -> str:
        try:
            lines = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\nserver log:\n" + "\n".join(lines[-LOG_TAIL_LINES:])

    def start(self) -> PgServer:
        """initdb + pg_ctl start; on any failure the folder is removed and the error raised."""
        # Not under pytest's tmp_path: its parent is private to the user running the tests,
        # and the server user must reach the socket folder.
        self.root = Path(tempfile.mkdtemp(prefix="openclaw-fts-pg-"))
        try:
            if _runs_as_root():
                info = pwd.getpwnam(SERVER_USER)
                os.chown(self.root, info.pw_uid, info.pw_gid)
            if self.primary is None:
                self._run(*initdb_command(self.bindir, self.data_dir))
            else:
                # -R writes standby.signal and primary_conninfo (the primary's socket folder);
                # -X stream copies the WAL written during the copy; -c fast: no wait for a
                # spread checkpoint.
                self._run(
                    str(self.bindir / "pg_basebackup"),
                    "-D",
                    str(self.data_dir),
                    "-h",
                    str(self.primary.socket_dir),
                    "-p",
                    str(PORT),
                    "-U",
                    SUPERUSER,
                    "-R",
                    "-X",
                    "stream",
                    "-c",
                    "fast",
                    "--no-sync",
                )
            self.start_again()
            self.version = self._run(str(self.bindir / "pg_ctl"), "--version").strip()
        except BaseException:
            self.stop()
            raise
        return self

    def start_again(self) -> None:
        """``pg_ctl start`` on the data folder (after :meth:`start` made it, or after a
        :meth:`shutdown`)."""
        options = " ".join(f"-c {key}={value}" for key, value in SERVER_SETTINGS.items())
        self._started = True  # from here on, stop() must try pg_ctl stop
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-w",
            "-t",
            str(PG_CTL_TIMEOUT_S),
            "-o",
            f"-k {self.socket_dir} -p {PORT} {options}",
            "start",
        )

    def restart(self) -> None:
        """Stop the server (``-m fast``: every client connection is cut; not ``immediate``, whose
        crash recovery would drop the last commits under ``synchronous_commit=off``) and start it
        again on the same folder and socket."""
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-m",
            "fast",
            "-w",
            "-t",
            str(PG_CTL_TIMEOUT_S),
            "restart",
        )

    def standby(self) -> PgServer:
        """A hot standby of this server, streaming from it, started (stop it before this one)."""
        return PgServer(self.bindir, primary=self).start()

    def promote(self) -> None:
        """``pg_ctl promote`` (waits until the server accepts writes)."""
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data_dir),
            "-w",
            "-t",
            str(PG_CTL_TIMEOUT_S),
            "promote",
        )

    def shutdown(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m mode``, keeping the folder (a fast shutdown sends every WAL record
        to the connected standbys first); :meth:`stop` still removes the folder."""
        if self._started:
            self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-m",
                mode,
                "-w",
                "-t",
                str(PG_CTL_TIMEOUT_S),
                "stop",
            )
            self._started = False

    def stop(self) -> None:
        """Stop the server (immediate: nothing here needs a clean shutdown); remove the folder."""
        try:
            if self._started:
                self._started = False
                subprocess.run(
                    self._command(
                        str(self.bindir / "pg_ctl"),
                        "-D",
                        str(self.data_dir),
                        "-m",
                        "immediate",
                        "-w",
                        "-t",
                        str(PG_CTL_TIMEOUT_S),
                        "stop",
                    ),
                    capture_output=True,
                    timeout=COMMAND_TIMEOUT_S,
                    check=False,
                )
        finally:
            if hasattr(self, "root"):
                shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
