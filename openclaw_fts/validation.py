"""What the plugin accepts as a transcript event or a session: the limits and the checks every
write path runs before anything is stored (ORM flush, ``TranscriptStore.append``, bulk ORM
inserts, imports).

Invariant: a value these functions accept can be stored on every supported engine's schema and
read back as the same JSON (:func:`serialise_event` returns the exact text to store); one that
they refuse raises :class:`~openclaw_fts.errors.InvalidEventError`,
:class:`~openclaw_fts.errors.InvalidSessionError` or
:class:`~openclaw_fts.errors.DuplicateEventError` with the reason, before any statement runs.
Pure: no statement, no session state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import transcript
from .errors import DuplicateEventError, InvalidEventError, InvalidSessionError, quoted, shorten
from .models import MAX_KEY_LENGTH, dump_event
from .tokens import is_valid_unicode

#: Largest event accepted, serialised (a 10 MB message fits; a runaway blob does not).
MAX_EVENT_BYTES = 16 * 1024 * 1024
#: Deepest nesting accepted: a stored event must load again with ``json.loads`` from any call
#: depth (Python's recursion limit is 1,000 frames); real transcripts nest a handful of levels.
MAX_EVENT_DEPTH = 200
#: Largest ``seq`` accepted (far beyond any transcript; keeps SQLite's 64-bit integers safe).
MAX_SEQ = 2**53


def validate_event(event_obj: Any) -> dict[str, Any]:
    """Check an event before it is stored; raise :class:`InvalidEventError` with the reason."""
    serialise_event(event_obj)
    return event_obj  # type: ignore[no-any-return]


def serialise_event(event_obj: Any, source: str | None = None) -> str:
    """The stored JSON text of a valid event; raise :class:`InvalidEventError` otherwise.
    ``source`` is the JSON text the event was just parsed from (an import line): stored as is."""
    if not isinstance(event_obj, dict):
        raise InvalidEventError(f"an event must be a JSON object, not {type(event_obj).__name__}")
    try:
        dumped = source if source is not None else dump_event(event_obj)
    except RecursionError:
        raise InvalidEventError("event is nested too deeply to store") from None
    except ValueError as exc:
        if "JSON compliant" in str(exc):  # json.dumps(allow_nan=False) of NaN / Infinity
            raise InvalidEventError(
                "event holds a non-finite number (NaN or Infinity), which is not valid JSON"
            ) from None
        raise InvalidEventError(f"event is not JSON-serialisable: {shorten(str(exc))}") from None
    except TypeError as exc:
        raise InvalidEventError(f"event is not JSON-serialisable: {shorten(str(exc))}") from None
    # Cheap bounds first (both exact when they pass): UTF-8 takes at most 4 bytes per
    # character, and the JSON text opens one bracket per container (strings may add more).
    if len(dumped) * 4 > MAX_EVENT_BYTES:
        size = len(dumped.encode("utf-8", "surrogatepass"))
        if size > MAX_EVENT_BYTES:
            raise InvalidEventError(f"event is {size} bytes; the limit is {MAX_EVENT_BYTES}")
    if (
        dumped.count("{") + dumped.count("[") > MAX_EVENT_DEPTH
        and json_depth(event_obj) > MAX_EVENT_DEPTH
    ):
        raise InvalidEventError(f"event is nested deeper than {MAX_EVENT_DEPTH} levels")
    message = event_obj.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    for key, value in (
        ("id", event_obj.get("id")),
        ("parentId", event_obj.get("parentId")),
        ("targetId", event_obj.get("targetId")),
        ("type", event_obj.get("type")),
        ("message.role", role),
    ):
        if not isinstance(value, str):
            continue
        if len(value) > MAX_KEY_LENGTH:
            raise InvalidEventError(f"event {key} longer than {MAX_KEY_LENGTH} characters")
        if not is_valid_unicode(value):
            raise InvalidEventError(f"event {key} is not valid Unicode (lone surrogate)")
    return dumped


SESSION_TEXT_FIELDS = (
    "session_id",
    "session_key",
    "agent_id",
    "spawned_by",
    "parent_session_key",
    "owner_session_key",
)
_REQUIRED_SESSION_FIELDS = ("session_id", "session_key")


def validate_session_fields(fields: dict[str, Any]) -> None:
    """Check a session's text and flag fields; raise :class:`InvalidSessionError`."""
    for name in SESSION_TEXT_FIELDS:
        value = fields.get(name)
        if value is None and name not in _REQUIRED_SESSION_FIELDS:
            continue
        if not isinstance(value, str) or not value.strip():
            raise InvalidSessionError(f"{name} must be a non-empty string")
        if len(value) > MAX_KEY_LENGTH:
            raise InvalidSessionError(f"{name} longer than {MAX_KEY_LENGTH} characters")
        if not is_valid_unicode(value):
            raise InvalidSessionError(f"{name} is not valid Unicode (lone surrogate)")
    for name in ("archived", "incognito"):
        if fields.get(name) is not None and not isinstance(fields[name], bool):
            raise InvalidSessionError(f"{name} must be true or false")


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON value (iterative: safe at any depth and any stack height)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_EVENT_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


#: Derived text columns of an event row (its JSON escapes every control character).
EVENT_TEXT_COLUMNS = ("event_id", "parent_id", "type", "role", "target_id")


def distinct_event_ids(session_id: str, events: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of events appended together; raise if two of them share one."""
    ids = [i for e in events if (i := transcript.event_id_of(e)) is not None]
    if len(ids) != len(set(ids)):
        raise DuplicateEventError(
            f"duplicate event id in one append to session {quoted(session_id)}"
        )
    return ids
