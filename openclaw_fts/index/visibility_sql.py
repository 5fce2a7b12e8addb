"""The caller's visibility as SQL: the predicate over ``openclaw_sessions`` every read path puts
inside its statement (search, history, the pending probes, judging an explicit ``sessionKey``),
rendered for the connection's dialect.

Invariant: every value is a bound parameter (``vis_*``), never spliced into the text; the
incognito-key test in SQL (:func:`incognito_key_sql`) and in Python
(``caller.is_incognito_session_key``) are built from the same constants of
:mod:`openclaw_fts.caller`, so they agree. Who may see what is decided by ``visibility.py`` (the
policy); this module only writes it as SQL.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..caller import INCOGNITO_KEY_COLONS, INCOGNITO_KEY_KINDS, KEY_TRIM_CHARS, Caller


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
    parameters): exactly three colons, ``agent:`` + a non-empty id + a kind + ``incognito-`` +
    a non-empty name; LIKE compares ASCII case-insensitively. ``dialect`` ``"postgresql"``
    spells the same expression for PostgreSQL (:func:`_incognito_key_postgresql`); anything
    else is SQLite."""
    if dialect == "postgresql":
        return _incognito_key_postgresql(alias)
    trim = "char(" + ", ".join(str(ord(c)) for c in KEY_TRIM_CHARS) + ")"
    key = f"lower(trim({alias}.session_key, {trim}))"
    # The colons are char(58): a ":name" in the statement text would read as a bound parameter.
    colon = " || char(58) || "
    shapes = " OR ".join(
        f"{key} LIKE ('agent'{colon}'_%'{colon}'{kind}'{colon}'incognito-_%')"
        for kind in INCOGNITO_KEY_KINDS
    )
    colons = f"length({key}) - length(replace({key}, char(58), '')) = {INCOGNITO_KEY_COLONS}"
    # One cheap LIKE first: almost no key holds "incognito-", and then nothing else is computed.
    return f"({alias}.session_key LIKE '%incognito-%' AND ({shapes}) AND {colons})"


def _octal(text: str) -> str:
    """``text`` as a PostgreSQL escape string of octal escapes only (``E'\\072'`` is a colon):
    a constant when the statement is parsed, where ``chr(58) || …`` is an expression folded
    again at every planning, and without a ``:`` that ``text()`` would read as a parameter."""
    return "E'" + "".join(c if c.isalnum() or c in "_%-" else f"\\{ord(c):03o}" for c in text) + "'"


def _incognito_key_postgresql(alias: str) -> str:
    """:func:`incognito_key_sql` spelt for PostgreSQL: ``btrim``, constants as escape strings
    (:func:`_octal`), and the cheap first test ``strpos`` of the lower-cased key: a function
    the planner gives a default selectivity, where ``ILIKE`` on the key column is estimated
    against the column's statistics at every planning (together 0.13 ms of a narrow search's
    0.63 ms of planning at 100k messages, bench/NOTES.md). Each shape below lower-cases
    the key too and holds ``incognito-``, so that first test changes no answer."""
    key = f"lower(btrim({alias}.session_key, {_octal(KEY_TRIM_CHARS)}))"
    shapes = " OR ".join(
        f"{key} LIKE {_octal(f'agent:_%:{kind}:incognito-_%')}" for kind in INCOGNITO_KEY_KINDS
    )
    colons = f"length({key}) - length(replace({key}, {_octal(':')}, '')) = {INCOGNITO_KEY_COLONS}"
    return f"(strpos(lower({alias}.session_key), 'incognito-') > 0 AND ({shapes}) AND {colons})"


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
    The last :data:`PREDICATE_CACHE` predicates are remembered (by caller, alias and
    dialect); each call returns its own parameter dict.
    """
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
