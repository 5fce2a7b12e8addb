"""factory-boy factories for sessions and OpenClaw transcript events: the public testing kit's
(``openclaw_fts.testing``, docs/testing.md), and the suite's own helpers on top of them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import factory

from openclaw_fts.testing import (
    HEADER_TIMESTAMP,
    T0,
    AgentSessionFactory,
    MessageEventFactory,
    SessionHeaderFactory,
)

__all__ = [
    "HEADER_TIMESTAMP",
    "T0",
    "UNLINKED",
    "AgentSessionFactory",
    "MessageFactory",
    "SessionHeaderFactory",
    "chain",
    "events_file",
    "jsonl_file",
    "msg",
    "transcript_file",
]


class MessageFactory(MessageEventFactory):
    """The public kit's message event with an epoch-milliseconds ``timestamp`` (the other form
    OpenClaw writes), ``T0`` plus a second per event."""

    timestamp = factory.Sequence(lambda n: T0 + n * 1000)


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
