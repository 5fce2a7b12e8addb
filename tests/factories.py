"""factory-boy factories for sessions and OpenClaw transcript events."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import factory

from openclaw_fts.models import AgentSession

#: The timestamp of ``msg`` by default, and of message 0 of a ``chain`` or factory (epoch ms).
T0 = 1_790_000_000_000
#: A transcript header's ``timestamp`` by default (ISO 8601, the way OpenClaw writes it).
HEADER_TIMESTAMP = "2026-09-01T12:00:00.000Z"


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


class SessionHeaderFactory(factory.DictFactory):  # type: ignore[misc]
    """The first line of an OpenClaw transcript file: the session header."""

    type = "session"
    version = 4
    id = factory.Sequence(lambda n: f"session-{n}")
    timestamp = HEADER_TIMESTAMP
    cwd = "/home/dev/project"


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


def jsonl_file(path: Path, lines: Iterable[Mapping[str, Any] | str]) -> Path:
    """``lines`` written to ``path`` one a line: an object as its JSON (non-ASCII as it is), a
    string as it is (a malformed line, a blank one)."""
    text = "".join(
        (line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
        for line in lines
    )
    path.write_text(text, encoding="utf-8")
    return path


def events_file(
    path: Path,
    session_id: str,
    events: Iterable[Mapping[str, Any] | str],
    **header: Any,
) -> Path:
    """An OpenClaw transcript file at ``path``: a :class:`SessionHeaderFactory` header line for
    ``session_id`` (``header`` overrides its fields), then ``events`` (see :func:`jsonl_file`)."""
    return jsonl_file(path, [SessionHeaderFactory(id=session_id, **header), *events])


def transcript_file(path: Path, session_id: str, texts: list[str], *, prefix: str = "m") -> Path:
    """An OpenClaw transcript file at ``path``: the session header line, then :func:`chain` of
    ``texts`` (ids ``{prefix}0``...), one JSON object per line."""
    return events_file(path, session_id, chain(texts, prefix=prefix))
