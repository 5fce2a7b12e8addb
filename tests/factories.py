"""factory-boy factories for sessions and OpenClaw transcript events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import factory

from openclaw_fts.models import AgentSession

#: The timestamp of ``msg`` by default, and of message 0 of a ``chain`` or factory (epoch ms).
T0 = 1_790_000_000_000


class AgentSessionFactory(factory.Factory):  # type: ignore[misc]
    """An unsaved AgentSession (add it to an installed ORM session)."""

    class Meta:
        model = AgentSession

    session_id = factory.Sequence(lambda n: f"session-{n}")
    session_key = factory.Sequence(lambda n: f"agent:main:s{n}")
    agent_id = None
    archived = False
    incognito = False


class MessageFactory(factory.DictFactory):  # type: ignore[misc]
    """A user/assistant message event; chain with ``parentId``."""

    type = "message"
    id = factory.Sequence(lambda n: f"m{n}")
    parentId = None
    timestamp = factory.Sequence(lambda n: T0 + n * 1000)
    message = factory.LazyAttribute(lambda o: {"role": o.role, "content": o.text})

    class Params:
        role = "user"
        text = factory.Sequence(lambda n: f"message number {n}")


#: ``msg``'s default parent: no ``parentId`` key at all (older writers), so the event chains to
#: the session's current leaf. An explicit ``parent=None`` is OpenClaw's null: a new root.
UNLINKED: Any = object()


def msg(
    event_id: str,
    content: Any,
    *,
    parent: Any = UNLINKED,
    role: str = "user",
    ts: Any = T0,
    **message_fields: Any,
) -> dict[str, Any]:
    """One OpenClaw message event (``message_fields`` go into its ``message`` object)."""
    event: dict[str, Any] = {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": role, "content": content, **message_fields},
    }
    if parent is UNLINKED:
        del event["parentId"]
    return event


def chain(
    texts: list[str], *, start: int = 0, parent: str | None = None, prefix: str = "m"
) -> list[dict[str, Any]]:
    """A linear conversation alternating user/assistant, ids ``{prefix}{start}``..., message i
    at ``T0 + i * 1000``."""
    events = []
    for i, text in enumerate(texts, start=start):
        event_id = f"{prefix}{i}"
        role = "user" if i % 2 == 0 else "assistant"
        events.append(msg(event_id, text, parent=parent, role=role, ts=T0 + i * 1000))
        parent = event_id
    return events


def transcript_file(path: Path, session_id: str, texts: list[str], *, prefix: str = "m") -> Path:
    """An OpenClaw transcript file at ``path``: the session header line, then :func:`chain` of
    ``texts`` (ids ``{prefix}0``...), one JSON object per line."""
    header = {"type": "session", "version": 4, "id": session_id, "timestamp": "2026-09-01T12:00"}
    lines = [json.dumps(header), *(json.dumps(e) for e in chain(texts, prefix=prefix))]
    path.write_text("\n".join(lines) + "\n")
    return path
