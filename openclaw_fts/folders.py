"""Planning the import of OpenClaw folders: which file becomes which session, under which key.

Invariant: every transcript found under ``agents/<agentId>/sessions/`` is planned under that
``agentId`` and only under it — under the key its ``sessions.json`` entry gives (an entry naming
another agent's key is not used), or under :func:`orphan_key` of that agent. The planner only
reads the file system (folder listings, ``sessions.json``, the first line of each transcript);
it never touches a database, so a plan can be shown before anything is imported. The rules are
written down in docs/import.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from .errors import ImportFormatError

#: The sessions folder's index file (OpenClaw layout).
SESSIONS_INDEX_FILE = "sessions.json"
#: Inside an OpenClaw state folder (``~/.openclaw``): one folder per agent.
AGENTS_FOLDER = "agents"
#: Inside an agent's folder: its transcripts and ``sessions.json``.
SESSIONS_FOLDER = "sessions"
#: A current transcript.
TRANSCRIPT_SUFFIX = ".jsonl"
#: ``<sessionId>.jsonl.reset.<epoch ms>``: the transcript of an earlier incarnation of a key.
RESET_ARCHIVE = re.compile(r"^(?P<sid>.+)\.jsonl\.reset\.(?P<ms>\d{1,16})$")
#: OpenClaw's agent id when a folder does not say (``DEFAULT_AGENT_ID``).
DEFAULT_AGENT_ID = "main"
#: The middle segment of :func:`orphan_key`.
ORPHAN_SEGMENT = "orphan"
#: Longest first line read to find a transcript's header (bytes).
MAX_HEADER_BYTES = 1024 * 1024

#: How a file found its ``sessions.json`` entry.
BY_SESSION_FILE = "sessionFile"
BY_HEADER_ID = "headerId"
BY_FILE_NAME = "fileName"
BY_LINEAGE = "usageFamilySessionIds"

#: What a file becomes.
AS_CURRENT = "current"
AS_ORPHAN = "orphan"
AS_RESET_ARCHIVE = "resetArchive"


def orphan_key(agent_id: str, session_id: str) -> str:
    """The key of a transcript no ``sessions.json`` entry names: ``agent:<agent>:orphan:<id>``.

    OpenClaw builds every key as ``agent:<agentId>:<rest>`` where ``rest`` starts with the
    configured main key, ``subagent``, ``cron``, ``acp``, ``direct`` or a channel id; channel
    keys have at least three segments after the agent (``<channel>:<kind>:<peer>``). No builder
    writes ``orphan:<sessionId>`` (two segments, a session id after ``orphan``), so the key can
    never be a real one — and it names one transcript only, so it never merges two."""
    return f"agent:{agent_id}:{ORPHAN_SEGMENT}:{session_id}"


@dataclass(frozen=True)
class Entry:
    """One ``sessions.json`` entry, the fields the import uses."""

    key: str
    session_id: str
    session_file: str | None = None
    spawned_by: str | None = None
    parent_session_key: str | None = None
    owner_session_key: str | None = None
    lineage: tuple[str, ...] = ()


@dataclass
class PlannedFile:
    """One transcript file and the session it becomes."""

    path: Path
    agent_id: str
    session_id: str
    session_key: str
    kind: str  # AS_CURRENT, AS_ORPHAN or AS_RESET_ARCHIVE
    matched_by: str | None = None
    entry: Entry | None = None
    #: The incarnation's creation time (epoch ms): orders incarnations of one key, oldest first.
    created_ms: int | None = None
    #: Why an entry that names this file was not used (it names another agent's key).
    note: str | None = None

    def outcome(self) -> dict[str, Any]:
        """What the file became, for the import report."""
        return {
            "file": str(self.path),
            "agentId": self.agent_id,
            "sessionKey": self.session_key,
            "sessionId": self.session_id,
            "as": self.kind,
            "matchedBy": self.matched_by,
            **({"note": self.note} if self.note else {}),
        }


@dataclass
class FolderPlan:
    files: list[PlannedFile] = field(default_factory=list)
    #: Entries of ``sessions.json`` that were not used, with the reason (for the report).
    notes: list[str] = field(default_factory=list)


def _opt(entry: dict[str, Any], name: str) -> str | None:
    value = entry.get(name)
    return value if isinstance(value, str) and value.strip() else None


def read_entries(folder: Path) -> list[Entry]:
    """The entries of ``folder/sessions.json`` (none when there is no such file)."""
    index_path = folder / SESSIONS_INDEX_FILE
    if not index_path.is_file():
        return []
    try:
        data = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"{index_path}: unreadable ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise ImportFormatError(f"{index_path}: expected an object of session keys")
    out = []
    for key, raw in data.items():
        if not isinstance(raw, dict) or _opt(raw, "sessionId") is None or not key.strip():
            continue
        lineage = raw.get("usageFamilySessionIds")
        out.append(
            Entry(
                key=key,
                session_id=raw["sessionId"],
                session_file=_opt(raw, "sessionFile"),
                spawned_by=_opt(raw, "spawnedBy"),
                parent_session_key=_opt(raw, "parentSessionKey"),
                owner_session_key=_opt(raw, "ownerSessionKey"),
                lineage=tuple(i for i in lineage if isinstance(i, str))
                if isinstance(lineage, list)
                else (),
            )
        )
    return out


def read_header(path: Path) -> tuple[str | None, int | None]:
    """``(id, timestamp ms)`` of a transcript's header line, when its first line is one."""
    from .jsonsafe import UTF8_BOM, loads_strict
    from .transcript import HEADER_TYPE, parse_timestamp

    try:
        with path.open("rb") as handle:
            first = handle.readline(MAX_HEADER_BYTES)
        if first.startswith(UTF8_BOM):  # the importer skips a BOM opening the file too
            first = first[len(UTF8_BOM) :]
        value = loads_strict(first.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None, None
    if not isinstance(value, dict) or value.get("type") != HEADER_TYPE:
        return None, None
    sid = value.get("id")
    return (
        sid if isinstance(sid, str) and sid.strip() else None,
        parse_timestamp(value.get("timestamp")),
    )


def _file_name_of(session_file: str) -> str:
    """The last component of a ``sessionFile`` written on any system (``\\`` or ``/``)."""
    if "\\" in session_file or re.match(r"^[A-Za-z]:", session_file):
        return PureWindowsPath(session_file).name
    return PurePosixPath(session_file).name


def _names_file(entry: Entry, folder: Path, path: Path) -> bool:
    """Whether an entry's ``sessionFile`` names ``path``: relative to the folder, or absolute
    (the folder may have been copied from another machine, or from Windows: then the file
    name decides — names are unique within one sessions folder)."""
    if entry.session_file is None:
        return False
    name = _file_name_of(entry.session_file)
    if name != path.name:
        return False
    candidate = Path(entry.session_file)
    if not candidate.is_absolute() and "\\" not in entry.session_file:
        return (folder / candidate).resolve() == path.resolve()
    return True


def agent_of_key(key: str) -> str | None:
    parts = key.split(":")
    if len(parts) >= 3 and parts[0].lower() == "agent" and parts[1]:
        return parts[1].lower()
    return None


def plan_sessions_folder(folder: Path, agent_id: str | None) -> FolderPlan:
    """Plan one sessions folder. ``agent_id``: the folder's agent (``agents/<id>/sessions``),
    or None for a loose folder, whose entries keep the agent of their key."""
    plan = FolderPlan()
    folder_agent = agent_id or DEFAULT_AGENT_ID
    entries = []
    foreign: list[tuple[Entry, str]] = []  # entries naming another agent's key, with why
    for entry in read_entries(folder):
        key_agent = agent_of_key(entry.key)
        if agent_id is not None and key_agent is not None and key_agent != agent_id.lower():
            why = (
                f"sessions.json entry {entry.key!r} names agent {key_agent!r}, not this "
                f"folder's {agent_id!r}: not used"
            )
            plan.notes.append(f"{folder / SESSIONS_INDEX_FILE}: {why}")
            foreign.append((entry, why))
            continue
        entries.append(entry)
    current = sorted(p for p in folder.glob(f"*{TRANSCRIPT_SUFFIX}") if p.is_file())
    archives = sorted(
        p for p in folder.iterdir() if p.is_file() and RESET_ARCHIVE.match(p.name) is not None
    )
    headers = {p: read_header(p) for p in [*current, *archives]}
    claimed: dict[int, tuple[Path, str]] = {}  # entry index -> (file, how)
    matched: dict[Path, tuple[Entry, str]] = {}

    def claim(path: Path, index: int, how: str) -> None:
        claimed[index] = (path, how)
        matched[path] = (entries[index], how)

    for path in current:  # 1. sessionFile
        for i, entry in enumerate(entries):
            if i not in claimed and _names_file(entry, folder, path):
                claim(path, i, BY_SESSION_FILE)
                break
    for how, ident in (
        (BY_HEADER_ID, lambda p: headers[p][0]),
        (BY_FILE_NAME, lambda p: p.name[: -len(TRANSCRIPT_SUFFIX)]),
    ):
        for path in current:  # 2. header id, then 3. file name
            if path in matched:
                continue
            wanted = ident(path)
            for i, entry in enumerate(entries):
                if i not in claimed and wanted is not None and entry.session_id == wanted:
                    claim(path, i, how)
                    break
    taken: set[str] = set()
    for path in current:
        header_id, header_ms = headers[path]
        found = matched.get(path)
        sid = header_id or (found[0].session_id if found else path.name[: -len(".jsonl")])
        taken.add(sid)
        if found:
            entry, how = found
            owner = agent_id or agent_of_key(entry.key) or DEFAULT_AGENT_ID
            plan.files.append(
                PlannedFile(path, owner, sid, entry.key, AS_CURRENT, how, entry, header_ms)
            )
        else:
            note = next(
                (
                    why
                    for entry, why in foreign
                    if _names_file(entry, folder, path)
                    or entry.session_id in (header_id, path.name[: -len(TRANSCRIPT_SUFFIX)])
                ),
                None,
            )
            plan.files.append(
                PlannedFile(
                    path,
                    folder_agent,
                    sid,
                    orphan_key(folder_agent, sid),
                    AS_ORPHAN,
                    created_ms=header_ms,
                    note=note,
                )
            )
    by_key = {f.session_key: f for f in plan.files}
    for path in archives:
        m = RESET_ARCHIVE.match(path.name)
        assert m is not None
        name_sid, reset_ms = m.group("sid"), int(m.group("ms"))
        header_id, header_ms = headers[path]
        old_sid = header_id or name_sid
        sid = old_sid if old_sid not in taken else f"{old_sid}.reset.{reset_ms}"
        taken.add(sid)
        owner_entry: Entry | None = None
        found_by: str | None = None
        for entry in entries:
            if entry.session_id == old_sid:
                owner_entry, found_by = entry, BY_HEADER_ID if header_id else BY_FILE_NAME
                break
        if owner_entry is None:
            for entry in entries:
                if old_sid in entry.lineage:
                    owner_entry, found_by = entry, BY_LINEAGE
                    break
        if owner_entry is not None:
            key = owner_entry.key
            owner = agent_id or agent_of_key(key) or DEFAULT_AGENT_ID
        else:
            owner, key = folder_agent, orphan_key(folder_agent, old_sid)
        created = min(header_ms, reset_ms) if header_ms is not None else reset_ms
        plan.files.append(
            PlannedFile(path, owner, sid, key, AS_RESET_ARCHIVE, found_by, owner_entry, created)
        )
        newer = by_key.get(key)
        if newer is not None and (newer.created_ms is None or newer.created_ms <= created):
            newer.created_ms = created + 1  # the current incarnation stays the newest
    # Oldest incarnation first: a key's current transcript is imported after its archives.
    plan.files.sort(key=lambda f: (f.kind != AS_RESET_ARCHIVE, f.created_ms or 0, str(f.path)))
    return plan


def _agent_folders(agents: Path) -> list[tuple[Path, str]]:
    return [
        (child / SESSIONS_FOLDER, child.name)
        for child in sorted(agents.iterdir())
        if child.is_dir() and (child / SESSIONS_FOLDER).is_dir()
    ]


def plan_folder(folder: str | Path) -> FolderPlan:
    """Plan the import of an OpenClaw state folder (``~/.openclaw``: every agent), its
    ``agents/`` folder, one agent's folder (``agents/<id>``), one agent's sessions folder
    (``agents/<id>/sessions``) or a loose sessions folder (keys and agents from its
    ``sessions.json``, ``main`` for transcripts it does not name)."""
    folder = Path(folder).expanduser()  # "~/.openclaw" as OpenClaw's docs write it
    if not folder.is_dir():
        raise ImportFormatError(f"{folder}: not a folder")
    targets: list[tuple[Path, str | None]]
    if (folder / AGENTS_FOLDER).is_dir():
        targets = list(_agent_folders(folder / AGENTS_FOLDER))
    elif folder.name == AGENTS_FOLDER and _agent_folders(folder):
        targets = list(_agent_folders(folder))
    elif folder.parent.name == AGENTS_FOLDER and (folder / SESSIONS_FOLDER).is_dir():
        targets = [(folder / SESSIONS_FOLDER, folder.name)]
    elif folder.name == SESSIONS_FOLDER and folder.parent.parent.name == AGENTS_FOLDER:
        targets = [(folder, folder.parent.name)]
    else:
        targets = [(folder, None)]
    plan = FolderPlan()
    for sessions, agent in targets:
        part = plan_sessions_folder(sessions, agent)
        plan.files.extend(part.files)
        plan.notes.extend(part.notes)
    if not plan.files:
        raise ImportFormatError(f"{folder}: no .jsonl transcripts in it")
    return plan
