"""Importing OpenClaw transcripts the way ``openclaw doctor`` does: stored, not indexed.

Invariant: an import streams its file (memory does not grow with the file size), stores every
well-formed event verbatim in bounded batches, each its own transaction, and never writes index
rows: the imported sessions are left pending (no index state, or a watermark behind the new
events) for the reconciler. A malformed line is reported with file and line number and skipped;
re-importing a file adds only events whose ids the session does not have yet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

from . import transcript
from .engine import writer
from .errors import ImportFormatError, InvalidEventError, InvalidSessionError
from .hooks import agent_id_from_key, serialise_event, validate_session_fields
from .index import sqlite as fts

#: Events written per import transaction: bounds how long a live writer waits for the lock.
IMPORT_BATCH_EVENTS = 2000
#: Lines read before deciding whether a file is a transcript at all.
IMPORT_SNIFF_LINES = 50
#: Longest JSONL line accepted (bytes); longer lines are reported and skipped unread.
MAX_LINE_BYTES = 32 * 1024 * 1024
#: The sessions folder's index file (OpenClaw layout).
SESSIONS_INDEX_FILE = "sessions.json"
#: Session key given to a lone transcript imported without one.
DEFAULT_SESSION_KEY = "agent:main:main"
#: At most this many line errors are kept in a report (the count is always exact).
MAX_REPORTED_ERRORS = 100

Progress = Callable[[int], None]


@dataclass
class ImportReport:
    """What one import did."""

    files: int = 0
    sessions: list[str] = field(default_factory=list)
    imported: int = 0
    skipped_duplicates: int = 0
    error_count: int = 0
    errors: list[str] = field(default_factory=list)
    failed_files: list[str] = field(default_factory=list)

    def error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(message)

    def merge(self, other: ImportReport) -> None:
        self.files += other.files
        self.sessions.extend(other.sessions)
        self.imported += other.imported
        self.skipped_duplicates += other.skipped_duplicates
        self.error_count += other.error_count
        self.errors.extend(other.errors[: MAX_REPORTED_ERRORS - len(self.errors)])
        self.failed_files.extend(other.failed_files)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "sessions": list(self.sessions),
            "imported": self.imported,
            "skippedDuplicates": self.skipped_duplicates,
            "errorCount": self.error_count,
            "errors": list(self.errors),
            "failedFiles": list(self.failed_files),
        }


@dataclass(frozen=True)
class SessionMeta:
    session_key: str | None = None
    spawned_by: str | None = None
    parent_session_key: str | None = None
    owner_session_key: str | None = None


def _read_lines(path: Path, report: ImportReport) -> Iterator[tuple[int, dict[str, Any], str]]:
    """Yield ``(line number, event object, line text)`` per well-formed line; report the rest."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if len(raw) > MAX_LINE_BYTES:
                report.error(f"{path}:{number}: line longer than {MAX_LINE_BYTES} bytes")
                continue
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8").strip()
                value = json.loads(line)
            except UnicodeDecodeError:
                report.error(f"{path}:{number}: not valid UTF-8")
                continue
            except (json.JSONDecodeError, RecursionError) as exc:
                report.error(f"{path}:{number}: malformed JSON ({exc.__class__.__name__})")
                continue
            if not isinstance(value, dict):
                report.error(f"{path}:{number}: not a JSON object")
                continue
            yield number, value, line


def _sniff(path: Path) -> dict[str, Any] | None:
    """The header (or first event) of a transcript; raise when the file is not one."""
    if not path.is_file():
        raise ImportFormatError(f"{path}: no such file")
    scratch = ImportReport()
    seen = 0
    for _, value, _ in _read_lines(path, scratch):
        if isinstance(value.get("type"), str):
            return value
        seen += 1
        if seen >= IMPORT_SNIFF_LINES:
            break
    if seen == 0 and scratch.error_count == 0:
        return None  # empty file: nothing to import, not an error
    raise ImportFormatError(
        f'{path}: not an OpenClaw transcript (no JSON object with a "type" in its first '
        f"{IMPORT_SNIFF_LINES} lines)"
    )


