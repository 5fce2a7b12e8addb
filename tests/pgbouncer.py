"""A throwaway PgBouncer in transaction mode in front of a test server (tests/pgserver.py).

Invariant: a :class:`PgBouncer` that :meth:`~PgBouncer.start` returned listens on a Unix socket
inside its own temporary folder only (no TCP address), forwards every database name to the same
database of its :class:`~pgserver.PgServer` with ``pool_mode = transaction`` and at most
``pool_size`` server connections per database, and :meth:`~PgBouncer.stop` ends the process it
started and removes the folder whatever state the start reached. As root (PgBouncer refuses to
run as root) it runs as the server's ``postgres`` user through ``runuser``, as the server does.

:func:`find_pgbouncer` says where the program is, :func:`unavailable_reason` why it cannot run
(Debian: ``apt-get install pgbouncer``; ``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pgserver import PORT, SERVER_USER, SUPERUSER, PgServer

#: Environment variable naming the pgbouncer program; when set, no other is looked at.
PROGRAM_ENV = "OPENCLAW_FTS_PGBOUNCER"
#: Where Debian's package installs it (not on a non-root user's PATH).
DEBIAN_PROGRAM = "/usr/sbin/pgbouncer"
#: Set (not "0") where the PgBouncer tests must run: a missing pgbouncer fails them.
REQUIRE_ENV = "OPENCLAW_FTS_REQUIRE_PGBOUNCER"
#: The socket's port number: only names the socket file, the folder is private.
BOUNCER_PORT = 6432
#: Seconds to wait for the socket to appear, and for the process to end.
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.05


class PgBouncerError(RuntimeError):
    """PgBouncer could not be started (the message carries its log)."""


def find_pgbouncer() -> Path | None:
    """The pgbouncer program: :data:`PROGRAM_ENV` when set, else on ``PATH``, else Debian's."""
    chosen = os.environ.get(PROGRAM_ENV)
    if chosen:
        return Path(chosen) if os.access(chosen, os.X_OK) else None
    on_path = shutil.which("pgbouncer")
    if on_path:
        return Path(on_path)
    return Path(DEBIAN_PROGRAM) if os.access(DEBIAN_PROGRAM, os.X_OK) else None


def unavailable_reason() -> str | None:
    """Why no PgBouncer can be started here (None: it can)."""
    if find_pgbouncer() is None:
        return "pgbouncer is not installed (Debian: apt-get install pgbouncer)"
    return None


def _runs_as_root() -> bool:
    return os.geteuid() == 0


@dataclass
class PgBouncer:
    """One PgBouncer process in a temporary folder; use :meth:`start` / :meth:`stop`."""

    server: PgServer
    #: Server connections per database: fewer than the clients, so clients share them.
    pool_size: int = 2
    root: Path = field(init=False)
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def log_file(self) -> Path:
        return self.root / "pgbouncer.log"

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL (psycopg 3) of ``database`` through the pooler's socket."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.root}&port={BOUNCER_PORT}"

    def url_of(self, server_url: str) -> str:
        """The pooler's URL of the database that ``server_url`` (the server's) names."""
        database = server_url.split("@/", 1)[1].split("?", 1)[0]
        return self.url(database)

    def start(self) -> PgBouncer:
        program = find_pgbouncer()
        if program is None:
            raise PgBouncerError(str(unavailable_reason()))
        self.root = Path(tempfile.mkdtemp(prefix="openclaw-fts-pgbouncer-"))
        try:
            (self.root / "users.txt").write_text(f'"{SUPERUSER}" ""\n')
            (self.root / "pgbouncer.ini").write_text(
                "[databases]\n"
                f"* = host={self.server.socket_dir} port={PORT} user={SUPERUSER}\n"
                "[pgbouncer]\n"
                f"unix_socket_dir = {self.root}\n"
                f"listen_port = {BOUNCER_PORT}\n"
                "auth_type = trust\n"
                f"auth_file = {self.root / 'users.txt'}\n"
                "pool_mode = transaction\n"
                f"default_pool_size = {self.pool_size}\n"
                "max_client_conn = 200\n"
                f"logfile = {self.log_file}\n"
                f"admin_users = {SUPERUSER}\n"
            )
            command = [str(program), str(self.root / "pgbouncer.ini")]
            if _runs_as_root():
                info = pwd.getpwnam(SERVER_USER)
                for path in (self.root, *self.root.iterdir()):
                    os.chown(path, info.pw_uid, info.pw_gid)
                command = ["runuser", "-u", SERVER_USER, "--", *command]
            self._process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            socket = self.root / f".s.PGSQL.{BOUNCER_PORT}"
            deadline = time.monotonic() + START_TIMEOUT_S
            while not socket.exists():
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise PgBouncerError(f"pgbouncer did not start:\n{self._log()}")
                time.sleep(POLL_S)
        except BaseException:
            self.stop()
            raise
        return self

    def _log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """End the process (SIGTERM: PgBouncer exits at once, closing its connections) and
        remove the folder."""
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(STOP_TIMEOUT_S)
        finally:
            self._process = None
            if hasattr(self, "root"):
                shutil.rmtree(self.root, ignore_errors=True)
