"""The caller's visibility as SQL: the predicate over ``openclaw_sessions`` every read path puts
inside its statement (search, history, the pending probes, judging an explicit ``sessionKey``),
in the spellings of the connection's engine (:mod:`.dialect_sql`: no dialect is named here).

Invariant: every value is a bound parameter (``vis_*``), never spliced into the text; the
incognito-key test in SQL (each engine's ``incognito_key``) and in Python
(``caller.is_incognito_session_key``) are built from the same constants of
:mod:`openclaw_fts.caller`, so they agree. Who may see what is decided by ``visibility.py`` (the
policy); this module only writes it as SQL.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..caller import Caller

if TYPE_CHECKING:
    from sqlalchemy import Connection
from .dialect_sql import spelt_for


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


def incognito_key_sql(alias: str = "s", *, dialect: str = "sqlite") -> str:
    """:func:`is_incognito_session_key` of ``alias.session_key`` as a SQL expression (no
    parameters), spelt by the engine of ``dialect`` (:mod:`.dialect_sql`): exactly three
    colons, ``agent:`` + a non-empty id + a kind + ``incognito-`` + a non-empty name, compared
    ASCII case-insensitively, after trimming :data:`~openclaw_fts.caller.KEY_TRIM_CHARS`."""
    return spelt_for(dialect).incognito_key(alias)


def visible(
    caller: Caller,
    alias: str = "s",
    *,
    for_search: bool = True,
    dialect: str = "sqlite",
    on: Connection | None = None,
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
    value is a bound parameter (``:name``), never spliced into the text. ``dialect``: the
    engine whose spellings it takes (:mod:`.dialect_sql`; booleans are not integers on
    PostgreSQL), to be run through SQLAlchemy ``text()``; ``on``: the connection the predicate
    will run on, whose engine's spellings it takes instead.
    The last :data:`PREDICATE_CACHE` predicates are remembered (by caller, alias and
    dialect); each call returns its own parameter dict.
    """
    if on is not None:
        dialect = on.dialect.name
    try:
        cached = _visible_cached(caller, alias, for_search, dialect)
    except TypeError:  # a caller holding something unhashable (an ``allow`` list)
        cached = _visible(caller, alias, for_search, dialect)
    return Predicate(cached.sql, dict(cached.params), everything=cached.everything)


def _visible(caller: Caller, alias: str, for_search: bool, dialect: str) -> Predicate:
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
    spelt = spelt_for(dialect)
    sql = f"({sql} AND NOT {spelt.incognito_key(a)})"
    if for_search:
        sql = f"({sql} AND {spelt.not_flagged(f'{a}.incognito')})"
    # A value no stored text can hold (PostgreSQL: a NUL, which a bound value cannot hold
    # either) equals, and is LIKE, no stored key or agent id. Bound as NULL, such a comparison
    # is never true, and every parameter sits in the OR-ed part of the predicate (nothing
    # negates it), so the predicate admits exactly what it would with that comparison false --
    # what SQLite answers for a key no session has.
    bound: dict[str, str | None] = {
        k: (None if spelt.cannot_hold(v) else v) for k, v in params.items()
    }
    return Predicate(sql, bound, everything=everything and for_search)


#: Predicates :func:`visible` remembers (a caller searches again and again).
PREDICATE_CACHE = 256
_visible_cached = functools.lru_cache(maxsize=PREDICATE_CACHE)(_visible)
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
