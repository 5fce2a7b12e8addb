"""factory-boy factories for sessions and OpenClaw transcript events."""

from __future__ import annotations

from typing import Any

import factory

from openclaw_fts.models import AgentSession


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
    timestamp = factory.Sequence(lambda n: 1_790_000_000_000 + n * 1000)
    message = factory.LazyAttribute(lambda o: {"role": o.role, "content": o.text})

    class Params:
        role = "user"
        text = factory.Sequence(lambda n: f"message number {n}")


def chain(
    texts: list[str], *, start: int = 0, parent: str | None = None, prefix: str = "m"
) -> list[dict[str, Any]]:
    """A linear conversation alternating user/assistant, ids ``{prefix}{start}``..."""
    events = []
    for i, text in enumerate(texts, start=start):
        event_id = f"{prefix}{i}"
        events.append(
            {
                "type": "message",
                "id": event_id,
                "parentId": parent,
                "timestamp": 1_790_000_000_000 + i * 1000,
                "message": {"role": "user" if i % 2 == 0 else "assistant", "content": text},
            }
        )
        parent = event_id
    return events
