"""A FUSE file system for power-cut tests, in the spirit of Jepsen's LazyFS: every file's data
lives in memory, and what an ``fsync`` has not made durable is dropped by :meth:`LazyFS.cut`.

What is durable: a file's bytes as of its last ``fsync`` (``fdatasync`` too); a file or folder
created, renamed, linked or deleted is so at once (SQLite and PostgreSQL sync the folder where
it matters; a file's *content* is what a power cut loses). A cut may also tear the last
unsynced write of each file: keep a seeded random prefix of it on top of the synced bytes.
:func:`mounted` serves the file system from a thread of the test process for a ``with`` block
(``fusermount3 -u`` afterwards), so a cut is: kill every process writing to it, leave the
block, :meth:`LazyFS.cut`, mount again (a fresh mount: no page or attribute the kernel cached
before the cut survives it).

Folders, hard links and symbolic links are kept too (a PostgreSQL data directory needs them),
every entry owned by :attr:`LazyFS.owner`; with ``allow_other`` another user (the
``postgres`` system user) may use the mount. :meth:`LazyFS.load` copies a real folder in, as
synced bytes.

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
#: Block size the file system reports (``statfs``, ``st_blocks``).
BLOCK = 4096


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
    #: The bytes as of the last fsync (what a cut leaves).
    synced: bytearray = field(default_factory=bytearray)
    #: Byte ranges written or resized since the last fsync: start -> end.
    dirty: dict[int, int] = field(default_factory=dict)
    #: The last write not synced since: (offset, bytes) — what a cut may tear.
    last_write: tuple[int, bytes] | None = None
    mode: int = 0o644
    mtime: int = field(default_factory=time.time_ns)

    def touch(self, start: int, end: int) -> None:
        if end > start:
            self.dirty[start] = max(end, self.dirty.get(start, end))
        self.mtime = time.time_ns()

    def sync(self) -> None:
        """Make the current bytes durable (only the ranges written since are copied)."""
        size = len(self.data)
        if len(self.synced) > size:
            del self.synced[size:]
        elif len(self.synced) < size:
            self.synced.extend(self.data[len(self.synced) :])
        for start, end in self.dirty.items():
            end = min(end, size)
            if start < end:
                self.synced[start:end] = self.data[start:end]
        self.dirty.clear()
        self.last_write = None

    def cut(self, rng: random.Random | None) -> bool:
        """Back to the synced bytes (a torn last write on top with ``rng``); whether anything
        was lost."""
        if not self.dirty and self.last_write is None:
            return False
        data = bytearray(self.synced)
        if rng is not None and self.last_write is not None:
            offset, chunk = self.last_write
            keep = chunk[: rng.randint(0, len(chunk))]
            if len(data) < offset:
                data.extend(b"\0" * (offset - len(data)))
            data[offset : offset + len(keep)] = keep
        self.data = data
        self.dirty.clear()
        self.last_write = None
        return True


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


class LazyFS:
    """The file system's state (kept across mounts) and its FUSE operations; ``owner``: the
    ``(uid, gid)`` every entry reports (PostgreSQL refuses a data directory it does not own)."""

    def __init__(self, owner: tuple[int, int] = (0, 0)) -> None:
        self.files: dict[str, _File] = {}
        #: Folder path -> mode ("/" always there).
        self.dirs: dict[str, int] = {"/": 0o755}
        #: Symbolic link path -> where it points.
        self.symlinks: dict[str, str] = {}
        self.owner = owner
        self.lock = threading.Lock()
        self.fsyncs = 0

    # -- what a test does -------------------------------------------------------------------

    def cut(self, rng: random.Random | None = None) -> int:
        """A power cut: every file back to its synced bytes; with ``rng``, a random prefix
        of each file's last unsynced write survives on top (a torn write). Returns the
        number of files that lost something."""
        with self.lock:
            # A hard-linked file is one _File under several names: cut it once.
            unique = {id(f): f for f in self.files.values()}
            return sum(1 for f in unique.values() if f.cut(rng))

    def copy_to(self, folder: Path) -> None:
        """Write every file's current bytes (after a cut: what survived) into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        with self.lock:
            for name in sorted(self.dirs):
                (folder / name.lstrip("/")).mkdir(parents=True, exist_ok=True)
            for name, f in self.files.items():
                (folder / name.lstrip("/")).write_bytes(bytes(f.data))

    def load(self, folder: Path, under: str = "/") -> None:
        """Copy the real ``folder``'s tree in at ``under``, every byte synced (modes kept)."""
        with self.lock:
            base = under.rstrip("/")
            self.dirs[base or "/"] = stat.S_IMODE(folder.stat().st_mode)
            for entry in sorted(folder.rglob("*")):
                path = f"{base}/{entry.relative_to(folder).as_posix()}"
                info = entry.lstat()
                if stat.S_ISLNK(info.st_mode):
                    self.symlinks[path] = os.readlink(entry)
                elif stat.S_ISDIR(info.st_mode):
                    self.dirs[path] = stat.S_IMODE(info.st_mode)
                else:
                    data = entry.read_bytes()
                    mode = stat.S_IMODE(info.st_mode)
                    self.files[path] = _File(bytearray(data), bytearray(data), mode=mode)

    def size(self) -> int:
        """Bytes held (current contents)."""
        with self.lock:
            return sum(len(f.data) for f in {id(f): f for f in self.files.values()}.values())

    # -- FUSE operations (mfusepy's Operations interface, paths as str) -------------------

    def _file(self, path: str) -> _File:
        found = self.files.get(path)
        if found is None:
            raise _os_error(errno.EISDIR if path in self.dirs else errno.ENOENT)
        return found

    def _exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs or path in self.symlinks

    def _new_entry(self, path: str) -> None:
        if _parent(path) not in self.dirs:
            raise _os_error(errno.ENOENT)

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        uid, gid = self.owner
        with self.lock:
            if path in self.dirs:
                now = time.time_ns()
                return {
                    "st_mode": stat.S_IFDIR | self.dirs[path],
                    "st_nlink": 2,
                    "st_size": BLOCK,
                    "st_uid": uid,
                    "st_gid": gid,
                    "st_ctime": now,
                    "st_mtime": now,
                    "st_atime": now,
                }
            if path in self.symlinks:
                return {
                    "st_mode": stat.S_IFLNK | 0o777,
                    "st_nlink": 1,
                    "st_size": len(self.symlinks[path]),
                    "st_uid": uid,
                    "st_gid": gid,
                }
            f = self._file(path)
            return {
                "st_mode": stat.S_IFREG | f.mode,
                "st_nlink": 1,
                "st_size": len(f.data),
                "st_blocks": (len(f.data) + 511) // 512,
                "st_uid": uid,
                "st_gid": gid,
                "st_ctime": f.mtime,
                "st_mtime": f.mtime,
                "st_atime": f.mtime,
            }

    def readdir(self, path: str, fh: Any) -> list[str]:
        with self.lock:
            if path not in self.dirs:
                raise _os_error(errno.ENOTDIR if self._exists(path) else errno.ENOENT)
            prefix = path.rstrip("/") + "/"
            names = [
                name[len(prefix) :]
                for table in (self.files, self.dirs, self.symlinks)
                for name in table
                if name.startswith(prefix) and "/" not in name[len(prefix) :] and name != "/"
            ]
            return [".", "..", *names]

    def mkdir(self, path: str, mode: int) -> int:
        with self.lock:
            self._new_entry(path)
            if self._exists(path):
                raise _os_error(errno.EEXIST)
            self.dirs[path] = mode & 0o7777
        return 0

    def rmdir(self, path: str) -> int:
        with self.lock:
            if path not in self.dirs:
                raise _os_error(errno.ENOENT)
            prefix = path + "/"
            if any(n.startswith(prefix) for t in (self.files, self.dirs, self.symlinks) for n in t):
                raise _os_error(errno.ENOTEMPTY)
            del self.dirs[path]
        return 0

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        with self.lock:
            self._new_entry(path)
            self.files.setdefault(path, _File(mode=mode & 0o7777))
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
            f.touch(offset, offset + len(data))
        return len(data)

    def truncate(self, path: str, length: int, fh: Any = None) -> int:
        with self.lock:
            f = self._file(path)
            before = len(f.data)
            del f.data[length:]
            if len(f.data) < length:
                f.data.extend(b"\0" * (length - len(f.data)))
            f.touch(min(before, length), max(before, length))
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: Any) -> int:
        if mode != 0:  # punching holes, keeping the size: not needed
            raise _os_error(errno.EOPNOTSUPP)
        with self.lock:
            f = self._file(path)
            end = offset + size
            if len(f.data) < end:
                start = len(f.data)
                f.data.extend(b"\0" * (end - start))
                f.touch(start, end)
        return 0

    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        with self.lock:
            self._file(path).sync()
            self.fsyncs += 1
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: Any) -> int:
        return 0  # entries are durable at once

    def unlink(self, path: str) -> int:
        with self.lock:
            if path in self.symlinks:
                del self.symlinks[path]
            else:
                self._file(path)
                del self.files[path]
        return 0

    def rename(self, old: str, new: str) -> int:
        with self.lock:
            self._new_entry(new)
            if old in self.dirs:
                if new in self.files or new in self.symlinks:
                    raise _os_error(errno.ENOTDIR)
                prefix = old + "/"
                for table in (self.files, self.dirs, self.symlinks):
                    for name in [n for n in table if n == old or n.startswith(prefix)]:
                        table[new + name[len(old) :]] = table.pop(name)  # type: ignore[index]
                return 0
            if new in self.dirs:
                raise _os_error(errno.EISDIR)
            self.files.pop(new, None)
            self.symlinks.pop(new, None)
            if old in self.symlinks:
                self.symlinks[new] = self.symlinks.pop(old)
            else:
                self.files[new] = self._file(old)
                del self.files[old]
        return 0

    def link(self, target: str, source: str) -> int:
        """A hard link: ``target`` (the new name) to ``source``'s file."""
        with self.lock:
            self._new_entry(target)
            if self._exists(target):
                raise _os_error(errno.EEXIST)
            self.files[target] = self._file(source)
        return 0

    def symlink(self, target: str, source: str) -> int:
        """A symbolic link at ``target`` pointing to ``source``."""
        with self.lock:
            self._new_entry(target)
            if self._exists(target):
                raise _os_error(errno.EEXIST)
            self.symlinks[target] = source
        return 0

    def readlink(self, path: str) -> str:
        with self.lock:
            if path not in self.symlinks:
                raise _os_error(errno.EINVAL)
            return self.symlinks[path]

    def statfs(self, path: str) -> dict[str, int]:
        return {
            "f_bsize": BLOCK,
            "f_frsize": BLOCK,
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
        with self.lock:
            if path in self.dirs:
                self.dirs[path] = mode & 0o7777
            elif path in self.files:
                self.files[path].mode = mode & 0o7777
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        return 0

    def access(self, path: str, amode: int) -> int:
        with self.lock:
            if not self._exists(path):
                raise _os_error(errno.ENOENT)
        return 0


def _os_error(code: int) -> OSError:
    from mfusepy import FuseOSError

    return FuseOSError(code)  # type: ignore[no-any-return]


#: The operations served (the rest answer ``ENOSYS``).
_OPERATIONS = (
    "getattr",
    "readdir",
    "mkdir",
    "rmdir",
    "create",
    "open",
    "read",
    "write",
    "truncate",
    "fallocate",
    "fsync",
    "fsyncdir",
    "unlink",
    "rename",
    "link",
    "symlink",
    "readlink",
    "statfs",
    "flush",
    "release",
    "utimens",
    "chmod",
    "chown",
    "access",
)


def _operations(fs: LazyFS) -> Any:
    import mfusepy

    class Ops(mfusepy.Operations):  # type: ignore[misc]
        use_ns = True  # times in integer nanoseconds (floats are deprecated)

    ops = Ops()
    for name in _OPERATIONS:
        setattr(ops, name, getattr(fs, name))
    return ops


@contextlib.contextmanager
def mounted(fs: LazyFS, mountpoint: Path, *, allow_other: bool = False) -> Iterator[Path]:
    """Serve ``fs`` at ``mountpoint`` for the ``with`` block; ``allow_other``: users other than
    the one mounting may use it (root may always ask for that)."""
    import mfusepy

    mountpoint.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {"foreground": True}
    if allow_other:
        options["allow_other"] = True
    thread = threading.Thread(
        target=lambda: mfusepy.FUSE(_operations(fs), str(mountpoint), **options),
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
