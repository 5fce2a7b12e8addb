"""Importing OpenClaw transcripts the way ``openclaw doctor`` does: stored, not indexed.

Invariant: an import streams its file (memory does not grow with the file size), stores every
well-formed event verbatim in bounded batches, each its own transaction, and never writes index
rows: the imported sessions are left pending (no index state, or a watermark behind the new
events) for the reconciler. A bad line — not UTF-8, not strict JSON (``NaN``, ``Infinity``,
numbers out of range, over-long integers), too deep, not an object, an event the store refuses
— is reported with file and line number and skipped; a byte-order mark opening line 1 is
ignored. Nothing but :class:`~openclaw_fts.errors.ImportFormatError` (the file as a whole) leaves
an import for bad input; a folder import reports such a file and goes on with the next.

A transcript planned for an agent (a folder import) never changes a session of another agent:
when its session id is a stored session of another agent, the file is refused as a whole —
unless ``rekey`` is asked, every entry that session stores is in the file (it is this very
transcript, filed under a wrong agent by an earlier import) and no other agent's folder of the
same import plans that session id, when it is moved to the planned key and agent. Session ids,
keys and links holding a NUL character are refused on every engine (PostgreSQL text cannot hold
one), so both engines import and refuse the same files.

Re-importing is idempotent, also after an interruption at any point: a file entry is stored
unless the session already holds it. An entry's identity is its ``id`` when it has one; an entry
without an ``id`` (older writers) is "the k-th id-less entry of the session whose stored JSON
text is exactly this" (a content digest and an occurrence count). Because an import stores a
file's accepted lines in file order, an interrupted import stored a prefix of them, so a retry
skips exactly that prefix and stores the rest: the session ends as a clean import leaves it
(same events, same ``seq`` order). See ``docs/import.md``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DataError

from . import folders, transcript
from .caller import agent_id_from_key
from .engine import READ_ONLY, write_engine
from .errors import (
    MAX_ERROR_CHARS,
    ImportFormatError,
    InvalidEventError,
    InvalidSessionError,
    quoted,
    shorten,
)
from .index import sessions_sql
from .index.base import backend, reader
from .jsonsafe import UTF8_BOM, JsonLineError, loads_strict
from .validation import EVENT_TEXT_COLUMNS, serialise_event, validate_session_fields

#: Events written per import transaction: bounds how long a live writer waits for the lock.
IMPORT_BATCH_EVENTS = 2000
#: Lines read before deciding whether a file is a transcript at all.
IMPORT_SNIFF_LINES = 50
#: Longest JSONL line accepted (bytes); longer lines are reported and skipped unread.
MAX_LINE_BYTES = 32 * 1024 * 1024
#: Session key given to a lone transcript imported without one.
DEFAULT_SESSION_KEY = "agent:main:main"
#: At most this many line errors are kept in a report (the count is always exact).
MAX_REPORTED_ERRORS = 100
#: Bytes of the content digest that identifies an entry without an ``id`` (BLAKE2b).
CONTENT_DIGEST_BYTES = 16
#: The character no imported session id, key or link may hold (PostgreSQL text cannot).
NUL = "\x00"
#: How the report names the session fields an import takes from a folder or a file.
SESSION_FIELD_NAMES = {
    "session_id": "session id",
    "session_key": "session key",
    "spawned_by": "spawnedBy",
    "parent_session_key": "parentSessionKey",
    "owner_session_key": "ownerSessionKey",
}

Progress = Callable[[int], None]
#: What an import says of a path that is neither a file nor a folder.
NO_SUCH_PATH = "no such file or folder"


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
    #: What each file of a folder import became (``folders.PlannedFile.outcome``).
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    def error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(shorten(message, MAX_ERROR_CHARS))

    def merge(self, other: ImportReport) -> None:
        self.files += other.files
        self.sessions.extend(other.sessions)
        self.imported += other.imported
        self.skipped_duplicates += other.skipped_duplicates
        self.error_count += other.error_count
        self.errors.extend(other.errors[: MAX_REPORTED_ERRORS - len(self.errors)])
        self.failed_files.extend(other.failed_files)
        self.outcomes.extend(other.outcomes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "sessions": list(self.sessions),
            "imported": self.imported,
            "skippedDuplicates": self.skipped_duplicates,
            "errorCount": self.error_count,
            "errors": list(self.errors),
            "failedFiles": list(self.failed_files),
            "agents": sorted({o["agentId"] for o in self.outcomes}),
            "outcomes": list(self.outcomes),
        }


@dataclass(frozen=True)
class SessionMeta:
    session_key: str | None = None
    spawned_by: str | None = None
    parent_session_key: str | None = None
    owner_session_key: str | None = None
    #: The agent the session belongs to (a folder import: the folder's); default: the key's.
    agent_id: str | None = None
    #: When the incarnation began (epoch ms): orders incarnations of one key. Default: now.
    created_ms: int | None = None
    #: A session that exists already takes this key, agent and links (a re-import that
    #: corrects sessions imported under a wrong key).
    rekey: bool = False
    #: With ``rekey``: a stored session of another agent holding nothing but this file's
    #: entries may move to this file's agent (False when another agent's folder of the same
    #: import plans the same session id: that agent's claim is as good, so nothing moves).
    may_take_other_agents: bool = True


def _read_lines(path: Path, report: ImportReport) -> Iterator[tuple[int, dict[str, Any], str]]:
    """Yield ``(line number, event object, line text)`` per well-formed line; report the rest."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if len(raw) > MAX_LINE_BYTES:
                report.error(f"{path}:{number}: line longer than {MAX_LINE_BYTES} bytes")
                continue
            if number == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM) :]  # a BOM opening the file is not part of line 1
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                report.error(f"{path}:{number}: not valid UTF-8 (at byte {exc.start + 1})")
                continue
            try:
                value = loads_strict(line)
            except JsonLineError as exc:
                report.error(f"{path}:{number}: {exc}")
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
    batch_events: int = IMPORT_BATCH_EVENTS,
) -> ImportReport:
    """Import one ``<sessionId>.jsonl`` transcript (see module docstring); ``batch_events``
    entries are written per transaction."""
    if isinstance(batch_events, bool) or not isinstance(batch_events, int) or batch_events < 1:
        raise ImportFormatError("batch_events must be a positive integer")
    path = Path(path)
    report = ImportReport(files=1)
    first = _sniff(path)
    if first is None:
        return report
    header_id = first.get("id") if first.get("type") == transcript.HEADER_TYPE else None
    sid = session_id or (header_id if isinstance(header_id, str) and header_id else path.stem)
    lone = meta is None  # a file on its own (not planned from a folder): report its key
    meta = meta or SessionMeta()
    key = session_key or meta.session_key or DEFAULT_SESSION_KEY
    fields = {
        "session_id": sid,
        "session_key": key,
        "spawned_by": meta.spawned_by,
        "parent_session_key": meta.parent_session_key,
        "owner_session_key": meta.owner_session_key,
    }
    # Checked before the id is looked up (a lone surrogate cannot even be bound), and again
    # when a lone file's key is chosen below.
    _check_session_fields(path, fields)
    if lone:
        key, outcome = _lone_file_key(engine, path, sid, session_key)
        report.outcomes.append(outcome)
        fields["session_key"] = key
        _check_session_fields(path, fields)
    report.sessions.append(sid)
    target = _Target(path, sid, key, meta)
    if meta.agent_id is not None and meta.rekey and meta.may_take_other_agents:
        target.adopts = _is_this_transcript(engine, target)
    batch: list[_Entry] = []
    for number, event, line in _read_lines(path, report):
        try:
            entry = _entry(event, line, number)
        except InvalidEventError as exc:
            report.error(f"{path}:{number}: {exc}")
            continue
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            report.error(f"{path}:{number}: event cannot be stored ({type(exc).__name__})")
            continue
        batch.append(entry)
        if len(batch) >= batch_events:
            _write_batch(engine, target, batch, report)
            if progress:
                progress(len(batch))
            batch = []
    if batch or target.existed is None:  # (an empty transcript still gets its session)
        _write_batch(engine, target, batch, report)
        if progress and batch:
            progress(len(batch))
    return report


