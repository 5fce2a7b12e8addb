"""``sessions_history``: the active branch of a session the caller may see, sanitised and capped.

Invariant: only sessions passing the same visibility predicate as search are read (the key
resolved and judged by :func:`visibility.resolve_target`, so a hidden key is ``forbidden``
whether or not it exists); only events on an incarnation's ACTIVE branch are returned (an
anchor on no incarnation's branch yields no messages, never some other window; an anchor no
event of the incarnations holds is an error, ``{"status": "error", "error"}``), less the rows
OpenClaw leaves out (``toolResult``/``tool`` messages without ``includeTools``; silent control
replies and blank user rows always: :func:`history_shaping.is_hidden_from_history`), before paging;
``nextOffset`` follows the oldest message actually returned; every text is
redacted and cut, and the JSON of ``messages`` stays within
:data:`history_shaping.MAX_HISTORY_BYTES`.
The result has exactly OpenClaw's fields; ``__openclaw.seq`` is the message's 1-based position
in its transcript.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Connection

from . import transcript
from .errors import ToolInputError, shorten
from .history_shaping import (
    MAX_HISTORY_BYTES,
    fit_to_budget,
    is_hidden_from_history,
    is_tool_message,
    json_size,
    sanitize_message,
)
from .index import sessions_sql
from .redact import Redactor
from .search import validate_limit
from .tokens import is_valid_unicode
from .visibility import Caller, Target, not_found_error, resolve_target

#: Messages returned when no limit is given (OpenClaw's ``chat.history`` default).
DEFAULT_HISTORY_LIMIT = 200
#: OpenClaw's ``CHAT_HISTORY_MAX_ENTRIES``: a larger limit is clamped to it, never refused.
CHAT_HISTORY_MAX_ENTRIES = 1000
MAX_HISTORY_LIMIT = CHAT_HISTORY_MAX_ENTRIES
#: ``__openclaw.seq`` counts transcript entries from 1 (the store numbers events from 0).
SEQ_BASE = 1
#: OpenClaw's error for a ``sessionId`` that is not an incarnation of ``sessionKey``.
FOREIGN_SESSION_ID_ERROR = "sessionId does not belong to sessionKey"
#: Room kept for the response's other fields, so the WHOLE response stays within the cap.
ENVELOPE_RESERVE_BYTES = 1024


def _validate(
    limit: Any, offset: Any, message_id: Any, session_id: Any
) -> tuple[int, int | None, str | None, str | None]:
    if offset is not None and (
        isinstance(offset, bool) or not isinstance(offset, int) or offset < 0
    ):
        raise ToolInputError("offset must be a non-negative integer")
    if offset is not None and message_id is not None:
        raise ToolInputError("offset and messageId cannot be used together")
    if session_id is not None and message_id is None:
        raise ToolInputError("sessionId requires messageId")
    for name, value in (("messageId", message_id), ("sessionId", session_id)):
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise ToolInputError(f"{name} must be a non-empty string")
        if not is_valid_unicode(value):
            raise ToolInputError(f"{name} is not valid Unicode")
    if (
        isinstance(limit, (int, float))
        and not isinstance(limit, bool)
        and math.isfinite(limit)
        and float(limit).is_integer()
        and limit > MAX_HISTORY_LIMIT
    ):
        limit = MAX_HISTORY_LIMIT  # OpenClaw clamps a large limit; it never refuses one
    lim = validate_limit(limit, default=DEFAULT_HISTORY_LIMIT, maximum=MAX_HISTORY_LIMIT)
    return lim, offset, message_id, session_id


def _incarnations(
    conn: Connection, caller: Caller, session_key: str, session_id: str | None
) -> list[str] | dict[str, Any]:
    """The visible incarnations of ``session_key`` to read, newest first: only ``session_id``
    when given (an error unless it is a visible incarnation of the key)."""
    rows = sessions_sql.incarnations(conn, caller, session_key, session_id)
    if session_id is not None and not rows:
        # Same answer whether the id is unknown, hidden or of another key: nothing leaks.
        return {"status": "error", "error": FOREIGN_SESSION_ID_ERROR}
    return rows


def _branch_messages(
    conn: Connection, session_id: str, include_tools: bool
) -> list[tuple[int, dict[str, Any]]]:
    """The message events on the session's active branch, oldest first."""
    events = sessions_sql.events(conn, session_id)
    tree = transcript.resolve_tree(transcript.tree_node(seq, ev) for seq, ev in events)
    by_seq = dict(events)
    branch: list[tuple[int, dict[str, Any]]] = []
    for seq in tree.active_seqs:
        event = by_seq[seq]
        message = event.get("message")
        if event.get("type") != "message" or not isinstance(message, dict):
            continue
        if not include_tools and is_tool_message(message):
            continue
        if is_hidden_from_history(message):  # silent control replies, blank user rows
            continue
        branch.append((seq, event))
    return branch


