"""The read statements about sessions themselves (not the text index) that the tools run:
resolving a ``sessionKey`` to a stored key, judging whether the caller may reach it, and listing
a key's visible incarnations and reading a session's events for history.

Invariant: each is one statement, the caller's visibility (:func:`.visibility_sql.visible`)
inside it, with every value bound; the SQL is the same on SQLite and PostgreSQL (booleans read
through ``CASE WHEN``, literals ``TRUE`` / ``FALSE``) but for what each engine spells itself
(:mod:`.dialect_sql`: no dialect is named here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from ..caller import agent_id_from_key, is_incognito_session_key
from ..jsonsafe import stored_event
from .dialect_sql import dialect_sql
from .visibility_sql import visible

if TYPE_CHECKING:
    from ..caller import Caller


def _unstorable(conn: Connection, value: str) -> bool:
    """A value no row of this engine can hold (PostgreSQL text: a NUL), so it matches none."""
    return dialect_sql(conn).cannot_hold(value)


def lookup_key(conn: Connection, raw: str, *, scope_key: str | None) -> str | None:
    """The session key ``raw`` names: a stored key, else the key of the session whose id it is;
    ``scope_key``: only among that key's own session and the sessions it spawned."""
    if _unstorable(conn, raw):
        return None
    scope = ""
    params: dict[str, str] = {"raw": raw}
    if scope_key is not None:
        scope = " AND (s.session_key = :me OR s.spawned_by = :me)"
        params["me"] = scope_key
    row = conn.execute(
        text(
            f"SELECT s.session_key FROM openclaw_sessions AS s WHERE s.session_key = :raw{scope} "
            "LIMIT 1"
        ),
        params,
    ).first()
    if row is None:
        row = conn.execute(
            text(
                f"SELECT s.session_key FROM openclaw_sessions AS s WHERE s.session_id = :raw{scope}"
            ),
            params,
        ).first()
    return None if row is None else str(row[0])


def judge_key(
    conn: Connection, caller: Caller, key: str, *, for_search: bool
) -> tuple[bool, bool, str, bool] | None:
    """``(visible, stored, agent_id, incognito)`` of ``key`` for ``caller``: judged as its stored
    sessions are, or — none stored — as a session of that key in the key's agent (``agent:<id>:…``;
    else the caller's) would be (so the answer never tells whether a hidden key exists). None,
    without a statement: the key has OpenClaw's incognito shape, which no session tool may
    name (:func:`~openclaw_fts.caller.is_incognito_session_key`)."""
    pred = visible(caller, "s", for_search=for_search, on=conn)
    if is_incognito_session_key(key):
        return None
    virtual_agent = agent_id_from_key(key) or caller.effective_agent_id
    params: dict[str, Any] = {**pred.params, "acc_key": key, "acc_agent": virtual_agent}
    stored = (
        "SELECT s0.session_key, s0.agent_id, s0.owner_session_key, s0.spawned_by, "
        "s0.parent_session_key, s0.incognito, 1 AS stored FROM openclaw_sessions AS s0 "
        "WHERE s0.session_key = :acc_key UNION ALL "
    )
    unstored = (
        "WHERE NOT EXISTS (SELECT 1 FROM openclaw_sessions AS s1 WHERE s1.session_key = :acc_key)"
    )
    spelt = dialect_sql(conn)
    new_only = spelt.cannot_hold(key)  # no stored session can hold it
    if spelt.cannot_hold(virtual_agent):  # a new session's agent, never a stored one's
        params["acc_agent"] = virtual_agent.replace("\x00", "\ufffd")
        new_only = (
            new_only
            or not conn.execute(
                text("SELECT EXISTS (SELECT 1 FROM openclaw_sessions WHERE session_key = :k)"),
                {"k": key},
            ).scalar()
        )
    if new_only:
        # No stored session has the key: judged as a new one, on values with NUL read as
        # U+FFFD (one character for one: the key's shape, incognito or not, is kept). That new
        # row is the only one judged, and its key and agent are the only non-NULL values the
        # caller's are compared with: each caller value is bound as the row's when the
        # originals are equal, and as NULL (never equal) when they differ.
        stored = unstored = ""
        params["acc_key"] = key.replace("\x00", "\ufffd")
        params["vis_key"] = params["acc_key"] if caller.session_key == key else None
        if "vis_agent" in params:
            same = caller.effective_agent_id == virtual_agent
            params["vis_agent"] = params["acc_agent"] if same else None
    row = conn.execute(
        text(
            f"SELECT coalesce(max(CASE WHEN {pred.sql} THEN 1 ELSE 0 END), 0), "
            "coalesce(sum(s.stored), 0), max(s.agent_id), "
            "coalesce(max(CASE WHEN s.incognito THEN 1 ELSE 0 END), 0) FROM ("
            f"{stored}"
            "SELECT :acc_key AS session_key, :acc_agent AS agent_id, NULL AS owner_session_key, "
            "NULL AS spawned_by, NULL AS parent_session_key, FALSE AS incognito, 0 AS stored "
            f"{unstored}) AS s"
        ),
        params,
    ).one()
    # None stored: the new session's agent (the bound one may stand in for a NUL).
    agent = str(row[2]) if row[1] else virtual_agent
    return bool(row[0]), bool(row[1]), agent, bool(row[3])


