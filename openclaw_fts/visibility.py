"""Who may see which sessions: a :class:`Caller` compiled into a SQL predicate over ``sessions``.

Invariant: visibility is decided by the database, inside the statement that reads the data
(search, history, pending checks), never by listing sessions in Python first; the same
:func:`visible` predicate serves every read path, so search and history can never disagree.
Incognito sessions are never visible to search.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import ColumnElement, FromClause, and_, false, func, or_, true

from .errors import ToolInputError
from .hooks import agent_id_from_key

Visibility = Literal["self", "tree", "agent", "all"]
SandboxVisibility = Literal["spawned", "all"]
VISIBILITIES: tuple[str, ...] = ("self", "tree", "agent", "all")
SANDBOX_VISIBILITIES: tuple[str, ...] = ("spawned", "all")
#: Most agent-to-agent allow patterns honoured (each becomes one LIKE in the statement).
MAX_ALLOW_PATTERNS = 64


@dataclass(frozen=True)
class AgentToAgent:
    """Agent-to-agent policy: under ``all``, other agents' sessions are visible only when
    enabled and both agent ids match an ``allow`` pattern (``*``, case-insensitive; empty: any)."""

    enabled: bool = False
    allow: Sequence[str] = ()

    def allows(self, agent_id: str) -> bool:
        if not self.allow:
            return True
        return any(fnmatch.fnmatchcase(agent_id.lower(), p.lower()) for p in self.allow)


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


def visible(caller: Caller, s: FromClause, *, for_search: bool = True) -> ColumnElement[bool]:
    """The predicate over the ``sessions`` table (or alias) ``s`` of what ``caller`` may see."""
    c = s.c
    key = caller.session_key
    own = c.session_key == key
    if caller.sandboxed and caller.sandbox_visibility == "spawned":
        pred: ColumnElement[bool] = or_(own, c.spawned_by == key)
    elif caller.visibility == "self":
        pred = own
    else:
        tree = or_(
            own, c.owner_session_key == key, c.spawned_by == key, c.parent_session_key == key
        )
        if caller.visibility == "tree":
            pred = tree
        else:
            agent = caller.effective_agent_id
            pred = or_(tree, c.agent_id == agent)
            if caller.visibility == "all":
                pred = or_(pred, _other_agents(caller, c.agent_id))
    if for_search:
        pred = and_(pred, c.incognito == false())
    return pred


def _other_agents(caller: Caller, column: ColumnElement[str]) -> ColumnElement[bool]:
    """Other agents' sessions under ``all``, per the agent-to-agent policy (a SQL condition)."""
    policy = caller.agent_to_agent
    if not policy.enabled or not policy.allows(caller.effective_agent_id):
        return false()
    patterns = [p for p in list(policy.allow)[:MAX_ALLOW_PATTERNS] if p]
    if not patterns:
        return true()
    return or_(*(func.lower(column).like(_like_pattern(p), escape="\\") for p in patterns))
