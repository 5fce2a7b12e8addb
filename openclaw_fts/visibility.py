"""Who may see which sessions: the policy over a :class:`~openclaw_fts.caller.Caller` (the value
itself lives in :mod:`openclaw_fts.caller`, re-exported here), and the answers the tools give
about an explicit ``sessionKey`` (the predicate itself is written as SQL by
``index/visibility_sql.py``).

Invariant: visibility is decided by the database, inside the statement that reads the data
(search, history, pending checks, and the access decision on an explicit ``sessionKey``), never
by listing sessions in Python first; the same ``visible`` predicate serves every read path,
so search and history can never disagree. Sessions flagged incognito are never visible to
search; sessions whose KEY has OpenClaw's incognito shape (:func:`is_incognito_session_key`)
are never visible to anything. An explicit key the caller may not see is ``forbidden`` whether
or not it exists (:func:`resolve_target` judges a key with no session as a session of that key
would be judged), with OpenClaw's text naming the setting to change (docs/tools.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Connection

from .caller import MAX_ALLOW_PATTERNS as MAX_ALLOW_PATTERNS
from .caller import SANDBOX_VISIBILITIES as SANDBOX_VISIBILITIES
from .caller import VISIBILITIES as VISIBILITIES
from .caller import AgentToAgent as AgentToAgent
from .caller import Caller as Caller
from .caller import SandboxVisibility as SandboxVisibility
from .caller import Visibility as Visibility
from .caller import agent_id_from_key as agent_id_from_key
from .caller import is_incognito_session_key as is_incognito_session_key
from .errors import shorten
from .index import sessions_sql

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


def denial_text(caller: Caller, action: Action, *, other_agent: bool) -> str:
    """OpenClaw's text (``renderSessionVisibilityDenial``) for a session the caller may not
    see, of another agent (``other_agent``) or of its own; each names the setting that would
    allow it."""
    visibility = caller.effective_visibility
    if other_agent:
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
    # What the caller is told about a session of its own agent, or of another, that it may
    # not see (decided from the caller alone, before the key is judged).
    own_denial = _forbidden(denial_text(caller, action, other_agent=False))
    other_denial = _forbidden(denial_text(caller, action, other_agent=True))
    if shown == CURRENT_ALIAS:
        key = caller.session_key
    elif shown == MAIN_ALIAS:
        key = f"agent:{caller.effective_agent_id}:{MAIN_ALIAS}"
    elif is_session_id_input(shown):
        found = sessions_sql.lookup_key(
            conn, shown, scope_key=caller.session_key if _spawned_only(caller) else None
        )
        if found is None:
            return _sandbox_denial(shown) if _spawned_only(caller) else not_found_error(shown)
        key = found
    else:
        key = shown
    judged = sessions_sql.judge_key(conn, caller, key, for_search=action == "search")
    if judged is None:  # OpenClaw's incognito key shape
        return incognito_denial(shown)
    seen, stored, agent, incognito = judged
    if seen:
        return Target(key, exists=stored)
    if incognito and action == "search":
        return incognito_denial(shown)
    return own_denial if agent == caller.effective_agent_id else other_denial
