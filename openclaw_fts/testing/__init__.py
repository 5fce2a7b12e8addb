"""A kit for a host's integration tests (``pip install 'openclaw-fts[testing]'``, docs/testing.md).

Invariant: builds data only — OpenClaw-shaped event dicts, unsaved ORM objects and the path of a
bundled, read-only OpenClaw sessions folder — and never opens a database; the fixtures that do
(``transcript_store``) live in the pytest plugin :mod:`openclaw_fts.pytest_plugin`. Every
factory's defaults are deterministic per test run (factory-boy sequences), so a failing test
shows the same ids again.
"""

from __future__ import annotations

from pathlib import Path

try:
    import factory  # noqa: F401  (factory-boy: the [testing] extra)
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    raise ImportError(
        "openclaw_fts.testing needs factory-boy: pip install 'openclaw-fts[testing]'"
    ) from exc

from .factories import (
    HEADER_TIMESTAMP,
    T0,
    AgentSessionFactory,
    BranchFactory,
    CompactionEventFactory,
    LeafEventFactory,
    MessageEventFactory,
    SessionHeaderFactory,
    ToolCallEventFactory,
    ToolResultEventFactory,
    TranscriptEventFactory,
    rewound_branch,
    tool_call_pair,
)

#: The bundled sessions folder, inside the package (so a wheel ships it; in a source checkout
#: a symbolic link to the repository's ``examples/sessions``).
SESSIONS_DIR = Path(__file__).resolve().parent / "sessions"


def fixture_sessions_dir() -> Path:
    """The path of a bundled OpenClaw sessions folder (``sessions.json`` and four transcripts)
    that ``TranscriptStore.import_dir`` accepts: agents ``main`` and ``ops``, a subagent, a
    rewound branch, Chinese and Japanese, accents, a credential and tool results
    (docs/testing.md lists what is where). Read it; copy it before changing it."""
    return SESSIONS_DIR


__all__ = [
    "HEADER_TIMESTAMP",
    "SESSIONS_DIR",
    "T0",
    "AgentSessionFactory",
    "BranchFactory",
    "CompactionEventFactory",
    "LeafEventFactory",
    "MessageEventFactory",
    "SessionHeaderFactory",
    "ToolCallEventFactory",
    "ToolResultEventFactory",
    "TranscriptEventFactory",
    "fixture_sessions_dir",
    "rewound_branch",
    "tool_call_pair",
]