def _check_session_fields(path: Path, fields: dict[str, str | None]) -> None:
    """Raise :class:`ImportFormatError` naming ``path`` when a session field cannot be stored."""
    try:
        validate_session_fields(fields)
    except InvalidSessionError as exc:
        raise ImportFormatError(f"{path}: {exc}") from None
    for name, value in fields.items():
        if isinstance(value, str) and NUL in value:
            raise ImportFormatError(
                f"{path}: {SESSION_FIELD_NAMES[name]} {quoted(value)} holds a NUL character "
                "(U+0000), which no stored session id, key or link may hold: not imported"
            )


#: ``matchedBy`` of a lone file's outcome: the key was given (``session_key`` /
#: ``--session-key``), is the session's stored key (a re-import), or was chosen here.
BY_GIVEN_KEY = "sessionKey"
BY_STORED_KEY = "storedSession"
BY_DEFAULT_KEY = "default"


def _lone_file_key(
    engine: Engine, path: Path, sid: str, given: str | None
) -> tuple[str, dict[str, Any]]:
    """The key a transcript imported on its own goes under, with its report outcome.

    A session already stored keeps its key (a re-import; a given other key is noted, never
    applied). Else a given key is used as it is (the transcript becomes that key's newest
    incarnation, which is what asking for it means); without one :data:`DEFAULT_SESSION_KEY`
    while no session holds it, else the orphan key of the session id -- never silently a new
    incarnation of a key another session holds (``history`` of that key would then show this
    transcript instead)."""
    note = None
    with engine.connect() as conn:
        stored = sessions_sql.stored_key(conn, sid)
        holder = None
        if stored is None and given is None:
            holder = sessions_sql.newest_session_of_key(conn, DEFAULT_SESSION_KEY)
    if stored is not None:
        # A re-import: the session keeps its key (an import never moves a stored session).
        key, kind, matched = stored, folders.AS_CURRENT, BY_STORED_KEY
        if given is not None and given != stored:
            note = f"session {sid} is already stored under {stored}; its key is kept"
    elif given is not None:
        key, kind, matched = given, folders.AS_CURRENT, BY_GIVEN_KEY
    elif holder is None:
        key, kind, matched = DEFAULT_SESSION_KEY, folders.AS_CURRENT, BY_DEFAULT_KEY
    else:
        agent = agent_id_from_key(DEFAULT_SESSION_KEY) or "main"
        key, kind, matched = folders.orphan_key(agent, sid), folders.AS_ORPHAN, BY_DEFAULT_KEY
        note = (
            f"{DEFAULT_SESSION_KEY} already holds session {holder}; give the session key "
            f"(--session-key {DEFAULT_SESSION_KEY}) to make this transcript its newest "
            "incarnation"
        )
    outcome: dict[str, Any] = {
        "file": str(path),
        "agentId": agent_id_from_key(key) or "main",
        "sessionKey": key,
        "sessionId": sid,
        "as": kind,
        "matchedBy": matched,
    }
    if note is not None:
        outcome["note"] = note
    return key, outcome


