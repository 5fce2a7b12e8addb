"""Values every layer of the plugin passes around: the index version, the rows the index
backends read and write, a validated search request and its hits, and why a reconciler waits.

Invariant: pure values — no statement runs here and nothing of the plugin is imported but its
exceptions' text helper (the query and tree types only for type checking), so every layer, the
index backends included, can depend on this module and it depends on none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .errors import shorten

if TYPE_CHECKING:
    from .query import CompiledQuery
    from .transcript import Tree

#: Bumped when what the index holds for the same events changes (tokenisation, predicate):
#: every session indexed under an older version becomes pending and is re-indexed.
#: 2: OpenClaw's active-branch rules (append cursor, reset boundary, rows that never move the
#: leaf). 3: the index holds the redacted text (a query can no longer match inside a secret).
#: 4: the redaction rules mask more families (password flags, unnamed keys in code, …).
#: 5: and more (values under names that say little, YAML tags, INI continuation lines, …).
#: 6: and more (Gradle/DSL ``name "value"`` lines, connection-string ``Pwd=``, UUIDs under a
#: ``<word>_key`` name, SDK start-up keys, Composio keys; docs/redaction.md).
#: 7: a URL's or ``curl -u``'s password shaped like a field name (``db_password``) is masked.
#: 8: the redaction rule families (named values in every syntax, Kubernetes Secret data,
#: Bundler credentials, token users, upper-case tokens) and new token shapes (issue #41).
#: 9: bare tokens in lower case and digits that look random are masked (issue #41).
INDEX_VERSION = 9

# --------------------------------------------------------------------------- the read side

Order = Literal["relevance", "recent"]


@dataclass(frozen=True)
class SearchRequest:
    """Validated arguments of one search (built by ``search.build_request``)."""

    query: str
    compiled: CompiledQuery | None
    limit: int
    session_key: str | None
    role: str | None
    since: int | None
    until: int | None
    order: Order


#: A hit as a backend's ranking returns it: (index row id, session_id, seq, event_id, role,
#: timestamp_ms, session_key, rank). ``rank``: LOWER is better (results are in ascending rank;
#: ``score`` = ``-rank``), its scale backend-defined (docs/tools.md); None when not ranked.
Hit = tuple[int, str, int, str, str, int, str, float | None]


@dataclass(frozen=True)
class QueryPage:
    """What the index answers for one query of a search (:class:`SearchPage`)."""

    #: Up to the request's limit, in result order.
    hits: list[Hit]
    #: Whether the ranking found more than the limit.
    more: bool
    #: Each hit's searchable text (masked, clean), by index row id.
    texts: dict[int, str]
    #: One hit per session key: each hit's number of matching messages the caller may see,
    #: by index row id (empty otherwise).
    session_hits: dict[int, int]
    #: For a query that found nothing: near words and a prefix form the caller may search.
    suggestions: list[str]


@dataclass(frozen=True)
class SearchPage:
    """A page of hits for a caller and a set of requests, read in one snapshot
    (:meth:`~openclaw_fts.index.base.Reader.search_page`); shaping it for the tool is the
    search's own step."""

    #: Whether a session the caller may see (of the ``sessionKey``, when given) is pending:
    #: each query may miss hits.
    indexing: bool
    #: One per request, in the order given.
    queries: list[QueryPage]


# --------------------------------------------------------------------------- the write side

#: What every index row of a session carries beside its text (``message_index.sess``):
#: ``s<index state id>``. SQLite's narrow searches intersect the text with the visible sessions'
#: tokens (``index/sqlite/read.py`` builds them from this prefix); PostgreSQL's join on the
#: session instead.
SESSION_TOKEN_PREFIX = "s"


def session_token(state_id: int) -> str:
    """The token of the session whose index state has id ``state_id``."""
    return f"{SESSION_TOKEN_PREFIX}{state_id}"


@dataclass(slots=True)
class StateRow:
    """A session's ``openclaw_index_state`` row."""

    id: int
    indexed_seq: int
    indexed_leaf: str | None
    needs_rebuild: bool
    generation: int
    index_version: int


@dataclass(slots=True)
class SessionContext:
    """A session's write-relevant columns and index state, read in one statement."""

    last_seq: int
    incognito: bool
    state: StateRow | None


@dataclass(frozen=True, slots=True)
class NewRow:
    """An index row to write (``body``: ``tokens.index_body`` of the masked text)."""

    session_id: str
    seq: int
    event_id: str
    role: str
    timestamp_ms: int
    body: str
    sess: str


@dataclass(frozen=True, slots=True)
class StoredRow:
    """An index row as stored (what the planner compares with the row it would write; the
    session token is derived from the session, so it is not read back)."""

    id: int
    seq: int
    event_id: str
    role: str
    timestamp_ms: int
    body: str


@dataclass(frozen=True, slots=True)
class EarlierEvent:
    """What the append fast path needs of an earlier event named as a parent: its derived
    columns, its JSON only when it is a leaf control, and (SQLite: ``json_type``) whether an
    empty ``parent_id`` column stands for an explicit null."""

    seq: int
    type: str | None
    side: bool
    parent_id: str | None
    leaf_json: str | None
    parent_json_type: str | None


#: One ``transcript_events`` row to insert, keyed by column name (``session_id``, ``seq``,
#: ``event_id``, ``parent_id``, ``type``, ``role``, ``target_id``, ``side``, ``timestamp_ms``,
#: ``event``).
EventRow = Mapping[str, Any]
#: Columns of :data:`EventRow`, in the order the backends insert them.
EVENT_COLUMNS = (
    "session_id",
    "seq",
    "event_id",
    "parent_id",
    "type",
    "role",
    "target_id",
    "side",
    "timestamp_ms",
    "event",
)


@dataclass(frozen=True, slots=True)
class Finish:
    """What marks a planned session clean: its watermark, the leaf the fast path may extend
    (None unless the branch is a rooted path) and its branch records."""

    session_id: str
    state_id: int
    last_seq: int
    leaf: str | None
    tree: Tree
    seq_of_tip: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Extension:
    """What a plain append adds to a clean session's index (``indexer.extension``): its index
    rows, the state's new watermark and leaf, the active branch's new tip (``session_id``, the
    tip's seq; None: the leaf did not move) and the side tips it records (tip, seq, the
    parent that stops being an inactive tip)."""

    session_id: str
    state_id: int
    rows: list[NewRow]
    indexed_seq: int
    leaf: str | None
    tip: tuple[str, int | None] | None
    side_tips: list[tuple[str, int, str | None]]


@dataclass(frozen=True)
class LeaseWait:
    """Why a reconciler is waiting: who holds the lease and for how much longer (0: until it
    lets go; a PostgreSQL advisory lock does not expire)."""

    holder: str
    expires_in: float

    @property
    def reason(self) -> str:
        return (
            f"another reconciler ({shorten(self.holder)}) holds the lease; waiting until it "
            f"finishes or its lease expires in {max(0.0, self.expires_in):.0f} s"
        )
