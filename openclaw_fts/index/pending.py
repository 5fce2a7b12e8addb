"""What "pending" means: a session search must hide because its index may not be exact.

Invariant: this is the ONE definition of "pending" — a session whose index state is missing,
flagged ``needs_rebuild``, behind its ``last_seq`` or written at another ``INDEX_VERSION`` —
as SQL (:data:`PENDING_CONDITION`, :data:`EXACT_JOIN`, :data:`EXACT_SESSION`, and the
probe every backend asks, :func:`pending_probe_sql`) and as Python (:func:`is_exact`); they
are kept next to each other so they cannot drift. Booleans are compared with ``TRUE`` /
``FALSE`` literals, which SQLite (3.23+) and PostgreSQL both read.

On PostgreSQL (revision 0014) the database also keeps :data:`PENDING_TABLE`: at every commit
it holds every session that :data:`STATE_PENDING` (the definition but for the version, a
constant of this code the database cannot know) calls pending, and possibly some that are no
longer (its triggers, ``index/postgresql/pending_marks.py``, write it from the same
condition). The marked probe (``pending_probe_sql(where, marked=True)``) reads those sessions
and tests each with :data:`PENDING_CONDITION`, and the states written at another version
through their index: the same answer as the unmarked probe, in O(pending sessions).
"""

from __future__ import annotations

from ..rows import INDEX_VERSION, StateRow

#: The definition but for the index version, over the same two tables: what a database can
#: keep by itself (:data:`PENDING_TABLE`'s triggers), since ``INDEX_VERSION`` is this code's.
STATE_PENDING = "st.id IS NULL OR st.needs_rebuild = TRUE OR st.indexed_seq < s.last_seq"
#: "This session is pending", over ``openclaw_sessions s LEFT JOIN openclaw_index_state st``.
PENDING_CONDITION = f"({STATE_PENDING} OR st.index_version != {INDEX_VERSION})"
#: PostgreSQL (revision 0014): a superset of the sessions :data:`STATE_PENDING` holds for, at
#: every commit; kept by triggers on ``openclaw_sessions`` and ``openclaw_index_state``.
PENDING_TABLE = "openclaw_pending_sessions"
#: The same definition inverted as a join condition: ``st`` exists and the session is exact.
EXACT_JOIN = (
    "st.session_id = s.session_id AND st.needs_rebuild = FALSE "
    f"AND st.indexed_seq >= s.last_seq AND st.index_version = {INDEX_VERSION}"
)

#: "This session is exact" over ``openclaw_sessions s`` alone (a correlated subquery), for a
#: statement that filters sessions without joining their state: search hides every other
#: session, so nothing may be taken from one that is pending (suggestions, say).
EXACT_SESSION = f"EXISTS (SELECT 1 FROM openclaw_index_state AS st WHERE {EXACT_JOIN})"


def pending_probe_sql(where: str | None = None, *, marked: bool = False) -> str:
    """Whether any session (over ``openclaw_sessions s``, only those that satisfy ``where``
    when given) is pending, as one ``SELECT`` of a boolean. ``marked``: from
    :data:`PENDING_TABLE` (each marked session tested with :data:`PENDING_CONDITION`), or a
    state written at another version (``index_version`` is indexed: two ranges, no scan):
    the same answer, without reading every session ``where`` admits."""
    condition = PENDING_CONDITION if where is None else f"{where} AND {PENDING_CONDITION}"
    if not marked:
        return (
            "SELECT EXISTS (SELECT 1 FROM openclaw_sessions AS s LEFT JOIN "
            f"openclaw_index_state AS st ON st.session_id = s.session_id WHERE {condition})"
        )
    other = f"(st.index_version < {INDEX_VERSION} OR st.index_version > {INDEX_VERSION})"
    return (
        f"SELECT EXISTS (SELECT 1 FROM {PENDING_TABLE} AS pq JOIN openclaw_sessions AS s "
        "ON s.session_id = pq.session_id LEFT JOIN openclaw_index_state AS st "
        f"ON st.session_id = s.session_id WHERE {condition}) OR EXISTS (SELECT 1 FROM "
        "openclaw_index_state AS st JOIN openclaw_sessions AS s ON s.session_id = st.session_id "
        f"WHERE {other if where is None else f'{where} AND {other}'})"
    )


def is_exact(state: StateRow | None, last_seq: int) -> bool:
    """:data:`PENDING_CONDITION` negated, for a state already in hand."""
    return (
        state is not None
        and not state.needs_rebuild
        and state.indexed_seq >= last_seq
        and state.index_version == INDEX_VERSION
    )
