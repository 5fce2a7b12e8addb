"""Pure functions over OpenClaw transcript events: the tree, the active branch, the index rows.

Invariant: this module is THE definition of "what is indexed" (behaviour.md §2). The live
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
    #: False for a leaf control whose ``targetId`` is neither null nor an id: it is ignored.
    valid_leaf: bool = True


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


def tree_node(seq: int, event: Mapping[str, Any]) -> TreeNode:
    """Derive the tree-relevant fields of an event (the derived columns of an event row)."""
    etype = event.get("type")
    parent = event.get("parentId")
    target = event.get("targetId") if etype == LEAF_TYPE else None
    return TreeNode(
        seq=seq,
        event_id=event_id_of(event),
        parent_id=parent if isinstance(parent, str) and parent else None,
        type=etype if isinstance(etype, str) else None,
        target_id=_str_or_none(target),
        side=event.get("appendMode") == SIDE_APPEND_MODE,
        valid_leaf=target is None or _str_or_none(target) is not None,
    )


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
    """The searchable text of a message object (behaviour.md §2), '' when there is none."""
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


@dataclass(frozen=True, slots=True)
class Tree:
    """A session's event tree resolved: the active leaf, the active path and every tip."""

    active_leaf: str | None
    active_seqs: tuple[int, ...]  # seqs on the active branch, root first
    tips: tuple[str, ...]  # ids of nodes with no children (plus the active leaf), in seq order


def resolve_tree(nodes: Iterable[TreeNode]) -> Tree:
    """Resolve the active branch of a session from its events in ``seq`` order.

    Rules (behaviour.md §1): a canonical entry with a ``parentId`` hangs off that node; one
    without chains to the current leaf; a side append does not move the leaf; a leaf control
    makes ``targetId`` the active leaf (null = empty branch; unknown target = ignored) and later
    events naming the marker as parent continue from the target. Events without an id, header
    lines and parents that name unknown ids (or would make a cycle) attach to the current leaf.
    """
    parent_of: dict[str, str | None] = {}
    seq_of: dict[str, int] = {}
    order: list[str] = []
    leaf_alias: dict[str, str | None] = {}  # leaf-marker id -> the leaf it selected
    has_child: set[str] = set()
    leaf: str | None = None
    for node in sorted(nodes, key=lambda n: n.seq):
        if node.type == HEADER_TYPE:
            continue
        if node.type == LEAF_TYPE:
            target = node.target_id
            if not node.valid_leaf or (target is not None and target not in parent_of):
                continue  # unknown or malformed target: ignored
            leaf = target
            if node.event_id is not None:
                leaf_alias[node.event_id] = target
            continue
        if node.event_id is None or node.event_id in parent_of or node.event_id in leaf_alias:
            continue  # not addressable (or a duplicate id): no place in the tree
        parent: str | None
        if node.parent_id is None:
            parent = leaf
        elif node.parent_id in leaf_alias:
            parent = leaf_alias[node.parent_id]
        elif node.parent_id in parent_of:
            parent = node.parent_id
        else:
            parent = leaf  # unknown parent: chain to the current leaf rather than orphan
        parent_of[node.event_id] = parent
        seq_of[node.event_id] = node.seq
        order.append(node.event_id)
        if parent is not None:
            has_child.add(parent)
        if not node.side:
            leaf = node.event_id
    path: list[int] = []
    cursor = leaf
    while cursor is not None:
        path.append(seq_of[cursor])
        cursor = parent_of[cursor]
    path.reverse()
    tips = [eid for eid in order if eid not in has_child or eid == leaf]
    return Tree(active_leaf=leaf, active_seqs=tuple(path), tips=tuple(tips))


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
    """THE predicate: the index rows a session's events must produce (behaviour.md §2)."""
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
