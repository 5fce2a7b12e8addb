"""Who may see which sessions: a :class:`Caller` compiled into a SQL predicate over
``openclaw_sessions``.

Invariant: visibility is decided by the database, inside the statement that reads the data
(search, history, pending checks, and the access decision on an explicit ``sessionKey``), never
by listing sessions in Python first; the same :func:`visible` predicate serves every read path,
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


def _like_pattern(pattern: str) -> str:
    escaped = pattern.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


@dataclass(frozen=True)
class Predicate:
    """A SQL boolean expression with its bound parameters (names prefixed ``vis_``)."""

    sql: str
    #: None: a value no stored row holds (a NUL on PostgreSQL), so its comparison is never true.
    params: dict[str, str | None]
    #: True when the predicate admits every session that is neither flagged incognito nor
    #: keyed like one (:func:`incognito_key_sql`).
    everything: bool = False


# --------------------------------------------------------------------------- incognito keys

#: The session kinds whose ``agent:<id>:<kind>:incognito-<name>`` keys are incognito (OpenClaw's
#: ``isIncognitoSessionKey``): process-only sessions, never indexed, listed or read.
INCOGNITO_KEY_KINDS: tuple[str, ...] = ("dashboard", "subagent", "internal-session-effects")
#: Characters trimmed off a key before its shape is judged (the same in SQL and in Python).
KEY_TRIM_CHARS = " \t\n\r\v\f"
_INCOGNITO_REST_RE = re.compile(
    "(?:" + "|".join(re.escape(k) for k in INCOGNITO_KEY_KINDS) + r"):incognito-[^:]+\Z"
)
#: Colons in an incognito key: ``agent`` : id : kind : ``incognito-<name>``.
_INCOGNITO_KEY_COLONS = 3


def is_incognito_session_key(session_key: object) -> bool:
    """OpenClaw's ``isIncognitoSessionKey``: ``agent:<id>:<kind>:incognito-<name>`` (any case,
    surrounding whitespace ignored), ``<kind>`` one of :data:`INCOGNITO_KEY_KINDS`."""
    if not isinstance(session_key, str):
        return False
    parts = session_key.strip(KEY_TRIM_CHARS).lower().split(":")
    if len(parts) < _INCOGNITO_KEY_COLONS or parts[0] != "agent" or not parts[1]:
        return False
    return _INCOGNITO_REST_RE.match(":".join(parts[2:])) is not None


def incognito_key_sql(alias: str = "s", *, dialect: str = "sqlite") -> str:
    """:func:`is_incognito_session_key` of ``alias.session_key`` as a SQL expression (no
    parameters): exactly three colons, ``agent:`` + a non-empty id + a kind + ``incognito-`` +
    a non-empty name; LIKE compares ASCII case-insensitively. ``dialect`` ``"postgresql"``
    spells the same expression for PostgreSQL (``chr``, ``btrim``); anything else is SQLite."""
    like = "LIKE"
    if dialect == "postgresql":
        like = "ILIKE"  # PostgreSQL's LIKE is case-sensitive; SQLite's folds ASCII
        char = "chr"
        trim = "(" + " || ".join(f"chr({ord(c)})" for c in KEY_TRIM_CHARS) + ")"
        key = f"lower(btrim({alias}.session_key, {trim}))"
    else:
        char = "char"
        trim = "char(" + ", ".join(str(ord(c)) for c in KEY_TRIM_CHARS) + ")"
        key = f"lower(trim({alias}.session_key, {trim}))"
    # The colons are char(58): a ":name" in the statement text would read as a bound parameter.
    colon = f" || {char}(58) || "
    shapes = " OR ".join(
        f"{key} LIKE ('agent'{colon}'_%'{colon}'{kind}'{colon}'incognito-_%')"
        for kind in INCOGNITO_KEY_KINDS
    )
    colons = f"length({key}) - length(replace({key}, {char}(58), '')) = {_INCOGNITO_KEY_COLONS}"
    # One cheap LIKE first: almost no key holds "incognito-", and then nothing else is computed.
    return f"({alias}.session_key {like} '%incognito-%' AND ({shapes}) AND {colons})"


def visible(
    caller: Caller, alias: str = "s", *, for_search: bool = True, dialect: str = "sqlite"
) -> Predicate:
    """What ``caller`` may see, as a predicate over the ``openclaw_sessions`` table aliased
    ``alias``.

    * ``self``: the caller's own key; ``tree``: plus sessions it owns, spawned or parents (in
      any agent); ``agent``: its own key plus every session of its own agent (sessions it owns
      in ANOTHER agent are not visible); ``all``: ``tree`` plus its own agent plus other agents
      allowed by the agent-to-agent policy. A sandboxed caller limited to ``spawned`` sees its
      own key and the sessions it spawned.
    * Never a session keyed like an incognito one; with ``for_search`` never one flagged
      incognito either.

    Plain SQL text (no per-call SQLAlchemy compilation: it is built on every search); every
    value is a bound parameter (``:name``), never spliced into the text. ``dialect``
    ``"postgresql"`` renders it for PostgreSQL (booleans are not integers there; see
    :func:`incognito_key_sql`), to be run through SQLAlchemy ``text()``; anything else is SQLite.
    """
    a = alias
    params: dict[str, str] = {"vis_key": caller.session_key}
    everything = False
    own = f"{a}.session_key = :vis_key"
    tree = (
        f"{own} OR {a}.owner_session_key = :vis_key OR {a}.spawned_by = :vis_key "
        f"OR {a}.parent_session_key = :vis_key"
    )
    if caller.sandboxed and caller.sandbox_visibility == "spawned":
        sql = f"({own} OR {a}.spawned_by = :vis_key)"
    elif caller.visibility == "self":
        sql = own
    elif caller.visibility == "tree":
        sql = f"({tree})"
    else:
        params["vis_agent"] = caller.effective_agent_id
        same_agent = f"{a}.agent_id = :vis_agent"
        if caller.visibility == "agent":
            sql = f"({own} OR {same_agent})"
        else:
            others = _other_agents(caller, a, params)
            everything = others == [_ANY_AGENT]
            sql = "(" + " OR ".join([tree, same_agent, *others]) + ")"
    sql = f"({sql} AND NOT {incognito_key_sql(a, dialect=dialect)})"
    if for_search:
        incognito = f"NOT {a}.incognito" if dialect == "postgresql" else f"{a}.incognito = 0"
        sql = f"({sql} AND {incognito})"
    bound: dict[str, str | None] = dict(params)
    if dialect == "postgresql" and any("\x00" in v for v in params.values()):
        # PostgreSQL text cannot hold NUL (nor can a bound value): no stored key or agent id
        # equals, or is LIKE, a value holding one. Bound as NULL, such a comparison is never
        # true, and every parameter sits in the OR-ed part of the predicate (nothing negates
        # it), so the predicate admits exactly what it would with that comparison false --
        # what SQLite answers for a key no session has.
        bound = {k: (None if "\x00" in v else v) for k, v in params.items()}
    return Predicate(sql, bound, everything=everything and for_search)


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


def not_found_error(raw: str) -> dict[str, Any]:
    """OpenClaw's answer for a session id (or id-shaped key) that names no session."""
    return {
        "status": "error",
        "error": f"Session not found: {shorten(raw)} (use the full sessionKey from sessions_list)",
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
            return (
                f"Session {action} visibility is restricted. Set tools.sessions.visibility=all "
                "to allow cross-agent access; use tools.agentToAgent to restrict permitted "
                "agent pairs."
            )
        if not policy.enabled:
            return (
                f"Agent-to-agent {action} is disabled. Set tools.agentToAgent.enabled=true to "
                "allow cross-agent access."
            )
        return f"Agent-to-agent {action} denied by tools.agentToAgent.allow."
    if visibility == "self":
        return (
            f"Session {action} visibility is restricted to the current session "
            "(tools.sessions.visibility=self)."
        )
    return (
        f"Session {action} visibility is restricted to the current session tree "
        "(tools.sessions.visibility=tree)."
    )


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
