"""Keeping one session's index rows equal to its active branch: extend, diff, repair, mark dirty.

Invariant: after any function here returns inside a transaction, each session touched is either
*clean* — its ``openclaw_index_state`` says ``needs_rebuild = false``,
``indexed_seq = openclaw_sessions.last_seq``,
current ``index_version``, and its ``message_index`` rows equal
``transcript.index_rows(active branch)`` — or *pending* (no state, dirty, or watermark behind),
in which case search hides it. The live hooks and the reconciler both go through
:func:`plan_session` / the writer's ``apply_changes`` / :func:`finalize`, so the two writers
share one definition of "exact".
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from . import transcript
from .index.base import reader, writer
from .index.pending import is_exact
from .jsonsafe import stored_event as parse_event
from .rows import Extension, Finish, NewRow, SessionContext, StateRow, StoredRow, session_token
from .tokens import index_body

#: A stale session whose active branch is at most this many events is repaired inline, in the
#: appending transaction (beyond OpenClaw); a larger one is left to the reconciler. Bounded so a
#: live append never waits for more than a few tens of milliseconds of diffing.
INLINE_REPAIR_MAX_EVENTS = 4000
#: ... and at most this much indexed text (UTF-8 bytes).
INLINE_REPAIR_MAX_TEXT_BYTES = 4 * 1024 * 1024
#: Execution option overriding both bounds for a connection or engine: ``(events, bytes)``
#: (``TranscriptStore(inline_repair_max_events=..., inline_repair_max_text_bytes=...)``).
INLINE_REPAIR_OPTION = "openclaw_fts_inline_repair"

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Appended:
    """An event written by the current flush, with its derived tree fields."""

    seq: int
    event: Mapping[str, Any]
    node: transcript.TreeNode


@dataclass(slots=True)
class Plan:
    """What one session's index needs to become exact, computed from a snapshot."""

    session_id: str
    state_id: int
    generation: int
    last_seq: int
    tree: transcript.Tree
    seq_of_tip: dict[str, int]
    deletes: list[int] = field(default_factory=list)
    inserts: list[NewRow] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.deletes) + len(self.inserts)


def now_ms() -> int:
    return int(time.time() * 1000)


def on_appended(
    conn: Connection,
    session_id: str,
    appended: Sequence[Appended],
    context: SessionContext | None = None,
) -> None:
    """Index what was just appended to one session: extend the indexed branch, or repair.
    ``context`` is the session as read before the append (saves a query when given)."""
    context = context or reader(conn).session_context(conn, session_id)
    if context is None or not appended:
        return
    found = extension(conn, session_id, appended, context)
    if isinstance(found, Extension):
        extend(conn, found)
    elif found is not None:  # never None when given a connection
        repair_or_mark(conn, session_id, was_clean=found.was_clean)


@dataclass(frozen=True, slots=True)
class Repair:
    """:func:`extension`'s answer for an append that is not a plain extension: diff the
    session (``was_clean``: it was clean at its watermark before the append)."""

    was_clean: bool