@dataclass(frozen=True, slots=True)
class _Entry:
    """One accepted line: its stored text, derived columns (``seq`` filled when written) and
    identity — the ``id``, or for an entry without one the digest of its stored text."""

    event_id: str | None
    digest: bytes | None
    dumped: str
    columns: dict[str, Any]
    line: int


def content_digest(stored_text: str) -> bytes:
    """The identity of an entry without an ``id``: a digest of its stored JSON text."""
    data = stored_text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=CONTENT_DIGEST_BYTES).digest()


def _entry(event: dict[str, Any], line: str, number: int) -> _Entry:
    dumped = serialise_event(event, line)
    columns = transcript.derived_columns(-1, event)
    event_id = columns["event_id"]
    return _Entry(event_id, None if event_id else content_digest(dumped), dumped, columns, number)


@dataclass
class _Target:
    """The session a transcript is imported into; ``existed`` is learnt by the first batch,
    with ``unmatched``: the digests of the id-less entries the session held before this import,
    counted, minus those this import has matched (and so skipped) since."""

    path: Path
    sid: str
    key: str
    meta: SessionMeta
    existed: bool | None = None
    unmatched: Counter[bytes] = field(default_factory=Counter)
    #: A stored session of another agent may take this file's key and agent (``rekey``, and
    #: the stored session holds nothing but entries of this file).
    adopts: bool = False


def _agent_of(target: _Target) -> str:
    return target.meta.agent_id or agent_id_from_key(target.key) or folders.DEFAULT_AGENT_ID


def _other_agent(conn: Connection, target: _Target) -> tuple[str, str] | None:
    """``(agent, key)`` of the stored session with the target's id when it belongs to another
    agent than the one the folder plans (None: no such session, or not a folder import)."""
    if target.meta.agent_id is None:
        return None
    owner = reader(conn).session_owner(conn, target.sid)
    if owner is None or owner[0].lower() == _agent_of(target).lower():
        return None
    return owner