def import_jsonl(
    engine: Engine,
    path: str | Path,
    *,
    session_key: str | None = None,
    session_id: str | None = None,
    meta: SessionMeta | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import one ``<sessionId>.jsonl`` transcript (see module docstring)."""
    path = Path(path)
    report = ImportReport(files=1)
    first = _sniff(path)
    if first is None:
        return report
    header_id = first.get("id") if first.get("type") == transcript.HEADER_TYPE else None
    sid = session_id or (header_id if isinstance(header_id, str) and header_id else path.stem)
    meta = meta or SessionMeta()
    key = session_key or meta.session_key or DEFAULT_SESSION_KEY
    try:
        validate_session_fields(
            {
                "session_id": sid,
                "session_key": key,
                "spawned_by": meta.spawned_by,
                "parent_session_key": meta.parent_session_key,
                "owner_session_key": meta.owner_session_key,
            }
        )
    except InvalidSessionError as exc:
        raise ImportFormatError(f"{path}: {exc}") from None
    report.sessions.append(sid)
    target = _Target(sid, key, meta)
    batch: list[tuple[dict[str, Any], str]] = []
    for number, event, line in _read_lines(path, report):
        try:
            dumped = serialise_event(event, line)
        except InvalidEventError as exc:
            report.error(f"{path}:{number}: {exc}")
            continue
        batch.append((event, dumped))
        if len(batch) >= IMPORT_BATCH_EVENTS:
            _write_batch(engine, target, batch, report)
            if progress:
                progress(len(batch))
            batch = []
    if batch or target.existed is None:  # (an empty transcript still gets its session)
        _write_batch(engine, target, batch, report)
        if progress and batch:
            progress(len(batch))
    return report


@dataclass
class _Target:
    """The session a transcript is imported into; ``existed`` is learnt by the first batch."""

    sid: str
    key: str
    meta: SessionMeta
    existed: bool | None = None


def _ensure_session(conn: Connection, target: _Target) -> bool:
    """Create the session row if missing (no index state: it is pending). True if it existed
    with events. Runs in the first batch's transaction (one commit fewer per file)."""
    cur = fts.cursor(conn)
    row = cur.execute(
        "SELECT last_seq FROM sessions WHERE session_id = ?", (target.sid,)
    ).fetchone()
    if row is not None:
        return int(row[0]) >= 0
    cur.execute(
        "INSERT INTO sessions (session_id, session_key, agent_id, spawned_by, "
        "parent_session_key, owner_session_key, archived, incognito, last_seq, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, 0, -1, CURRENT_TIMESTAMP, "
        "CURRENT_TIMESTAMP)",
        (
            target.sid,
            target.key,
            agent_id_from_key(target.key) or "main",
            target.meta.spawned_by,
            target.meta.parent_session_key,
            target.meta.owner_session_key,
        ),
    )
    return False


def _write_batch(
    engine: Engine,
    target: _Target,
    batch: list[tuple[dict[str, Any], str]],
    report: ImportReport,
) -> None:
    sid = target.sid
    with writer(engine).begin() as conn:  # reads, then writes: BEGIN IMMEDIATE
        if target.existed is None:
            target.existed = _ensure_session(conn, target)
        existed = target.existed
        cur = fts.cursor(conn)
        last = int(
            cur.execute("SELECT last_seq FROM sessions WHERE session_id = ?", (sid,)).fetchone()[0]
        )
        taken = _existing_ids(conn, sid, [transcript.event_id_of(e) for e, _ in batch])
        rows = []
        for event, dumped in batch:
            event_id = transcript.event_id_of(event)
            if event_id is None and existed:
                report.skipped_duplicates += 1  # no id to tell it apart from the stored copy
                continue
            if event_id is not None and event_id in taken:
                report.skipped_duplicates += 1
                continue
            if event_id is not None:
                taken.add(event_id)
            last += 1
            columns = transcript.derived_columns(last, event)
            columns["session_id"] = sid
            columns["event"] = dumped
            rows.append(columns)
        if not rows:
            return
        fts.cursor(conn).executemany(
            "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, "
            "target_id, side, timestamp_ms, event) VALUES (:session_id, :seq, :event_id, "
            ":parent_id, :type, :role, :target_id, :side, :timestamp_ms, :event)",
            rows,
        )
        cur.execute(
            "UPDATE sessions SET last_seq = ?, updated_at = CURRENT_TIMESTAMP WHERE session_id = ?",
            (last, sid),
        )
        report.imported += len(rows)


def _existing_ids(conn: Connection, sid: str, ids: list[str | None]) -> set[str]:
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return set()
    found: set[str] = set()
    cur = fts.cursor(conn)  # plain DBAPI: 500 SQLAlchemy bind objects per batch cost ~50% of import
    for chunk, marks in fts.in_lists(wanted):
        result = cur.execute(
            "SELECT event_id FROM transcript_events WHERE session_id = ? "
            f"AND event_id IN ({marks})",
            [sid, *chunk],
        )
        found.update(r[0] for r in result)
    return found


def read_sessions_index(folder: Path) -> dict[str, tuple[str, SessionMeta]]:
    """``sessions.json`` of an OpenClaw sessions folder as ``{session_id: (key, meta)}``."""
    index_path = folder / SESSIONS_INDEX_FILE
    if not index_path.is_file():
        return {}
    try:
        data = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"{index_path}: unreadable ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise ImportFormatError(f"{index_path}: expected an object of session keys")
    out: dict[str, tuple[str, SessionMeta]] = {}
    for key, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str):
            continue

        def _opt(name: str, entry: dict[str, Any] = entry) -> str | None:
            value = entry.get(name)
            return value if isinstance(value, str) and value else None

        out[entry["sessionId"]] = (
            key,
            SessionMeta(
                session_key=key,
                spawned_by=_opt("spawnedBy"),
                parent_session_key=_opt("parentSessionKey"),
                owner_session_key=_opt("ownerSessionKey"),
            ),
        )
    return out