def extension(
    conn: Connection | None,
    session_id: str,
    appended: Sequence[Appended],
    context: SessionContext,
) -> Extension | Repair | None:
    """What ``appended`` (already stored, or about to be in the same statement) adds to the
    session's index, or :class:`Repair`. ``conn`` None: decided without reading the database
    at all, and None when that needs a read (an append that names an earlier event but not
    the indexed leaf or the append cursor).

    The fast path handles only appends whose place ``transcript.resolve_tree`` gives without
    the rest of the tree; anything else is a repair (the diff). It trusts ``indexed_leaf``
    only when it is set: :func:`finalize` leaves it empty unless the indexed branch is a
    rooted path (``Tree.rooted``), and a fresh session has no events at all."""
    incognito, state = context.incognito, context.state
    if (
        state is None
        or state.indexed_seq != appended[0].seq - 1  # exact up to just before this append
        or not is_exact(state, state.indexed_seq)
    ):
        return Repair(was_clean=False)
    leaf = state.indexed_leaf
    if leaf is None and state.indexed_seq >= 0:
        return Repair(was_clean=True)  # empty, unrooted or "no leaf" branch
    rows: list[NewRow] = []
    token = session_token(state.id)
    expected = appended[0].seq
    # The append cursor, where known: nothing is stored yet in a fresh session; otherwise it
    # is learnt from the appends themselves (or, for the first one, from the row before it).
    cursor: str | None = None if state.indexed_seq < 0 else _UNRESOLVED
    side_tips: list[tuple[str, int, str | None]] = []  # (tip, seq, parent that stops being one)
    for item in appended:
        node = item.node
        if item.seq != expected or node.type == transcript.LEAF_TYPE:
            return Repair(was_clean=True)
        expected += 1
        canonical = node.type in transcript.CANONICAL_TYPES
        if (
            node.type == transcript.HEADER_TYPE
            or node.event_id is None
            or node.bad_parent
            or not (canonical or node.has_parent)
        ):
            continue  # not part of the tree: the branch and the append cursor are unchanged
        if node.side or not canonical:
            # Never moves the leaf, so the index rows stay as they are (the leaf is set: the
            # branch is a rooted path); only the branch records gain a tip (and its parent, if
            # it was an inactive tip, loses one). It becomes the append cursor.
            parent = _off_branch_parent(conn, session_id, node, leaf) if leaf else _UNRESOLVED
            if parent == _UNREAD:
                return None
            if parent == _UNRESOLVED:
                return Repair(was_clean=True)
            side_tips.append((node.event_id, item.seq, parent if parent != leaf else None))
            cursor = node.event_id
            continue
        if not (
            not node.has_parent
            or node.parent_id == leaf
            or (cursor != _UNRESOLVED and node.parent_id == cursor)
        ):
            if item is not appended[0]:
                return Repair(was_clean=True)
            if conn is None:
                return None
            if not _extends_leaf(conn, session_id, node.parent_id, item.seq, leaf):
                return Repair(was_clean=True)
        leaf = cursor = node.event_id
        row = None if incognito else transcript.index_row(item.seq, item.event)
        if row is not None:
            rows.append(_new_row(session_id, token, row))
    tip = (session_id, _seq_of(appended, leaf)) if leaf != state.indexed_leaf else None
    return Extension(session_id, state.id, rows, appended[-1].seq, leaf, tip, side_tips)


def extend(conn: Connection, found: Extension) -> None:
    """Write an :class:`Extension` of events already stored."""
    backend = writer(conn)
    backend.extend_index(
        conn, found.state_id, found.rows, found.indexed_seq, found.leaf, tip=found.tip
    )
    if found.side_tips:
        backend.add_side_tips(conn, found.session_id, found.side_tips)


#: The fast path could not tell where an append hangs without resolving the tree.
_UNRESOLVED = "\0unresolved"
#: ... nor without a read, and was given no connection.
_UNREAD = "\0unread"


def _off_branch_parent(
    conn: Connection | None, session_id: str, node: transcript.TreeNode, leaf: str
) -> str | None:
    """Where ``transcript.resolve_tree`` hangs a side append or an opaque row: the current leaf
    when it names no parent (side appends only), null for an explicit null, else the earlier
    tree event it names; ``_UNRESOLVED`` when it names a leaf control, an unknown id, a header
    or a row written without derived columns (rare: left to a repair); ``_UNREAD`` when that
    needs a read and ``conn`` is None."""
    if not node.has_parent:
        return leaf
    if node.parent_id is None:
        return None
    if node.parent_id == leaf:
        return leaf
    if conn is None:
        return _UNREAD
    row = reader(conn).earlier_event(conn, session_id, node.parent_id, node.seq)
    if row is None or row.type in (None, transcript.LEAF_TYPE, transcript.HEADER_TYPE):
        return _UNRESOLVED
    return node.parent_id


