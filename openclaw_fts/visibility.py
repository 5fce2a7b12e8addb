"""Who may see which sessions: the :class:`Caller`, its policy, and the answers the tools give
about an explicit ``sessionKey`` (the predicate itself is written as SQL by
``index/visibility_sql.py``).

Invariant: visibility is decided by the database, inside the statement that reads the data
(search, history, pending checks, and the access decision on an explicit ``sessionKey``), never
by listing sessions in Python first; the same ``visible`` predicate serves every read path,
so search and history can never disagree. Sessions flagged incognito are never visible to
search; sessions whose KEY has OpenClaw's incognito shape (:func:`is_incognito_session_key`)
are never visible to anything. An explicit key the caller may not see is ``forbidden`` whether
or not it exists (:func:`decide_access` judges a key with no session as a session of that key
would be judged), with OpenClaw's text naming the setting to change (docs/tools.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Connection

from .errors import ToolInputError, shorten
from .index.visibility_sql import (
    _INCOGNITO_KEY_COLONS,
    _INCOGNITO_REST_RE,
    KEY_TRIM_CHARS,
)
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


def is_incognito_session_key(session_key: object) -> bool:
    """OpenClaw's ``isIncognitoSessionKey``: ``agent:<id>:<kind>:incognito-<name>`` (any case,
    surrounding whitespace ignored), ``<kind>`` one of :data:`INCOGNITO_KEY_KINDS`."""
    if not isinstance(session_key, str):
        return False
    parts = session_key.strip(KEY_TRIM_CHARS).lower().split(":")
    if len(parts) < _INCOGNITO_KEY_COLONS or parts[0] != "agent" or not parts[1]:
        return False
    return _INCOGNITO_REST_RE.match(":".join(parts[2:])) is not None


# --------------------------------------------------------------------------- explicit keys

#: OpenClaw's session id shape (a UUID); such a ``sessionKey`` is looked up as a session id.
SESSION_ID_RE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z", re.IGNORECASE
)
#: Bare words that are session keys (aliases), never session ids.
KEY_WORDS: tuple[str, ...] = ("main", "global", "unknown", "current")
#: Prefixes and infixes of the key shapes OpenClaw never treats as a session id.
KEY_PREFIXES: tuple[str, ...] = ("agent:", "acp:", "cron:", "hook:", "node-", "node:")
KEY_INFIXES: tuple[str, ...] = (":group:", ":channel:")
#: The alias of the caller's own session key.
CURRENT_ALIAS = "current"
#: The alias of the caller's agent's main session (``agent:<agent id>:main``).
MAIN_ALIAS = "main"

Action = Literal["search", "history"]


def looks_like_session_key(raw: str) -> bool:
    """OpenClaw's ``looksLikeSessionKey``: a shape that is a key, never a session id."""
    raw = raw.strip()
    if not raw:
        return False
    return (
        raw in KEY_WORDS
        or raw.startswith(KEY_PREFIXES)
        or any(infix in raw for infix in KEY_INFIXES)
    )


def is_session_id_input(raw: str) -> bool:
    """OpenClaw's ``shouldResolveSessionIdInput``: a UUID, or anything not shaped like a key,
    may be a session id (it is looked up as a key first)."""
    return SESSION_ID_RE.match(raw.strip()) is not None or not looks_like_session_key(raw)


# OpenClaw's advice in its refusals names its own configuration; the command line, whose fix is
# a flag or a command, translates exactly these texts (cli.py).
#: After ``Session not found: <raw>``.
NOT_FOUND_ADVICE = "(use the full sessionKey from sessions_list)"
#: Another agent's session, under a visibility other than ``all``.
CROSS_AGENT_ADVICE = (
    "Set tools.sessions.visibility=all to allow cross-agent access; use tools.agentToAgent to "
    "restrict permitted agent pairs."
)
#: Another agent's session, agent-to-agent off.
AGENT_TO_AGENT_ADVICE = "Set tools.agentToAgent.enabled=true to allow cross-agent access."
#: Another agent's session, not matched by the allow list.
ALLOW_LIST_ADVICE = "denied by tools.agentToAgent.allow."
#: Under ``self`` / ``tree``.
SELF_ADVICE = "(tools.sessions.visibility=self)."
TREE_ADVICE = "(tools.sessions.visibility=tree)."