def incarnations(
    conn: Connection, caller: Caller, session_key: str, session_id: str | None
) -> list[str]:
    """The incarnations (session ids) of ``session_key`` the caller may read, newest first;
    only ``session_id`` when given."""
    if _unstorable(conn, session_key) or (session_id is not None and _unstorable(conn, session_id)):
        return []
    pred = visible(caller, "s", for_search=False, on=conn)
    where = "s.session_key = :k" + (" AND s.session_id = :sid" if session_id is not None else "")
    rows = conn.execute(
        text(
            f"SELECT s.session_id FROM openclaw_sessions AS s WHERE {where} AND {pred.sql} "
            "ORDER BY s.created_at DESC, s.session_id DESC"
        ),
        {**pred.params, "k": session_key, "sid": session_id},
    ).all()
    return [str(r[0]) for r in rows]


def events(conn: Connection, session_id: str) -> list[tuple[int, dict[str, Any]]]:
    """Every stored event of a session as ``(seq, event)``, in seq order (a row that is not a
    JSON object reads as ``{}``)."""
    rows = conn.execute(
        text("SELECT seq, event FROM transcript_events WHERE session_id = :sid ORDER BY seq"),
        {"sid": session_id},
    )
    return [(int(seq), stored_event(raw)) for seq, raw in rows]


def stored_key(conn: Connection, session_id: str) -> str | None:
    """The key session ``session_id`` is stored under (None: no such session)."""
    if _unstorable(conn, session_id):
        return None
    row = conn.execute(
        text("SELECT session_key FROM openclaw_sessions WHERE session_id = :sid"),
        {"sid": session_id},
    ).first()
    return None if row is None else str(row[0])


def newest_session_of_key(conn: Connection, session_key: str) -> str | None:
    """The current (newest) session id stored under ``session_key`` (None: the key is free)."""
    if _unstorable(conn, session_key):
        return None
    row = conn.execute(
        text(
            "SELECT session_id FROM openclaw_sessions WHERE session_key = :k "
            "ORDER BY created_at DESC, session_id DESC LIMIT 1"
        ),
        {"k": session_key},
    ).first()
    return None if row is None else str(row[0])


#: ``sessions_list`` kinds (OpenClaw's ``classifySessionKind``) as SQL over ``s.session_key``,
#: most specific first; each pattern is a bound parameter (a ``:`` in the statement text would
#: read as one). ``main``: an agent's main key (``agent:<id>:main``); ``group``: a group or
#: channel conversation.
_KIND_PREFIXES = (("cron", "cron:"), ("hook", "hook:"), ("node", "node:"), ("node", "node-"))
_KIND_INFIXES = (
    ("cron", ":cron:"),
    ("hook", ":hook:"),
    ("group", ":group:"),
    ("group", ":channel:"),
)
SESSION_KINDS = ("main", "group", "cron", "hook", "node", "other")


def _contains(conn: Connection, haystack: str, needle: str) -> str:
    """``needle`` occurs in ``haystack``, case-sensitively, in the engine's spelling."""
    return dialect_sql(conn).contains(haystack, needle)


def _kind_sql(conn: Connection, params: dict[str, Any]) -> str:
    # An agent's main key: agent:<id>:main (two colons), or the bare main / global keys.
    params.update(kind_agent="agent:", kind_main_end=":main", kind_colon=":")
    main = (
        "substr(s.session_key, 1, 6) = :kind_agent AND length(s.session_key) > 11 "
        "AND substr(s.session_key, length(s.session_key) - 4) = :kind_main_end "
        "AND length(s.session_key) - length(replace(s.session_key, :kind_colon, '')) = 2"
    )
    whens = [f"WHEN s.session_key IN ('main', 'global') OR ({main}) THEN 'main'"]
    for n, (kind, prefix) in enumerate(_KIND_PREFIXES):
        params[f"kind_p{n}"] = prefix
        whens.append(f"WHEN substr(s.session_key, 1, {len(prefix)}) = :kind_p{n} THEN '{kind}'")
    for n, (kind, infix) in enumerate(_KIND_INFIXES):
        params[f"kind_i{n}"] = infix
        whens.append(f"WHEN {_contains(conn, 's.session_key', f':kind_i{n}')} THEN '{kind}'")
    return "CASE " + " ".join(whens) + " ELSE 'other' END"


