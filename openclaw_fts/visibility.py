"""Who may see which sessions: a :class:`Caller` compiled into a SQL predicate over ``sessions``.

Invariant: visibility is decided by the database, inside the statement that reads the data
(search, history, pending checks), never by listing sessions in Python first; the same
:func:`visible` predicate serves every read path, so search and history can never disagree.
Incognito sessions are never visible to search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .errors import ToolInputError
from .hooks import agent_id_from_key
from .tokens import is_valid_unicode

Visibility = Literal["self", "tree", "agent", "all"]
SandboxVisibility = Literal["spawned", "all"]
VISIBILITIES: tuple[str, ...] = ("self", "tree", "agent", "all")
SANDBOX_VISIBILITIES: tuple[str, ...] = ("spawned", "all")
#: Most agent-to-agent allow patterns accepted (each becomes one LIKE in the statement; more is
#: refused rather than silently ignored).
MAX_ALLOW_PATTERNS = 256


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
    """The session asking, and what it may see (behaviour.md §6)."""

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


def _like_pattern(pattern: str) -> str:
    escaped = pattern.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


@dataclass(frozen=True)
class Predicate:
    """A SQL boolean expression with its bound parameters (names prefixed ``vis_``)."""

    sql: str
    params: dict[str, str]
    #: True when the predicate admits every session that is not incognito.
    everything: bool = False


def visible(caller: Caller, alias: str = "s", *, for_search: bool = True) -> Predicate:
    """What ``caller`` may see, as a predicate over the ``sessions`` table aliased ``alias``.

    Plain SQL text (no per-call SQLAlchemy compilation: it is built on every search); every
    value is a bound parameter, never spliced into the text.
    """
    a = alias
    params: dict[str, str] = {"vis_key": caller.session_key}
    everything = False
    own = f"{a}.session_key = :vis_key"
    if caller.sandboxed and caller.sandbox_visibility == "spawned":
        sql = f"({own} OR {a}.spawned_by = :vis_key)"
    elif caller.visibility == "self":
        sql = own
    else:
        tree = (
            f"{own} OR {a}.owner_session_key = :vis_key OR {a}.spawned_by = :vis_key "
            f"OR {a}.parent_session_key = :vis_key"
        )
        if caller.visibility == "tree":
            sql = f"({tree})"
        else:
            params["vis_agent"] = caller.effective_agent_id
            parts = [tree, f"{a}.agent_id = :vis_agent"]
            if caller.visibility == "all":
                others = _other_agents(caller, a, params)
                everything = others == [_ANY_AGENT]
                parts.extend(others)
            sql = "(" + " OR ".join(parts) + ")"
    if for_search:
        sql = f"({sql} AND {a}.incognito = 0)"
    return Predicate(sql, params, everything=everything and for_search)


_ANY_AGENT = "1 = 1"


def _other_agents(caller: Caller, alias: str, params: dict[str, str]) -> list[str]:
    """Other agents' sessions under ``all``, per the agent-to-agent policy (SQL conditions)."""
    policy = caller.agent_to_agent
    if not policy.enabled or not policy.allows(caller.effective_agent_id):
        return []
    patterns = list(dict.fromkeys(p for p in policy.allow if p))
    if not patterns:
        return [_ANY_AGENT]
    conditions = []
    for n, pattern in enumerate(patterns):
        params[f"vis_allow{n}"] = _like_pattern(pattern)
        conditions.append(f"lower({alias}.agent_id) LIKE :vis_allow{n} ESCAPE '\\'")
    return conditions