def unknown_message_error(message_id: str, session_key: str) -> str:
    """The error for a ``messageId`` that no event of the session's incarnations holds."""
    return f"Message not found in session {shorten(session_key)}: {shorten(message_id)}"


def _holds_event(conn: Connection, caller: Caller, session_key: str, event_id: str) -> bool:
    """Whether an event of an incarnation of the key the caller may read, on any branch and
    of any kind, has this id: an anchor that is only off the window's branch (rewound away, a
    hidden tool result, another incarnation than ``sessionId``) gives an empty window; one no
    event of the session holds is an error. Read only for an anchor not found on a branch."""
    return any(
        ev.get("id") == event_id
        for sid in sessions_sql.incarnations(conn, caller, session_key, None)
        for _, ev in sessions_sql.events(conn, sid)
    )


def _anchor_window(count: int, anchor: int, limit: int) -> tuple[int, int]:
    """Grow [lo, hi) around ``anchor`` alternately one older, one newer, up to ``limit``."""
    lo, hi = anchor, anchor + 1
    older = True
    while hi - lo < limit and (lo > 0 or hi < count):
        if (older and lo > 0) or hi >= count:
            lo -= 1
        else:
            hi += 1
        older = not older
    return lo, hi


def run_history(
    conn: Connection,
    caller: Caller,
    session_key: str,
    *,
    limit: Any = None,
    offset: Any = None,
    message_id: Any = None,
    session_id: Any = None,
    include_tools: Any = False,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """``sessions_history`` on a read connection (docs/tools.md)."""
    if not isinstance(session_key, str) or not session_key.strip():
        raise ToolInputError("sessionKey must be a non-empty string")
    if not is_valid_unicode(session_key):
        raise ToolInputError("sessionKey is not valid Unicode")
    if not isinstance(include_tools, bool):
        raise ToolInputError("includeTools must be a boolean")
    lim, off, anchor_id, sid = _validate(limit, offset, message_id, session_id)
    target = resolve_target(conn, caller, session_key, action="history")
    if not isinstance(target, Target):
        return target
    key = target.session_key
    found = _incarnations(conn, caller, key, sid)
    if isinstance(found, dict):
        return found
    if not found:
        return not_found_error(session_key.strip())
    branch = _branch_messages(conn, found[0], include_tools)
    out: dict[str, Any] = {"sessionKey": key}
    anchor_index: int | None = None
    skip = off or 0
    if anchor_id is not None:
        # An anchor not on the newest incarnation is looked for in the older ones (e.g. an
        # imported reset archive), newest first: OpenClaw's allowResetArchiveFallback.
        positions = [i for i, (_, ev) in enumerate(branch) if ev.get("id") == anchor_id]
        for older in found[1:]:
            if positions:
                break
            candidate = _branch_messages(conn, older, include_tools)
            positions = [i for i, (_, ev) in enumerate(candidate) if ev.get("id") == anchor_id]
            if positions:
                branch = candidate
        total = len(branch)
        if not positions and not _holds_event(conn, caller, key, anchor_id):
            return {"status": "error", "error": unknown_message_error(anchor_id, key)}
        if not positions:
            window: list[tuple[int, dict[str, Any]]] = []
        else:
            lo, hi = _anchor_window(total, positions[0], lim)
            window = branch[lo:hi]
            anchor_index = positions[0] - lo
    else:
        total = len(branch)
        end = max(0, total - skip)
        start = max(0, end - lim)
        window = branch[start:end]
        out["offset"] = skip
    items: list[dict[str, Any]] = []
    content_truncated = content_redacted = False
    for seq, event in window:
        clean = sanitize_message(event["message"], redactor)
        content_truncated |= clean.content_truncated
        content_redacted |= clean.content_redacted
        item = dict(clean.message)
        item["__openclaw"] = {
            "seq": seq + SEQ_BASE,
            "id": event.get("id"),
            "timestamp": transcript.parse_timestamp(event.get("timestamp")),
        }
        items.append(item)
    kept, dropped = fit_to_budget(items, MAX_HISTORY_BYTES - ENVELOPE_RESERVE_BYTES, anchor_index)
    if anchor_id is None:
        # As OpenClaw does: the next page starts before the oldest message actually returned
        # (the byte cap keeps the newest of the window, or a placeholder for the newest), so
        # messages the cap dropped come on the next page instead of being skipped.
        covered = skip + len(kept)
        out["hasMore"] = bool(kept) and covered < total
        if out["hasMore"]:
            out["nextOffset"] = covered
    out["messages"] = kept
    out["truncated"] = bool(dropped) or content_truncated
    out["droppedMessages"] = dropped > 0  # a flag in OpenClaw's schema, not a count
    out["contentTruncated"] = content_truncated
    out["contentRedacted"] = content_redacted
    out["bytes"] = json_size(kept)
    out["totalMessages"] = total
    return out
