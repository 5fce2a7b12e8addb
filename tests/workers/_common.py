"""Shared bits of the worker scripts (run as subprocesses by the reliability tests).

Every worker prints machine-readable lines on stdout (one JSON object per line, flushed at
once) and exits 0 on success; any exception escapes as a traceback on stderr and exit 1.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

#: Words every generated message may carry, so searches have common hits.
WORDS = (
    "deploy",
    "staging",
    "database",
    "migration",
    "rollback",
    "latency",
    "kubernetes",
    "invoice",
    "café",
    "明天下午三点开会",
    "node.js",
    "c++",
)


def emit(**fields: Any) -> None:
    """One JSON line on stdout, flushed before the worker does anything else."""
    sys.stdout.write(json.dumps(fields, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def sentence(rng: random.Random, unique: str) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
    words.insert(rng.randint(0, len(words)), unique)
    return " ".join(words)


def message(
    event_id: str,
    text: str,
    *,
    role: str = "user",
    parent: str | None = None,
    ts: int = 1_790_000_000_000,
    blocks: bool = False,
) -> dict[str, Any]:
    content: Any = text
    if blocks:
        content = [
            {"type": "thinking", "thinking": "hidden reasoning", "thinkingSignature": "sig"},
            {"type": "text", "text": text},
            {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {"cmd": "ls"}},
        ]
    event: dict[str, Any] = {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": role, "content": content},
    }
    if parent is None:
        # No parentId key (an older writer): the entry continues the session's current leaf,
        # which concurrent writers cannot know. (parentId: null would start a new root.)
        del event["parentId"]
    return event
