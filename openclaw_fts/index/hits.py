"""What every backend's search does the same way after ranking, in SQL both engines run: the
search's own filters over the ranked index rows, and each hit's searchable text.

Invariant: a hit's text is its stored ``body`` (the masked text) unless CJK was spaced for the
index, in which case it is re-read from its event through the one predicate that makes index
rows (``transcript.index_row``), so a snippet is cut from exactly the text that was indexed;
every value is a bound parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, text

from .. import transcript
from ..jsonsafe import stored_event
from ..rows import Hit, SearchRequest
from ..tokens import body_is_clean_text, clean_text


def user_filters(req: SearchRequest, params: dict[str, Any]) -> str:
    """The search's own filters over index rows ``mi`` (``role``, ``since``, ``until``) as
    ``AND …`` SQL, their values added to ``params``."""
    filters = []
    if req.role is not None:
        filters.append("AND mi.role = :role")
        params["role"] = req.role
    if req.since is not None:
        filters.append("AND mi.timestamp_ms >= :since")
        params["since"] = req.since
    if req.until is not None:
        filters.append("AND mi.timestamp_ms <= :until")
        params["until"] = req.until
    return " ".join(filters)


#: Runs a statement with named parameters and returns its rows (a backend's own cursor).
Execute = Callable[[str, dict[str, Any]], Iterable[Any]]


def _through_sqlalchemy(conn: Connection) -> Execute:
    def run(sql: str, params: dict[str, Any]) -> Iterable[Any]:
        return conn.execute(text(sql), params)

    return run


def hit_texts(
    conn: Connection,
    hits: list[Hit],
    bodies: Mapping[int, str],
    execute: Execute | None = None,
) -> dict[int, str]:
    """Each hit's searchable text by index row id: its stored ``body`` (the masked text) unless
    CJK was spaced for the index, in which case the message is re-read from its event through
    the one predicate (``transcript.index_row``); those events are read in one statement, on
    ``execute`` when given (SQLite: the DBAPI cursor, which spares SQLAlchemy's compiling of a
    statement whose text changes with the number of hits), else through SQLAlchemy."""
    texts: dict[int, str] = {}
    reread: list[Hit] = []
    for hit in hits:
        body = bodies.get(hit[0])
        if body is not None and body_is_clean_text(body):
            texts[hit[0]] = body
        else:
            reread.append(hit)
    originals = _original_texts(conn, [(hit[1], hit[2]) for hit in reread], execute)
    for hit in reread:
        texts[hit[0]] = originals.get((hit[1], hit[2]), "")
    return texts


def _original_texts(
    conn: Connection, keys: list[tuple[str, int]], execute: Execute | None = None
) -> dict[tuple[str, int], str]:
    """The clean message text of each ``(session_id, seq)`` (a search's hits: at most the tools'
    limit + 1), read in one statement."""
    if not keys:
        return {}
    params: dict[str, Any] = {}
    conditions = []
    for n, (session_id, seq) in enumerate(dict.fromkeys(keys)):
        conditions.append(f"(session_id = :sid{n} AND seq = :seq{n})")
        params[f"sid{n}"], params[f"seq{n}"] = session_id, seq
    sql = "SELECT session_id, seq, event FROM transcript_events WHERE " + " OR ".join(conditions)
    run = execute or _through_sqlalchemy(conn)
    rows = run(sql, params)
    texts: dict[tuple[str, int], str] = {}
    for session_id, seq, stored in rows:
        event = stored_event(stored)
        row = transcript.index_row(int(seq), event) if event else None
        texts[(str(session_id), int(seq))] = clean_text(row.text) if row is not None else ""
    return texts