def _extends_leaf(
    conn: Connection, session_id: str, parent_id: str | None, seq: int, leaf: str | None
) -> bool:
    """Whether the first event of an append, canonical and not a side append, naming
    ``parent_id`` (not the indexed leaf), hangs off the indexed leaf all the same
    (``transcript.resolve_tree``), decided from at most three indexed lookups:

    * ``parent_id`` is the append cursor: the row just before it is a side append or an
      opaque row (which set the cursor) — a raw append cursor continues from the leaf;
    * ``parent_id`` is a well-formed leaf control whose target and append parent are the
      indexed leaf, stored after it, and the session has no ``reset`` (which could have
      re-pointed the control) — OpenClaw's continuation after a rewind.

    Anything else: False, and the caller diffs."""
    if parent_id is None or leaf is None:
        return False
    reads = reader(conn)
    row = reads.earlier_event(conn, session_id, parent_id, seq)
    if row is None:
        return False
    parent_seq, ptype, side, raw_parent, raw, parent_type = (
        row.seq,
        row.type,
        row.side,
        row.parent_id,
        row.leaf_json,
        row.parent_json_type,
    )
    if ptype != transcript.LEAF_TYPE:
        if parent_seq != seq - 1 or ptype in (None, transcript.HEADER_TYPE):
            return False
        node = transcript.column_node(parent_seq, parent_id, raw_parent, ptype, side, parent_type)
        if node.bad_parent:
            return False
        if ptype in transcript.CANONICAL_TYPES:
            return node.side
        return node.has_parent
    marker = transcript.tree_node(parent_seq, parse_event(raw))
    if not (
        marker.valid_leaf
        and marker.event_id == parent_id
        and marker.has_parent
        and marker.target_id == leaf
        and marker.append_parent == leaf
    ):
        return False
    target = reads.event_seq_type(conn, session_id, leaf)
    if target is None or target[0] >= parent_seq or target[1] == transcript.LEAF_TYPE:
        return False
    return not reads.has_event_type(conn, session_id, transcript.RESET_TYPE)


def _seq_of(appended: Sequence[Appended], event_id: str | None) -> int | None:
    for item in appended:
        if item.node.event_id == event_id:
            return item.seq
    return None


def _new_row(session_id: str, token: str, row: transcript.IndexRow) -> NewRow:
    return NewRow(
        session_id=session_id,
        seq=row.seq,
        event_id=row.event_id,
        role=row.role,
        timestamp_ms=row.timestamp if row.timestamp is not None else now_ms(),
        body=index_body(row.text),
        sess=token,
    )


def repair_or_mark(conn: Connection, session_id: str, *, was_clean: bool = False) -> bool:
    """Repair a stale session inline when small, else mark it dirty. True when repaired.
    ``was_clean``: the session was clean at its watermark before this append (see
    :func:`plan_session`)."""
    context = reader(conn).session_context(conn, session_id)
    if context is None:
        return False
    max_events, max_bytes = conn.get_execution_options().get(
        INLINE_REPAIR_OPTION, (INLINE_REPAIR_MAX_EVENTS, INLINE_REPAIR_MAX_TEXT_BYTES)
    )
    if context.last_seq + 1 <= max_events:
        plan = plan_session(
            conn,
            session_id,
            max_text_bytes=max_bytes,
            trust_stored=was_clean,
        )
        if plan is not None:
            writer(conn).apply_changes(conn, plan.deletes, plan.inserts)
            finalize(conn, plan)
            log.debug(
                "inline repair of session %s: %d index rows deleted, %d inserted",
                session_id,
                len(plan.deletes),
                len(plan.inserts),
            )
            return True
    log.info("session %s left to the reconciler (beyond the inline repair bounds)", session_id)
    if context.state is None:
        writer(conn).create_state(conn, session_id, clean=False)
    else:
        writer(conn).mark_dirty(conn, [session_id])
    return False


