"""Who is asking: the :class:`Caller` of a search or history read, its visibility setting and
agent-to-agent policy, and the shapes of session keys every layer reads (the agent id an
``agent:<id>:…`` key carries, OpenClaw's incognito key shape).

Invariant: pure values — this module imports nothing of the plugin but its exceptions and the
Unicode check, runs no statement and holds no policy decision beyond validating its own fields;
a :class:`Caller` that exists is valid. What a caller may see is decided by
:mod:`openclaw_fts.visibility` and written as SQL by the index backends from these values; the
incognito key shape here is the one both the Python test (:func:`is_incognito_session_key`) and
the SQL test (``index/visibility_sql.py``) are built from, so they agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .errors import ToolInputError
from .tokens import is_valid_unicode

Visibility = Literal["self", "tree", "agent", "all"]
SandboxVisibility = Literal["spawned", "all"]
VISIBILITIES: tuple[str, ...] = ("self", "tree", "agent", "all")
SANDBOX_VISIBILITIES: tuple[str, ...] = ("spawned", "all")
#: Most agent-to-agent allow patterns accepted (each becomes one LIKE in the statement; more is
#: refused rather than silently ignored).
MAX_ALLOW_PATTERNS = 256


def agent_id_from_key(session_key: str) -> str | None:
    """``agent:<id>:...`` keys carry their agent id."""
    parts = session_key.split(":")
    if len(parts) >= 3 and parts[0] == "agent" and parts[1]:
        return parts[1]
    return None


def _allow_regex(pattern: str) -> re.Pattern[str]:
    """An allow pattern: ``*`` is the only wildcard (as in the SQL LIKE it also becomes)."""
    parts = (".*" if ch == "*" else re.escape(ch) for ch in pattern.lower())
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


@dataclass(frozen=True)
class AgentToAgent:
    """Agent-to-agent policy: under ``all``, other agents' sessions are visible only when
    enabled and both agent ids match an ``allow`` pattern (``*``, case-insensitive; empty: any)."""

    enabled: bool = False
    allow: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.allow, str) or not all(isinstance(p, str) for p in self.allow):
            raise ToolInputError("agent-to-agent allow must be a list of strings")
        if len(self.allow) > MAX_ALLOW_PATTERNS:
            raise ToolInputError(
                f"agent-to-agent allow takes at most {MAX_ALLOW_PATTERNS} patterns"
            )

    def allows(self, agent_id: str) -> bool:
        if not self.allow:
            return True
        return any(_allow_regex(p).match(agent_id.lower()) for p in self.allow if p)


@dataclass(frozen=True)
class Caller:
    """The session asking, and what it may see (docs/tools.md)."""

    session_key: str
    visibility: Visibility = "tree"
    agent_id: str | None = None
    sandboxed: bool = False
    sandbox_visibility: SandboxVisibility = "spawned"
    agent_to_agent: AgentToAgent = field(default_factory=AgentToAgent)

    def __post_init__(self) -> None:
        if not isinstance(self.session_key, str) or not self.session_key.strip():
            raise ToolInputError("caller session_key must be a non-empty string")
        if not is_valid_unicode(self.session_key):
            raise ToolInputError("caller session_key is not valid Unicode")
        if self.visibility not in VISIBILITIES:
            raise ToolInputError(f"visibility must be one of {', '.join(VISIBILITIES)}")
        if self.sandbox_visibility not in SANDBOX_VISIBILITIES:
            raise ToolInputError(
                f"sandbox_visibility must be one of {', '.join(SANDBOX_VISIBILITIES)}"
            )

    @property
    def effective_agent_id(self) -> str:
        return self.agent_id or agent_id_from_key(self.session_key) or "main"

    @property
    def effective_visibility(self) -> Visibility:
        if self.sandboxed and self.sandbox_visibility == "spawned":
            return "tree"
        return self.visibility

    @property
    def is_narrow(self) -> bool:
        """True when the visible set is a handful of sessions (own key and its children)."""
        return self.effective_visibility in ("self", "tree")


# --------------------------------------------------------------------------- incognito keys

#: The session kinds whose ``agent:<id>:<kind>:incognito-<name>`` keys are incognito (OpenClaw's
#: ``isIncognitoSessionKey``): process-only sessions, never indexed, listed or read.
INCOGNITO_KEY_KINDS: tuple[str, ...] = ("dashboard", "subagent", "internal-session-effects")
#: Characters trimmed off a key before its shape is judged (the same in SQL and in Python).
KEY_TRIM_CHARS = " \t\n\r\v\f"
#: What follows ``agent:<id>:`` in an incognito key.
INCOGNITO_REST_RE = re.compile(
    "(?:" + "|".join(re.escape(k) for k in INCOGNITO_KEY_KINDS) + r"):incognito-[^:]+\Z"
)
#: Colons in an incognito key: ``agent`` : id : kind : ``incognito-<name>``.
INCOGNITO_KEY_COLONS = 3


def is_incognito_session_key(session_key: object) -> bool:
    """OpenClaw's ``isIncognitoSessionKey``: ``agent:<id>:<kind>:incognito-<name>`` (any case,
    surrounding whitespace ignored), ``<kind>`` one of :data:`INCOGNITO_KEY_KINDS`."""
    if not isinstance(session_key, str):
        return False
    parts = session_key.strip(KEY_TRIM_CHARS).lower().split(":")
    if len(parts) < INCOGNITO_KEY_COLONS or parts[0] != "agent" or not parts[1]:
        return False
    return INCOGNITO_REST_RE.match(":".join(parts[2:])) is not None
