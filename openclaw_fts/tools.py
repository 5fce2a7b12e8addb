"""Tool adapters for agent hosts: OpenClaw's ``sessions_search``, ``sessions_history`` and
``sessions_list``.

Invariant: each adapter reads the tool's JSON arguments the way OpenClaw's argument readers do
(docs/tools.md): the camelCase name, else its snake_case alias (``session_key``,
``message_id``, ``session_id``, ``include_tools``); a number or a strict numeric string
(``"5"``) where a number is expected; an optional string that is not a non-blank string is
absent; ``includeTools`` by JavaScript truthiness; unknown arguments ignored. It always returns
a result that is valid against the tool's output schema (:data:`SESSIONS_SEARCH_OUTPUT_SCHEMA`,
:data:`SESSIONS_HISTORY_OUTPUT_SCHEMA`, :data:`SESSIONS_LIST_OUTPUT_SCHEMA`): invalid
arguments become ``{"status": "error", "error": message}`` with OpenClaw's messages, never an
exception (``sessions_list``, like OpenClaw's, ignores what it cannot read).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from .errors import ToolInputError
from .history import CHAT_HISTORY_MAX_ENTRIES
from .history import DEFAULT_HISTORY_LIMIT as DEFAULT_HISTORY_LIMIT
from .jsonsafe import dumps as _strict_dumps
from .listing import DEFAULT_LIST_LIMIT as DEFAULT_LIST_LIMIT
from .listing import MAX_LIST_LIMIT as MAX_LIST_LIMIT
from .listing import MAX_LIST_MESSAGES
from .listing import SESSION_KINDS as SESSION_KINDS
from .query import compile_query
from .results import HistoryAnswer, SearchAnswer, SessionsListResult, StatusResult
from .search import DEFAULT_LIMIT as DEFAULT_LIMIT
from .search import EMPTY_QUERY_ERROR, MAX_QUERY_CHARS, add_warning
from .search import MAX_BATCH_QUERIES as MAX_BATCH_QUERIES
from .search import MAX_LIMIT as MAX_LIMIT
from .spans import SPAN_EXAMPLES

if TYPE_CHECKING:
    from .caller import Caller
    from .store import TranscriptStore

# What a face other than the tools (the command line) shows of the same arguments and answers:
# their bounds and choices, the advice in refusals, how an import names a file's key. Named
# here so a face reads them from the public API (pyproject.toml's "cli-public-api" contract).
from .caller import VISIBILITIES as VISIBILITIES
from .caller import Visibility as Visibility
from .errors import MAX_ERROR_CHARS as MAX_ERROR_CHARS
from .errors import shorten as shorten
from .history import MAX_HISTORY_LIMIT as MAX_HISTORY_LIMIT
from .importer import BY_DEFAULT_KEY as BY_DEFAULT_KEY
from .importer import BY_GIVEN_KEY as BY_GIVEN_KEY
from .importer import BY_STORED_KEY as BY_STORED_KEY
from .importer import DEFAULT_SESSION_KEY as DEFAULT_SESSION_KEY
from .index.base import partition_counts
from .reconcile import LeaseWait as LeaseWait
from .search import INDEXING_WARNING as INDEXING_WARNING
from .search import ORDERS as ORDERS
from .search import ROLES as ROLES
from .visibility import AGENT_TO_AGENT_ADVICE as AGENT_TO_AGENT_ADVICE
from .visibility import ALLOW_LIST_ADVICE as ALLOW_LIST_ADVICE
from .visibility import CROSS_AGENT_ADVICE as CROSS_AGENT_ADVICE
from .visibility import NOT_FOUND_ADVICE as NOT_FOUND_ADVICE
from .visibility import SELF_ADVICE as SELF_ADVICE
from .visibility import TREE_ADVICE as TREE_ADVICE

#: Partitions of the layout partitioned by agent when not told how many, and the most
#: accepted (``openclaw-fts partition --partitions``).
DEFAULT_PARTITIONS, MAX_PARTITIONS = partition_counts()

#: The ``group`` value of ``sessions_search`` that returns one hit per session.
GROUP_BY_SESSION = "session"
GROUP_ERROR = f'group must be "{GROUP_BY_SESSION}"'
GROUP_BATCH_ERROR = f'group "{GROUP_BY_SESSION}" takes query, not queries'
#: Opens the ``warning`` of a grouped result (then the counts, in result order).
GROUPED_WARNING = (
    "One result per session (its best hit); matching messages per session, in result order: "
)

#: The largest integer a JavaScript number holds exactly (``Number.MAX_SAFE_INTEGER``): OpenClaw
#: refuses integer arguments above it.
JS_MAX_SAFE_INTEGER = 2**53 - 1

SESSIONS_SEARCH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_search",
    "description": (
        "Full-text search over your past conversation sessions that you are allowed to see. "
        "Returns ranked excerpts (snippet) with the session key, message id, role and time; "
        "use sessions_history with sessionKey and messageId to read the surrounding "
        "conversation. Give query, or queries (up to "
        f"{MAX_BATCH_QUERIES}) to search several ways at once. If the result has "
        "indexing: true, some sessions are still being indexed: retry shortly."
    ),
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "pattern": "\\S",
            "maxLength": MAX_QUERY_CHARS,
            "description": (
                "Required non-empty keywords to match in past user and assistant text "
                "(unless queries is given); all must occur (case and accents ignored). "
                '"exact phrase" in double quotes; deploy* for a prefix; staging OR production '
                "for either word. Any other punctuation is matched literally. Chinese, Japanese "
                "and Korean text is matched as a substring."
            ),
        },
        "queries": {
            "type": "array",
            "items": {"type": "string", "pattern": "\\S", "maxLength": MAX_QUERY_CHARS},
            "minItems": 1,
            "maxItems": MAX_BATCH_QUERIES,
            "description": (
                f"Up to {MAX_BATCH_QUERIES} searches in one call (with query, if given, first); "
                "each result names its query by queryIndex."
            ),
        },
        "sessionKey": {
            "type": "string",
            "description": (
                "Only search this session: a session key (e.g. agent:main:main), current, "
                "main, global, or a session id."
            ),
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
            "description": f"Most results to return per query (1-{MAX_LIMIT}).",
        },
        "role": {
            "type": "string",
            "enum": ["user", "assistant"],
            "description": "Only messages written by the user, or only by the assistant.",
        },
        "since": {
            "type": ["integer", "string"],
            "description": (
                "Only messages at or after this time: epoch ms, ISO 8601, or a span back from "
                f"now ({SPAN_EXAMPLES}: minutes, hours, days, weeks)."
            ),
        },
        "until": {
            "type": ["integer", "string"],
            "description": (
                "Only messages at or before this time: epoch ms, ISO 8601, or a span back "
                f"from now ({SPAN_EXAMPLES})."
            ),
        },
        "order": {
            "type": "string",
            "enum": ["relevance", "recent"],
            "default": "relevance",
            "description": "relevance: best match first; recent: newest first.",
        },
        "group": {
            "type": "string",
            "enum": [GROUP_BY_SESSION],
            "description": (
                "session: one result per session (its best hit), so one long session does not "
                "fill the limit; limit then counts sessions and warning lists each session's "
                "number of matching messages. Only with query (not queries)."
            ),
        },
    },
}

SESSIONS_HISTORY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_history",
    "description": (
        "Read the conversation of a session you may see, oldest first (the active branch). "
        "Pass messageId (and sessionId) from a sessions_search result to read the messages "
        "around that hit."
    ),
    "type": "object",
    "properties": {
        "sessionKey": {
            "type": "string",
            "description": "The session key, or current, main, global, or a session id.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "default": DEFAULT_HISTORY_LIMIT,
            "description": (
                f"Most messages to return (more than {CHAT_HISTORY_MAX_ENTRIES} reads "
                f"{CHAT_HISTORY_MAX_ENTRIES})."
            ),
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "Skip this many of the newest messages (paging backwards).",
        },
        "messageId": {
            "type": "string",
            "minLength": 1,
            "description": "Return history around this message id; limit bounds the window.",
        },
        "sessionId": {
            "type": "string",
            "minLength": 1,
            "description": "The transcript session id that owns messageId (only with messageId).",
        },
        "includeTools": {
            "type": "boolean",
            "default": False,
            "description": "Also return tool calls and tool results.",
        },
    },
    "required": ["sessionKey"],
}

SESSIONS_LIST_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_list",
    "description": (
        "List the sessions you may see, most recently active first: each with its sessionKey "
        "(key), agent, kind and sessionId. Pass a key to sessions_history or sessions_search."
    ),
    "type": "object",
    "properties": {
        "kinds": {
            "type": "array",
            "items": {"type": "string"},
            "description": f"Only these kinds ({', '.join(SESSION_KINDS)}).",
        },
        "limit": {
            "type": "number",
            "minimum": 1,
            "description": f"Most sessions to list (default {DEFAULT_LIST_LIMIT}, at most "
            f"{MAX_LIST_LIMIT}).",
        },
        "activeMinutes": {
            "type": "number",
            "minimum": 1,
            "description": "Only sessions active in the last N minutes.",
        },
        "messageLimit": {
            "type": "number",
            "minimum": 0,
            "description": f"Attach the last N messages of each session (at most "
            f"{MAX_LIST_MESSAGES}).",
        },
        "label": {
            "type": "string",
            "minLength": 1,
            "description": "Only sessions with this label.",
        },
        "agentId": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "description": "Only sessions of this agent.",
        },
        "search": {
            "type": "string",
            "minLength": 1,
            "description": "Only sessions whose key or session id contains this text.",
        },
        "includeDerivedTitles": {"type": "boolean"},
        "includeLastMessage": {"type": "boolean"},
    },
}

#: The result of ``sessions_list``: OpenClaw's ``{count, sessions}`` with the row fields the
#: store can fill (OpenClaw declares no output schema for it; this one is the plugin's own).
SESSIONS_LIST_OUTPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_list result",
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 0},
        "sessions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string"},
                    "agentId": {"type": "string"},
                    "kind": {"enum": list(SESSION_KINDS)},
                    "channel": {"type": "string"},
                    "sessionId": {"type": "string"},
                    "updatedAt": {"type": "number"},
                    "spawnedBy": {"type": "string"},
                    "parentSessionKey": {"type": "string"},
                    "messages": {"type": "array"},
                    "messageCount": {"type": "integer", "minimum": 0},
                    "indexing": {"enum": ["indexed", "pending", "never"]},
                    "createdAt": {"type": "number"},
                },
                "required": ["key", "agentId", "kind", "channel", "sessionId"],
                "additionalProperties": False,
            },
        },
        "truncated": {"const": True},
    },
    "required": ["count", "sessions"],
    "additionalProperties": False,
}

#: ``status`` results: invalid arguments, or a session the caller may not name.
_STATUS_RESULT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["error", "forbidden"]},
        "error": {"type": "string"},
    },
    "required": ["status", "error"],
    "additionalProperties": False,
}

_HIT_PROPERTIES: dict[str, Any] = {
    "sessionKey": {"type": "string"},
    "timestamp": {"type": "number"},
    "role": {"enum": ["assistant", "user"]},
    "snippet": {"type": "string"},
    "score": {"type": "number"},
    "sessionId": {"type": "string"},
    "messageId": {"type": "string"},
}
_HIT_REQUIRED = ["sessionKey", "timestamp", "role", "snippet", "score"]
_QUERY_INDEXES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": MAX_BATCH_QUERIES - 1},
}

#: The results of ``sessions_search``, written from OpenClaw's ``SessionsSearchOutputSchema``
#: (a hit, and each result object, has exactly these fields), plus the batch result.
SESSIONS_SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_search result",
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": _HIT_PROPERTIES,
                        "required": _HIT_REQUIRED,
                        "additionalProperties": False,
                    },
                },
                "sessionLinkRule": {"type": "string"},
                "indexing": {"const": True},
                "warning": {"type": "string"},
                "truncated": {"const": True},
            },
            "required": ["results"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "batch": {"const": True},
                "queries": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": MAX_BATCH_QUERIES,
                },
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            **_HIT_PROPERTIES,
                            "queryIndex": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": MAX_BATCH_QUERIES - 1,
                            },
                        },
                        "required": [*_HIT_REQUIRED, "queryIndex"],
                        "additionalProperties": False,
                    },
                },
                "sessionLinkRule": {"type": "string"},
                "indexing": {"const": True},
                "warning": {"type": "string"},
                "indexingQueries": _QUERY_INDEXES,
                "truncated": {"const": True},
                "truncatedQueries": _QUERY_INDEXES,
            },
            "required": ["batch", "queries", "results"],
            "additionalProperties": False,
        },
        _STATUS_RESULT,
    ],
}

#: The result of ``sessions_history``, written from OpenClaw's ``SessionsHistoryOutputSchema``
#: (``additionalProperties: false``: no field beyond these).
SESSIONS_HISTORY_OUTPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "sessions_history result",
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "sessionKey": {"type": "string"},
                "messages": {"type": "array"},
                "truncated": {"type": "boolean"},
                "droppedMessages": {"type": "boolean"},
                "contentTruncated": {"type": "boolean"},
                "contentRedacted": {"type": "boolean"},
                "bytes": {"type": "number"},
                "sessionLinkRule": {"type": "string"},
                "offset": {"type": "number"},
                "nextOffset": {"type": "number"},
                "hasMore": {"type": "boolean"},
                "totalMessages": {"type": "number"},
            },
            "required": [
                "sessionKey",
                "messages",
                "truncated",
                "droppedMessages",
                "contentTruncated",
                "contentRedacted",
                "bytes",
            ],
            "additionalProperties": False,
        },
        _STATUS_RESULT,
    ],
}


# --------------------------------------------------------------------------- argument readers

_MISSING: Any = object()
_ACRONYM_RE = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_RE = re.compile(r"([a-z0-9])([A-Z])")
#: OpenClaw's strict number grammar for numeric strings (``"5"``, ``" 2.0 "``, ``"1e1"``);
#: ``"5px"``, ``"0x10"`` and ``"Infinity"`` are not numbers.
_STRICT_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")


def json_dumps(data: Any, **options: Any) -> str:
    """``data`` as strict JSON (``json.dumps``' options; never NaN or Infinity), as every
    answer of the plugin is written."""
    return _strict_dumps(data, **options)


def has_searchable_words(query: str) -> bool:
    """Whether ``query`` holds a word the index can match. One of punctuation and symbols only
    (``!!!???...``) holds none: ``sessions_search`` answers it ``{"results": []}`` as OpenClaw
    does, and a person can be told why (the command line does)."""
    return compile_query(query.strip()) is not None


def snake_case(name: str) -> str:
    """The snake_case alias OpenClaw accepts for a camelCase argument name."""
    return _CAMEL_RE.sub(r"\1_\2", _ACRONYM_RE.sub(r"\1_\2", name)).lower()


def read_raw(args: Mapping[str, Any], name: str) -> Any:
    """The argument by its name, else by its snake_case alias; ``_MISSING`` when neither."""
    if name in args:
        return args[name]
    alias = snake_case(name)
    if alias != name and alias in args:
        return args[alias]
    return _MISSING


def _absent(raw: Any) -> bool:
    """Missing, null or a blank string: an optional argument not given."""
    return raw is _MISSING or raw is None or (isinstance(raw, str) and not raw.strip())


def read_string(args: Mapping[str, Any], name: str) -> str | None:
    """A trimmed non-blank string; anything else is absent (OpenClaw's readToolStringParam)."""
    raw = read_raw(args, name)
    if not isinstance(raw, str) or not raw.strip():
        return None
    return raw.strip()


def _number(raw: Any) -> float | int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return raw if math.isfinite(raw) else None
    if isinstance(raw, str) and _STRICT_NUMBER_RE.match(raw.strip()):
        try:
            value = float(raw.strip())
        except OverflowError:  # pragma: no cover - float() returns inf, never raises
            return None
        return value if math.isfinite(value) else None
    return None


def _safe_integer(value: float | int | None, minimum: int) -> int | None:
    if value is None or not float(value).is_integer():
        return None
    number = int(value)
    return number if minimum <= number <= JS_MAX_SAFE_INTEGER else None


def read_integer(
    args: Mapping[str, Any], name: str, *, minimum: int, maximum: int | None = None
) -> int | None:
    """A safe integer ≥ ``minimum`` (number or numeric string), absent when not given; else
    OpenClaw's ``<name> must be a positive integer`` / ``a non-negative integer``."""
    raw = read_raw(args, name)
    kind = "a positive integer" if minimum > 0 else "a non-negative integer"
    value = _safe_integer(_number(raw), minimum)
    if value is None:
        if _absent(raw):
            return None
        raise ToolInputError(f"{name} must be {kind}")
    if maximum is not None and value > maximum:
        raise ToolInputError(f"{name} must be {kind}")
    return value


def read_number(args: Mapping[str, Any], name: str) -> Any:
    """A number as a tool's JSON may carry it: a numeric string is read as its number; None
    when absent; anything else as it is, for the rule that takes the argument to refuse."""
    raw = read_raw(args, name)
    if _absent(raw):
        return None
    number = _number(raw)
    return raw if number is None else number


def read_string_list(args: Mapping[str, Any], name: str) -> list[str] | None:
    """A list of strings: one string is a list of one; non-strings and blanks are dropped."""
    raw = read_raw(args, name)
    if raw is _MISSING or raw is None:
        return None
    if isinstance(raw, str):
        return [raw.strip()] if raw.strip() else []
    if isinstance(raw, (list, tuple)):
        return [v.strip() for v in raw if isinstance(v, str) and v.strip()]
    return []


def js_truthy(value: Any) -> bool:
    """JavaScript's ``Boolean(value)``: false only for false, 0, NaN, "" and null/undefined
    (an empty list or object, and the string "false", are true)."""
    if value is _MISSING or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == value and value != 0  # NaN is false
    if isinstance(value, str):
        return value != ""
    return True


def _error(message: str) -> StatusResult:
    return {"status": "error", "error": message}


def _params(args: Any) -> Mapping[str, Any]:
    """The arguments object (anything else reads as no arguments at all)."""
    return args if isinstance(args, Mapping) else {}


def _given(args: Mapping[str, Any], name: str) -> Any:
    raw = read_raw(args, name)
    return None if raw is _MISSING else raw


def grouped_answer(result: dict[str, Any]) -> SearchAnswer:
    """``search_by_session``'s result in OpenClaw's ``sessions_search`` shape: a hit carries
    exactly OpenClaw's fields, so each session's count moves to ``warning``."""
    if "status" in result:
        return cast(SearchAnswer, result)
    counts = [str(hit.pop("sessionHits")) for hit in result["results"]]
    if counts:
        add_warning(result, GROUPED_WARNING + ", ".join(counts) + ".")
    return cast(SearchAnswer, result)


def sessions_search(
    store: TranscriptStore, caller: Caller, args: Any, *, now_ms: int | None = None
) -> SearchAnswer:
    """Run ``sessions_search`` from the tool's JSON arguments; spans in ``since`` / ``until``
    (``"7d"``) count back from ``now_ms`` (epoch ms; None: the clock)."""
    params = _params(args)
    try:
        query = read_string(params, "query")
        queries = read_string_list(params, "queries")
        options: dict[str, Any] = {
            # Validated once, by the search (``search.validate_limit``, OpenClaw's rule).
            "limit": read_number(params, "limit"),
            "session_key": read_string(params, "sessionKey"),
            "role": _given(params, "role"),
            "since": _given(params, "since"),
            "until": _given(params, "until"),
            "order": _given(params, "order"),
            "now_ms": now_ms,
        }
        group = read_string(params, "group")
        if group is not None:
            if group != GROUP_BY_SESSION:
                raise ToolInputError(GROUP_ERROR)
            if queries is not None:
                raise ToolInputError(GROUP_BATCH_ERROR)
            if query is None:
                raise ToolInputError(EMPTY_QUERY_ERROR)
            return grouped_answer(store.search_by_session(caller, query, **options))
        if queries is None:
            if query is None:
                raise ToolInputError(EMPTY_QUERY_ERROR)
            result: SearchAnswer = store.search(caller, query, **options)
        else:
            result = store.search(caller, query, queries=queries, **options)
        return result
    except ToolInputError as exc:
        return _error(str(exc))


def sessions_history(store: TranscriptStore, caller: Caller, args: Any) -> HistoryAnswer:
    """Run ``sessions_history`` from the tool's JSON arguments."""
    params = _params(args)
    try:
        key = read_string(params, "sessionKey")
        if key is None:
            raise ToolInputError("sessionKey required")
        limit = read_integer(params, "limit", minimum=1)
        offset = read_integer(params, "offset", minimum=0)
        if offset is None and "offset" in params:  # null or "" is not an offset (OpenClaw)
            raise ToolInputError("offset must be a non-negative integer")
        return store.history(
            caller,
            key,
            limit=limit,
            offset=offset,
            message_id=read_string(params, "messageId"),
            session_id=read_string(params, "sessionId"),
            include_tools=js_truthy(read_raw(params, "includeTools")),
        )
    except ToolInputError as exc:
        return _error(str(exc))


def _js_number_floor(raw: Any, minimum: int) -> int | None:
    """OpenClaw's ``typeof v === "number" && Number.isFinite(v) ? Math.max(min, floor(v))``:
    anything but a finite number (strings included) is absent."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    if isinstance(raw, float) and not math.isfinite(raw):
        return None
    return max(minimum, math.floor(raw))


def sessions_list(store: TranscriptStore, caller: Caller, args: Any) -> SessionsListResult:
    """Run ``sessions_list`` from the tool's JSON arguments, read as OpenClaw reads them:
    numbers floored (``limit`` and ``activeMinutes`` at least 1, ``messageLimit`` 0 to
    :data:`~openclaw_fts.listing.MAX_LIST_MESSAGES`), a non-number ignored; ``kinds``
    lower-cased with unknown kinds dropped (none left: no kind filter); ``label``, ``agentId``
    and ``search`` as trimmed non-blank strings. It never fails on its arguments."""
    params = _params(args)
    kinds = [k.lower() for k in read_string_list(params, "kinds") or []]
    wanted = [k for k in kinds if k in SESSION_KINDS]
    limit = _js_number_floor(read_raw(params, "limit"), 1)
    message_limit = _js_number_floor(read_raw(params, "messageLimit"), 0)
    return store.list_sessions(
        caller,
        limit=None if limit is None else min(limit, MAX_LIST_LIMIT),
        kinds=wanted or None,
        agent_id=read_string(params, "agentId"),
        search=read_string(params, "search"),
        label=read_string(params, "label"),
        active_minutes=_js_number_floor(read_raw(params, "activeMinutes"), 1),
        message_limit=None if message_limit is None else min(message_limit, MAX_LIST_MESSAGES),
    )