def plan_session(
    conn: Connection,
    session_id: str,
    *,
    max_text_bytes: int | None = None,
    trust_stored: bool = False,
) -> Plan | None:
    """Diff a session's active branch against its index rows. None when the session is gone,
    or the text it would index exceeds ``max_text_bytes``. Creates a dirty state if it has none.

    ``trust_stored``: the session was clean at its watermark (the live path knows), so each
    stored row is exact for its event, and events are immutable: rows whose event stays on the
    branch are kept without reading them, and only events newly on the branch are read. The
    reconciler and ``check`` compare every row's text instead."""
    context = reader(conn).session_context(conn, session_id)
    if context is None:
        return None
    reads = reader(conn)
    nodes, parsed = reads.load_tree(conn, session_id)
    tree = transcript.resolve_tree(nodes)
    deletes: list[int] = []
    stored: dict[str, StoredRow] = {}
    kept_bytes = 0
    if trust_stored:
        on_branch = set(tree.active_seqs)
        kept: set[int] = set()
        for row_id, seq, size in reads.index_row_sizes(conn, session_id):
            if seq in on_branch:
                kept.add(seq)
                kept_bytes += size
            else:
                deletes.append(row_id)
        fresh = [seq for seq in tree.active_seqs if seq not in kept]
    else:
        fresh = list(tree.active_seqs)
    wanted = (
        []
        if context.incognito
        else transcript.branch_rows(reads.branch_events(conn, session_id, fresh, parsed))
    )
    if max_text_bytes is not None:
        total = kept_bytes
        if total > max_text_bytes:
            return None
        for row in wanted:
            total += len(row.text.encode("utf-8", "surrogatepass"))
            if total > max_text_bytes:
                return None
    state = context.state or writer(conn).create_state(conn, session_id, clean=False)
    token = session_token(state.id)
    if not trust_stored:
        stored = {r.event_id: r for r in reads.index_rows(conn, session_id)}
    tips = set(tree.tips)
    seq_of_tip: dict[str, int] = {}
    for node in nodes:
        if node.event_id in tips:
            seq_of_tip.setdefault(node.event_id, node.seq)
    plan = Plan(
        session_id=session_id,
        state_id=state.id,
        generation=state.generation,
        last_seq=nodes[-1].seq if nodes else -1,
        tree=tree,
        seq_of_tip=seq_of_tip,
        deletes=deletes,
    )
    for row in wanted:
        body = index_body(row.text)
        old = stored.pop(row.event_id, None)
        if old is not None and (
            old.body == body
            and old.role == row.role
            and old.seq == row.seq
            and (row.timestamp is None or row.timestamp == old.timestamp_ms)
        ):
            continue
        if old is not None:
            plan.deletes.append(old.id)
        new = _new_row(session_id, token, row)
        if row.timestamp is None and old is not None:
            new = dataclasses.replace(new, timestamp_ms=old.timestamp_ms)
        plan.inserts.append(new)
    plan.deletes.extend(r.id for r in stored.values())
    return plan


def finalize(conn: Connection, plan: Plan) -> None:
    """Mark the planned session clean at the plan's watermark and rewrite its branch records.

    ``openclaw_sessions.last_seq`` is the highest seq ever assigned (never lowered, so seqs are
    not reused); after events were deleted it can be above the newest stored one, and the
    watermark then covers it: the plan saw every event that exists. Only a rooted path lets the
    fast path extend the branch later (see :func:`on_appended`), so only then is the leaf kept."""
    writer(conn).finish(
        conn,
        Finish(
            session_id=plan.session_id,
            state_id=plan.state_id,
            last_seq=plan.last_seq,
            leaf=plan.tree.active_leaf if plan.tree.rooted else None,
            tree=plan.tree,
            seq_of_tip=plan.seq_of_tip,
        ),
    )


def start_empty(conn: Connection, session_id: str) -> StateRow:
    """A session created with no events: a clean, empty index state and an empty branch."""
    state = writer(conn).create_state(conn, session_id, clean=True)
    writer(conn).write_branches(conn, session_id, transcript.resolve_tree(()), {})
    return state
