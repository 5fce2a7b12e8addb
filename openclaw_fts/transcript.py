"""Pure functions over OpenClaw transcript events: the tree, the active branch, the index rows.

Invariant: this module is THE definition of "what is indexed" (docs/openclaw-tree.md) and of the
active branch it is taken from (OpenClaw's tree rules, docs/openclaw-tree.md). The live
session hooks, the inline repair, the reconciler and ``openclaw-fts check`` all call
:func:`index_rows` / :func:`index_row` / :func:`active_branch`; nothing else decides which
event text reaches the full-text index. No SQL, no I/O: every function here is deterministic
over its arguments.

The text of an index row is the message text with every credential masked by the built-in
rules (:data:`openclaw_fts.redact.DEFAULT_REDACTOR`, docs/redaction.md): the index never holds
a masked secret, so no query can match inside one. A host's ``extra_patterns`` apply to what
search and history return, not to the index (the index must not depend on which host opened
the database: the CLI's reconcile and check use the built-in rules too).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from .redact import DEFAULT_REDACTOR

#: Roles whose text is searchable. Tool results, system prompts and the rest never are.
INDEXED_ROLES = frozenset({"user", "assistant"})
#: Content-block types whose ``text`` is searchable (OpenAI- and Anthropic-style blocks).
TEXT_BLOCK_TYPES = frozenset({"text", "input_text", "output_text"})
#: The event type of a leaf control (rewind / branch switch).
LEAF_TYPE = "leaf"
#: The header line of a JSONL transcript: session metadata, not part of the tree.
HEADER_TYPE = "session"
#: Marker of an entry that hangs off the tree without moving the active leaf.
SIDE_APPEND_MODE = "side"
#: Epoch-ms timestamps outside this range are treated as absent (year 1 .. year 9999).
MIN_EPOCH_MS = -62_135_596_800_000
MAX_EPOCH_MS = 253_402_300_799_999
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class TreeNode(NamedTuple):
    """The part of an event the tree needs; derivable from the event dict or from table columns.
    (A named tuple: built once per event when a tree is resolved, 4x cheaper than a frozen
    dataclass.)"""

    seq: int
    event_id: str | None
    parent_id: str | None
    type: str | None
    target_id: str | None = None
    side: bool = False
    #: False for a leaf control that is malformed (``targetId`` missing or neither null nor a
    #: non-blank id, ``appendParentId`` or ``appendMode`` of the wrong shape): not in the tree.
    valid_leaf: bool = True
    #: The event has a usable ``parentId`` key (null or a non-blank id). False when the key is
    #: missing (older writers) or its value is malformed; only the JSON tells these apart.
    has_parent: bool = True
    #: ``parentId`` is present but neither null nor a non-blank id: the event is not in the tree.
    bad_parent: bool = False
    #: Leaf controls: where the next append goes (``appendParentId``, defaulting to the target).
    append_parent: str | None = None


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One row of the full-text index: the searchable text of one message on the active branch."""

    seq: int
    event_id: str
    role: str
    timestamp: int | None  # epoch ms; None = "use the time the row is written"
    text: str