def not_found_error(raw: str) -> dict[str, Any]:
    """OpenClaw's answer for a session id (or id-shaped key) that names no session."""
    return {
        "status": "error",
        "error": f"Session not found: {shorten(raw)} {NOT_FOUND_ADVICE}",
    }


def _forbidden(message: str) -> dict[str, Any]:
    return {"status": "forbidden", "error": message}


def incognito_denial(shown: str) -> dict[str, Any]:
    """OpenClaw's text for a session no session tool may name."""
    return _forbidden(f"Session not visible from session tools: {shorten(shown)}")


def _sandbox_denial(shown: str) -> dict[str, Any]:
    return _forbidden(f"Session not visible from this sandboxed agent session: {shorten(shown)}")


def denial_text(caller: Caller, action: Action, *, target_agent: str) -> str:
    """OpenClaw's text (``renderSessionVisibilityDenial``) for a session of ``target_agent``
    the caller may not see; each names the setting that would allow it."""
    visibility = caller.effective_visibility
    if target_agent != caller.effective_agent_id:
        policy = caller.agent_to_agent
        if visibility != "all":
            return f"Session {action} visibility is restricted. {CROSS_AGENT_ADVICE}"
        if not policy.enabled:
            return f"Agent-to-agent {action} is disabled. {AGENT_TO_AGENT_ADVICE}"
        return f"Agent-to-agent {action} {ALLOW_LIST_ADVICE}"
    if visibility == "self":
        return f"Session {action} visibility is restricted to the current session {SELF_ADVICE}"
    return f"Session {action} visibility is restricted to the current session tree {TREE_ADVICE}"


@dataclass(frozen=True)
class Target:
    """An explicit ``sessionKey`` resolved to a key the caller may see."""

    session_key: str
    #: Whether any session has this key (a visible key with no session is not an error for
    #: search, which then finds nothing).
    exists: bool


def _spawned_only(caller: Caller) -> bool:
    return caller.sandboxed and caller.sandbox_visibility == "spawned"


def resolve_target(
    conn: Connection, caller: Caller, raw: str, *, action: Action
) -> Target | dict[str, Any]:
    """An explicit ``sessionKey`` (a key, an alias or a session id) resolved and judged.

    ``current`` is the caller's own key, ``main`` its agent's ``agent:<id>:main``; a UUID or a
    value not shaped like a key is looked up as a key, then as a session id (OpenClaw's
    ``Session not found`` when it names nothing). The resolved key is then judged by the SQL
    predicate (search: :func:`visible` with ``for_search``) — as a session of that key would be
    when none exists, so the answer never tells whether a hidden key exists. Returns the
    :class:`Target`, or the ``forbidden`` / ``error`` result to return.
    """
    shown = raw.strip()
    if shown == CURRENT_ALIAS:
        key = caller.session_key
    elif shown == MAIN_ALIAS:
        key = f"agent:{caller.effective_agent_id}:{MAIN_ALIAS}"
    elif is_session_id_input(shown):
        from .index import sessions_sql  # it renders visible(): imported on use

        found = sessions_sql.lookup_key(
            conn, shown, scope_key=caller.session_key if _spawned_only(caller) else None
        )
        if found is None:
            return _sandbox_denial(shown) if _spawned_only(caller) else not_found_error(shown)
        key = found
    else:
        key = shown
    if is_incognito_session_key(key):
        return incognito_denial(shown)
    from .index import sessions_sql

    virtual_agent = agent_id_from_key(key) or caller.effective_agent_id
    seen, stored, agent, incognito = sessions_sql.judge_key(
        conn, caller, key, virtual_agent, for_search=action == "search"
    )
    if seen:
        return Target(key, exists=stored)
    if incognito and action == "search":
        return incognito_denial(shown)
    return _forbidden(denial_text(caller, action, target_agent=agent))
