"""factory-boy factories of OpenClaw transcript events (plain dicts, the JSONL shape) and of the
plugin's ORM models (unsaved objects).

Invariant: every event a factory returns is one that ``TranscriptStore.append`` accepts as it
is — ``type``, ``id``, ``parentId`` and ``timestamp`` always present — and the helpers'
``parent`` takes an event dict, an id or ``None`` (a new root) alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import factory

from ..models import AgentSession, Branch, TranscriptEvent

#: Epoch milliseconds of the first event a factory makes; each later one is a second later.
T0 = 1_790_000_000_000
#: A transcript header's ``timestamp`` by default (ISO 8601, the way OpenClaw writes it).
HEADER_TIMESTAMP = "2026-09-01T12:00:00.000Z"
#: The ``version`` of the transcript header OpenClaw writes.
TRANSCRIPT_VERSION = 4


def iso_timestamp(n: int) -> str:
    """OpenClaw's event timestamp (ISO 8601, milliseconds, UTC) ``n`` seconds after :data:`T0`."""
    moment = datetime.fromtimestamp(T0 / 1000, tz=timezone.utc) + timedelta(seconds=n)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def event_id(parent: Mapping[str, Any] | str | None) -> str | None:
    """The id a ``parentId`` names: an event's ``id``, an id as it is, or ``None``."""
    if isinstance(parent, Mapping):
        found = parent.get("id")
        return None if found is None else str(found)
    return parent


class _EventFactory(factory.DictFactory):  # type: ignore[misc]
    """Fields every transcript entry has; ``parent`` (an event, an id or None) sets parentId."""

    type = "message"
    id = factory.Sequence(lambda n: f"m{n}")
    parentId = factory.LazyAttribute(lambda o: event_id(o.parent))
    timestamp = factory.Sequence(iso_timestamp)

    class Params:
        parent = None


class MessageEventFactory(_EventFactory):
    """A message event: ``MessageEventFactory(role="assistant", text="...", parent=previous)``.
    ``text`` may also be a list of content blocks."""

    type = "message"
    message = factory.LazyAttribute(lambda o: {"role": o.role, "content": o.text})

    class Params:
        role = "user"
        text = factory.Sequence(lambda n: f"message number {n}")


class ToolCallEventFactory(_EventFactory):
    """An assistant turn made of one tool call (``name``, ``arguments``, ``call_id``)."""

    type = "message"
    message = factory.LazyAttribute(
        lambda o: {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": o.call_id, "name": o.name, "arguments": o.arguments}
            ],
        }
    )

    class Params:
        name = "exec"
        arguments = factory.LazyFunction(lambda: {"command": "uptime"})
        call_id = factory.Sequence(lambda n: f"call_{n}")


def _call_block(call: Mapping[str, Any]) -> Mapping[str, Any]:
    blocks = call.get("message", {}).get("content", [])
    found = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "toolCall"]
    if not found:
        raise ValueError("ToolResultEventFactory(call=...) needs a tool call event")
    block: Mapping[str, Any] = found[0]
    return block


class ToolResultEventFactory(_EventFactory):
    """The ``toolResult`` message answering ``call`` (a :class:`ToolCallEventFactory` event),
    its child unless ``parent`` says otherwise."""

    type = "message"
    parentId = factory.LazyAttribute(lambda o: event_id(o.parent if o.parent else o.call))
    message = factory.LazyAttribute(
        lambda o: {
            "role": "toolResult",
            "content": [{"type": "text", "text": o.text}],
            "toolCallId": _call_block(o.call)["id"],
            "toolName": _call_block(o.call)["name"],
            "isError": o.is_error,
        }
    )

    class Params:
        call = factory.SubFactory(ToolCallEventFactory)
        text = factory.Sequence(lambda n: f"tool output {n}")
        is_error = False