def list_sessions(
    conn: Connection,
    caller: Caller,
    *,
    limit: int,
    kinds: tuple[str, ...] | None = None,
    agent_id: str | None = None,
    search: str | None = None,
    active_since_ms: int | None = None,
    count_messages: bool = False,
) -> list[dict[str, Any]]:
    """The session keys the caller may see, newest activity first, each with its current
    incarnation (the newest the caller may read): ``key``, ``sessionId``, ``agentId``,
    ``kind``, ``spawnedBy``, ``parentSessionKey``, ``lastActivityMs`` (the last event's time),
    ``createdAt``, ``pending`` (not yet exactly indexed), ``incognito`` and, with
    ``count_messages``, ``messages`` (its message events, every branch).

    Visibility, every filter, the order and the limit are in the one statement, so hidden
    sessions never count against the limit. ``search``: a case-insensitive (ASCII) substring of
    the key or the session id."""
    from .pending import PENDING_CONDITION

    values = [agent_id, search]
    if any(v is not None and _unstorable(conn, v) for v in values):
        return []
    pred = visible(caller, "s", for_search=False, on=conn)
    newer = visible(caller, "n", for_search=False, on=conn)
    params: dict[str, Any] = {**pred.params, **newer.params, "lim": limit}
    kind = _kind_sql(conn, params)
    last = (
        "coalesce((SELECT e.timestamp_ms FROM transcript_events AS e "
        "WHERE e.session_id = s.session_id AND e.seq = s.last_seq), "
        "(SELECT max(e.timestamp_ms) FROM transcript_events AS e "
        "WHERE e.session_id = s.session_id))"
    )
    messages = (
        "(SELECT count(*) FROM transcript_events AS e WHERE e.session_id = s.session_id "
        "AND e.type = 'message')"
        if count_messages
        else "NULL"
    )
    where = [
        pred.sql,
        # The current incarnation: no newer one of the key that the caller may read.
        "NOT EXISTS (SELECT 1 FROM openclaw_sessions AS n WHERE n.session_key = s.session_key "
        "AND (n.created_at > s.created_at OR (n.created_at = s.created_at "
        f"AND n.session_id > s.session_id)) AND {newer.sql})",
    ]
    if agent_id is not None:
        where.append("s.agent_id = :agent")
        params["agent"] = agent_id
    if search is not None:
        params["needle"] = search.lower()
        where.append(
            f"({_contains(conn, 'lower(s.session_key)', ':needle')} "
            f"OR {_contains(conn, 'lower(s.session_id)', ':needle')})"
        )
    if kinds is not None:
        marks = []
        for n, wanted in enumerate(kinds):
            params[f"want{n}"] = wanted
            marks.append(f":want{n}")
        where.append(f"({kind}) IN ({', '.join(marks)})")
    if active_since_ms is not None:
        params["since"] = active_since_ms
        where.append(f"{last} >= :since")
    sql = (
        "SELECT * FROM ("
        f"SELECT s.session_key, s.session_id, s.agent_id, {kind} AS kind, s.spawned_by, "
        f"s.parent_session_key, {last} AS last_ms, s.created_at, "
        f"CASE WHEN {PENDING_CONDITION} THEN 1 ELSE 0 END AS pending, "
        "CASE WHEN s.incognito THEN 1 ELSE 0 END AS incognito, "
        f"{messages} AS messages "
        "FROM openclaw_sessions AS s "
        "LEFT JOIN openclaw_index_state AS st ON st.session_id = s.session_id "
        f"WHERE {' AND '.join(where)}) AS q "
        # Newest activity first; sessions without a timed event last.
        "ORDER BY CASE WHEN q.last_ms IS NULL THEN 1 ELSE 0 END, q.last_ms DESC, "
        "q.created_at DESC, q.session_key LIMIT :lim"
    )
    rows = conn.execute(text(sql), params).all()
    return [
        {
            "key": str(r[0]),
            "sessionId": str(r[1]),
            "agentId": str(r[2]),
            "kind": str(r[3]),
            "spawnedBy": r[4],
            "parentSessionKey": r[5],
            "lastActivityMs": None if r[6] is None else int(r[6]),
            "createdAt": r[7],
            "pending": bool(r[8]),
            "incognito": bool(r[9]),
            "messages": None if r[10] is None else int(r[10]),
        }
        for r in rows
    ]
