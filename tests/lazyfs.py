"""A FUSE file system for power-cut tests, in the spirit of Jepsen's LazyFS: every file's data
lives in memory, and what an ``fsync`` has not made durable is dropped by :meth:`LazyFS.cut`.

What is durable: a file's bytes as of its last ``fsync`` (``fdatasync`` too); a file created,
renamed or deleted is so at once (SQLite syncs the directory where it matters; the file's
*content* is what a power cut loses). A cut may also tear the last unsynced write: keep a
seeded random prefix of it on top of the synced bytes. :func:`mounted` serves the file system
from a thread of the test process for a ``with`` block (``fusermount3 -u`` afterwards), so a
cut is: kill the writing process, leave the block, :meth:`LazyFS.cut`, mount again.

Needs libfuse 3 (Debian: ``fuse3``), ``/dev/fuse``, root, and ``mfusepy`` (the ``faults``
extra); :func:`unavailable_reason` says what is missing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Seconds to wait for a mount to appear (the FUSE thread starting).
MOUNT_TIMEOUT = 10.0


def unavailable_reason() -> str | None:
    """Why the file system cannot be mounted here (None: it can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "mounting a FUSE file system for the power-cut tests needs root"
    if not Path("/dev/fuse").exists():
        return "/dev/fuse is missing"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (Debian package fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy cannot load libfuse ({exc}); pip install '.[faults]'"
    return None


@dataclass
class _File:
    data: bytearray = field(default_factory=bytearray)
    synced: bytes = b""
    #: The last write not synced since: (offset, bytes) — what a cut may tear.
    last_write: tuple[int, bytes] | None = None
    mode: int = 0o644
    mtime: int = field(default_factory=time.time_ns)


class LazyFS:
    """The file system's state (kept across mounts) and its FUSE operations."""

    def __init__(self) -> None:
        self.files: dict[str, _File] = {}
        self.lock = threading.Lock()
        self.fsyncs = 0

    # -- what a test does -------------------------------------------------------------------

    def cut(self, rng: random.Random | None = None) -> int:
        """A power cut: every file back to its synced bytes; with ``rng``, a random prefix
        of each file's last unsynced write survives on top (a torn write). Returns the
        number of files that lost something."""
        lost = 0
        with self.lock:
            for f in self.files.values():
                if bytes(f.data) != f.synced:
                    lost += 1
                data = bytearray(f.synced)
                if rng is not None and f.last_write is not None:
                    offset, chunk = f.last_write
                    keep = chunk[: rng.randint(0, len(chunk))]
                    if len(data) < offset:
                        data.extend(b"\0" * (offset - len(data)))
                    data[offset : offset + len(keep)] = keep
                f.data = data
                f.last_write = None
        return lost

    def copy_to(self, folder: Path) -> None:
        """Write every file's current bytes (after a cut: what survived) into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        with self.lock:
            for name, f in self.files.items():
                (folder / name.lstrip("/")).write_bytes(bytes(f.data))

    # -- FUSE operations (mfusepy's Operations interface, paths as str) -------------------

    def _file(self, path: str) -> _File:
        found = self.files.get(path)
        if found is None:
            raise _os_error(errno.ENOENT)
        return found

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        now = time.time_ns()
        if path == "/":
            return {
                "st_mode": stat.S_IFDIR | 0o755,
                "st_nlink": 2,
                "st_size": 0,
                "st_ctime": now,
                "st_mtime": now,
                "st_atime": now,
            }
        with self.lock:
            f = self._file(path)
            return {
                "st_mode": stat.S_IFREG | f.mode,
                "st_nlink": 1,
                "st_size": len(f.data),
                "st_ctime": f.mtime,
                "st_mtime": f.mtime,
                "st_atime": f.mtime,
            }

    def readdir(self, path: str, fh: Any) -> list[str]:
        with self.lock:
            return [".", "..", *(name.lstrip("/") for name in self.files)]

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        with self.lock:
            self.files.setdefault(path, _File(mode=mode & 0o777))
        return 0

    def open(self, path: str, flags: int) -> int:
        with self.lock:
            self._file(path)
        return 0

    def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
        with self.lock:
            return bytes(self._file(path).data[offset : offset + size])

    def write(self, path: str, data: bytes, offset: int, fh: Any) -> int:
        with self.lock:
            f = self._file(path)
            if len(f.data) < offset:
                f.data.extend(b"\0" * (offset - len(f.data)))
            f.data[offset : offset + len(data)] = data
            f.last_write = (offset, bytes(data))
            f.mtime = time.time_ns()
        return len(data)

    def truncate(self, path: str, length: int, fh: Any = None) -> int:
        with self.lock:
            f = self._file(path)
            del f.data[length:]
            if len(f.data) < length:
                f.data.extend(b"\0" * (length - len(f.data)))
        return 0

    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        with self.lock:
            f = self._file(path)
            f.synced = bytes(f.data)
            f.last_write = None
            self.fsyncs += 1
        return 0

    def unlink(self, path: str) -> int:
        with self.lock:
            self._file(path)
            del self.files[path]
        return 0

    def rename(self, old: str, new: str) -> int:
        with self.lock:
            self.files[new] = self._file(old)
            del self.files[old]
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        return {
            "f_bsize": 4096,
            "f_frsize": 4096,
            "f_blocks": 1 << 20,
            "f_bfree": 1 << 19,
            "f_bavail": 1 << 19,
            "f_files": 1 << 16,
            "f_ffree": 1 << 15,
            "f_namemax": 255,
        }

    def flush(self, path: str, fh: Any) -> int:
        return 0

    def release(self, path: str, fh: Any) -> int:
        return 0

    def utimens(self, path: str, times: Any = None) -> int:
        return 0

    def chmod(self, path: str, mode: int) -> int:
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        return 0

    def access(self, path: str, amode: int) -> int:
        return 0


def _os_error(code: int) -> OSError:
    from mfusepy import FuseOSError

    return FuseOSError(code)  # type: ignore[no-any-return]


def _operations(fs: LazyFS) -> Any:
    import mfusepy

    class Ops(mfusepy.Operations):  # type: ignore[misc]
        use_ns = True  # times in integer nanoseconds (floats are deprecated)

    ops = Ops()
    for name in (
        "getattr",
        "readdir",
        "create",
        "open",
        "read",
        "write",
        "truncate",
        "fsync",
        "unlink",
        "rename",
        "statfs",
        "flush",
        "release",
        "utimens",
        "chmod",
        "chown",
        "access",
    ):
        setattr(ops, name, getattr(fs, name))
    return ops


@contextlib.contextmanager
def mounted(fs: LazyFS, mountpoint: Path) -> Iterator[Path]:
    """Serve ``fs`` at ``mountpoint`` for the ``with`` block."""
    import mfusepy

    mountpoint.mkdir(parents=True, exist_ok=True)
    thread = threading.Thread(
        target=lambda: mfusepy.FUSE(_operations(fs), str(mountpoint), foreground=True),
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + MOUNT_TIMEOUT
    while not os.path.ismount(mountpoint):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the FUSE file system did not mount at {mountpoint}")
        time.sleep(0.01)
    try:
        yield mountpoint
    finally:
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False)
        thread.join(MOUNT_TIMEOUT)
