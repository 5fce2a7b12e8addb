"""SQL text that every supported dialect runs unchanged, shared by the backends.

Invariant: this is the ONE definition of "pending" — a session whose index state is missing,
flagged ``needs_rebuild``, behind its ``last_seq`` or written at another ``INDEX_VERSION`` —
as SQL (:data:`PENDING_CONDITION`, :data:`EXACT_JOIN`) and as Python (:func:`is_exact`); the
three are kept next to each other so they cannot drift. Booleans are compared with ``TRUE`` /
``FALSE`` literals, which SQLite (3.23+) and PostgreSQL both read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, text

from .. import transcript
from ..jsonsafe import stored_event
from ..rows import INDEX_VERSION, Hit, SearchRequest, StateRow
from ..tokens import body_is_clean_text, clean_text

#: "This session is pending", over ``openclaw_sessions s LEFT JOIN openclaw_index_state st``.
PENDING_CONDITION = (
    "(st.id IS NULL OR st.needs_rebuild = TRUE OR st.indexed_seq < s.last_seq "
    f"OR st.index_version != {INDEX_VERSION})"
)
#: The same definition inverted as a join condition: ``st`` exists and the session is exact.
EXACT_JOIN = (
    "st.session_id = s.session_id AND st.needs_rebuild = FALSE "
    f"AND st.indexed_seq >= s.last_seq AND st.index_version = {INDEX_VERSION}"
)


def is_exact(state: StateRow | None, last_seq: int) -> bool:
    """:data:`PENDING_CONDITION` negated, for a state already in hand."""
    return (
        state is not None
        and not state.needs_rebuild
        and state.indexed_seq >= last_seq
        and state.index_version == INDEX_VERSION
    )


# --------------------------------------------------------------------------- the lease table
# The reconciler's lease row (``reconcile_lease``): portable SQL through SQLAlchemy, so the
# driver's own parameter style is used on every dialect.


def read_lease(conn: Connection, name: str) -> tuple[str, float] | None:
    """``(holder, expires_at)`` of the lease ``name``, if any row holds it."""
    row = conn.execute(
        text("SELECT holder, expires_at FROM reconcile_lease WHERE name = :n"), {"n": name}
    ).first()
    return None if row is None else (str(row[0]), float(row[1]))


def take_lease(conn: Connection, name: str, holder: str, expires_at: float) -> None:
    """Write ``holder`` as the lease's holder until ``expires_at`` (insert or overwrite)."""
    conn.execute(
        text(
            "INSERT INTO reconcile_lease (name, holder, expires_at) VALUES (:n, :h, :e) "
            "ON CONFLICT (name) DO UPDATE SET holder = :h, expires_at = :e"
        ),
        {"n": name, "h": holder, "e": expires_at},
    )


def renew_lease(conn: Connection, name: str, holder: str, expires_at: float) -> bool:
    """Extend the lease if ``holder`` still holds it; False if it was taken over."""
    result = conn.execute(
        text("UPDATE reconcile_lease SET expires_at = :e WHERE name = :n AND holder = :h"),
        {"n": name, "h": holder, "e": expires_at},
    )
    return bool(result.rowcount)


def drop_lease(conn: Connection, name: str, holder: str) -> None:
    """Give the lease up (only if ``holder`` holds it)."""
    conn.execute(
        text("DELETE FROM reconcile_lease WHERE name = :n AND holder = :h"),
        {"n": name, "h": holder},
    )


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


def hit_texts(conn: Connection, hits: list[Hit], bodies: Mapping[int, str]) -> dict[int, str]:
    """Each hit's searchable text by index row id: its stored ``body`` (the masked text) unless
    CJK was spaced for the index, in which case the message is re-read from its event through
    the one predicate (``transcript.index_row``); those events are read in one statement."""
    texts: dict[int, str] = {}
    reread: list[Hit] = []
    for hit in hits:
        body = bodies.get(hit[0])
        if body is not None and body_is_clean_text(body):
            texts[hit[0]] = body
        else:
            reread.append(hit)
    originals = _original_texts(conn, [(hit[1], hit[2]) for hit in reread])
    for hit in reread:
        texts[hit[0]] = originals.get((hit[1], hit[2]), "")
    return texts


def _original_texts(conn: Connection, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The clean message text of each ``(session_id, seq)`` (a search's hits: at most the tools'
    limit + 1), read in one statement."""
    if not keys:
        return {}
    params: dict[str, Any] = {}
    conditions = []
    for n, (session_id, seq) in enumerate(dict.fromkeys(keys)):
        conditions.append(f"(session_id = :sid{n} AND seq = :seq{n})")
        params[f"sid{n}"], params[f"seq{n}"] = session_id, seq
    rows = conn.execute(
        text(
            "SELECT session_id, seq, event FROM transcript_events WHERE " + " OR ".join(conditions)
        ),
        params,
    )
    texts: dict[tuple[str, int], str] = {}
    for session_id, seq, stored in rows:
        event = stored_event(stored)
        row = transcript.index_row(int(seq), event) if event else None
        texts[(str(session_id), int(seq))] = clean_text(row.text) if row is not None else ""
    return texts