@dataclass(frozen=True)
class ImportItem:
    """One transcript file of an import, with what its folder's index says about it."""

    path: Path
    session_key: str | None = None
    session_id: str | None = None
    meta: SessionMeta | None = None


def folder_items(folder: str | Path) -> list[ImportItem]:
    """The transcripts of an OpenClaw sessions folder; raise if it is not one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ImportFormatError(f"{folder}: not a folder")
    index = read_sessions_index(folder)
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise ImportFormatError(f"{folder}: no .jsonl transcripts in it")
    items = []
    for path in files:
        key, meta = index.get(path.stem, (None, None))
        items.append(ImportItem(path, key, path.stem if key else None, meta))
    return items


def import_item(
    engine: Engine, item: ImportItem, *, progress: Progress | None = None
) -> ImportReport:
    """Import one planned file (see :func:`import_jsonl`)."""
    return import_jsonl(
        engine,
        item.path,
        session_key=item.session_key,
        session_id=item.session_id,
        meta=item.meta,
        progress=progress,
    )


def import_dir(
    engine: Engine, folder: str | Path, *, progress: Progress | None = None
) -> ImportReport:
    """Import an OpenClaw agent sessions folder (``sessions.json`` + ``<sessionId>.jsonl``).
    A file refused as a whole is reported (``failed_files``) and the others are imported."""
    report = ImportReport()
    for item in folder_items(folder):
        try:
            part = import_item(engine, item, progress=progress)
        except ImportFormatError as exc:
            report.files += 1
            report.failed_files.append(str(exc))
            report.error(str(exc))
            continue
        report.merge(part)
    return report