class CompactionEventFactory(_EventFactory):
    """A ``compaction`` entry: OpenClaw's summary of the turns before ``first_kept``."""

    type = "compaction"
    summary = factory.Sequence(lambda n: f"summary of the conversation so far ({n})")
    firstKeptEntryId = factory.LazyAttribute(lambda o: event_id(o.first_kept))
    tokensBefore = 12_000

    class Params:
        first_kept = None


class LeafEventFactory(_EventFactory):
    """A leaf control: makes ``target`` (an event or id) the active leaf — a rewind."""

    type = "leaf"
    id = factory.Sequence(lambda n: f"leaf-{n}")
    targetId = factory.LazyAttribute(lambda o: event_id(o.target))

    class Params:
        target = None


class SessionHeaderFactory(factory.DictFactory):  # type: ignore[misc]
    """The first line of an OpenClaw transcript file: the session header."""

    type = "session"
    version = TRANSCRIPT_VERSION
    id = factory.Sequence(lambda n: f"session-{n}")
    timestamp = HEADER_TIMESTAMP
    cwd = "/home/dev/project"


def tool_call_pair(
    parent: Mapping[str, Any] | str | None = None,
    *,
    name: str = "exec",
    arguments: Mapping[str, Any] | None = None,
    result: str = "ok",
    is_error: bool = False,
) -> list[dict[str, Any]]:
    """An assistant tool call and its ``toolResult``, chained under ``parent``."""
    call: dict[str, Any] = ToolCallEventFactory(
        parent=parent, name=name, arguments=dict(arguments or {"command": "uptime"})
    )
    answer: dict[str, Any] = ToolResultEventFactory(call=call, text=result, is_error=is_error)
    return [call, answer]


def rewound_branch(
    question: str = "How do I restart the staging cluster?",
    abandoned: str = "Reboot every node at once.",
    replacement: str = "Drain the nodes one at a time, then restart them.",
    *,
    parent: Mapping[str, Any] | str | None = None,
) -> list[dict[str, Any]]:
    """A rewound conversation, in append order: the user's ``question``, the ``abandoned``
    answer, a leaf control rewinding to the question, and the ``replacement`` answer. The
    active branch holds the question and the replacement; the abandoned answer stays in the
    transcript, off the branch (not found by search, not in history)."""
    asked: dict[str, Any] = MessageEventFactory(role="user", text=question, parent=parent)
    dropped: dict[str, Any] = MessageEventFactory(role="assistant", text=abandoned, parent=asked)
    rewind: dict[str, Any] = LeafEventFactory(parent=dropped, target=asked)
    kept: dict[str, Any] = MessageEventFactory(role="assistant", text=replacement, parent=rewind)
    return [asked, dropped, rewind, kept]


class AgentSessionFactory(factory.Factory):  # type: ignore[misc]
    """An unsaved :class:`~openclaw_fts.models.AgentSession` (add it to a session the plugin is
    installed on, or use ``TranscriptStore.create_session``)."""

    class Meta:
        model = AgentSession

    session_id = factory.Sequence(lambda n: f"session-{n}")
    session_key = factory.Sequence(lambda n: f"agent:main:s{n}")
    agent_id = None
    archived = False
    incognito = False


class TranscriptEventFactory(factory.Factory):  # type: ignore[misc]
    """An unsaved :class:`~openclaw_fts.models.TranscriptEvent` holding ``event`` (a
    :class:`MessageEventFactory` event by default); give it ``session=`` (an
    :class:`AgentSession`) or ``session_id=``. Added to a session the plugin is installed on,
    its flush gives it its ``seq`` and indexes it (docs/host.md)."""

    class Meta:
        model = TranscriptEvent

    event = factory.SubFactory(MessageEventFactory)


class BranchFactory(factory.Factory):  # type: ignore[misc]
    """An unsaved :class:`~openclaw_fts.models.Branch` record (a tip of a session's tree); the
    plugin keeps these itself — build one to test code that reads them."""

    class Meta:
        model = Branch

    session_id = factory.Sequence(lambda n: f"session-{n}")
    tip_id = factory.Sequence(lambda n: f"m{n}")
    tip_seq = 0
    is_active = True