def _is_this_transcript(engine: Engine, target: _Target) -> bool:
    """Whether the stored session with the target's id, when another agent's, holds nothing
    but entries of the target's file (read before the import writes anything)."""
    with engine.connect().execution_options(**{READ_ONLY: True}) as conn, conn.begin():
        if _other_agent(conn, target) is None:
            return False
        reads = reader(conn)
        stored_ids = reads.event_ids(conn, target.sid)
        stored_digests = Counter(
            content_digest(text) for text in reads.unkeyed_events(conn, target.sid)
        )
    ids: set[str] = set()
    digests: Counter[bytes] = Counter()
    for number, event, line in _read_lines(target.path, ImportReport()):
        try:
            entry = _entry(event, line, number)
        except (ValueError, TypeError, OverflowError, RecursionError):
            continue
        if entry.event_id is not None:
            ids.add(entry.event_id)
        elif entry.digest is not None:
            digests[entry.digest] += 1
    return stored_ids <= ids and not stored_digests - digests


def _ensure_session(conn: Connection, target: _Target) -> bool:
    """Create the session row if missing (no index state: it is pending). True if it existed
    with events. Runs in the first batch's transaction (one commit fewer per file)."""
    meta = target.meta
    other = _other_agent(conn, target)
    if other is not None and not target.adopts:
        agent, key = other
        raise ImportFormatError(
            f"{target.path}: session {quoted(target.sid)} is a session of agent "
            f"{quoted(agent)} (key {quoted(key)}); this transcript is agent "
            f"{quoted(_agent_of(target))}'s (planned key {quoted(target.key)}), and a "
            "transcript never changes another agent's session: not imported"
            + (
                " (rekey moves a session only when it holds nothing but this file's entries)"
                if meta.rekey
                else ""
            )
        )
    created = (
        datetime.fromtimestamp(meta.created_ms / 1000, tz=timezone.utc)
        if meta.created_ms is not None
        else datetime.now(timezone.utc)
    )
    fields = {
        "session_id": target.sid,
        "session_key": target.key,
        "agent_id": _agent_of(target),
        "spawned_by": meta.spawned_by,
        "parent_session_key": meta.parent_session_key,
        "owner_session_key": meta.owner_session_key,
        "created_at": created,
    }
    last_seq = backend(conn).ensure_session(conn, fields, rekey=meta.rekey)
    return last_seq is not None and last_seq >= 0


def _unkeyed_digests(conn: Connection, sid: str) -> Counter[bytes]:
    """Digests of the session's stored entries without an ``id``, counted."""
    return Counter(content_digest(stored) for stored in reader(conn).unkeyed_events(conn, sid))


def _write_batch(
    engine: Engine,
    target: _Target,
    batch: list[_Entry],
    report: ImportReport,
) -> None:
    sid = target.sid
    with write_engine(engine).begin() as conn:  # reads, then writes: BEGIN IMMEDIATE
        found = backend(conn)
        if target.existed is None:
            target.existed = _ensure_session(conn, target)
            if target.existed:
                target.unmatched = _unkeyed_digests(conn, sid)
        found.lock_session(conn, sid)
        last = found.last_seq(conn, sid)
        assert last is not None  # created above, in this transaction or an earlier one
        wanted = [
            e.event_id
            for e in batch
            if e.event_id is not None and found.unstorable([e.event_id]) is None
        ]
        taken = found.taken_event_ids(conn, sid, wanted) if wanted else set()
        unmatched = target.unmatched
        rows = []
        for entry in batch:
            reason = found.unstorable(entry.columns.get(c) for c in EVENT_TEXT_COLUMNS)
            if reason is not None:
                report.error(f"{target.path}:{entry.line}: event cannot be stored ({reason})")
                continue
            if entry.event_id is not None:
                if entry.event_id in taken:
                    report.skipped_duplicates += 1
                    continue
                taken.add(entry.event_id)
            elif entry.digest is not None and unmatched[entry.digest] > 0:
                unmatched[entry.digest] -= 1  # the stored copy of this occurrence
                report.skipped_duplicates += 1
                continue
            last += 1
            rows.append(dict(entry.columns, seq=last, session_id=sid, event=entry.dumped))
        if not rows:
            return
        found.insert_events(conn, rows, last)
        report.imported += len(rows)


