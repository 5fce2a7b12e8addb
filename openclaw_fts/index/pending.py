"""What "pending" means: a session search must hide because its index may not be exact.

Invariant: this is the ONE definition of "pending" — a session whose index state is missing,
flagged ``needs_rebuild``, behind its ``last_seq`` or written at another ``INDEX_VERSION`` —
as SQL (:data:`PENDING_CONDITION`, :data:`EXACT_JOIN`, :data:`EXACT_SESSION`, and the
probe every backend asks, :func:`pending_probe_sql`) and as Python (:func:`is_exact`); they
are kept next to each other so they cannot drift. Booleans are compared with ``TRUE`` /
``FALSE`` literals, which SQLite (3.23+) and PostgreSQL both read.
"""

from __future__ import annotations

from ..rows import INDEX_VERSION, StateRow

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

#: "This session is exact" over ``openclaw_sessions s`` alone (a correlated subquery), for a
#: statement that filters sessions without joining their state: search hides every other
#: session, so nothing may be taken from one that is pending (suggestions, say).
EXACT_SESSION = f"EXISTS (SELECT 1 FROM openclaw_index_state AS st WHERE {EXACT_JOIN})"


def pending_probe_sql(where: str | None = None) -> str:
    """Whether any session (over ``openclaw_sessions s``, only those that satisfy ``where``
    when given) is pending, as one ``SELECT EXISTS`` statement."""
    condition = PENDING_CONDITION if where is None else f"{where} AND {PENDING_CONDITION}"
    return (
        "SELECT EXISTS (SELECT 1 FROM openclaw_sessions AS s LEFT JOIN "
        f"openclaw_index_state AS st ON st.session_id = s.session_id WHERE {condition})"
    )


def is_exact(state: StateRow | None, last_seq: int) -> bool:
    """:data:`PENDING_CONDITION` negated, for a state already in hand."""
    return (
        state is not None
        and not state.needs_rebuild
        and state.indexed_seq >= last_seq
        and state.index_version == INDEX_VERSION
    )
