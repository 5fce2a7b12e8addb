"""``sessions_history``: the active branch of a session the caller may see, sanitised and capped.

Invariant: only sessions passing the same visibility predicate as search are read; only events
on the session's ACTIVE branch are returned (an anchor off the branch yields no messages, never
some other window); every text is redacted and cut, and the JSON of ``messages`` stays within
:data:`sanitize.MAX_HISTORY_BYTES`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, text

from . import transcript
from .errors import ToolInputError, shorten
from .indexer import load_events
from .models import AgentSession
from .redact import Redactor
from .sanitize import (
    MAX_HISTORY_BYTES,
    fit_to_budget,
    is_tool_only,
    json_size,
    sanitize_message,
)
from .search import validate_limit
from .tokens import is_valid_unicode
from .visibility import Caller, visible

#: Messages returned when no limit is given, and the most a caller may ask for.
DEFAULT_HISTORY_LIMIT = 50
MAX_HISTORY_LIMIT = 500
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
    lim = validate_limit(limit, default=DEFAULT_HISTORY_LIMIT, maximum=MAX_HISTORY_LIMIT)
    return lim, offset, message_id, session_id


def _resolve_session(
    conn: Connection, caller: Caller, session_key: str, session_id: str | None
) -> tuple[str, str] | dict[str, Any]:
    """``(session_id, session_key)`` of the incarnation to read, or an error/forbidden result."""
    s = AgentSession.__table__.alias("s")
    not_found = {"status": "error", "error": f"Session not found: {shorten(session_key)}"}
    forbidden = {
        "status": "forbidden",
        "error": f"Session {shorten(session_key)} is not visible to this session",
    }
    if session_id is not None:
        row = conn.execute(
            select(s.c.session_id, s.c.session_key).where(s.c.session_id == session_id)
        ).first()
        if row is None or row[1] != session_key:
            # Same answer whether the id is unknown or belongs to another key: nothing leaks.
            return {
                "status": "error",
                "error": (
                    f"sessionId {shorten(session_id)} does not belong to {shorten(session_key)}"
                ),
            }
    else:
        row = conn.execute(
            select(s.c.session_id, s.c.session_key)
            .where(s.c.session_key == session_key)
            .order_by(s.c.created_at.desc(), s.c.session_id.desc())
            .limit(1)
        ).first()
        if row is None:  # a session id given in place of a key
            row = conn.execute(
                select(s.c.session_id, s.c.session_key).where(s.c.session_id == session_key)
            ).first()
        if row is None:
            return not_found
    pred = visible(caller, "s", for_search=False)
    seen = conn.execute(
        text(f"SELECT 1 FROM sessions AS s WHERE s.session_id = :sid AND {pred.sql}"),
        {**pred.params, "sid": row[0]},
    ).first()
    if seen is None:
        return forbidden
    return str(row[0]), str(row[1])


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
    """``sessions_history`` on a read connection (behaviour.md §5)."""
    if not isinstance(session_key, str) or not session_key.strip():
        raise ToolInputError("sessionKey must be a non-empty string")
    if not is_valid_unicode(session_key):
        raise ToolInputError("sessionKey is not valid Unicode")
    if not isinstance(include_tools, bool):
        raise ToolInputError("includeTools must be a boolean")
    lim, off, anchor_id, sid = _validate(limit, offset, message_id, session_id)
    resolved = _resolve_session(conn, caller, session_key.strip(), sid)
    if isinstance(resolved, dict):
        return resolved
    sid, key = resolved
    events = load_events(conn, sid)
    tree = transcript.resolve_tree(transcript.tree_node(seq, ev) for seq, ev in events)
    by_seq = dict(events)
    branch: list[tuple[int, dict[str, Any]]] = []
    for seq in tree.active_seqs:
        event = by_seq[seq]
        message = event.get("message")
        if event.get("type") != "message" or not isinstance(message, dict):
            continue
        if not include_tools and is_tool_only(message):
            continue
        branch.append((seq, event))
    total = len(branch)
    out: dict[str, Any] = {"sessionKey": key, "sessionId": sid}
    anchor_index: int | None = None
    if anchor_id is not None:
        positions = [i for i, (_, ev) in enumerate(branch) if ev.get("id") == anchor_id]
        if not positions:
            window: list[tuple[int, dict[str, Any]]] = []
        else:
            lo, hi = _anchor_window(total, positions[0], lim)
            window = branch[lo:hi]
            anchor_index = positions[0] - lo
    else:
        skip = off or 0
        end = max(0, total - skip)
        start = max(0, end - lim)
        window = branch[start:end]
        out["offset"] = skip
        out["hasMore"] = start > 0
        if start > 0:
            out["nextOffset"] = skip + len(window)
    items: list[dict[str, Any]] = []
    content_truncated = content_redacted = False
    for seq, event in window:
        clean = sanitize_message(event["message"], redactor)
        content_truncated |= clean.content_truncated
        content_redacted |= clean.content_redacted
        item = dict(clean.message)
        item["__openclaw"] = {
            "seq": seq,
            "id": event.get("id"),
            "timestamp": transcript.parse_timestamp(event.get("timestamp")),
        }
        items.append(item)
    kept, dropped = fit_to_budget(items, MAX_HISTORY_BYTES - ENVELOPE_RESERVE_BYTES, anchor_index)
    out["messages"] = kept
    out["truncated"] = bool(dropped) or content_truncated
    out["droppedMessages"] = dropped
    out["contentTruncated"] = content_truncated
    out["contentRedacted"] = content_redacted
    out["bytes"] = json_size(kept)
    out["totalMessages"] = total
    return out