def _str_or_none(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    return None


def event_id_of(event: Mapping[str, Any]) -> str | None:
    """The event's id when it is a non-blank string, else None."""
    return _str_or_none(event.get("id"))


def _ref_or_invalid(value: Any) -> tuple[bool, str | None]:
    """``(well-formed, id)`` of a reference field: null or a non-blank id is well-formed."""
    if value is None:
        return True, None
    ref = _str_or_none(value)
    return ref is not None, ref


def tree_node(seq: int, event: Mapping[str, Any]) -> TreeNode:
    """Derive the tree-relevant fields of an event (the derived columns of an event row, plus
    what only the JSON tells: the shape of ``parentId`` and of a leaf control)."""
    etype = event.get("type")
    parent_ok, parent = _ref_or_invalid(event.get("parentId"))
    has_parent = "parentId" in event and parent_ok
    target: str | None = None
    append_parent: str | None = None
    valid_leaf = True
    if etype == LEAF_TYPE:
        target_ok, target = _ref_or_invalid(event.get("targetId"))
        target_ok = target_ok and "targetId" in event
        append_ok, append_parent = (
            _ref_or_invalid(event["appendParentId"])
            if "appendParentId" in event
            else (True, target)
        )
        mode_ok = "appendMode" not in event or event["appendMode"] == SIDE_APPEND_MODE
        valid_leaf = target_ok and append_ok and mode_ok
    return TreeNode(
        seq=seq,
        event_id=event_id_of(event),
        parent_id=parent,
        type=etype if isinstance(etype, str) else None,
        target_id=target,
        side=event.get("appendMode") == SIDE_APPEND_MODE,
        valid_leaf=valid_leaf,
        has_parent=has_parent,
        append_parent=append_parent,
        bad_parent="parentId" in event and not parent_ok,
    )


def column_node(
    seq: int,
    event_id: str | None,
    parent_id: str | None,
    etype: str | None,
    side: bool,
    parent_json_type: str | None,
) -> TreeNode:
    """The tree node of a stored non-leaf-control row from its derived columns, where
    ``parent_json_type`` is SQLite's ``json_type`` of its ``parentId`` (read only when the
    ``parent_id`` column is empty: it tells a null ``parentId`` from a missing or malformed one).
    Rows stored before the columns were exact (a blank ``parentId`` kept) are normalised here."""
    if parent_id is not None and not parent_id.strip():
        return TreeNode(seq, event_id, None, etype, None, side, True, False, bad_parent=True)
    if parent_id is not None or parent_json_type == "null":
        return TreeNode(seq, event_id, parent_id, etype, None, side, True, True)
    bad = parent_json_type is not None  # a string here is blank (else the column has it)
    return TreeNode(seq, event_id, None, etype, None, side, True, False, bad_parent=bad)


#: Length bound of the short derived text columns (``type``, ``role``).
DERIVED_NAME_LENGTH = 64


def derived_columns(
    seq: int, event: Mapping[str, Any], node: TreeNode | None = None
) -> dict[str, Any]:
    """The columns an event row carries beside its JSON (filled by the hooks and the importer);
    ``node`` is ``tree_node(seq, event)`` when the caller has it already."""
    node = node or tree_node(seq, event)
    role = message_role(event)
    return {
        "seq": seq,
        "event_id": node.event_id,
        "parent_id": node.parent_id,
        "type": node.type[:DERIVED_NAME_LENGTH] if node.type else None,
        "role": role[:DERIVED_NAME_LENGTH] if role else None,
        "target_id": node.target_id,
        "side": node.side,
        "timestamp_ms": parse_timestamp(event.get("timestamp")),
    }


def message_role(event: Mapping[str, Any]) -> str | None:
    """``message.role`` of a message event, else None."""
    if event.get("type") != "message":
        return None
    message = event.get("message")
    if not isinstance(message, Mapping):
        return None
    role = message.get("role")
    return role if isinstance(role, str) else None


def parse_timestamp(value: Any) -> int | None:
    """An event timestamp (epoch ms number or ISO 8601 string) as epoch ms, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        ms = int(value)
        return ms if MIN_EPOCH_MS <= ms <= MAX_EPOCH_MS else None
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        # Integer arithmetic: float seconds * 1000 loses the last millisecond (…47.472 → 471).
        return (parsed - _EPOCH) // timedelta(milliseconds=1)
    return None


def message_text(message: Mapping[str, Any]) -> str:
    """The searchable text of a message object (docs/openclaw-tree.md), '' when there is none."""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    text = message.get("text")
    if isinstance(text, str):
        return text.strip()
    if isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") not in TEXT_BLOCK_TYPES:
                continue
            block_text = block.get("text")
            if isinstance(block_text, str) and block_text.strip():
                parts.append(block_text)
        return "\n".join(parts).strip()
    return ""


def index_row(seq: int, event: Mapping[str, Any]) -> IndexRow | None:
    """The index row of one event, assuming it is on the active branch; None if not indexed.

    Its text is the message text with credentials masked (module docstring)."""
    if event.get("type") != "message":
        return None
    event_id = event_id_of(event)
    role = message_role(event)
    if event_id is None or role not in INDEXED_ROLES:
        return None
    message = event["message"]
    text = message_text(message)
    if not text:
        return None
    assert role is not None
    masked = DEFAULT_REDACTOR.redact(text)
    return IndexRow(seq, event_id, role, parse_timestamp(event.get("timestamp")), masked)


#: The entry types OpenClaw's transcript tree calls canonical (``transcript-tree.ts``): only
#: these, without ``appendMode: "side"``, move the active leaf. Any other type (a plugin's
#: ``metadata`` row, a future type) is a node of the tree that never moves it.
CANONICAL_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "reset",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
#: The canonical entry type that starts a reset boundary.
RESET_TYPE = "reset"


@dataclass(frozen=True, slots=True)
class Tree:
    """A session's event tree resolved: the active leaf, the active path and every tip."""

    active_leaf: str | None
    active_seqs: tuple[int, ...]  # seqs on the active branch, root first
    tips: tuple[str, ...]  # ids of nodes with no children (plus the active leaf), in seq order
    #: The active branch is a path from the leaf to a true root (parent null): no missing
    #: ancestor, no cycle, not the "no leaf" fallback. Only then can an append that names the
    #: leaf be indexed as a plain extension (see ``indexer.on_appended``).
    rooted: bool = True


def _reaches(start: str | None, target: str, parent_of: Mapping[str, str | None]) -> bool:
    """The parent chain from ``start`` (inclusive) passes ``target``."""
    seen: set[str] = set()
    cursor = start
    while cursor is not None and cursor not in seen:
        if cursor == target:
            return True
        seen.add(cursor)
        cursor = parent_of.get(cursor)
    return False


def resolve_tree(nodes: Iterable[TreeNode]) -> Tree:
    """Resolve the active branch of a session from its events in ``seq`` order.

    The rules are OpenClaw's (``transcript-tree.ts``), written down in docs/openclaw-tree.md:
    a scan in file order keeps the current leaf, the append cursor and the latest ``reset``.
    Only canonical non-side entries move the leaf; a valid leaf control moves it to its target
    and the cursor to its ``appendParentId``; a leaf control naming an unknown node changes
    nothing. A canonical non-side entry's parent is the current leaf when its own ``parentId``
    would cross the latest reset, is stale, or is the raw append cursor while the leaf differs;
    parent chains skip leaf controls. The branch is the path from the leaf (controls left out;
    a cycle gives none); when that is empty, it is nothing if the session has valid leaf
    controls, else every event (old linear files).
    """
    parent_of: dict[str, str | None] = {}  # node id -> resolved parent (may name no node)
    seq_of: dict[str, int] = {}
    controls: set[str] = set()  # ids of leaf-control nodes (valid or transparent)
    transparent: set[str] = set()  # leaf controls that named an unknown node
    order: list[str] = []  # non-control node ids in file order
    every: list[int] = []
    leaf: str | None = None
    cursor: str | None = None  # the append cursor
    latest_reset: str | None = None
    has_leaf_control = False

    def known(ref: str | None) -> bool:
        return ref is None or (ref in parent_of and ref not in transparent)

    def skip_controls(ref: str | None) -> str | None:
        seen: set[str] = set()
        while ref is not None and ref in controls and ref not in seen:
            seen.add(ref)
            ref = parent_of[ref]
        return ref

    for node in sorted(nodes, key=lambda n: n.seq):
        every.append(node.seq)
        eid = node.event_id
        if node.type == HEADER_TYPE or eid is None or eid in parent_of or node.bad_parent:
            continue  # not addressable (or a duplicate id: the first one wins)
        canonical = node.type in CANONICAL_TYPES
        if not node.has_parent and not canonical:
            continue  # only canonical entries may omit parentId
        if node.type == LEAF_TYPE:
            if not node.valid_leaf:
                continue
            target, append = node.target_id, node.append_parent
            behind_reset = (
                latest_reset is not None
                and leaf is not None
                and not _reaches(target, latest_reset, parent_of)
            )
            if behind_reset:
                target = append = leaf  # a leaf control behind the latest reset stays put
            controls.add(eid)
            seq_of[eid] = node.seq
            if not (known(target) and known(append)):
                transparent.add(eid)  # changes nothing; children repair through its parent
                parent_of[eid] = node.parent_id
                continue
            parent_of[eid] = target
            leaf, cursor = target, append
            has_leaf_control = True
            continue
        parent = node.parent_id if node.has_parent else leaf
        if canonical:
            if not node.side:
                if latest_reset is not None and not _reaches(parent, latest_reset, parent_of):
                    parent = leaf  # would cross the reset boundary
                elif node.has_parent and parent is not None and parent not in parent_of:
                    if leaf is not None:
                        parent = leaf  # stale parent
                elif node.has_parent and parent == cursor and leaf != cursor:
                    parent = leaf  # a raw append cursor, not the visible leaf
            parent = skip_controls(parent)
        parent_of[eid] = parent
        seq_of[eid] = node.seq
        order.append(eid)
        cursor = eid
        if node.type == RESET_TYPE:
            latest_reset = eid
        if canonical and not node.side:
            leaf = eid
    path: list[int] = []
    seen: set[str] = set()
    walk = leaf
    rooted = leaf is not None
    while walk is not None:
        if walk in seen:
            path, rooted = [], False  # a cycle: no path
            break
        seen.add(walk)
        if walk not in parent_of:
            rooted = False  # a missing ancestor: the reachable suffix stays
            break
        if walk not in controls:
            path.append(seq_of[walk])
        walk = parent_of[walk]
    path.reverse()
    if leaf in controls:
        # A valid leaf control named another leaf control: the leaf is that control, and an
        # append naming it hangs on the control's target (``skip_controls``), not on the leaf
        # itself, so it is not a plain extension.
        rooted = False
    if not path:
        rooted = False
        if not has_leaf_control:
            path = every  # no leaf at all and no leaf controls: an old linear file
    has_child = {parent_of[eid] for eid in order}
    tips = [eid for eid in order if eid not in has_child or eid == leaf]
    return Tree(active_leaf=leaf, active_seqs=tuple(path), tips=tuple(tips), rooted=rooted)


def active_branch(
    events: Sequence[tuple[int, Mapping[str, Any]]],
) -> list[tuple[int, Mapping[str, Any]]]:
    """The events on the active branch, root first, from ``(seq, event)`` pairs."""
    tree = resolve_tree(tree_node(seq, event) for seq, event in events)
    by_seq = dict(events)
    return [(seq, by_seq[seq]) for seq in tree.active_seqs]


def index_rows(
    events: Sequence[tuple[int, Mapping[str, Any]]], *, incognito: bool = False
) -> list[IndexRow]:
    """THE predicate: the index rows a session's events must produce (docs/openclaw-tree.md)."""
    return branch_rows(active_branch(events), incognito=incognito)


def branch_rows(
    branch: Iterable[tuple[int, Mapping[str, Any]]], *, incognito: bool = False
) -> list[IndexRow]:
    """The index rows of events already known to form the active branch (root first)."""
    if incognito:
        return []
    rows = []
    for seq, event in branch:
        row = index_row(seq, event)
        if row is not None:
            rows.append(row)
    return rows
