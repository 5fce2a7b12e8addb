"""Tool adapters for agent hosts: OpenClaw's ``sessions_search`` / ``sessions_history``.

Invariant: each adapter takes the tool's JSON arguments (camelCase) and always returns the
tool's JSON result — invalid arguments become ``{"status": "error", "error": message}`` with
OpenClaw's messages, never an exception. The schemas describe exactly the arguments accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ToolInputError, shorten
from .search import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS

if TYPE_CHECKING:
    from .store import TranscriptStore
    from .visibility import Caller

SESSIONS_SEARCH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_search",
    "description": (
        "Full-text search over your past conversation sessions that you are allowed to see. "
        "Returns ranked excerpts (snippet) with the session key, message id, role and time; "
        "use sessions_history with sessionKey and messageId to read the surrounding "
        "conversation. If the result has indexing: true, some sessions are still being "
        "indexed: retry shortly."
    ),
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
            "description": (
                "Words to find; all must occur (case and accents ignored). "
                '"exact phrase" in double quotes; deploy* for a prefix; staging OR production '
                "for either word. Any other punctuation is matched literally. Chinese, Japanese "
                "and Korean text is matched as a substring."
            ),
        },
        "sessionKey": {
            "type": "string",
            "description": "Only search this session key (e.g. agent:main:main).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": f"Most results to return (1-{MAX_LIMIT}).",
        },
        "role": {
            "type": "string",
            "enum": ["user", "assistant"],
            "description": "Only messages written by the user, or only by the assistant.",
        },
        "since": {
            "type": ["integer", "string"],
            "description": "Only messages at or after this time (epoch ms or ISO 8601).",
        },
        "until": {
            "type": ["integer", "string"],
            "description": "Only messages at or before this time (epoch ms or ISO 8601).",
        },
        "order": {
            "type": "string",
            "enum": ["relevance", "recent"],
            "default": "relevance",
            "description": "relevance: best match first; recent: newest first.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

SESSIONS_HISTORY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_history",
    "description": (
        "Read the conversation of a session you may see, oldest first (the active branch). "
        "Pass messageId from a sessions_search result to read the messages around that hit."
    ),
    "type": "object",
    "properties": {
        "sessionKey": {"type": "string", "description": "The session key (or a session id)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Most messages to return."},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "Skip this many of the newest messages (paging backwards).",
        },
        "messageId": {
            "type": "string",
            "description": "Centre the window on this message (from a search hit).",
        },
        "sessionId": {
            "type": "string",
            "description": "The session incarnation of messageId (only with messageId).",
        },
        "includeTools": {
            "type": "boolean",
            "default": False,
            "description": "Also return tool calls and tool results.",
        },
    },
    "required": ["sessionKey"],
    "additionalProperties": False,
}

_SEARCH_ARGS = {
    "query": "query",
    "sessionKey": "session_key",
    "limit": "limit",
    "role": "role",
    "since": "since",
    "until": "until",
    "order": "order",
}
_HISTORY_ARGS = {
    "limit": "limit",
    "offset": "offset",
    "messageId": "message_id",
    "sessionId": "session_id",
    "includeTools": "include_tools",
}


def _error(message: str) -> dict[str, Any]:
    return {"status": "error", "error": message}


def _unknown(
    args: dict[str, Any], known: dict[str, str], extra: tuple[str, ...] = ()
) -> str | None:
    for name in args:
        if name not in known and name not in extra:
            return f"unknown argument: {shorten(name)}"
    return None


def sessions_search(store: TranscriptStore, caller: Caller, args: Any) -> dict[str, Any]:
    """Run ``sessions_search`` from the tool's JSON arguments."""
    if not isinstance(args, dict):
        return _error("arguments must be a JSON object")
    if (problem := _unknown(args, _SEARCH_ARGS)) is not None:
        return _error(problem)
    kwargs = {_SEARCH_ARGS[k]: v for k, v in args.items() if k != "query"}
    try:
        return store.search(caller, args.get("query"), **kwargs)  # type: ignore[arg-type]
    except ToolInputError as exc:
        return _error(str(exc))


def sessions_history(store: TranscriptStore, caller: Caller, args: Any) -> dict[str, Any]:
    """Run ``sessions_history`` from the tool's JSON arguments."""
    if not isinstance(args, dict):
        return _error("arguments must be a JSON object")
    if (problem := _unknown(args, _HISTORY_ARGS, ("sessionKey",))) is not None:
        return _error(problem)
    key = args.get("sessionKey")
    if not isinstance(key, str) or not key.strip():
        return _error("sessionKey must be a non-empty string")
    kwargs = {_HISTORY_ARGS[k]: v for k, v in args.items() if k != "sessionKey"}
    try:
        return store.history(caller, key, **kwargs)
    except ToolInputError as exc:
        return _error(str(exc))