@dataclass(frozen=True)
class ImportItem:
    """One transcript file of an import, with what its folder's index says about it."""

    path: Path
    session_key: str | None = None
    session_id: str | None = None
    meta: SessionMeta | None = None
    #: What the folder plan made of the file (reported as it is imported).
    outcome: dict[str, Any] | None = None


def folder_items(folder: str | Path, *, rekey: bool = False) -> list[ImportItem]:
    """The transcripts of an OpenClaw folder as ``folders.plan_folder`` maps them; raise if it
    holds none. ``rekey``: sessions already stored take the planned key and agent."""
    items = []
    files = folders.plan_folder(folder).files
    agents_of: dict[str, set[str]] = {}
    for planned in files:
        agents_of.setdefault(planned.session_id, set()).add(planned.agent_id.lower())
    for planned in files:
        entry = planned.entry
        meta = SessionMeta(
            session_key=planned.session_key,
            spawned_by=entry.spawned_by if entry else None,
            parent_session_key=entry.parent_session_key if entry else None,
            owner_session_key=entry.owner_session_key if entry else None,
            agent_id=planned.agent_id,
            created_ms=planned.created_ms,
            rekey=rekey,
            may_take_other_agents=len(agents_of[planned.session_id]) == 1,
        )
        items.append(
            ImportItem(
                planned.path, planned.session_key, planned.session_id, meta, planned.outcome()
            )
        )
    return items


def import_item(
    engine: Engine, item: ImportItem, *, progress: Progress | None = None
) -> ImportReport:
    """Import one planned file (see :func:`import_jsonl`)."""
    report = import_jsonl(
        engine,
        item.path,
        session_key=item.session_key,
        session_id=item.session_id,
        meta=item.meta,
        progress=progress,
    )
    if item.outcome is not None:
        report.outcomes.append(item.outcome)
    return report


def import_dir(
    engine: Engine,
    folder: str | Path,
    *,
    progress: Progress | None = None,
    rekey: bool = False,
) -> ImportReport:
    """Import an OpenClaw folder: a state folder, its ``agents/`` folder, an agent's sessions
    folder or a loose one (``folders.plan_folder``; docs/import.md). A file refused as a
    whole is reported (``failed_files``) and the others are imported."""
    report = ImportReport()
    for item in folder_items(folder, rekey=rekey):
        _import_into(report, engine, item, progress)
    return report


def _import_into(
    report: ImportReport, engine: Engine, item: ImportItem, progress: Progress | None
) -> None:
    """Import one planned file into ``report``: a file refused as a whole is counted, listed
    in ``failed_files`` and reported as an error; the others' reports are merged."""
    try:
        part = import_item(engine, item, progress=progress)
    except ImportFormatError as exc:
        report.files += 1
        report.failed_files.append(str(exc))
        report.error(str(exc))
        return
    except DataError as exc:  # a value this engine cannot store that no check above knew
        message = shorten(
            f"{item.path}: the database refused a value of this file "
            f"({str(exc.orig).splitlines()[0] if exc.orig else type(exc).__name__}); "
            "the rest of the file was not imported",
            MAX_ERROR_CHARS,
        )
        report.files += 1
        report.failed_files.append(message)
        report.error(message)
        return
    report.merge(part)


def import_paths(
    engine: Engine,
    paths: Iterable[str | Path],
    *,
    session_key: str | None = None,
    rekey: bool = False,
    progress: Progress | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> ImportReport:
    """Import .jsonl files and OpenClaw folders, in the order given, into one report: a folder
    as :func:`import_dir` plans and imports it (``rekey`` applies), a file as
    :func:`import_jsonl` does under ``session_key``. A path that is neither, or a folder
    without transcripts, is listed in ``failed_files`` and reported as an error, as a file
    refused as a whole is; every other file is imported. ``on_file`` is told each file before
    it is read, ``progress`` each batch of lines."""
    report = ImportReport()
    items: list[ImportItem] = []
    for path in map(Path, paths):
        if path.is_dir():
            try:
                items.extend(folder_items(path, rekey=rekey))
            except ImportFormatError as exc:
                report.failed_files.append(str(exc))
                report.error(str(exc))
        elif path.is_file():
            items.append(ImportItem(path, session_key))
        else:
            message = f"{path}: {NO_SUCH_PATH}"
            report.failed_files.append(message)
            report.error(message)
    for item in items:
        if on_file is not None:
            on_file(item.path)
        _import_into(report, engine, item, progress)
    return report
