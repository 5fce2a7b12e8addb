"""``sessions_list``: the session keys a caller may see, newest activity first.

Invariant: which sessions are listed is decided inside one SQL statement
(:func:`openclaw_fts.index.sessions_sql.list_sessions`: the caller's visibility, every filter,
the order and the limit), so a session the caller may not see is never listed, never counted and
never takes a place under the limit; each key appears once, with its current incarnation (the
newest the caller may read). The rows carry OpenClaw's ``sessions_list`` field names
(docs/tools.md); a field the store cannot know (labels, models, token counts) is left out, as
OpenClaw leaves out what a session entry lacks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Connection

from .caller import Caller
from .errors import ToolInputError
from .history import run_history
from .index import sessions_sql
from .redact import Redactor

#: Sessions listed when no ``limit`` is given, and the most any call lists (OpenClaw's gateway
#: lists every entry of a store; a database holds many agents' stores, so the answer is capped
#: and says ``truncated`` when more sessions match).
DEFAULT_LIST_LIMIT = 100
MAX_LIST_LIMIT = 1000
#: Most messages ``messageLimit`` attaches to each row (OpenClaw's cap).
MAX_LIST_MESSAGES = 20
#: OpenClaw's session kinds (``classifySessionKind``).
SESSION_KINDS = sessions_sql.SESSION_KINDS
#: Kinds whose channel OpenClaw reports as ``internal``.
INTERNAL_KINDS = ("cron", "hook", "node")
#: A key's segments: ``agent`` : agent id : channel : ...
_CHANNEL_SEGMENT = 2


def channel_of(key: str, kind: str) -> str:
    """The channel of a listed session: ``internal`` for cron, hook and node sessions, the
    channel segment of ``agent:<id>:<channel>:group|channel:…`` keys, else ``unknown`` (the
    store keeps no delivery context)."""
    if kind in INTERNAL_KINDS:
        return "internal"
    parts = key.split(":")
    if kind == "group" and len(parts) > _CHANNEL_SEGMENT + 1 and parts[0] == "agent":
        return parts[_CHANNEL_SEGMENT]
    return "unknown"


def _epoch_ms(moment: Any) -> int | None:
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return int(moment.timestamp() * 1000)
    if isinstance(moment, str):  # SQLite without type information
        try:
            return _epoch_ms(datetime.fromisoformat(moment))
        except ValueError:
            return None
    return None


def validate_list_args(
    *,
    limit: Any,
    kinds: Sequence[str] | None,
    active_minutes: Any,
    message_limit: Any,
) -> tuple[int, tuple[str, ...] | None, int | None, int]:
    """``(limit, kinds, active_minutes, message_limit)`` checked: positive integers, a kind
    among :data:`SESSION_KINDS`; ``limit`` above :data:`MAX_LIST_LIMIT` reads the maximum."""
    for name, value, minimum in (
        ("limit", limit, 1),
        ("activeMinutes", active_minutes, 1),
        ("messageLimit", message_limit, 0),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < minimum
        ):
            kind = "a positive integer" if minimum else "a non-negative integer"
            raise ToolInputError(f"{name} must be {kind}")
    wanted: tuple[str, ...] | None = None
    if kinds is not None:
        unknown = [k for k in kinds if k not in SESSION_KINDS]
        if unknown:
            raise ToolInputError(f"kinds must be among {', '.join(SESSION_KINDS)}")
        wanted = tuple(dict.fromkeys(kinds)) or None
    return (
        min(limit or DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT),
        wanted,
        active_minutes,
        min(message_limit or 0, MAX_LIST_MESSAGES),
    )


def run_list(
    conn: Connection,
    caller: Caller,
    *,
    limit: int | None = None,
    kinds: Sequence[str] | None = None,
    agent_id: str | None = None,
    search: str | None = None,
    label: str | None = None,
    active_minutes: int | None = None,
    message_limit: int | None = None,
    details: bool = False,
    redactor: Redactor | None = None,
    now_ms: int | None = None,
) -> dict[str, Any]:
    """``sessions_list`` on a read connection: ``{"count", "sessions"}`` (+ ``truncated``).

    ``details`` adds the store's own columns to each row: ``messageCount``, ``indexing``
    (``indexed``, ``pending``, or ``never`` for an incognito session) and ``createdAt`` --
    what ``openclaw-fts sessions`` shows. ``label``: the store holds no labels, so a label
    filter matches no session."""
    lim, wanted, minutes, messages = validate_list_args(
        limit=limit, kinds=kinds, active_minutes=active_minutes, message_limit=message_limit
    )
    if label is not None:
        return {"count": 0, "sessions": []}
    now = int(time.time() * 1000) if now_ms is None else now_ms
    rows = sessions_sql.list_sessions(
        conn,
        caller,
        limit=lim + 1,
        kinds=wanted,
        agent_id=agent_id,
        search=search,
        active_since_ms=None if minutes is None else now - minutes * 60_000,
        count_messages=details,
    )
    sessions: list[dict[str, Any]] = []
    for row in rows[:lim]:
        item: dict[str, Any] = {
            "key": row["key"],
            "agentId": row["agentId"],
            "kind": row["kind"],
            "channel": channel_of(row["key"], row["kind"]),
            "sessionId": row["sessionId"],
        }
        if row["lastActivityMs"] is not None:
            item["updatedAt"] = row["lastActivityMs"]
        if row["spawnedBy"] is not None:
            item["spawnedBy"] = row["spawnedBy"]
        if row["parentSessionKey"] is not None:
            item["parentSessionKey"] = row["parentSessionKey"]
        if details:
            item["messageCount"] = row["messages"]
            # Incognito sessions are never indexed (never searchable): not "pending".
            state = "pending" if row["pending"] else "indexed"
            item["indexing"] = "never" if row["incognito"] else state
            created = _epoch_ms(row["createdAt"])
            if created is not None:
                item["createdAt"] = created
        if messages:
            history = run_history(conn, caller, row["key"], limit=messages, redactor=redactor)
            item["messages"] = history.get("messages", [])[-messages:]
        sessions.append(item)
    out: dict[str, Any] = {"count": len(sessions), "sessions": sessions}
    if len(rows) > lim:
        out["truncated"] = True
    return out
