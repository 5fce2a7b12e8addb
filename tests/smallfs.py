"""A small file system for fault tests: a ``tmpfs`` of a few megabytes mounted for one test,
filled to a chosen margin with a filler file, freed again (the filler deleted) or grown
(remounted larger) while the database on it stays open.

Mounting needs root (CI runs as root); elsewhere :func:`unavailable_reason` says why the tests
using it skip — or fail, with ``OPENCLAW_FTS_REQUIRE_MOUNT=1`` (set by ``.ci/run``), so that CI
cannot pass with them skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Set to 1: a test that cannot mount fails instead of skipping.
REQUIRE_ENV = "OPENCLAW_FTS_REQUIRE_MOUNT"
#: Filler file's name on the mounted file system.
FILLER = "filler.bin"
#: Bytes written per call while filling (no single huge buffer in memory).
FILL_CHUNK = 256 * 1024


def skip_or_fail(reason: str) -> None:
    """Skip the test for ``reason``, or fail it when mounting is required here."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {reason}")
    pytest.skip(reason)


def unavailable_reason() -> str | None:
    """Why a ``tmpfs`` cannot be mounted here (None: it can)."""
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "mounting a tmpfs needs a POSIX system"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (CI runs the suite as root)"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "`mount` / `umount` are not installed"
    return None


class SmallDisk:
    """A mounted ``tmpfs`` at :attr:`path` of :attr:`size` bytes."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        self.size = size

    def free_bytes(self) -> int:
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def fill(self, leave: int) -> int:
        """Grow the filler file until at most ``leave`` bytes are free; returns its size."""
        filler = self.path / FILLER
        with filler.open("ab") as handle:
            while (room := self.free_bytes() - leave) > 0:
                try:
                    handle.write(b"\0" * min(FILL_CHUNK, room))
                    handle.flush()
                except OSError:  # full already (a concurrent writer took the rest)
                    break
        return filler.stat().st_size

    def fill_up(self) -> None:
        """No free byte left at all."""
        self.fill(0)
        filler = self.path / FILLER
        with contextlib.suppress(OSError), filler.open("ab") as handle:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()

    def free(self) -> None:
        """Delete the filler file."""
        (self.path / FILLER).unlink(missing_ok=True)

    def grow(self, size: int) -> None:
        """Remount the same ``tmpfs`` with ``size`` bytes (its files stay, open or not)."""
        subprocess.run(
            ["mount", "-o", f"remount,size={size}", str(self.path)],
            check=True,
            capture_output=True,
        )
        self.size = size


@contextlib.contextmanager
def small_disk(path: Path, size: int, owner: str | None = None) -> Iterator[SmallDisk]:
    """A ``tmpfs`` of ``size`` bytes mounted at ``path`` (created) for the ``with`` block;
    ``owner``: a system user to own its root (PostgreSQL's tablespace). Where nothing can be
    mounted, the test skips (:func:`skip_or_fail`)."""
    reason = unavailable_reason()
    if reason is not None:
        skip_or_fail(reason)
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        skip_or_fail(f"`mount -t tmpfs` failed: {mounted.stderr.strip()}")
    try:
        if owner is not None:
            shutil.chown(path, owner, owner)
        yield SmallDisk(path, size)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)
